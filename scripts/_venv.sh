# Shared by quickstart.sh and test.sh: create .venv (if missing) and install memlane into it
# with the versions pinned in constraints.txt. Usage: source scripts/_venv.sh [pip install args...]
# The install is skipped when .venv is current: .venv/.memlane-installed holds a hash of
# pyproject.toml, constraints.txt and the install arguments from the last successful install
# (memlane is installed editable, so a source edit needs no reinstall). Delete .venv to rebuild.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
VENV_PY="$ROOT/.venv/bin/python"
STAMP="$ROOT/.venv/.memlane-installed"
venv_wanted() {  # the stamp for these install arguments: venv_wanted [args...]
  { cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt"; printf '%s\n' "$@"; } | sha256sum | cut -d' ' -f1
}
venv_current() {  # whether the last install used these files and arguments: venv_current [args...]
  [ -f "$STAMP" ] && grep -qx "$(venv_wanted "$@")" "$STAMP"
}
if ! venv_current "$@"; then
  # pip >= 25.1 understands dependency groups (--group dev).
  "$VENV_PY" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
  "$VENV_PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" -e "$ROOT" "$@"
  venv_wanted "$@" >>"$STAMP"
fi
