#!/usr/bin/env bash
# Set up, then run the demo and a quick benchmark. The environment passes through, e.g.
#   DMLGPU_ADAPTER=... bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
source scripts/runtime_dir.sh  # no Mesa "XDG_RUNTIME_DIR is invalid" lines
.venv/bin/dmlgpu demo
# The demo has just said whether the default adapter is a software one, and the bench's first line
# says it again: its notice once is enough.
DMLGPU_SOFTWARE_NOTICE="${DMLGPU_SOFTWARE_NOTICE-0}" .venv/bin/dmlgpu bench --quick
