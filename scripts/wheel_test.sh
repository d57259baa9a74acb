#!/usr/bin/env bash
# What users install, tested as they install it: the sdist and the wheel built as a release
# builds them (python -m build), the wheel's file list checked (scripts/check_wheel.py) and its
# platform tag (auditwheel show, on Linux); the wheel installed into a fresh venv and the suite
# run against it from outside the checkout, so that the checkout cannot be imported by
# accident; then the same with a wheel built without the hot loop (DMLGPU_BUILD_HOT=0), whose
# suite runs on wgpu-py's public path and checks the warning that says why. The browser test
# runs 64 exported cases against each wheel (it ships the modules' runner), the checkout's run
# its 512. Arguments go to pytest (e.g. -q).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd -P)"
bash scripts/setup.sh
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
DMLGPU_BUILD_HOT=0 .venv/bin/python -m build --wheel --outdir "$work/nohot" . >"$work/build-nohot.log" 2>&1 \
  || { tail -40 "$work/build-nohot.log"; exit 1; }
.venv/bin/python scripts/check_wheel.py "$work"/dist/*.whl "$work"/dist/*.tar.gz
.venv/bin/python scripts/check_wheel.py "$work"/nohot/*.whl --no-hot
if [ "$(uname -s)" = Linux ]; then
  .venv/bin/auditwheel show "$work"/dist/*.whl
fi
for kind in dist nohot; do
  python3 -m venv "$work/venv-$kind"
  "$work/venv-$kind/bin/python" -m pip install -q "$(ls "$work/$kind"/*.whl)[test]"
  echo "[wheel_test] the suite against $(basename "$(ls "$work/$kind"/*.whl)") ($kind), from $work"
  (cd "$work" && "$work/venv-$kind/bin/python" - "$repo" "$kind" <<'PY'
import os, sys, dmlgpu
from dmlgpu.runtime.hot import library_path
repo, kind = sys.argv[1:]
assert not os.path.realpath(dmlgpu.__file__).startswith(repo + os.sep), f"imported the checkout: {dmlgpu.__file__}"
assert (library_path()[0] is None) == (kind == "nohot"), library_path()
print("[wheel_test] dmlgpu", dmlgpu.__version__, "from", os.path.dirname(dmlgpu.__file__), "hot loop:", library_path())
PY
  )
  (cd "$work" && DMLGPU_BROWSER_CASES=64 "$work/venv-$kind/bin/python" -m pytest -p no:cacheprovider "$repo/tests" "$@")
done
