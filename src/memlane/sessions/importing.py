"""Reading conversations to import as session episodes: OpenAI-format records and LoCoMo.

**OpenAI-format records** (``.json``: one record or an array of records; ``.jsonl``: one
record per line)::

    {"session_id": "s-42",                          # required, 1-200 chars, unique per tenant
     "agent_id": "support", "user_id": "u-7",       # optional: default the importer's --agent/--user
     "started_at": "2026-05-25T09:00:00Z",          # optional ISO 8601 with a timezone
     "ended_at": "2026-05-25T09:30:00Z",            # optional; default started_at
     "metadata": {"channel": "web"},                # optional JSON object
     "messages": [{"role": "user", "content": "..."}, ...]}   # required, OpenAI chat format

Unknown fields are refused, so a misspelt field is an error rather than silently dropped.
A record without ``started_at``/``ended_at`` is dated at import time.

**LoCoMo** (``locomo10.json``, detected by its shape: a JSON array of samples with a
``conversation`` object): each session of each sample becomes one session episode with

* ``session_id`` ``"<sample_id>/session_<n>"`` (e.g. ``"conv-26/session_3"``);
* ``user_id`` the sample id (each sample is its own user), ``agent_id`` the importer's;
* ``started_at`` = ``ended_at`` = the session's ``session_<n>_date_time`` (read as UTC);
* ``speaker_a`` → ``user`` and ``speaker_b`` → ``assistant`` messages, each with the
  speaker's name as the message ``name`` and the turn's text as ``content`` (photo
  captions are left out, as in the turn-level benchmark);
* ``metadata`` ``{"source": "locomo", "sample_id": ..., "session": n, "dia_ids": [...]}``.

A bad record (or a LoCoMo sample that does not parse) is reported with its position
(``line 7``, ``record 3``, ``sample 2 (conv-30)``) and the others are still read.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from memlane.errors import ValidationError
from memlane.sessions.locomo_format import LocomoConversation, LocomoFormatError, parse_locomo

__all__ = [
    "RECORD_FIELDS",
    "ImportFormat",
    "ImportItem",
    "SessionRecord",
    "detect_format",
    "locomo_records",
    "parse_record",
    "read_records",
]

ImportFormat = Literal["json", "jsonl", "locomo"]

RECORD_FIELDS = frozenset(
    {"session_id", "agent_id", "user_id", "started_at", "ended_at", "metadata", "messages"}
)
"""Fields of an OpenAI-format session record."""


@dataclass(frozen=True, slots=True)
class SessionRecord:
    """One conversation to store with :meth:`memlane.sessions.SessionMemory.store_session`.

    Attributes:
        session_id: The session id.
        messages: OpenAI-format messages (validated when stored).
        agent_id: The agent, or ``None`` for the importer's default.
        user_id: The user, or ``None`` for the importer's default.
        started_at: When it began (UTC), or ``None``.
        ended_at: When it ended (UTC), or ``None``.
        metadata: JSON object, or ``None``.
    """

    session_id: str
    messages: list[Any]
    agent_id: str | None = None
    user_id: str | None = None
    started_at: datetime | None = None
    ended_at: datetime | None = None
    metadata: dict[str, Any] | None = field(default=None)


@dataclass(frozen=True, slots=True)
class ImportItem:
    """A record read from a file, or why it could not be read.

    Attributes:
        position: Where it is, for messages: ``"line 7"``, ``"record 3"``, ``"sample 2 (conv-30) session 4"``.
        record: The record, or ``None`` when it is bad.
        error: Why it is bad, or ``None``.
    """

    position: str
    record: SessionRecord | None = None
    error: str | None = None


def _parse_time(value: object, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be an ISO-8601 string, got {type(value).__name__}")
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        raise ValidationError(f"{name} {value!r} is not ISO 8601 (e.g. 2026-05-25T09:00:00Z)") from None
    if parsed.tzinfo is None or parsed.utcoffset() is None:
        raise ValidationError(f"{name} {value!r} has no timezone; add one, e.g. Z or +00:00")
    return parsed


def _optional_str(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and not isinstance(value, str):
        raise ValidationError(f"{key} must be a string, got {type(value).__name__}")
    return value


def parse_record(obj: object) -> SessionRecord:
    """Check the shape of one OpenAI-format session record (see the module docstring).

    Messages are only checked to be a list here; their content is validated when stored.

    Raises:
        ValidationError: not an object, an unknown field, a missing or mistyped field.
    """
    if not isinstance(obj, Mapping):
        raise ValidationError(f"a session record must be a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - RECORD_FIELDS)
    if unknown:
        raise ValidationError(
            f"unknown field(s) {', '.join(map(repr, unknown))}; known: {sorted(RECORD_FIELDS)}"
        )
    session_id = obj.get("session_id")
    if not isinstance(session_id, str):
        raise ValidationError("session_id is required (a string)")
    messages = obj.get("messages")
    if not isinstance(messages, list):
        raise ValidationError("messages is required (a list of OpenAI-format messages)")
    metadata = obj.get("metadata")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise ValidationError(f"metadata must be an object, got {type(metadata).__name__}")
    return SessionRecord(
        session_id=session_id,
        messages=messages,
        agent_id=_optional_str(obj, "agent_id"),
        user_id=_optional_str(obj, "user_id"),
        started_at=_parse_time(obj.get("started_at"), "started_at"),
        ended_at=_parse_time(obj.get("ended_at"), "ended_at"),
        metadata=None if metadata is None else dict(metadata),
    )


def _is_locomo(data: object) -> bool:
    return (
        isinstance(data, list)
        and bool(data)
        and all(isinstance(s, Mapping) and isinstance(s.get("conversation"), Mapping) for s in data)
    )


def detect_format(path: str | Path) -> tuple[ImportFormat, object | None]:
    """Tell the format of ``path`` from its content.

    A file that parses as one JSON document is LoCoMo (an array of samples with a
    ``conversation`` object) or JSON records; anything else is read as JSON Lines.

    Returns:
        ``(format, decoded document or None for JSONL)``.

    Raises:
        OSError: the file cannot be read.
    """
    text = Path(path).read_text(encoding="utf-8")
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return "jsonl", None
    if _is_locomo(data):
        return "locomo", data
    return "json", data


def locomo_records(conversation: LocomoConversation) -> list[SessionRecord]:
    """One record per session of a parsed LoCoMo conversation (mapping in the module docstring)."""
    speaker_a, _ = conversation.speakers
    records = []
    for index, at in sorted(conversation.session_dates.items()):
        turns = [t for t in conversation.turns if t.session_index == index]
        if not turns:
            continue
        records.append(
            SessionRecord(
                session_id=f"{conversation.sample_id}/session_{index}",
                messages=[
                    {
                        "role": "user" if t.speaker == speaker_a else "assistant",
                        "name": t.speaker,
                        "content": t.text,
                    }
                    for t in turns
                ],
                user_id=conversation.sample_id,
                started_at=at,
                ended_at=at,
                metadata={
                    "source": "locomo",
                    "sample_id": conversation.sample_id,
                    "session": index,
                    "dia_ids": [t.dia_id for t in turns],
                },
            )
        )
    return records


def _locomo_items(data: list[Any]) -> Iterator[ImportItem]:
    for position, sample in enumerate(data, start=1):
        sample_id = sample.get("sample_id") if isinstance(sample, Mapping) else None
        where = f"sample {position}" + (f" ({sample_id})" if isinstance(sample_id, str) else "")
        try:
            conversations, _ = parse_locomo([sample])
        except LocomoFormatError as exc:
            yield ImportItem(where, error=str(exc))
            continue
        for record in locomo_records(conversations[0]):
            yield ImportItem(f"{where} {record.session_id.rsplit('/', 1)[-1]}", record=record)


def _record_item(where: str, obj: object) -> ImportItem:
    try:
        return ImportItem(where, record=parse_record(obj))
    except ValidationError as exc:
        return ImportItem(where, error=str(exc))


def read_records(path: str | Path, fmt: ImportFormat | None = None) -> tuple[ImportFormat, list[ImportItem]]:
    """Read every record of a file, good or bad, in file order.

    Args:
        path: A ``.json``/``.jsonl`` file of OpenAI-format records, or LoCoMo's JSON.
        fmt: Force a format (``"json"``, ``"jsonl"``, ``"locomo"``); default: detected.

    Returns:
        ``(format, items)``: one :class:`ImportItem` per record (LoCoMo: per session).

    Raises:
        OSError: the file cannot be read. ValidationError: ``fmt`` is ``"json"`` or
            ``"locomo"`` and the file is not one JSON document of that kind.
    """
    detected, data = detect_format(path)
    fmt = fmt or detected
    if fmt == "jsonl":
        items = []
        with open(path, encoding="utf-8") as fh:
            for number, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                except json.JSONDecodeError as exc:
                    items.append(
                        ImportItem(f"line {number}", error=f"invalid JSON: {exc.msg} (column {exc.colno})")
                    )
                    continue
                items.append(_record_item(f"line {number}", obj))
        return fmt, items
    if data is None:
        raise ValidationError(f"{path} is not one JSON document; try the jsonl format")
    if fmt == "locomo":
        if not _is_locomo(data):
            raise ValidationError(f"{path} is not LoCoMo data (an array of samples with a 'conversation')")
        assert isinstance(data, list)
        return fmt, list(_locomo_items(data))
    if isinstance(data, list):
        return fmt, [_record_item(f"record {i}", obj) for i, obj in enumerate(data, start=1)]
    return fmt, [_record_item("record 1", data)]
