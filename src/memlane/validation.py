"""Validation and normalisation of caller input, shared by every entry point.

Each function either returns the normalised value or raises
:class:`memlane.errors.ValidationError` with a message naming the argument.
"""

from __future__ import annotations

import json
import math
import numbers
from collections.abc import Iterable, Mapping
from typing import Any

from memlane.errors import ValidationError

__all__ = [
    "IMPORTANCE_MAX",
    "IMPORTANCE_MIN",
    "MAX_LABEL_LENGTH",
    "check_identifier",
    "check_limit",
    "check_text",
    "clamp_importance",
    "normalize_metadata",
    "normalize_tags",
]

IMPORTANCE_MIN = 1.0
IMPORTANCE_MAX = 10.0
MAX_LABEL_LENGTH = 200
"""Longest event type, tag, tenant id or session id, in characters."""


def check_text(value: object, name: str) -> str:
    """Return ``value`` if it is a string with at least one non-whitespace character.

    The text is returned unchanged (content keeps its whitespace).

    Raises:
        ValidationError: not a string, empty/blank, or containing a NUL character (which
            PostgreSQL text cannot store; refused everywhere so backends behave alike).
    """
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise ValidationError(f"{name} must be a non-empty string")
    if "\x00" in value:
        raise ValidationError(f"{name} must not contain NUL characters (\\x00)")
    return value


def check_identifier(value: object, name: str) -> str:
    """Return a label (event type, tenant id, session id) stripped of surrounding whitespace.

    Labels are case-sensitive and matched exactly.

    Raises:
        ValidationError: not a string, blank, or longer than 200 characters.
    """
    text = check_text(value, name).strip()
    if len(text) > MAX_LABEL_LENGTH:
        raise ValidationError(f"{name} is longer than {MAX_LABEL_LENGTH} characters")
    return text


def clamp_importance(value: object) -> float | None:
    """Clamp an importance rating to [1, 10]; ``None`` stays ``None`` (unrated).

    Args:
        value: A real number (int, float, numpy scalar) or ``None``.

    Returns:
        The rating as a float in [1.0, 10.0], or ``None``.

    Raises:
        ValidationError: a bool, a non-number, NaN or an infinity.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValidationError(f"importance must be a number (clamped to 1-10) or None, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise ValidationError(f"importance must be finite, got {value!r}")
    return min(IMPORTANCE_MAX, max(IMPORTANCE_MIN, number))


def normalize_tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    """Normalise tags: strip, collapse inner whitespace, lower-case, drop empties, dedupe.

    Tags are case-insensitive: ``"Travel "`` and ``"travel"`` are the same tag. Order of
    first appearance is kept. A single string is taken as one tag.

    Raises:
        ValidationError: a tag that is not a string, or longer than 200 characters.
    """
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    if isinstance(tags, Mapping) or not isinstance(tags, Iterable):
        raise ValidationError(f"tags must be a list of strings, got {type(tags).__name__}")
    seen: dict[str, None] = {}
    for tag in tags:
        if not isinstance(tag, str):
            raise ValidationError(f"every tag must be a string, got {tag!r}")
        if "\x00" in tag:
            raise ValidationError("tags must not contain NUL characters (\\x00)")
        norm = " ".join(tag.split()).lower()
        if len(norm) > MAX_LABEL_LENGTH:
            raise ValidationError(f"tag longer than {MAX_LABEL_LENGTH} characters: {norm[:40]!r}...")
        if norm:
            seen.setdefault(norm, None)
    return tuple(seen)


def normalize_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """Return a JSON round-tripped copy of ``metadata`` (``None`` -> ``{}``).

    Raises:
        ValidationError: not a mapping with string keys, or not JSON-serialisable
            (NaN and infinities are refused too).
    """
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise ValidationError(f"metadata must be a mapping, got {type(metadata).__name__}")
    try:
        text = json.dumps(metadata, allow_nan=False, ensure_ascii=False)
        copy = json.loads(text)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata must be JSON-serialisable: {exc}") from exc
    if not all(isinstance(k, str) for k in metadata):
        raise ValidationError("metadata keys must be strings")
    return dict(copy)


def check_limit(value: object) -> int:
    """Return ``value`` if it is a positive int (bools refused).

    Raises:
        ValidationError: not an int, or < 1.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"limit must be a positive integer, got {value!r}")
    if int(value) < 1:
        raise ValidationError(f"limit must be >= 1, got {value!r}")
    return int(value)
