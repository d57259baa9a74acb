#!/usr/bin/env bash
# Issue 49 on two H200s (device kind nvidia-h200-x2), in one call of about four and a half
# minutes (at most nine: each step runs under a timeout): does a Dask worker's chunk now travel
# while another is reduced? The prediction, and what to compare, are in benchmarks/LOG.md,
# 2026-11-28 (issue 49, branch h49).
#
# Here, before the call (needs the network): bash benchmarks/stage_dask_wheels.sh (the dask and
# distributed wheels into .devkit/, beside the kit's wgpu and cffi). Then, with the device tool:
#   run(kind="nvidia-h200-x2", carry=[".devkit"], timeout_s=600,
#       command="DMLGPU_COMMIT=<the commit's short hash> bash benchmarks/studies/h49_device_run.sh")
# ($OUT is the device tool's.) Four files come back: run.log (everything printed),
# dask-gpus.json (the default run: 8 GiB in 256 MiB chunks, 5 rounds of dmlgpu, upload-only and
# Dask's NumPy, 1 GPU then 2), dask-gpus-nap0.json (the same with waits blocking in wgpu's poll,
# as before issue 49, Dask's NumPy run once: the A/B in this machine start), dask-threads.json
# (one GPU, Dask's threaded scheduler on a 4 GiB NumPy array, with naps and with blocking waits:
# issue 49's "no slower").
#
# H49_DRY=1 checks the script itself on any machine (lavapipe): no install (the dmlgpu that
# python3 imports), small sizes (about 45 s on a 2-core host).
set -uo pipefail
: "${OUT:?set OUT to the folder the results go to}"
root=$PWD
log="$OUT/run.log"
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }
{
  step "setup"
  if [ -f .devkit/prelude.sh ]; then
    # shellcheck disable=SC1091  # the kit's (git-ignored): the NVIDIA Vulkan driver, wgpu, cffi, and the dask wheels
    source .devkit/prelude.sh || echo "prelude.sh failed"
  fi
  export PYTHONUNBUFFERED=1 DMLGPU_COMMIT="${DMLGPU_COMMIT:-unknown}"
  size=() threads_size=()
  if [ "${H49_DRY:-0}" = 1 ]; then
    size=(--small --rounds 2) threads_size=(--small)
    cd /tmp
  else
    # shellcheck source=benchmarks/device_install.sh
    source "$root/benchmarks/device_install.sh" || exit 1
  fi
  python3 -c 'import dask, distributed; print("dask", dask.__version__, "distributed", distributed.__version__)' || exit 1
  python3 -m dmlgpu.cli info 2>&1 | head -40
  nvidia-smi topo -m 2>&1 | head -20
  nproc; free -g | head -2

  step "the overlap tests on a GPU (naps: beside >= 1; blocking waits: 0)"
  timeout 60 python3 -m pytest -q -p no:cacheprovider "$root/tests/test_overlap.py"

  step "dask_gpus.py, the default (8 GiB, 256 MiB chunks, 5 rounds; 1 GPU, then 2)"
  timeout 240 python3 "$root/benchmarks/dask_gpus.py" "${size[@]}" --json "$OUT/dask-gpus.json"

  step "dask_gpus.py with waits blocking in wgpu's poll (DMLGPU_NAP_US=0, as before issue 49); Dask's NumPy once"
  timeout 120 python3 "$root/benchmarks/dask_gpus.py" "${size[@]}" --nap-us 0 --no-numpy-timing --json "$OUT/dask-gpus-nap0.json"

  step "dask_threads.py on one GPU: naps (50 us) and blocking waits (0), processes in turns"
  for nap in 50 0; do
    DMLGPU_ADAPTER='#0' DMLGPU_NAP_US=$nap timeout 50 python3 "$root/benchmarks/dask_threads.py" "${threads_size[@]}" --json "/tmp/dask-threads-nap$nap.json"
  done
  python3 - <<'EOF'
import json, os
runs = {nap: json.load(open(f"/tmp/dask-threads-nap{nap}.json")) for nap in ("50", "0") if os.path.exists(f"/tmp/dask-threads-nap{nap}.json")}
json.dump({"nap_us": runs}, open(os.path.join(os.environ["OUT"], "dask-threads.json"), "w"), indent=2)
for nap, r in runs.items():
    print(f"nap_us={nap}: " + ", ".join(f"{k} {v['dmlgpu_gbps']:.1f} GB/s ({v['speedup']:.2f}x Dask's NumPy)" for k, v in r["results"].items()))
EOF
  step "done"
} 2>&1 | tee "$log"
