#!/usr/bin/env bash
# Quick start: install memlane in .venv and run the main job on the embedded default
# (SQLite file + bundled offline embedding model): remember a small example conversation
# and recall from it, showing the score breakdown.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ ! -x "$HERE/../.venv/bin/memlane" ]; then
  echo "memlane quick start: creating .venv and installing memlane with its pinned dependencies" \
    "(the first run downloads packages: about 1-2 minutes)..." >&2
fi
args=("$@")
set --  # _venv.sh passes its arguments to pip: the demo's options are not for pip
source "$HERE/_venv.sh"
echo "memlane quick start: running 'memlane demo' (loads the bundled embedding model)..." >&2
# The demo itself says how to put the memlane command on PATH when it is not there.
exec "$ROOT/.venv/bin/memlane" demo ${args[@]+"${args[@]}"}
