#!/usr/bin/env bash
# Stage the dask extra for the GPU machine, which has no network: the wheels of dask[array] and
# distributed with their dependencies, for CPython 3.12 on x86-64 Linux, into .devkit/ beside
# wgpu's (which the GPU machine's own kit stages there). There `source .devkit/prelude.sh`
# installs every .devkit/*.whl. NumPy is not staged: the GPU machine has it (dask needs >= 1.24).
# Pure Python: dask, distributed, click, cloudpickle, fsspec, jinja2, locket, packaging, partd,
# sortedcontainers, tblib, toolz, zict. Compiled (manylinux, x86-64): markupsafe, msgpack,
# psutil, pyyaml, tornado. About 5.5 MB in all.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=.venv/bin/python; [ -x "$python" ] || python=python3
mkdir -p .devkit
"$python" -m pip download -q --no-deps --only-binary=:all: -d .devkit \
  --python-version 3.12 --implementation cp --abi cp312 --abi abi3 --abi none \
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 \
  --platform manylinux2010_x86_64 --platform manylinux1_x86_64 --platform any \
  dask==2026.8.0 distributed==2026.8.0 click==8.5.1 cloudpickle==3.1.2 fsspec==2026.9.0 jinja2==3.1.6 \
  locket==1.0.0 packaging==26.3 partd==1.4.2 sortedcontainers==2.4.0 tblib==3.2.2 toolz==1.2.0 \
  zict==3.0.0 markupsafe==3.0.4 msgpack==1.2.4 psutil==7.2.2 pyyaml==6.0.3 tornado==6.6.1
echo "staged the dask extra into .devkit/ (git-ignored); on the GPU machine: source .devkit/prelude.sh && ..."
