#!/usr/bin/env bash
# Issue 47's next H200 experiment (about 2 minutes): reduce_rows with its next tile's quads loaded
# before it keys this tile's (rows_prefetch), beside the defaults and the calibration's choices,
# on every case of the rows kernel; and axes02 with the batched walk's carry as measured at
# d3f72fc (restored after c436393) beside the calibration's setting. The prediction is in
# benchmarks/LOG.md (twelfth session, "Loads a tile ahead").
#   run(command="source .devkit/prelude.sh && OUT=$OUT bash benchmarks/studies/h47_prefetch_device_run.sh", carry=[".devkit"])
set -uo pipefail
: "${OUT:?set OUT}"
# shellcheck source=benchmarks/device_install.sh
source benchmarks/device_install.sh || exit 1
python3 "$root/benchmarks/compare_tunings.py" cases=tiny_rows3,tiny_rows8,rows_64,rows_256,axes02 "" "rows_prefetch=1" \
  "rows_64:loads_per_thread=4" "rows_64:loads_per_thread=4,rows_prefetch=1" "tiny_rows3:rows_prefetch=1,several_rows_workgroup_size=64" \
  "axes02:min_chunk_per_lane=512,batch=4" --json "$OUT/prefetch.json" 2>&1 | tee "$OUT/prefetch.txt"
