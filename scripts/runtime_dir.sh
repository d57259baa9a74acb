# Sourced by the scripts that open adapters (demo.sh, test.sh, wheel_test.sh, .ci/run): where
# XDG_RUNTIME_DIR is unset or empty (containers, CI, ssh without a login session), point it at a
# private folder of this user's, $TMPDIR/dmlgpu-runtime-<uid> (mode 0700, made once and kept),
# as the dmlgpu command does for itself (dmlgpu/cli.py: give_mesa_a_runtime_dir). Without it,
# Mesa's Vulkan device-select layer asks libwayland for a display at every enumeration of the
# adapters, and libwayland prints "error: XDG_RUNTIME_DIR is invalid or not set in the
# environment." four times a process, though nothing failed; which adapters are found does not
# change. A folder there that is not a private one of this user's is not used.
if [ -z "${XDG_RUNTIME_DIR:-}" ] && [ "$(uname -s)" = Linux ]; then
  _dmlgpu_run="${TMPDIR:-/tmp}/dmlgpu-runtime-$(id -u)"
  mkdir -m 700 "$_dmlgpu_run" 2>/dev/null || true
  if [ -d "$_dmlgpu_run" ] && [ ! -L "$_dmlgpu_run" ] && [ -O "$_dmlgpu_run" ] \
      && [ "$(stat -c %a "$_dmlgpu_run")" = 700 ]; then
    export XDG_RUNTIME_DIR="$_dmlgpu_run"
  fi
  unset _dmlgpu_run
fi
