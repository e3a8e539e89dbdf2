"""How a request field is declared: its type, bounds, description and memlane check (issue #19).

The requests themselves are in :mod:`memlane.operations.requests`; this module holds what they
are built from and what is derived from them.

Each operation's arguments are declared once, as a pydantic model whose fields carry their
type, bounds, default and description. From these declarations come:

* the **argument checks** (:func:`check_request`, applied once at the boundary of every
  interface: tools, MCP, HTTP; the Python facade calls the same value checks of
  :mod:`memlane.validation`), so the same bad value gets the same
  :class:`~memlane.errors.ValidationError` everywhere;
* the **tool and MCP JSON schemas** (:func:`tool_parameters`, used by :mod:`memlane.tools`);
* the **HTTP bodies** (the ``*Body`` models, which FastAPI turns into ``/openapi.json``).

Why pydantic: FastAPI and the ``mcp`` SDK already build on it, so one model serves as the
HTTP body and as the source of the JSON schema without a second schema language. Pydantic's
own messages differ from memlane's (and its lax mode coerces ``"5"`` to 5), so each field
also names its memlane value check (:class:`Check`), which a ``mode="before"`` validator
runs first: pydantic then only sees values memlane already accepted and normalised.

Field markers (``Annotated`` metadata):

* :class:`Check` — the value check (a :mod:`memlane.validation` function ``(value, name)``);
  integer and number bounds come from the field's ``ge``/``le``/``gt`` (declared once).
* :data:`LIMIT` — a count bounded by the interface's ``max_limit`` (tools/HTTP/MCP: the
  configured ``episodic_memory.max_limit``, default 50); :func:`bounded` makes the model for a
  given maximum, so its schema advertises exactly what the checks accept.
* :data:`INTERFACE_ONLY` — a field of the interfaces only (``detail``, ``preset``), not an
  argument of the Python method.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar, get_args

import annotated_types
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, create_model, model_validator
from pydantic import ValidationInfo as PydanticInfo
from pydantic.fields import FieldInfo

from memlane import validation as v
from memlane.clock import MAX_DAYS, YEAR_PATTERN
from memlane.errors import ValidationError
from memlane.importance import AUTO_IMPORTANCE
from memlane.recall import PRESETS, RETRIEVAL_MODES, RankingWeights, resolve_weights
from memlane.sessions.messages import MAX_MESSAGES, validate_messages
from memlane.validation import MAX_LABEL_LENGTH, MAX_LIMIT, MAX_TEXT_CHARS, check_contradiction_threshold

__all__ = [
    "DETAIL_DOC",
    "INTERFACE_ONLY",
    "LIMIT",
    "NOW_DOC",
    "PRESET_DOC",
    "SESSION_DOC",
    "ArgumentCheck",
    "Check",
    "Request",
    "bounded",
    "check_request",
    "choice_field",
    "field_check",
    "is_interface_only",
    "metadata_of",
    "rating_field",
    "tool_parameters",
]


@dataclass(frozen=True, slots=True)
class Check:
    """The memlane value check of a field: ``function(value, name, **bounds)`` -> normalised value.

    Attributes:
        function: A :mod:`memlane.validation` check; it raises :class:`ValidationError`.
        bounds: Names of the field's numeric bounds it takes (``minimum``, ``maximum``).
    """

    function: Callable[..., Any]
    bounds: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Marker:
    name: str


LIMIT = _Marker("limit")
"""A count whose maximum is the interface's ``max_limit``."""
INTERFACE_ONLY = _Marker("interface-only")
"""A field the Python method does not take (``detail``, ``preset``)."""

ArgumentCheck = Callable[[Any], Any]

logger = logging.getLogger(__name__)


def metadata_of(info: FieldInfo) -> list[Any]:
    """A field's markers and constraints, also those inside an optional ``X | None`` annotation."""
    found = list(info.metadata)
    for arg in (info.annotation, *get_args(info.annotation)):
        for item in getattr(arg, "__metadata__", ()):
            found.extend(item.metadata if isinstance(item, FieldInfo) else [item])
    return found


def _bounds(info: FieldInfo) -> dict[str, Any]:
    """``minimum``/``maximum`` of an integer or number field, from its ``ge``/``le`` metadata."""
    found: dict[str, Any] = {}
    for item in metadata_of(info):
        if isinstance(item, annotated_types.Ge):
            found["minimum"] = item.ge
        elif isinstance(item, annotated_types.Le):
            found["maximum"] = item.le
    return found


def _marker(info: FieldInfo, kind: type[Any]) -> Any:
    return next((m for m in metadata_of(info) if isinstance(m, kind)), None)


def field_check(name: str, info: FieldInfo) -> ArgumentCheck:
    """The check of one declared field: its :class:`Check` with the field's bounds.

    Raises:
        TypeError: the field declares no :class:`Check` (a declaration bug).
    """
    check = _marker(info, Check)
    if check is None:
        raise TypeError(f"field {name!r} declares no Check")
    bounds = {k: val for k, val in _bounds(info).items() if k in check.bounds}
    function = check.function

    def run(value: Any) -> Any:
        return function(value, name, **bounds)

    return run


def _unknown_message(cls: type[Request], unknown: list[str]) -> str:
    return f"unknown argument(s) {', '.join(unknown)}; {cls.OPERATION} takes {', '.join(cls.model_fields)}"


def check_request(cls: type[Request], raw: object) -> dict[str, Any]:
    """Apply ``cls``'s declaration to a caller's arguments: the one validation of every interface.

    Args:
        cls: The operation's request type.
        raw: The caller's arguments (a mapping; ``None`` is ``{}``; anything else is refused).

    Returns:
        The present arguments (``null`` values dropped: null counts as absent), each
        normalised by its check, in the caller's order.

    Raises:
        ValidationError: not an object, an unknown or missing argument, or a bad value (the
            value check's own message, e.g. ``limit must be a positive integer, got string``).
    """
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise ValidationError(f"arguments must be a JSON object, got {v.json_type_name(raw)}")
    if cls.ALIASES:
        raw = _renamed(cls, raw)
    fields = cls.model_fields
    unknown = sorted(v.safe_text(str(key)) for key in raw if key not in fields)
    if unknown:
        raise ValidationError(_unknown_message(cls, unknown))
    present = {str(key): value for key, value in raw.items() if value is not None}
    missing = [name for name, info in fields.items() if info.is_required() and name not in present]
    if missing:
        raise ValidationError(f"missing required argument(s): {', '.join(missing)}")
    checks = _checks(cls)
    return {name: checks[name](value) for name, value in present.items()}


def _renamed(cls: type[Request], raw: Mapping[Any, Any]) -> dict[Any, Any]:
    """``raw`` with each deprecated alias of ``cls.ALIASES`` renamed to its field (logged once a call).

    Raises:
        ValidationError: both an alias and its field are given.
    """
    renamed = dict(raw)
    for alias, name in cls.ALIASES.items():
        if alias not in renamed:
            continue
        if renamed.get(name) is not None and renamed[alias] is not None:
            raise ValidationError(f"give {name} or its deprecated alias {alias}, not both")
        value = renamed.pop(alias)
        if renamed.get(name) is None:
            renamed[name] = value
        logger.warning("%s: argument %r is deprecated, use %r", cls.OPERATION, alias, name)
    return renamed


@cache
def _checks(cls: type[Request]) -> dict[str, ArgumentCheck]:
    """Each field's check of ``cls`` (:func:`field_check`), built once per request type."""
    return {name: field_check(name, info) for name, info in cls.model_fields.items()}


class Request(BaseModel):
    """The base of every request: unknown fields refused, checked by :func:`check_request` first.

    Attributes:
        OPERATION: The operation's name in messages (``recall_episodes``).
        ALIASES: Deprecated argument name -> field name, accepted by :func:`check_request`
            (with a logged warning) but not published in any schema.
    """

    model_config = ConfigDict(
        extra="forbid", frozen=True, defer_build=True
    )  # built on first use: --help stays fast
    OPERATION: ClassVar[str] = ""
    ALIASES: ClassVar[Mapping[str, str]] = {}

    @model_validator(mode="before")
    @classmethod
    def _policy(cls, data: Any, info: PydanticInfo) -> Any:
        """The one argument policy runs before pydantic's own validation."""
        return check_request(cls, data)

    def arguments(self) -> dict[str, Any]:
        """The fields the caller gave (``None`` left out), as checked values."""
        dumped = self.model_dump(exclude_none=True, include=set(self.model_fields_set))
        return {name: dumped[name] for name in self.model_fields_set if name in dumped}


# -- field types (each with its memlane check) ------------------------------------------


def _identifier(value: Any, name: str) -> str:
    return v.check_identifier(value, name)


def _text(value: Any, name: str) -> str:
    return v.check_text(value, name)


def _tags(value: Any, name: str) -> list[str]:
    return list(v.normalize_tags(value))


def _importance(value: Any, name: str) -> float | str | None:
    if isinstance(value, str) and value == AUTO_IMPORTANCE:
        return value  # estimated from the content when the episode is built
    return v.clamp_importance(value)


def _metadata(value: Any, name: str) -> dict[str, Any]:
    return v.normalize_metadata(value, name)


def _choice(choices: tuple[str, ...]) -> Check:
    def check(value: Any, name: str) -> str:
        return v.check_choice(value, name, choices)

    return Check(check)


def _literal_check(annotation: Any) -> Check:
    return _choice(tuple(get_args(annotation)))


Label = Annotated[
    str, Field(min_length=1, max_length=MAX_LABEL_LENGTH, pattern=v.VISIBLE_PATTERN), Check(_identifier)
]
"""A label (event type, id): 1-200 characters, stripped, case-sensitive."""
Text = Annotated[str, Field(min_length=1, max_length=MAX_TEXT_CHARS, pattern=v.VISIBLE_PATTERN), Check(_text)]
"""Text with a visible character, up to 100,000 characters."""


def _query(value: Any, name: str) -> str:
    return v.check_query(value, name)


Query = Annotated[
    str, Field(min_length=1, max_length=v.MAX_QUERY_CHARS, pattern=v.VISIBLE_PATTERN), Check(_query)
]
"""A query: text with a visible character, up to 10,000 characters."""
_Tag = Annotated[str, Field(max_length=MAX_LABEL_LENGTH)]
Tags = Annotated[list[_Tag] | _Tag, Check(_tags)]
# (at most MAX_TAGS distinct tags: checked by normalize_tags, not declared as maxItems, since
# duplicates and blank ones are dropped before the count)
"""Tags: a list, or one string as the single tag (accepted everywhere, so declared); blank ones dropped."""
Importance = Annotated[
    float | Literal["auto"],
    # "enum": ["auto"], not pydantic's "const": generated clients (openapi-python-client) then try
    # the number first instead of refusing every number as "not 'auto'"
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "enum": [AUTO_IMPORTANCE]}]}),
    Check(_importance),
]
"""A rating (clamped to 1-10), or ``"auto"``: estimated from the content (:mod:`memlane.importance`)."""
Instant = Annotated[
    datetime,
    Field(json_schema_extra={"pattern": YEAR_PATTERN}),  # the years check_timestamp accepts
    Check(v.check_timestamp),
]
Fraction = Annotated[float, Field(ge=0, le=1), Check(v.check_fraction)]
OpenFraction = Annotated[float, Field(gt=0, lt=1), Check(v.check_open_fraction)]


def _confidence(value: Any, name: str) -> float:
    return check_contradiction_threshold(value)  # the facade's own check: (0, 1]


Confidence = Annotated[float, Field(gt=0, le=1), Check(_confidence)]
Flag = Annotated[bool, Check(v.check_flag)]


def _rating(value: Any, name: str) -> float | None:
    return v.clamp_importance(value)


def rating_field() -> Any:
    """A 1-10 rating without ``"auto"`` (a fact's importance), clamped like an episode's."""
    return Annotated[float, Check(_rating)]


def choice_field(choices: tuple[str, ...]) -> Any:
    """One of ``choices`` (a string), checked by :func:`memlane.validation.check_choice`."""
    return Annotated[Literal[choices], _choice(choices)]


Metadata = Annotated[dict[str, Any], Check(_metadata)]


def _messages(value: Any, name: str) -> list[Any]:
    validate_messages(value)  # the facade's own check and message
    return list(value)


def _some_messages(value: Any, name: str) -> list[Any]:
    validate_messages(value, allow_empty=True)
    return list(value)


_NON_BLANK = {"type": "string", "pattern": "\\S"}
_PART = {
    "type": "object",
    "required": ["type"],
    "properties": {"type": _NON_BLANK},
    "if": {"properties": {"type": {"const": "text"}}},
    "then": {"required": ["text"], "properties": {"text": {"type": "string"}}},
}
_CONTENT = {"anyOf": [{"type": "string"}, {"type": "array", "items": _PART}]}
_TOOL_CALL = {
    "type": "object",
    "required": ["id", "function"],
    "properties": {
        "id": _NON_BLANK,
        "type": {"const": "function"},
        "function": {
            "type": "object",
            "required": ["name", "arguments"],
            "properties": {"name": _NON_BLANK, "arguments": {"type": "string"}},
        },
    },
}
_NONE = {"type": "null"}


def _role(roles: list[str], required: list[str], **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": ["role", *required],
        "properties": {"role": {"enum": roles}, "name": {"type": ["string", "null"]}, **properties},
    }


def _assistant(required: str, **narrowed: Any) -> dict[str, Any]:
    """An assistant message that has ``required`` (narrowed to a non-empty value)."""
    properties = {
        "content": {"anyOf": [_CONTENT, _NONE]},
        "tool_calls": {"anyOf": [{"type": "array", "items": _TOOL_CALL}, _NONE]},
        "tool_call_id": _NONE,
        "refusal": {},  # kept as given
        **narrowed,
    }
    return _role(["assistant"], [required], **properties)


MESSAGE_SCHEMA: dict[str, Any] = {
    "description": "An OpenAI-format chat message (the rules of memlane.sessions.validate_message).",
    # anyOf of plain object schemas (the roles are disjoint; an assistant message needs content,
    # tool calls or a refusal, one branch each), so client generators can model it as a union
    "anyOf": [
        _role(
            ["system", "developer", "user"],
            ["content"],
            content=_CONTENT,
            tool_calls=_NONE,
            tool_call_id=_NONE,
        ),
        _role(
            ["tool"],
            ["tool_call_id"],
            content={"anyOf": [_CONTENT, _NONE]},
            tool_call_id=_NON_BLANK,
            tool_calls=_NONE,
        ),
        _assistant("content", content=_CONTENT),
        _assistant("tool_calls", tool_calls={"type": "array", "items": _TOOL_CALL, "minItems": 1}),
        _assistant("refusal", refusal={"not": _NONE}),
    ],
}
"""The JSON schema of one message, as :func:`memlane.sessions.validate_message` checks it."""

Message = Annotated[dict[str, Any], WithJsonSchema(MESSAGE_SCHEMA)]
Messages = Annotated[list[Message], Field(min_length=1, max_length=MAX_MESSAGES), Check(_messages)]
SomeMessages = Annotated[list[Message], Field(max_length=MAX_MESSAGES), Check(_some_messages)]
Count = Annotated[int, Field(le=v.MAX_COUNT), Check(v.check_at_least, ("minimum", "maximum"))]
Limit = Annotated[int, Field(ge=1, le=MAX_LIMIT), LIMIT, Check(v.check_limit, ("maximum",))]
DetailName = Literal["compact", "full"]
Detail = Annotated[DetailName, INTERFACE_ONLY, _literal_check(DetailName)]
if TYPE_CHECKING:
    PresetName = str
    RetrievalName = str
else:
    PresetName = Literal[tuple(PRESETS)]
    RetrievalName = Literal[tuple(RETRIEVAL_MODES)]
Preset = Annotated[PresetName, INTERFACE_ONLY, _literal_check(PresetName)]
Retrieval = Annotated[RetrievalName, _literal_check(RetrievalName)]
ScopeName = Literal["session", "tenant"]
ScopeField = Annotated[ScopeName, _literal_check(ScopeName)]
Placement = Literal["system", "user"]
PlacementField = Annotated[Placement, _literal_check(Placement)]
Days = Annotated[float, Field(gt=0, le=MAX_DAYS), Check(v.check_positive, ("maximum",))]
"""A duration in days: a finite number in (0, :data:`memlane.clock.MAX_DAYS`]."""


class Weights(BaseModel):
    """Custom ranking weights (only their ratios matter); missing keys weigh 0, at least one is > 0."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "anyOf": [
                {"required": [key], "properties": {key: {"exclusiveMinimum": 0}}}
                for key in ("relevance", "recency", "importance")
            ]
        },
    )

    relevance: float = Field(default=0.0, ge=0)
    recency: float = Field(default=0.0, ge=0)
    importance: float = Field(default=0.0, ge=0)


def _weights(value: Any, name: str) -> dict[str, float]:
    """Custom ranking weights: an object with any of relevance, recency, importance (>= 0)."""
    resolved = resolve_weights(value, RankingWeights())  # the facade's own check (a preset name too)
    return {"relevance": resolved.relevance, "recency": resolved.recency, "importance": resolved.importance}


WeightsField = Annotated[Weights, Check(_weights)]


# -- descriptions several requests share -----------------------------------------------

DETAIL_DOC = (
    "'compact' (the tools' default): id, content, event_type, when, tags, importance, score and a "
    "one-line why per episode. 'full' (the HTTP default): every field (lifecycle times, retrieve "
    "counts, the score breakdown)."
)
PRESET_DOC = (
    "Named ranking weights: 'balanced' (default, relevance first), 'specific_question' (favours "
    "relevance), 'agent_context' (important facts can outrank better matches), 'conversation' (recent "
    "turns can outrank better matches), 'cold_start' (importance, ignores recency), 'relevance_only' "
    "(pure semantic similarity), 'seed' (seed 000: plain mean of cosine, recency and importance/10)."
)
SESSION_DOC = "Session within the key's tenant (1-200 characters). Default: 'default'."
NOW_DOC = "Reference time (ISO 8601 with timezone). Default: now."


# -- derived: a model for one max_limit, the tool schemas ---------------------------------

R = TypeVar("R", bound=Request)


_BOUNDED: dict[tuple[type[Any], int], type[Any]] = {}
_TOOL_PARAMETERS: dict[tuple[type[Any], int], dict[str, Any]] = {}


def bounded(cls: type[R], max_limit: int) -> type[R]:
    """``cls`` with every :data:`LIMIT` field's maximum set to ``max_limit`` (its name kept).

    The model's checks and its JSON schema then both say ``1..max_limit``. Built once per
    (type, maximum).
    """
    key = (cls, max_limit)
    if key not in _BOUNDED:
        _BOUNDED[key] = _bounded(cls, max_limit)
    found: type[R] = _BOUNDED[key]
    return found


def _bounded(cls: type[R], max_limit: int) -> type[R]:
    limit = Annotated[int, Field(ge=1, le=max_limit), LIMIT, Check(v.check_limit, ("maximum",))]
    overrides: dict[str, Any] = {
        name: (limit | None, Field(default=None, description=info.description))
        for name, info in cls.model_fields.items()
        if LIMIT in metadata_of(info)
    }
    if not overrides:
        return cls
    model: type[R] = create_model(
        cls.__name__, __base__=cls, __doc__=cls.__doc__, __module__=cls.__module__, **overrides
    )
    return model


def _strip_null(schema: dict[str, Any]) -> dict[str, Any]:
    """A property's schema without pydantic's ``anyOf [X, null]``, title and null default (null = absent)."""
    options = schema.get("anyOf")
    if options is not None:
        kept = [o for o in options if o.get("type") != "null"]
        if len(kept) == 1:
            rest = {k: val for k, val in schema.items() if k != "anyOf"}
            schema = {**kept[0], **rest}
    return {k: val for k, val in schema.items() if k != "title" and not (k == "default" and val is None)}


def tool_parameters(cls: type[Request], max_limit: int) -> dict[str, Any]:
    """The JSON schema of a tool's arguments object, generated from its request type.

    Args:
        cls: The tool's request (e.g. :class:`RecallRequest`).
        max_limit: The maximum of its :data:`LIMIT` fields.

    Returns:
        ``{"type": "object", "properties", "required", "additionalProperties": false}``.
    """
    key = (cls, max_limit)
    if key not in _TOOL_PARAMETERS:  # the CLI asks once per option: generate once per (type, maximum)
        schema = bounded(cls, max_limit).model_json_schema()
        _TOOL_PARAMETERS[key] = {
            "type": "object",
            "properties": {name: _strip_null(prop) for name, prop in schema["properties"].items()},
            "required": list(schema.get("required", [])),
            "additionalProperties": False,
        }
    return copy.deepcopy(_TOOL_PARAMETERS[key])


def is_interface_only(info: FieldInfo) -> bool:
    """Whether a field is an interface's only (not an argument of the Python method)."""
    return INTERFACE_ONLY in metadata_of(info)
