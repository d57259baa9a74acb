#!/usr/bin/env bash
# Issue 47 experiment 2 (session 11): columns lanes only where chunks race, with unroll / threads;
# the INT8 skip test's fast path; axes02 in chunks of whole inner rows.
set -uo pipefail
root=$PWD
python3 -m pip install -q --no-deps --no-build-isolation --target /tmp/dmlgpu-site "$root" || exit 1
export PYTHONPATH="/tmp/dmlgpu-site${PYTHONPATH:+:$PYTHONPATH}"
cd /tmp
python3 "$root/benchmarks/compare_tunings.py" cases=cols,wide_cols,seg_classes,tall_axis0 "" "columns_unroll=4" \
  "columns_lanes=8,columns_unroll=4" "columns_lanes=8,columns_unroll=4,target_threads=262144" "columns_lanes=16,columns_unroll=4" \
  "columns_lanes=16,columns_unroll=4,target_threads=262144" "columns_lanes=4,columns_unroll=4,target_threads=262144" \
  "columns_lanes=8,target_threads=262144" --json "$OUT/lanes.json" 2>&1 | tee "$OUT/lanes.txt"
python3 "$root/benchmarks/compare_tunings.py" cases=axes02,rows_int8,rows_f16,rows "" \
  "axes02:min_chunk_per_lane=512,batch=4" "axes02:target_workgroups=16384,min_chunk_per_lane=16" \
  "axes02:target_workgroups=16384,min_chunk_per_lane=16,workgroup_size=64" "axes02:target_workgroups=16384,min_chunk_per_lane=16,workgroup_size=128" \
  "axes02:target_workgroups=8192,min_chunk_per_lane=32,workgroup_size=128" "axes02:target_workgroups=16384,min_chunk_per_lane=16,workgroup_size=64,batch=4" \
  "rows_int8:workgroup_size=128" "rows_int8:batch=4" "rows_int8:workgroup_size=128,batch=4" \
  "rows_f16:workgroup_size=128" "rows:workgroup_size=128" --json "$OUT/settings.json" 2>&1 | tee "$OUT/settings.txt"
