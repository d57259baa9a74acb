#!/usr/bin/env bash
# Set up, then the static checks configured in pyproject.toml: ruff (pyflakes, pycodestyle
# errors, bugbear) over the package, tests and benchmarks, and mypy over dmlgpu/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/ruff check dmlgpu tests benchmarks examples
.venv/bin/mypy
