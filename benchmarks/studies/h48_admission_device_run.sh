#!/usr/bin/env bash
# Issue 48 on an H200: admission (one small call at a time per device, from its dispatch to its
# read-back: dmlgpu/runtime/admission.py) against the commit before it, carried as build/main;
# one device call of about 3 minutes:
#   rm -rf build/main && mkdir -p build/main && git archive <commit before> | tar -x -C build/main
#   run(command="source .devkit/prelude.sh && OUT=$OUT bash benchmarks/studies/h48_admission_device_run.sh",
#       carry=[".devkit", "build/main"])
# 1. benchmarks/thread_scaling.py (resident and NumPy-in calls at 1, 2, 4, 8 and 16 threads, p50
#    and p99, torch's same calls beside), spin 500 us, in four processes taking turns: main,
#    this tree, main, this tree (a round each);
# 2. benchmarks/soak.py --seconds 30 --threads 16 on this tree (DMLGPU_TUNE=0, as the last runs).
set -uo pipefail
: "${OUT:?set OUT}"
[ -d "$PWD/build/main/dmlgpu" ] || { echo "build/main (the commit before) is missing: carry it" >&2; exit 1; }
base_path="${PYTHONPATH:-}"
# shellcheck source=benchmarks/device_install.sh
source benchmarks/device_install.sh || exit 1
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --target /tmp/dmlgpu-main-site \
  "$root/build/main" || exit 1
base="${base_path:+:$base_path}"
site_of() { if [ "$1" = main ]; then echo /tmp/dmlgpu-main-site; else echo /tmp/dmlgpu-site; fi; }
for round in 1 2; do
  for v in main new; do
    echo "== $v round $round" | tee -a "$OUT/thread-scaling.txt"
    PYTHONPATH="$(site_of $v)$base" timeout 150 python3 "$root/benchmarks/thread_scaling.py" --seconds 0.5 \
      --spins 500 --rounds 1 --json "$OUT/thread-scaling-$v-$round.json" 2>&1 | grep -v Warning \
      | tee -a "$OUT/thread-scaling.txt"
  done
done
echo "== soak new DMLGPU_TUNE=0" | tee "$OUT/soak.txt"
PYTHONPATH="/tmp/dmlgpu-site$base" DMLGPU_TUNE=0 timeout 90 python3 "$root/benchmarks/soak.py" --seconds 30 \
  --threads 16 --json "$OUT/soak.json" 2>&1 | tee -a "$OUT/soak.txt"
