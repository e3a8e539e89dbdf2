"""Validation and normalisation of caller input, shared by every entry point.

Each function either returns the normalised value or raises
:class:`memlane.errors.ValidationError` with a message naming the argument (and, inside
lists and objects, the position: ``tags[2]``, ``metadata.source.url``). This module is the
one boundary for text: every string memlane stores or searches passes through
:func:`check_chars` here, whether it comes from Python, a tool call, HTTP or MCP
(:mod:`memlane.operations.arguments` applies the same functions to tool and request arguments).

The input policy (also in the README, "Input policy"):

* **Rejected**: a NUL character (``\\x00``; PostgreSQL text cannot hold it) or a lone
  UTF-16 surrogate (U+D800..U+DFFF, which no UTF-8 store, socket or JSON encoder can
  write) anywhere in any string, including metadata keys and values at any depth; error
  messages name the field and the code point, never echo the raw character.
* **Blank** text — only whitespace, zero-width/format characters (U+200B..U+200D, U+2060,
  U+FEFF, ...), control characters or invisible fillers — is refused where text is
  required (content, query, labels).
* **Limits**: labels (event type, tag, tenant/session/agent/user id) <= 200 characters,
  content <= :data:`MAX_TEXT_CHARS`, queries <= :data:`MAX_QUERY_CHARS`, metadata nested
  <= :data:`MAX_JSON_DEPTH` levels, ``limit`` in 1..:data:`MAX_LIMIT`, tags <= :data:`MAX_TAGS`.
* **Cleaned** (never refused): labels are stripped; tags are stripped, inner whitespace
  collapsed, lower-cased, deduplicated, blank ones dropped, and a single string is one
  tag; importance is clamped to [1, 10] (finite numbers only).
"""

from __future__ import annotations

import math
import numbers
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any

from memlane.clock import require_timezone
from memlane.errors import ValidationError

__all__ = [
    "IMPORTANCE_MAX",
    "IMPORTANCE_MIN",
    "MAX_COUNT",
    "MAX_GRAPH_DEPTH",
    "MAX_JSON_DEPTH",
    "MAX_LABEL_LENGTH",
    "MAX_LIMIT",
    "MAX_QUERY_CHARS",
    "MAX_TAGS",
    "MAX_TEXT_CHARS",
    "VISIBLE_PATTERN",
    "check_at_least",
    "check_chars",
    "check_choice",
    "check_contradiction_threshold",
    "check_flag",
    "check_fraction",
    "check_identifier",
    "check_json_value",
    "check_limit",
    "check_open_fraction",
    "check_positive",
    "check_query",
    "check_text",
    "check_timestamp",
    "clamp_importance",
    "is_blank",
    "json_type_name",
    "normalize_metadata",
    "normalize_tags",
    "safe_text",
    "show_bidi_controls",
]

IMPORTANCE_MIN = 1.0
IMPORTANCE_MAX = 10.0
MAX_LABEL_LENGTH = 200
"""Longest event type, tag, tenant id or session id, in characters."""

MAX_LIMIT = 10_000
"""Largest ``limit`` (or ``top_k``) any read accepts; larger values are refused before any SQL."""

MAX_TEXT_CHARS = 100_000
"""Longest episode content or query, in characters (about 25,000 tokens; split longer documents)."""

MAX_QUERY_CHARS = 10_000
"""Longest query, in characters: a query is not a document (the embedder reads about its first
1,000 characters anyway), and its keyword and date analysis costs grow with its length (#22)."""

MAX_COUNT = 1_000_000
"""Largest count an interface accepts where no tighter bound applies (``token_budget``, ``context_turns``)."""

MAX_TAGS = 64
"""Most tags on one episode, and in one filter (both backends: an SQL statement stays small)."""

MAX_JSON_DEPTH = 32
"""Deepest nesting of objects and lists accepted in metadata and in session messages."""

MAX_GRAPH_DEPTH = 4
"""Deepest knowledge-graph walk (``neighbours`` depth, ``find_paths`` max_depth): each hop multiplies
the rows a store visits. The facade checks it; the stores clamp to it."""

_SURROGATE = re.compile("[\ud800-\udfff]")
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_FILLERS = frozenset("\u034f\u115f\u1160\u3164\uffa0")
"""Invisible characters outside those categories: combining grapheme joiner, Hangul fillers."""


_INVISIBLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0000, 0x0020),
    (0x007F, 0x00A0),
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x0600, 0x0605),
    (0x061C, 0x061C),
    (0x06DD, 0x06DD),
    (0x070F, 0x070F),
    (0x0890, 0x0891),
    (0x08E2, 0x08E2),
    (0x115F, 0x1160),
    (0x1680, 0x1680),
    (0x180E, 0x180E),
    (0x2000, 0x200F),
    (0x2028, 0x202F),
    (0x205F, 0x2064),
    (0x2066, 0x206F),
    (0x3000, 0x3000),
    (0x3164, 0x3164),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF9, 0xFFFB),
    (0x110BD, 0x110BD),
    (0x110CD, 0x110CD),
    (0x13430, 0x13438),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
)
"""The code points :func:`is_blank` counts as invisible, as inclusive ranges (surrogates aside);
tests/unit/test_validation_pattern.py recomputes them from :mod:`unicodedata`."""


def _class_char(code: int) -> str:
    return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)


_INVISIBLE_CLASS = "".join(
    _class_char(a) if a == b else f"{_class_char(a)}-{_class_char(b)}" for a, b in _INVISIBLE_RANGES
)
VISIBLE_PATTERN = f"[^{_INVISIBLE_CLASS}]"
"""A regular expression (JSON Schema ``pattern``) that text with a visible character matches:
what :func:`check_text` requires, so a document can declare it."""


_BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069]")
"""Bidi embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069): they reorder the text
around them, so ``user-\u202enimda\u202c`` would display as ``user-admin``."""


def show_bidi_controls(text: str) -> str:
    """``text`` with every bidi embedding/override/isolate control written visibly as ``<U+202E>``.

    Every display of stored text (the inspector's pages, the CLI's tables) passes through it, so
    a label can never display as another one (#22 item 12). Stored text is unchanged.
    """
    if text.isascii() or _BIDI_CONTROLS.search(text) is None:
        return text
    return _BIDI_CONTROLS.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def json_type_name(value: object) -> str:
    """The JSON name of ``value``'s type (``integer``, ``array``, ``object``, ...), else its Python name."""
    if value is None:
        return "null"
    for kind, name in ((bool, "boolean"), (int, "integer"), (float, "number"), (str, "string")):
        if isinstance(value, kind):
            return name
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def safe_text(text: str) -> str:
    """``text`` with any lone surrogate written as a ``\\udc00`` escape, so it can always be encoded.

    Used on every message that leaves memlane (tool results, HTTP error bodies), so an
    encoder never fails on a caller's bad character.
    """
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def check_chars(value: str, name: str) -> str:
    """Return ``value`` if it holds no NUL character and no lone surrogate.

    Args:
        value: A string.
        name: How to name it in the error (``content``, ``tags[0]``, ``metadata.a.b``).

    Raises:
        ValidationError: a NUL (``\\x00``) or a lone UTF-16 surrogate (U+D800..U+DFFF); the
            message names the field, the code point and its position.
    """
    if "\x00" in value:
        raise ValidationError(f"{name} must not contain NUL characters (\\x00)")
    bad = None if value.isascii() else _SURROGATE.search(value)
    if bad is not None:
        raise ValidationError(
            f"{name} contains a lone surrogate (U+{ord(bad.group()):04X}) at character {bad.start()}; "
            "text must be valid Unicode (encodable as UTF-8)"
        )
    return value


def is_blank(text: str) -> bool:
    """Whether ``text`` has no visible character.

    Blank: only whitespace, control characters (Cc), format characters (Cf: zero-width
    space/joiners U+200B..U+200D, word joiner U+2060, BOM U+FEFF, bidi marks, soft hyphen),
    separators (Zs, Zl, Zp) and invisible fillers (U+034F, U+115F, U+1160, U+3164, U+FFA0).
    """
    first = text[:1]
    if first.isascii() and first.isalnum():  # the common case (non-ASCII fillers can be "alnum")
        return False
    return all(
        ch.isspace() or ch in _FILLERS or unicodedata.category(ch) in _INVISIBLE_CATEGORIES for ch in text
    )


def check_text(value: object, name: str, *, max_chars: int | None = MAX_TEXT_CHARS) -> str:
    """Return ``value`` if it is a string with at least one visible character.

    The text is returned unchanged (content keeps its whitespace).

    Args:
        value: The caller's value.
        name: The argument name for the error message.
        max_chars: Longest accepted length in characters, or ``None`` for no limit.

    Raises:
        ValidationError: not a string, blank (see :func:`is_blank`), longer than
            ``max_chars``, or containing a NUL or a lone surrogate (see :func:`check_chars`).
    """
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be a string, got {json_type_name(value)}")
    check_chars(value, name)
    if not value or is_blank(value):
        detail = "" if not value else " (it has only whitespace, invisible or control characters)"
        raise ValidationError(f"{name} must be a non-empty string{detail}")
    if max_chars is not None and len(value) > max_chars:
        raise ValidationError(f"{name} is longer than {max_chars:,} characters ({len(value):,})")
    return value


def check_query(value: object, name: str = "query") -> str:
    """Return a query: :func:`check_text` with at most :data:`MAX_QUERY_CHARS` characters.

    Raises:
        ValidationError: as :func:`check_text`, or longer than :data:`MAX_QUERY_CHARS`.
    """
    return check_text(value, name, max_chars=MAX_QUERY_CHARS)


def check_identifier(value: object, name: str) -> str:
    """Return a label (event type, tenant id, session id) stripped of surrounding whitespace.

    Labels are case-sensitive and matched exactly.

    Raises:
        ValidationError: not a string, blank, longer than 200 characters, or holding a NUL
            or a lone surrogate.
    """
    text = check_text(value, name, max_chars=None).strip()
    if len(text) > MAX_LABEL_LENGTH:
        raise ValidationError(f"{name} is longer than {MAX_LABEL_LENGTH} characters")
    return text


def clamp_importance(value: object) -> float | None:
    """Clamp an importance rating to [1, 10]; ``None`` stays ``None`` (unrated).

    Args:
        value: A real number (int, float, numpy scalar) or ``None``. Huge finite numbers
            (``10**400`` too) clamp to 10, huge negative ones to 1.

    Returns:
        The rating as a float in [1.0, 10.0], or ``None``.

    Raises:
        ValidationError: a bool, a string (``"8"`` too), another non-number, NaN or an infinity.
    """
    if value is None:
        return None
    if type(value) is float:  # the common cases first; the same results as below
        if not math.isfinite(value):
            raise ValidationError(f"importance must be finite, got {value!r}")
        return min(IMPORTANCE_MAX, max(IMPORTANCE_MIN, value))
    if type(value) is int and value.bit_length() <= 1000:
        return min(IMPORTANCE_MAX, max(IMPORTANCE_MIN, float(value)))
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValidationError(
            f"importance must be a number (clamped to 1-10) or null, got {json_type_name(value)}"
        )
    try:
        number = float(value)
    except OverflowError:  # an integer beyond float range is still a finite number: clamp it
        if not isinstance(value, numbers.Integral):
            raise ValidationError(f"importance must be finite, got {json_type_name(value)}") from None
        number = IMPORTANCE_MAX if int(value) > 0 else IMPORTANCE_MIN
    if not math.isfinite(number):
        raise ValidationError(f"importance must be finite, got {number!r}")
    return min(IMPORTANCE_MAX, max(IMPORTANCE_MIN, number))


def normalize_tags(tags: Iterable[str] | str | None) -> tuple[str, ...]:
    """Normalise tags: strip, collapse inner whitespace, lower-case, drop blanks, dedupe.

    Tags are case-insensitive: ``"Travel "`` and ``"travel"`` are the same tag. Order of
    first appearance is kept. A single string is taken as one tag (on every interface).

    Raises:
        ValidationError: not a list of strings, more than :data:`MAX_TAGS` distinct tags, or a
            tag longer than 200 characters or holding a NUL or a lone surrogate (the message
            names it: ``tags[1]``).
    """
    if tags is None:
        return ()
    if isinstance(tags, str):
        tags = [tags]
    if isinstance(tags, Mapping | bytes) or not isinstance(tags, Iterable):
        raise ValidationError(f"tags must be a list of strings, got {json_type_name(tags)}")
    seen: dict[str, None] = {}
    for i, tag in enumerate(tags):
        if not isinstance(tag, str):
            raise ValidationError(f"tags[{i}] must be a string, got {json_type_name(tag)}")
        check_chars(tag, f"tags[{i}]")
        norm = " ".join(tag.split()).lower()
        if len(norm) > MAX_LABEL_LENGTH:
            raise ValidationError(f"tags[{i}] is longer than {MAX_LABEL_LENGTH} characters: {norm[:40]!r}...")
        if norm and not is_blank(norm):
            seen.setdefault(norm, None)
            if len(seen) > MAX_TAGS:
                raise ValidationError(f"tags must hold at most {MAX_TAGS} tags")
    return tuple(seen)


def check_json_value(value: object, where: str, *, depth: int = 0) -> None:
    """Refuse anything in ``value`` that is not plain, storable JSON.

    Walks objects and lists (at most :data:`MAX_JSON_DEPTH` levels): keys must be strings;
    every string (keys included) passes :func:`check_chars`; floats must be finite.

    Args:
        value: The value to check.
        where: Its name in errors; nested items are named ``where.key`` and ``where[i]``.
        depth: Nesting level of ``value`` (0 for the top).

    Raises:
        ValidationError: naming the first offending item.
    """
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValidationError(f"{where} must be finite, got {value!r}")
    elif isinstance(value, str):
        check_chars(value, where)
    elif isinstance(value, Mapping | list | tuple):
        if depth >= MAX_JSON_DEPTH:
            raise ValidationError(f"{where} is nested deeper than {MAX_JSON_DEPTH} levels")
        for name, item in _json_children(value, where):
            check_json_value(item, name, depth=depth + 1)
    else:
        kinds = "string, number, boolean, null, list or object"
        raise ValidationError(f"{where} must be JSON ({kinds}), got {json_type_name(value)}")


def _json_children(
    value: Mapping[Any, Any] | list[Any] | tuple[Any, ...], where: str
) -> Iterator[tuple[str, Any]]:
    """``(name, item)`` of a list's items, or of an object's values, each key checked as it comes."""
    if not isinstance(value, Mapping):
        yield from ((f"{where}[{i}]", item) for i, item in enumerate(value))
        return
    for key, item in value.items():
        if not isinstance(key, str):
            raise ValidationError(f"{where} keys must be strings, got {key!r}")
        check_chars(key, f"{where} key {key[:40]!r}")
        yield f"{where}.{key}", item


def normalize_metadata(metadata: Mapping[str, Any] | None, name: str = "metadata") -> dict[str, Any]:
    """Return a JSON copy of ``metadata`` (``None`` -> ``{}``); tuples become lists.

    Raises:
        ValidationError: not a mapping, or not plain JSON (see :func:`check_json_value`:
            non-string keys, NaN/infinities, NUL or lone surrogates, nesting deeper than
            32 levels, other types); the message names the item (``metadata.a.b``).
    """
    if metadata is None:
        return {}
    if type(metadata) is dict:
        flat = _flat_copy(metadata)
        if flat is not None:
            return flat
    if not isinstance(metadata, Mapping):
        raise ValidationError(f"{name} must be an object (a mapping), got {json_type_name(metadata)}")
    check_json_value(metadata, name)
    copy: dict[str, Any] = _json_copy(metadata)
    return copy


_SCALARS = frozenset({str, int, float, bool, type(None)})
"""Exact types of the JSON scalars :func:`_flat_copy` accepts (subclasses take the full path)."""


def _clean(text: str) -> bool:
    return "\x00" not in text and (text.isascii() or _SURROGATE.search(text) is None)


def _flat_copy(metadata: dict[Any, Any]) -> dict[str, Any] | None:
    """The fast path of :func:`normalize_metadata`: a copy of a flat object of plain JSON scalars.

    Returns ``None`` (take the full path, which names any error) unless every key is a ``str``
    and every value a ``str``, ``int``, finite ``float``, ``bool`` or ``None`` (exact types), with
    no NUL or lone surrogate in any string; then the result equals the full path's.
    """
    for key, value in metadata.items():
        kind = type(value)
        if type(key) is not str or kind not in _SCALARS or not _clean(key):
            return None
        if kind is str:
            if not _clean(value):
                return None
        elif kind is float and not math.isfinite(value):
            return None
    return dict(metadata)


def _json_copy(value: Any) -> Any:
    """A deep copy of checked JSON data (mappings -> dict, tuples -> list)."""
    if isinstance(value, Mapping):
        return {key: _json_copy(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_json_copy(item) for item in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return int(value)
    return float(value)


def check_limit(value: object, name: str = "limit", *, maximum: int = MAX_LIMIT) -> int:
    """Return ``value`` if it is an integer in ``1..maximum`` (bools, floats and strings refused).

    Args:
        value: The caller's value.
        name: The argument name for the error message.
        maximum: Largest accepted value; never above :data:`MAX_LIMIT`.

    Raises:
        ValidationError: not an int, < 1, or > ``maximum`` (checked before any SQL, so
            ``2**63`` is a ValidationError on every backend).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ValidationError(f"{name} must be a positive integer, got {json_type_name(value)}")
    number = int(value)
    if number < 1:
        raise ValidationError(f"{name} must be >= 1, got {number}")
    top = min(maximum, MAX_LIMIT)
    if number > top:
        shown = str(number) if number.bit_length() <= 64 else f"an integer of {number.bit_length()} bits"
        raise ValidationError(f"{name} must be <= {top}, got {shown}")
    return number


def check_fraction(value: object, name: str) -> float:
    """Return ``value`` as a float if it is a number in [0, 1] (booleans and text refused).

    Raises:
        ValidationError: ``{name} must be a number in [0, 1], got ...`` (the one message of
            every interface, for a wrong type and for a value out of range).
    """
    if not _is_number(value) or not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        raise ValidationError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)  # type: ignore[arg-type]


def check_open_fraction(value: object, name: str) -> float:
    """Return ``value`` as a float if it is a number in (0, 1), both ends excluded.

    Raises:
        ValidationError: ``{name} must be a number in (0, 1), got ...``.
    """
    if not _is_number(value) or not 0.0 < float(value) < 1.0:  # type: ignore[arg-type]
        raise ValidationError(f"{name} must be a number in (0, 1), got {value!r}")
    return float(value)  # type: ignore[arg-type]


def check_positive(value: object, name: str, *, maximum: float = float("inf")) -> float:
    """Return ``value`` as a float if it is a finite number in (0, ``maximum``] (booleans and text refused).

    Raises:
        ValidationError: ``{name} must be a number > 0, got ...`` (or ``<= maximum``).
    """
    if not _is_number(value) or not 0.0 < float(value) < float("inf"):  # type: ignore[arg-type]
        raise ValidationError(f"{name} must be a number > 0, got {value!r}")
    if float(value) > maximum:  # type: ignore[arg-type]
        raise ValidationError(f"{name} must be <= {maximum:g}, got {float(value):g}")  # type: ignore[arg-type]
    return float(value)  # type: ignore[arg-type]


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_at_least(value: object, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """Return ``value`` if it is an integer >= ``minimum`` (booleans, ``5.0`` and ``"5"`` refused).

    Args:
        value: The caller's value.
        name: The argument name for the error message.
        minimum: Smallest accepted value.
        maximum: Largest accepted value (default :data:`MAX_COUNT`).

    Raises:
        ValidationError: ``{name} must be an integer >= {minimum}, got ...`` (or ``<= maximum``).
    """
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if value > maximum:
        shown = str(value) if value.bit_length() <= 64 else f"an integer of {value.bit_length()} bits"
        raise ValidationError(f"{name} must be <= {maximum}, got {shown}")
    return value


def check_flag(value: object, name: str) -> bool:
    """Return ``value`` if it is a boolean (``"true"`` and ``1`` refused).

    Raises:
        ValidationError: not a boolean.
    """
    if not isinstance(value, bool):
        raise ValidationError(f"{name} must be true or false, got {json_type_name(value)}")
    return value


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``.

    Raises:
        ValidationError: ``{name} must be one of a, b, got 'x'``.
    """
    if not isinstance(value, str) or value not in choices:
        shown = repr(safe_text(value)) if isinstance(value, str) else json_type_name(value)
        raise ValidationError(f"{name} must be one of {', '.join(choices)}, got {shown}")
    return value


def check_timestamp(value: object, name: str) -> datetime:
    """Return a timezone-aware instant: a ``datetime`` or ISO 8601 text (``2025-01-09T12:00:00-08:00``).

    The zone is kept (relative time expressions are resolved in the zone of ``now``).

    Raises:
        ValidationError: not ISO 8601 date-time text or a ``datetime``, or without a timezone.
    """
    parsed = value
    if isinstance(value, str):
        text = value.strip()
        try:
            parsed = datetime.fromisoformat(text[:-1] + "+00:00" if text[-1:] in "zZ" and text else text)
        except ValueError:
            raise ValidationError(
                f"{name} must be an ISO 8601 date-time with a timezone, got {safe_text(value[:40])!r}"
            ) from None
    if not isinstance(parsed, datetime):
        raise ValidationError(
            f"{name} must be an ISO 8601 date-time with a timezone, got {json_type_name(value)}"
        )
    return require_timezone(parsed, name)


def check_contradiction_threshold(threshold: object) -> float:
    """A contradiction confidence threshold: a number in (0, 1], as a float.

    Raises:
        ValidationError: not a number (``bool`` included) or outside (0, 1].
    """
    if isinstance(threshold, bool) or not isinstance(threshold, int | float) or not 0.0 < threshold <= 1.0:
        raise ValidationError(f"threshold must be a number in (0, 1], got {threshold!r}")
    return float(threshold)
