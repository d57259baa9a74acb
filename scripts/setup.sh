#!/usr/bin/env bash
# Idempotent setup: a Vulkan driver (Mesa's lavapipe if none is installed), a C compiler and
# headless Chromium (for the exported modules' browser tests), then .venv with dmlgpu installed editable plus the test extras (onnx, dask), the lint
# extras and the docs extras (mkdocs). Safe to run again; it skips what is done.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# What was found done already is said unless DMLGPU_SETUP_QUIET=1: .ci/run sets it after its own
# first run, so that lint.sh, docs.sh, test.sh and wheel_test.sh, which each run this again, do
# not repeat the same three lines. What it installs is always said.
done_already() { [ "${DMLGPU_SETUP_QUIET:-0}" = 1 ] || echo "$1"; }

# 1. Vulkan: wgpu needs an ICD on Linux; lavapipe (software) runs where there is no GPU.
pkgs=""
if [ "$(uname -s)" = Linux ] && ! compgen -G '/usr/share/vulkan/icd.d/*.json' >/dev/null \
    && ! compgen -G '/etc/vulkan/icd.d/*.json' >/dev/null; then
  pkgs="$pkgs mesa-vulkan-drivers libvulkan1"
fi
# A C compiler for the native path's hot loop (dmlgpu/runtime/_hot.c, compiled by setup.py when
# the checkout is installed; a wheel carries it compiled); without one the install still works
# and dmlgpu takes the public path.
if [ "$(uname -s)" = Linux ] && ! command -v cc >/dev/null && ! command -v gcc >/dev/null \
    && ! command -v clang >/dev/null; then
  pkgs="$pkgs gcc libc6-dev"
fi
# Debian's system python3 needs python3-venv for `python3 -m venv`.
python3 -c 'import ensurepip' 2>/dev/null || pkgs="$pkgs python3-venv"
if [ -z "$pkgs" ]; then
  done_already "[setup] system packages: nothing to install (a Vulkan ICD and a C compiler present, or not Linux)"
elif command -v apt-get >/dev/null; then
  echo "[setup] system packages: apt-get install$pkgs"
  sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq update
  # shellcheck disable=SC2086  # $pkgs is a list of words
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends $pkgs >/dev/null
else
  echo "[setup] system packages: no apt-get; install yourself:$pkgs" >&2
fi
# Chromium runs exported modules (dmlgpu export) on WebGPU's software adapter, SwiftShader, in
# tests/test_export_browser.py; Debian's package, or the browser DMLGPU_CHROMIUM names. Not
# fatal: without it those tests skip (and fail in CI, which must have it).
if [ "$(uname -s)" = Linux ] && [ -z "${DMLGPU_CHROMIUM:-}" ] && ! command -v chromium >/dev/null \
    && ! command -v chromium-browser >/dev/null; then
  if command -v apt-get >/dev/null; then
    echo "[setup] browser: apt-get install chromium"
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    { $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq update \
        && $sudo env DEBIAN_FRONTEND=noninteractive apt-get -qq install -y --no-install-recommends chromium >/dev/null; } \
      || echo "[setup] browser: chromium could not be installed; the browser tests will skip (CI: fail)" >&2
  else
    echo "[setup] browser: no apt-get; install Chromium yourself (or set DMLGPU_CHROMIUM)" >&2
  fi
fi

# 2. Virtual environment (recreated if missing or broken, e.g. its python was removed).
if .venv/bin/python -c '' 2>/dev/null; then
  done_already "[setup] venv: .venv exists"
else
  echo "[setup] venv: creating .venv"
  # Without pip, which ensurepip would install first (5.6 s of a fresh clone's set-up on 2
  # cores, where this takes 0.2 s): uv installs it below with the rest.
  python3 -m venv --clear --without-pip .venv
fi
# The venv's own pip, from ensurepip, where uv is not there to install one.
venv_pip() { .venv/bin/python -m pip --version >/dev/null 2>&1 || .venv/bin/python -m ensurepip --default-pip >/dev/null; }

# 3. Editable install (setup.py builds the hot loop, dmlgpu/runtime/_hot.so, in place), skipped
#    when pyproject.toml, setup.py and _hot.c are unchanged since the last successful install
#    and .venv still holds an editable dmlgpu pointing at this checkout.
stamp=.venv/.dmlgpu-install-stamp
want="$(.venv/bin/python -c 'import hashlib,sys; print(hashlib.sha256(b"".join(open(f,"rb").read() for f in sys.argv[1:])).hexdigest())' pyproject.toml setup.py dmlgpu/runtime/_hot.c dmlgpu/bench/_round_trips.c)"
built() { { [ -e dmlgpu/runtime/_hot.so ] || [ -e dmlgpu/runtime/_hot_missing.txt ]; } \
  && { [ -e dmlgpu/bench/_round_trips.so ] || [ -e dmlgpu/bench/_round_trips_missing.txt ]; }; }
if [ "$(cat "$stamp" 2>/dev/null)" = "$want" ] && built && .venv/bin/python -I - "$(pwd -P)" <<'EOF' 2>/dev/null
import importlib.metadata as m, json, pathlib, sys
d = json.loads(m.distribution("dmlgpu").read_text("direct_url.json") or "{}")
sys.exit(not (d.get("dir_info", {}).get("editable") and d.get("url") == pathlib.Path(sys.argv[1]).as_uri()))
EOF
then
  done_already "[setup] install: up to date (pyproject.toml, setup.py and _hot.c unchanged)"
else
  # uv installs from PyPI what pip would, downloading in parallel: about 25 s from an
  # empty cache where pip takes 100 s (a 2-core machine), a few seconds from a warm one. It is
  # fetched into .venv with pip; where it cannot be, pip installs, printing what it fetches.
  # No bytecode is compiled here (uv's --compile-bytecode): it compiled all 5,620 files of the
  # extras, 12.6 s of a fresh clone's set-up on 2 cores, where the suite imports about 1,400 of
  # them; scripts/test.sh writes the bytecode of what the suite imports as it first imports it.
  rm -f "$stamp"
  if [ ! -x .venv/bin/uv ]; then
    # by the system's pip where it installs into another environment (pip 22.3 or newer), else
    # by the venv's own
    echo "[setup] install: pip install uv (the installer used below)"
    python3 -m pip --python .venv/bin/python install -q uv 2>/dev/null \
      || { venv_pip && .venv/bin/python -m pip install -q uv; } \
      || echo "[setup] uv could not be installed; pip will install instead" >&2
  fi
  if [ -x .venv/bin/uv ] && { echo "[setup] install: uv pip install -e .[test,lint,docs,release]"
      .venv/bin/uv pip install --python .venv/bin/python -e ".[test,lint,docs,release]"; }; then
    # and pip, which a venv has (its bytecode written as it is first used)
    .venv/bin/uv pip install --python .venv/bin/python -q pip || echo "[setup] pip could not be installed into .venv" >&2
  else
    echo "[setup] install: pip install -e .[test,lint,docs,release]"
    venv_pip
    .venv/bin/python -m pip install --progress-bar on -e ".[test,lint,docs,release]"
  fi
  echo "$want" >"$stamp"
fi
