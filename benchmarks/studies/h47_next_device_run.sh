#!/usr/bin/env bash
# Issue 47's next H200 run (branch h47-next), one device call of about 3 minutes:
#   run(command="source .devkit/prelude.sh && OUT=$OUT bash benchmarks/studies/h47_next_device_run.sh", carry=[".devkit"])
# 1. h200_bounds for llm_batch and all_1gib: the kernel with parts of its WGSL taken out (the
#    subgroup's pooled best, the segment's merge, the race), and the interleaved chunks
#    (segments_interleave) beside the default, the loads alone, the ceiling, torch and CuPy.
# 2. compare_tunings: segments_interleave on every case whose family has it as a candidate; llm_batch
#    in more chunks now that a segment's merge takes 2 barriers, not 8.
set -uo pipefail
: "${OUT:?set OUT}"
# shellcheck source=benchmarks/device_install.sh
source benchmarks/device_install.sh || exit 1
python3 "$root/benchmarks/studies/h200_bounds.py" --cases llm_batch,all_1gib --json "$OUT/bounds.json" 2>&1 | tee "$OUT/bounds.txt"
python3 "$root/benchmarks/compare_tunings.py" cases=all_1gib,llm_argmax,llm_batch,numpy_256mib "" "segments_interleave=1" \
  "segments_interleave=1,batch=4" "llm_batch:min_chunk_per_lane=64" "llm_batch:min_chunk_per_lane=64,segments_interleave=1" \
  "llm_batch:workgroup_size=128,segments_interleave=1" --json "$OUT/interleave.json" 2>&1 | tee "$OUT/interleave.txt"
