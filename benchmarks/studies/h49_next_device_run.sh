#!/usr/bin/env bash
# Issue 49's next look, on one H200 (about 2.5 minutes): where a worker's chunk loses its 13 ms.
# 1. h49_chunk_phases.py: the chunk task's calls without Dask, with the host's gather and keys
#    after the reduction timed alone per thread (``partials``), 1 to 3 threads.
# 2. dask_gpus.py on adapter 0 alone, 4 GiB, 3 rounds: 2 threads a worker (the default) and 4.
#   run(command="source .devkit/prelude.sh && OUT=$OUT bash benchmarks/studies/h49_next_device_run.sh", carry=[".devkit"])
set -uo pipefail
: "${OUT:?set OUT}"
# shellcheck source=benchmarks/device_install.sh
source benchmarks/device_install.sh || exit 1
timeout 90 python3 "$root/benchmarks/studies/h49_chunk_phases.py" --chunks 8 --rounds 3 2>&1 | tee "$OUT/h49-phases.txt"
for threads in 2 4; do
  timeout 120 python3 "$root/benchmarks/dask_gpus.py" --adapters 0 --gib 4 --rounds 3 --threads $threads --no-numpy-timing \
    --json "$OUT/h49-dask-1gpu-threads$threads.json" 2>&1 | tee "$OUT/h49-dask-1gpu-threads$threads.txt"
done
