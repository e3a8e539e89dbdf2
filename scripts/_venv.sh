# Shared by quickstart.sh and test.sh: create .venv (if missing) and install memlane into it
# with the versions pinned in constraints.txt. Usage: source scripts/_venv.sh [pip install args...]
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
VENV_PY="$ROOT/.venv/bin/python"
# pip >= 25.1 understands dependency groups (--group dev).
"$VENV_PY" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
"$VENV_PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" -e "$ROOT" "$@"
