"""Click parameter types shared by the commands: ISO-8601 instants, JSON objects, ranking weights.

Each type turns a malformed value into a ``click.BadParameter``, so the CLI exits with
code 2 and a one-line message before anything is opened or stored.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import click

from memlane.errors import ValidationError
from memlane.recall import RankingWeights

__all__ = ["ISO_DATETIME", "JSON_OBJECT", "WEIGHTS", "parse_iso_datetime"]


def parse_iso_datetime(text: str) -> datetime:
    """Parse an ISO-8601 instant that carries a timezone, returned in UTC.

    Args:
        text: e.g. ``2025-03-15T12:00:00Z``, ``2025-03-15T14:00:00+02:00`` or
            ``2025-03-15 12:00:00+00:00``.

    Returns:
        A timezone-aware UTC datetime.

    Raises:
        ValueError: not ISO 8601, or no timezone (a naive time is ambiguous, so it is refused).
    """
    try:
        value = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 date-time (e.g. 2025-03-15T12:00:00Z)") from None
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(
            f"{text!r} has no timezone; add one, e.g. {value.isoformat()}Z or {value.isoformat()}+00:00 "
            "(a naive time is ambiguous)"
        )
    return value.astimezone(UTC)


class IsoDateTime(click.ParamType[datetime]):
    """An ISO-8601 date-time with a timezone (``Z`` or ``+HH:MM``), converted to UTC."""

    name = "ISO8601"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        """Return the parsed UTC datetime, or fail with a message naming the parameter."""
        if isinstance(value, datetime):
            return value
        try:
            return parse_iso_datetime(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class JsonObject(click.ParamType[dict[str, Any]]):
    """A JSON object given on the command line, e.g. ``'{"source": "chat"}'``."""

    name = "JSON"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> dict[str, Any]:
        """Return the decoded object, or fail if it is not valid JSON or not an object."""
        if isinstance(value, dict):
            return value
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError as exc:
            self.fail(f"invalid JSON: {exc.msg} (column {exc.colno})", param, ctx)
        if not isinstance(decoded, dict):
            self.fail(f'must be a JSON object like \'{{"key": "value"}}\', got {value!r}', param, ctx)
        return decoded


class Weights(click.ParamType[RankingWeights]):
    """Three comma-separated ranking weights ``relevance,recency,importance`` (each >= 0, not all 0)."""

    name = "REL,REC,IMP"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> RankingWeights:
        """Return the :class:`RankingWeights`, or fail with the reason."""
        if isinstance(value, RankingWeights):
            return value
        parts = [p.strip() for p in str(value).split(",")]
        if len(parts) != 3:
            self.fail(f"expected three numbers 'relevance,recency,importance', got {value!r}", param, ctx)
        try:
            numbers = [float(p) for p in parts]
        except ValueError:
            self.fail(f"weights must be numbers, got {value!r}", param, ctx)
        try:
            return RankingWeights(*numbers)
        except ValidationError as exc:
            self.fail(str(exc), param, ctx)


ISO_DATETIME = IsoDateTime()
JSON_OBJECT = JsonObject()
WEIGHTS = Weights()
