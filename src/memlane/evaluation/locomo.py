"""The LoCoMo benchmark's data: the file format (re-exported) and where a local copy lives.

The format itself (:class:`LocomoConversation`, :func:`parse_locomo`, :func:`load_locomo`, evidence
cleaning) is :mod:`memlane.sessions.locomo_format`, which the session importer also reads; this module
adds :func:`default_locomo_path`, which only the benchmark harness needs. The data (CC BY-NC 4.0) is
never bundled with memlane.
"""

from __future__ import annotations

from pathlib import Path

from memlane.sessions.locomo_format import (
    LOCOMO_CATEGORIES,
    SESSION_DATETIME_FORMAT,
    EvidenceCleaning,
    LocomoConversation,
    LocomoFormatError,
    LocomoQuestion,
    LocomoTurn,
    clean_evidence,
    load_locomo,
    normalise_dia_id,
    parse_locomo,
    parse_session_datetime,
)

__all__ = [
    "LOCOMO_CATEGORIES",
    "SESSION_DATETIME_FORMAT",
    "EvidenceCleaning",
    "LocomoConversation",
    "LocomoFormatError",
    "LocomoQuestion",
    "LocomoTurn",
    "clean_evidence",
    "default_locomo_path",
    "load_locomo",
    "normalise_dia_id",
    "parse_locomo",
    "parse_session_datetime",
]

_DEFAULT_RELATIVE_PATH = Path("..", "shared", "datasets", "locomo", "locomo10.json")


def _repository_root(start: Path) -> Path | None:
    for directory in (start, *start.parents):
        if (directory / "pyproject.toml").is_file():
            return directory
    return None


def default_locomo_path() -> Path | None:
    """Find a local ``locomo10.json`` without downloading anything.

    Looks, in order, at ``../shared/datasets/locomo/locomo10.json`` relative to the
    current working directory, then relative to the repository root (the nearest
    directory above this file that contains ``pyproject.toml``; absent for an
    installed wheel).

    Returns:
        The absolute path of the first file found, or ``None`` when there is none.
    """
    candidates = [Path.cwd() / _DEFAULT_RELATIVE_PATH]
    root = _repository_root(Path(__file__).resolve().parent)
    if root is not None:
        candidates.append(root / _DEFAULT_RELATIVE_PATH)
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    return None
