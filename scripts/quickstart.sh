#!/usr/bin/env bash
# Quick start: install memlane in .venv and run the main job on the embedded default
# (SQLite file + bundled offline embedding model): remember a small example conversation
# and recall from it, showing the score breakdown.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh"
exec "$ROOT/.venv/bin/memlane" demo "$@"
