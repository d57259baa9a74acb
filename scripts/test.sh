#!/usr/bin/env bash
# Set up, then run pytest from the repo root in two worker processes (pytest-xdist;
# DMLGPU_TEST_WORKERS=N, or -n N among the arguments, says otherwise); arguments go to pytest
# (paths relative to the repo root). Fails if any test fails, and also if no tests were
# collected (pytest exit 5). The randomized tests draw hundreds of cases by default; .ci/run
# asks thousands (DMLGPU_FUZZ_CASES, DMLGPU_BAD_INPUT_CASES, DMLGPU_DASK_NUMPY_CASES).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
rc=0
echo "[test] pytest -n ${DMLGPU_TEST_WORKERS:-2} $*"
.venv/bin/python -m pytest -n "${DMLGPU_TEST_WORKERS:-2}" "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "[test] FAIL: pytest collected no tests" >&2
fi
exit "$rc"
