#!/usr/bin/env bash
# Set up, then run pytest from the repo root; arguments go to pytest (paths relative to the
# repo root). Fails if any test fails, and also if no tests were collected (pytest exit 5).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
rc=0
.venv/bin/python -m pytest "$@" || rc=$?
if [ "$rc" -eq 5 ]; then
  echo "[test] FAIL: pytest collected no tests" >&2
fi
exit "$rc"
