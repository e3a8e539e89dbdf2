"""What every benchmark script writes: a results document as JSON and Markdown, side by side.

Scripts run as ``python benchmarks/NAME.py`` (``benchmarks/`` is first on ``sys.path``), so they
import this module as ``_results``. A script calls :func:`write_results` only after a complete
run: a partial or exploratory run never overwrites committed figures.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def write_results(out: Path, document: Any, markdown: str) -> None:
    """Write ``document`` to ``out`` (indented JSON, UTF-8) and ``markdown`` beside it (``.md``).

    Args:
        out: The JSON file (``benchmarks/results/NAME.json`` by default); its folder is created.
        document: The figures, JSON-serialisable.
        markdown: The human-readable report written to ``out.with_suffix(".md")``.
    """
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown, encoding="utf-8")
