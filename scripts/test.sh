#!/usr/bin/env bash
# Install memlane with its dev tools in .venv, then lint, type-check and run the test suite.
# Extra arguments go to pytest (e.g. scripts/test.sh -k scope -x).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/_venv.sh" --group dev
cd "$ROOT"
.venv/bin/ruff format --check src tests benchmarks
.venv/bin/ruff check src tests benchmarks
.venv/bin/mypy
exec .venv/bin/python -m pytest "$@"
