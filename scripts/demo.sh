#!/usr/bin/env bash
# Set up, then run the demo and a quick benchmark. The environment passes through, e.g.
#   DMLGPU_ADAPTER=... bash scripts/demo.sh
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/dmlgpu demo
.venv/bin/dmlgpu bench --quick
