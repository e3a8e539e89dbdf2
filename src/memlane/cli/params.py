"""Click parameter types shared by the commands: ISO-8601 instants, JSON objects, ranking weights.

Each type turns a malformed value into a ``click.BadParameter``, so the CLI exits with
code 2 and a one-line message before anything is opened or stored.

The options generated from a request field (:func:`field_option`, :class:`FieldType`) name the
request by its name in :mod:`memlane.operations.requests`: their help comes from the field's
JSON schema as :data:`FIELD_SCHEMAS_FILE` records it (generated from the requests by
``python -m memlane.cli.registry``; a test fails when it is stale), so a command's ``--help``
imports neither pydantic nor the requests; a given value is checked by the field's own check,
which imports the request's room then.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterable
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from memlane.clock import require_timezone
from memlane.errors import ValidationError
from memlane.validation import MAX_LIMIT

if TYPE_CHECKING:  # imported when a value is converted: --help needs no pydantic or ranking
    from memlane.operations.fields import ArgumentCheck
    from memlane.recall import RankingWeights

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "FIELD_SCHEMAS_FILE",
    "IMPORTANCE",
    "ISO_DATETIME",
    "JSON_OBJECT",
    "WEIGHTS",
    "FieldType",
    "field_option",
    "field_schema",
    "generated_field_schemas",
    "parse_iso_datetime",
]


def parse_iso_datetime(text: str) -> datetime:
    """Parse an ISO-8601 instant that carries a timezone, kept in its own zone.

    The year is checked as written, like every interface's (:func:`memlane.clock.require_timezone`:
    ``0001-01-01T00:00:00+14:00`` is refused here, and ``2999-12-31T23:59:59-14:00`` accepted as in
    Python), and the instant is not converted: converting an extreme one to UTC could overflow.

    Args:
        text: e.g. ``2025-03-15T12:00:00Z``, ``2025-03-15T14:00:00+02:00`` or
            ``2025-03-15 12:00:00+00:00``.

    Returns:
        A timezone-aware datetime, in the zone ``text`` gives.

    Raises:
        ValueError: not ISO 8601, no timezone (a naive time is ambiguous, so it is refused), or
            a year outside the accepted years.
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
    try:
        return require_timezone(value, "the time")
    except ValidationError as exc:
        raise ValueError(str(exc)) from None


class IsoDateTime(click.ParamType[datetime]):
    """An ISO-8601 date-time with a timezone (``Z`` or ``+HH:MM``), in the zone it gives."""

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


class Weights(click.ParamType["RankingWeights"]):
    """Three comma-separated ranking weights ``relevance,recency,importance`` (each >= 0, not all 0)."""

    name = "REL,REC,IMP"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> RankingWeights:
        """Return the :class:`RankingWeights`, or fail with the reason."""
        from memlane.recall import RankingWeights

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


class ImportanceRating(click.ParamType[float | str]):
    """An importance rating (a number, clamped to 1-10 by the memory) or ``auto`` (estimated)."""

    name = "1-10|auto"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float | str:
        """Return the number, or ``"auto"``; fail on anything else."""
        from memlane.importance import AUTO_IMPORTANCE

        if isinstance(value, float | int) and not isinstance(value, bool):
            return float(value)
        if str(value).strip().lower() == AUTO_IMPORTANCE:
            return AUTO_IMPORTANCE
        try:
            return float(value)
        except ValueError:
            self.fail(f"expected a number from 1 to 10 or 'auto', got {value!r}", param, ctx)


ISO_DATETIME = IsoDateTime()
JSON_OBJECT = JsonObject()
WEIGHTS = Weights()
IMPORTANCE = ImportanceRating()


_NUMBER_PARSERS: dict[str, Callable[[str], Any]] = {"integer": int, "number": float}


FIELD_SCHEMAS_FILE = Path(__file__).with_name("field_schemas.json")
"""Request name -> field -> the field's JSON schema (as the tools publish it, with the CLI's
maximum), for every field a CLI option is generated from. Generated: see the module docstring."""


@cache
def _recorded_schemas() -> dict[str, dict[str, dict[str, Any]]]:
    recorded: dict[str, dict[str, dict[str, Any]]] = json.loads(
        FIELD_SCHEMAS_FILE.read_text(encoding="utf-8")
    )
    return recorded


def _declared_schema(request: str, name: str) -> dict[str, Any]:
    """The field's JSON schema generated from the request itself (imports pydantic and its room)."""
    from memlane.operations import requests
    from memlane.operations.fields import tool_parameters

    schema: dict[str, Any] = tool_parameters(getattr(requests, request), MAX_LIMIT)["properties"][name]
    return schema


def field_schema(request: str, name: str) -> dict[str, Any]:
    """The JSON schema of field ``name`` of request ``request`` (with the CLI's maximum limit).

    Read from :data:`FIELD_SCHEMAS_FILE`; a field it does not record (the file is stale) is
    generated from the request.

    Args:
        request: A request's name in :mod:`memlane.operations.requests`, e.g. ``"RecallBody"``.
        name: One of its fields.

    Raises:
        AttributeError: no request has that name (only for a field the file does not record).
        KeyError: the request has no such field (idem).
    """
    recorded = _recorded_schemas().get(request, {}).get(name)
    return dict(recorded) if recorded is not None else _declared_schema(request, name)


def generated_field_schemas(commands: Iterable[click.Command]) -> dict[str, dict[str, dict[str, Any]]]:
    """What :data:`FIELD_SCHEMAS_FILE` should hold for ``commands`` (and their subcommands).

    Each field a :class:`FieldType` parameter of theirs names, with its schema generated from the
    request (imports the requests).
    """
    found: dict[str, dict[str, dict[str, Any]]] = {}
    todo = list(commands)
    while todo:
        command = todo.pop()
        if isinstance(command, click.Group):
            todo.extend(command.commands.values())
        for param in command.params:
            if isinstance(param.type, FieldType):
                kind = param.type
                found.setdefault(kind.request, {})[kind.field] = _declared_schema(kind.request, kind.field)
    return {request: dict(sorted(fields.items())) for request, fields in sorted(found.items())}


class FieldType(click.ParamType[Any]):
    """A request field as a click type: the text is read as the field's JSON type, then checked
    by the field's own memlane check, so a bad value has the message of every other interface.

    Args:
        request: The operation's request, by its name in :mod:`memlane.operations.requests`
            (e.g. ``"RecallBody"``).
        name: The field.

    Attributes:
        schema: The field's JSON schema (:func:`field_schema`).
    """

    def __init__(self, request: str, name: str) -> None:
        self.request = request
        self.field = name
        self.schema = field_schema(request, name)
        self.name = str(self.schema.get("format", self.schema.get("type", "text"))).upper()
        self._check: ArgumentCheck | None = None

    def check(self, value: Any) -> Any:
        """Run the field's memlane check on ``value`` (built on first use from the request).

        Raises:
            ValidationError: the check refuses ``value``.
        """
        if self._check is None:
            from memlane.operations import requests
            from memlane.operations.fields import bounded, field_check

            declared = bounded(getattr(requests, self.request), MAX_LIMIT)
            self._check = field_check(self.field, declared.model_fields[self.field])
        return self._check(value)

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """Read ``value`` as the field's JSON type (text that is not a number stays text) and check it."""
        parse = _NUMBER_PARSERS.get(str(self.schema.get("type")))
        if isinstance(value, str) and parse is not None:
            with contextlib.suppress(ValueError):  # not a number: the check names the wrong type
                value = parse(value)
        try:
            return self.check(value)
        except ValidationError as exc:
            self.fail(str(exc), param, ctx)


def _bounds_text(schema: dict[str, Any]) -> str:
    """The field's bounds for a help text: ``In [0, 1].`` or ``>= 1, <= 10000.``."""
    low, high = schema.get("minimum"), schema.get("maximum")
    if schema.get("type") == "number" and low is not None and high is not None:
        return f"In [{low}, {high}]."
    parts = [f">= {low}" if low is not None else "", f"<= {high}" if high is not None else ""]
    shown = ", ".join(p for p in parts if p)
    return f"{shown}." if shown else ""


def field_option(request: str, name: str, *decls: str, help_suffix: str = "") -> Callable[[F], F]:
    """A ``--name`` option generated from a request field: its type, bounds, check and help.

    Args:
        request: The operation's request, by its name in :mod:`memlane.operations.requests`.
        name: The field (the option is ``--field-name`` unless ``decls`` are given).
        decls: Click's parameter declarations, e.g. ``("--tag", "tags")``.
        help_suffix: Text the CLI adds to the field's description (e.g. its config default).
    """
    kind = FieldType(request, name)
    choices = kind.schema.get("enum")
    described = kind.schema.get("description") or ""
    option_help = " ".join(part for part in (described, _bounds_text(kind.schema), help_suffix) if part)
    return click.option(
        *(decls or (f"--{name.replace('_', '-')}", name)),
        type=kind,
        default=None,
        help=option_help,
        metavar="|".join(choices) if choices else kind.name,
    )
