#!/usr/bin/env bash
# Issue 49 on two H200s (kind nvidia-h200-x2), one call of about five minutes: a change to the
# Dask chunk task against the commit before it, carried as build/old:
# benchmarks/dask_gpus.py (8 GiB in 256 MiB chunks, 3 rounds, 1 GPU then 2, Dask's NumPy run
# once, $H49_ARGS added: --bisect, say) in two processes taking turns, old then new; then
# dask_threads.py on one GPU, old then new (issue 49's "no slower").
# As run in the thirteenth session: 614a884 against 191ea53 (the winners keyed in their own
# width, gathered through one flat index). Next: f94b251 against 219858d (the winners' keys from
# the GPU), with H49_ARGS=--bisect. The predictions are in benchmarks/LOG.md, thirteenth session.
#   rm -rf build/old && mkdir -p build/old && git archive <old commit> | tar -x -C build/old
#   run(kind="nvidia-h200-x2", carry=[".devkit", "build/old"], timeout_s=600,
#       command="source .devkit/prelude.sh && OUT=$OUT H49_ARGS=--bisect bash benchmarks/studies/h49_keys_device_run.sh")
set -uo pipefail
: "${OUT:?set OUT}"
[ -d "$PWD/build/old/dmlgpu" ] || { echo "build/old (the commit before) is missing: carry it" >&2; exit 1; }
base_path="${PYTHONPATH:-}"
# shellcheck source=benchmarks/device_install.sh
source benchmarks/device_install.sh || exit 1
python3 -m pip install -q --upgrade --no-deps --no-build-isolation --target /tmp/dmlgpu-old-site "$root/build/old" || exit 1
base="${base_path:+:$base_path}"
site_of() { if [ "$1" = old ]; then echo /tmp/dmlgpu-old-site; else echo /tmp/dmlgpu-site; fi; }
read -r -a extra <<< "${H49_ARGS:-}"
for v in old new; do
  echo "== dask_gpus.py $v ${H49_ARGS:-}" | tee -a "$OUT/run.log"
  PYTHONPATH="$(site_of $v)$base" timeout 200 python3 "$root/benchmarks/dask_gpus.py" --rounds 3 --no-numpy-timing \
    "${extra[@]}" --json "$OUT/dask-gpus-$v.json" 2>&1 | tee -a "$OUT/run.log"
done
for v in old new; do
  echo "== dask_threads.py $v" | tee -a "$OUT/run.log"
  PYTHONPATH="$(site_of $v)$base" DMLGPU_ADAPTER='#0' timeout 60 python3 "$root/benchmarks/dask_threads.py" \
    --json "$OUT/dask-threads-$v.json" 2>&1 | tee -a "$OUT/run.log"
done
