#!/usr/bin/env bash
# The full suite on a lent GPU machine without network access, as a new user meets it: the
# checkout installed with pip --target and run from another folder (docs/contributing.md), an
# empty tuning cache, so that the calibration measures in the run. With --tune0, the suite again
# in the same machine start with DMLGPU_TUNE=0 (the built-in defaults): what the calibration is
# held to, case by case (docs/tuning.md).
#
#   OUT=results-dir DMLGPU_COMMIT=abc1234 bash benchmarks/device_suite.sh [--tune0] [bench flags...]
#
# Writes suite.json / suite.txt (and suite.png where matplotlib is), suite-tune0.json / .txt.
set -euo pipefail
: "${OUT:?set OUT to the folder the results go to}"
tune0=0
if [ "${1:-}" = --tune0 ]; then tune0=1; shift; fi
# shellcheck source=benchmarks/device_install.sh
source benchmarks/device_install.sh
export DMLGPU_CACHE_DIR
DMLGPU_CACHE_DIR=$(mktemp -d)
plot=()
if python3 -c 'import matplotlib' 2>/dev/null; then plot=(--plot "$OUT/suite.png"); fi
python3 -m dmlgpu.cli bench --json "$OUT/suite.json" "${plot[@]}" "$@" 2>&1 | tee "$OUT/suite.txt"
if [ "$tune0" = 1 ]; then
  DMLGPU_TUNE=0 python3 -m dmlgpu.cli bench --json "$OUT/suite-tune0.json" "$@" 2>&1 | tee "$OUT/suite-tune0.txt"
fi
