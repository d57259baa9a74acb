#!/usr/bin/env bash
# Set up (setup.sh installs the docs extra: mkdocs, mkdocstrings), then build the documentation
# site from docs/ and the docstrings into site/, with warnings as errors (--strict): a broken link
# or anchor, a page missing from mkdocs.yml's nav, or an API reference entry that no longer
# resolves fails the build. Needs no GPU: mkdocstrings reads the docstrings statically.
# Arguments go to `mkdocs build` (e.g. --site-dir DIR); `.venv/bin/mkdocs serve` previews.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
.venv/bin/mkdocs build --strict "$@"
echo "[docs] built (site/index.html unless --site-dir said otherwise)"
