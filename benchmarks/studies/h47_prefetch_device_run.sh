#!/usr/bin/env bash
# Issue 47's next H200 experiment (about 3 minutes): reduce_rows with its next tile's quads loaded
# before it keys this tile's (rows_prefetch) on every case of the rows kernel, and the segments
# kernel's batched walk with its next batch loaded before it folds this one (walk_prefetch) on
# the cases it serves, beside the defaults and the calibration's choices; axes02 with the walk's
# carry as measured at d3f72fc (restored after c436393). The prediction is in
# benchmarks/LOG.md (twelfth session, "Loads a tile ahead").
#   run(command="source .devkit/prelude.sh && OUT=$OUT bash benchmarks/studies/h47_prefetch_device_run.sh", carry=[".devkit"])
set -uo pipefail
: "${OUT:?set OUT}"
# shellcheck source=benchmarks/device_install.sh
source benchmarks/device_install.sh || exit 1
python3 "$root/benchmarks/compare_tunings.py" cases=tiny_rows3,tiny_rows8,rows_64,rows_256 "" "rows_prefetch=1" \
  "rows_64:loads_per_thread=4" "rows_64:loads_per_thread=4,rows_prefetch=1" "tiny_rows3:rows_prefetch=1,several_rows_workgroup_size=64" \
  --json "$OUT/prefetch-rows.json" 2>&1 | tee "$OUT/prefetch-rows.txt"
python3 "$root/benchmarks/compare_tunings.py" cases=rows,rows_f16,rows_int8,all_1gib,axes02,llm_batch "" "walk_prefetch=1" \
  "rows_int8:workgroup_size=128" "rows_int8:workgroup_size=128,walk_prefetch=1" "rows_f16:workgroup_size=128,walk_prefetch=1" \
  "axes02:min_chunk_per_lane=512,batch=4" "axes02:min_chunk_per_lane=512,batch=4,walk_prefetch=1" "llm_batch:walk_prefetch=1,batch=4" \
  --json "$OUT/prefetch-walk.json" 2>&1 | tee "$OUT/prefetch-walk.txt"
