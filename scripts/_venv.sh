# Shared by quickstart.sh and test.sh: create .venv (if missing) and install memlane into it
# with the versions pinned in constraints.txt. Usage: source scripts/_venv.sh [pip install args...]
# The install is skipped when .venv is current: .venv/.memlane-installed.<hash of the install
# arguments> holds a hash of pyproject.toml and constraints.txt from the last successful install
# with those arguments; an install under other files drops every stamp of other files, so going
# back to earlier files reinstalls (memlane is installed editable, so a source edit needs no
# reinstall). Delete .venv to rebuild.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY="${PYTHON:-python3}"
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  "$PY" -m venv "$ROOT/.venv"
fi
VENV_PY="$ROOT/.venv/bin/python"
STAMP="$ROOT/.venv/.memlane-installed"
venv_files() {  # the hash of the files an install reads
  cat "$ROOT/pyproject.toml" "$ROOT/constraints.txt" | sha256sum | cut -d' ' -f1
}
venv_stamp() {  # the stamp file of these install arguments: venv_stamp [args...]
  printf '%s.%s' "$STAMP" "$(printf '%s\n' "$@" | sha256sum | cut -c1-16)"
}
venv_current() {  # whether the last install with these arguments used today's files: venv_current [args...]
  [ -f "$(venv_stamp "$@")" ] && [ "$(cat "$(venv_stamp "$@")")" = "$(venv_files)" ]
}
venv_installed() {  # record an install with these arguments: venv_installed [args...]
  local files stamp
  files="$(venv_files)"
  for stamp in "$STAMP".*; do  # stamps of other files no longer say what .venv holds
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" != "$files" ]; then rm -f "$stamp"; fi
  done
  printf '%s' "$files" >"$(venv_stamp "$@")"
}
if ! venv_current "$@"; then
  # pip >= 25.1 understands dependency groups (--group dev).
  "$VENV_PY" -m pip install --quiet --disable-pip-version-check --upgrade "pip>=25.1"
  "$VENV_PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" -e "$ROOT" "$@"
  venv_installed "$@"
fi
