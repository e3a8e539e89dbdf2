"""Chat models with structured JSON output, and memlane's handling of their replies.

Two layers:

* :class:`ChatLLM` is the protocol a chat model implements: one raw ``chat`` call that
  asks for JSON matching a schema and returns the reply text unchanged.
  :class:`OpenAICompatibleLLM` implements it for any OpenAI-compatible
  ``/v1/chat/completions`` endpoint through the ``openai`` SDK (``openai`` extra,
  imported lazily) with ``base_url``: OpenAI itself, llama.cpp's server, vLLM, Ollama, ...
* :func:`complete_json` is the one policy for every model: it validates the reply
  (JSON, then the schema, then a caller's ``parse`` function), retries **once** with
  the reason fed back to the model, and otherwise raises
  :class:`~memlane.errors.MalformedOutputError` carrying every attempt's raw text.
  Output is never silently dropped or "repaired".

A reply is malformed when it is empty, a refusal, cut off (``finish_reason`` is
``"length"`` or ``"content_filter"``), not JSON (a single surrounding Markdown code
fence is tolerated; ``NaN``/``Infinity`` are not), or does not match the schema.
Schemas use the portable subset of JSON Schema that OpenAI's strict mode and
llama.cpp's grammar conversion both accept, and :func:`check_json_schema` checks
exactly that subset locally, since not every server enforces the schema it is sent.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, Protocol, TypeVar, runtime_checkable

from memlane.errors import FormationError, MalformedOutputError, OutputRejectedError, ValidationError

__all__ = [
    "ChatLLM",
    "ChatReply",
    "OnLLMError",
    "OpenAICompatibleLLM",
    "OutputRejectedError",
    "ResponseFormat",
    "StructuredOutput",
    "check_json_schema",
    "check_on_llm_error",
    "complete_json",
    "failure_details",
    "parse_json_text",
]

logger = logging.getLogger(__name__)

T = TypeVar("T")

ResponseFormat = Literal["json_schema", "json_object", "none"]
"""How :class:`OpenAICompatibleLLM` asks for JSON: ``response_format`` of type
``json_schema`` (the schema is enforced by the server; default), ``json_object`` (any
JSON; the schema is only described in the prompt) or none at all (prompt only)."""

OnLLMError = Literal["raise", "fallback"]
"""What formation does when the model fails: ``"raise"`` the
:class:`~memlane.errors.FormationError` (nothing is stored), or ``"fallback"`` to the
deterministic method for the failed part, recording the failure (:func:`failure_details`)."""

MAX_KEPT_RAW_CHARS = 4_000
"""Longest raw reply text kept in a fallback episode's provenance, per attempt, in characters."""

RETRY_INSTRUCTION = (
    "Your reply was rejected: {reason}. Reply again with only one JSON object that matches "
    "the required schema, and nothing else."
)
"""The user message appended (after the rejected reply) for the one retry."""


@dataclass(frozen=True, slots=True)
class ChatReply:
    """A chat model's raw reply.

    Attributes:
        text: The reply's text content, unchanged (``None`` if the reply had none).
        finish_reason: Why generation stopped (``"stop"``, ``"length"``, ...), if reported.
        refusal: The model's refusal message, if it refused.
        model: The model name the server reported, if any.
    """

    text: str | None
    finish_reason: str | None = None
    refusal: str | None = None
    model: str | None = None


@runtime_checkable
class ChatLLM(Protocol):
    """A chat model that can be asked for JSON matching a schema."""

    @property
    def model(self) -> str:
        """The model's name, recorded in every formed episode's provenance."""
        ...

    def chat(
        self, messages: Sequence[Mapping[str, str]], *, json_schema: Mapping[str, Any], schema_name: str
    ) -> ChatReply:
        """Send one chat request asking for JSON matching ``json_schema``; return the raw reply.

        Raises:
            FormationError: the request failed (network, HTTP error, missing SDK or key).
        """
        ...


@dataclass(frozen=True, slots=True)
class StructuredOutput(Generic[T]):
    """An accepted reply from :func:`complete_json`.

    Attributes:
        value: What the ``parse`` function made of the reply's JSON.
        raw_text: The accepted reply's raw text.
        model: The model's name (:attr:`ChatLLM.model`).
        attempts: 1, or 2 if the first reply was rejected and the retry accepted.
        rejected: The reason the first reply was rejected (``None`` when ``attempts == 1``).
    """

    value: T
    raw_text: str
    model: str
    attempts: int
    rejected: str | None = None


# -- JSON text and schema checks -----------------------------------------------------------


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def parse_json_text(text: str) -> Any:
    """Parse a reply as one JSON value; a single surrounding Markdown code fence is tolerated.

    Args:
        text: The reply text.

    Returns:
        The decoded JSON value.

    Raises:
        OutputRejectedError: not exactly one JSON value (``NaN`` and ``Infinity`` refused).
    """
    body = text.strip()
    if body.startswith("```") and body.endswith("```") and len(body) >= 6:
        body = body[3:-3]
        first_line, _, rest = body.partition("\n")
        if first_line.strip().isalpha() or not first_line.strip():  # ```json
            body = rest
        body = body.strip()
    try:
        return json.loads(body, parse_constant=_refuse_constant)
    except ValueError as exc:
        raise OutputRejectedError(f"not valid JSON ({exc})") from None


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and math.isfinite(v) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}
_KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "minimum",
        "maximum",
        "enum",
        "description",
        "title",
    }
)


def check_json_schema(value: Any, schema: Mapping[str, Any], path: str = "$") -> None:
    """Check ``value`` against a JSON schema written in memlane's portable subset.

    Supported keywords: ``type`` (one name), ``properties``, ``required``,
    ``additionalProperties`` (boolean), ``items``, ``minItems``, ``maxItems``,
    ``minimum``, ``maximum``, ``enum``; ``description`` and ``title`` are ignored.
    An integral float (``7.0``) counts as an ``integer``, as in JSON Schema.

    Args:
        value: A decoded JSON value.
        schema: The schema.
        path: Where ``value`` sits in the document, for messages (``$`` is the root).

    Raises:
        OutputRejectedError: ``value`` does not match; the message names the path.
        TypeError: the schema uses a keyword outside the subset (a programming error).
    """
    unknown = set(schema) - _KEYWORDS
    if unknown:
        raise TypeError(f"unsupported JSON schema keywords at {path}: {sorted(unknown)}")
    kind = schema.get("type")
    if kind is not None and not _TYPES[kind](value):
        raise OutputRejectedError(f"{path}: expected {kind}, got {type(value).__name__}")
    if "enum" in schema and value not in schema["enum"]:
        raise OutputRejectedError(f"{path}: must be one of {list(schema['enum'])}, got {value!r}")
    if isinstance(value, int | float) and not isinstance(value, bool):
        _check_number(value, schema, path)
    if isinstance(value, dict):
        _check_object(value, schema, path)
    if isinstance(value, list):
        _check_array(value, schema, path)


def _check_number(value: float, schema: Mapping[str, Any], path: str) -> None:
    """``minimum``/``maximum`` of :func:`check_json_schema`."""
    if "minimum" in schema and value < schema["minimum"]:
        raise OutputRejectedError(f"{path}: must be >= {schema['minimum']}, got {value!r}")
    if "maximum" in schema and value > schema["maximum"]:
        raise OutputRejectedError(f"{path}: must be <= {schema['maximum']}, got {value!r}")


def _check_object(value: dict[str, Any], schema: Mapping[str, Any], path: str) -> None:
    """``required``, ``additionalProperties`` and ``properties`` of :func:`check_json_schema`."""
    properties: Mapping[str, Any] = schema.get("properties", {})
    for key in schema.get("required", ()):
        if key not in value:
            raise OutputRejectedError(f"{path}: missing required key {key!r}")
    if schema.get("additionalProperties", True) is False:
        extra = sorted(set(value) - set(properties))
        if extra:
            raise OutputRejectedError(f"{path}: unexpected keys {extra}")
    for key, sub in properties.items():
        if key in value:
            check_json_schema(value[key], sub, f"{path}.{key}")


def _check_array(value: list[Any], schema: Mapping[str, Any], path: str) -> None:
    """``minItems``, ``maxItems`` and ``items`` of :func:`check_json_schema`."""
    if "minItems" in schema and len(value) < schema["minItems"]:
        raise OutputRejectedError(f"{path}: needs at least {schema['minItems']} items, got {len(value)}")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        raise OutputRejectedError(f"{path}: allows at most {schema['maxItems']} items, got {len(value)}")
    if "items" in schema:
        for i, item in enumerate(value):
            check_json_schema(item, schema["items"], f"{path}[{i}]")


# -- the retry-once policy ------------------------------------------------------------------


def _accept(reply: ChatReply, schema: Mapping[str, Any], parse: Callable[[Any], T]) -> T:
    if reply.refusal:
        raise OutputRejectedError(f"the model refused ({reply.refusal})")
    if reply.finish_reason in ("length", "content_filter"):
        raise OutputRejectedError(f"the reply was cut off (finish_reason={reply.finish_reason!r})")
    if reply.text is None or not reply.text.strip():
        raise OutputRejectedError("the reply was empty")
    data = parse_json_text(reply.text)
    check_json_schema(data, schema)
    return parse(data)


def complete_json(
    llm: ChatLLM,
    messages: Sequence[Mapping[str, str]],
    *,
    schema: Mapping[str, Any],
    schema_name: str,
    parse: Callable[[Any], T],
) -> StructuredOutput[T]:
    """Ask ``llm`` for JSON matching ``schema``; validate; retry once; never drop output silently.

    The first reply is checked (see the module docstring), then passed to ``parse``. If
    it is rejected, the conversation is sent again with the rejected reply and a user
    message giving the reason (:data:`RETRY_INSTRUCTION`) appended. A second rejection
    raises.

    Args:
        llm: The chat model.
        messages: The prompt, as chat messages (``role``/``content`` strings).
        schema: JSON schema of the reply, in :func:`check_json_schema`'s subset.
        schema_name: A short name for the schema (sent to the server; used in messages).
        parse: Turns the schema-checked JSON into the result; raises
            :class:`OutputRejectedError` to reject the reply (e.g. blank content).

    Returns:
        The accepted :class:`StructuredOutput`.

    Raises:
        MalformedOutputError: both replies were rejected; ``raw_texts`` holds both.
        FormationError: a request failed; ``raw_texts`` holds any earlier reply.
    """
    raw_texts: list[str] = []
    reasons: list[str] = []
    conversation = list(messages)
    for attempt in (1, 2):
        try:
            reply = llm.chat(conversation, json_schema=schema, schema_name=schema_name)
        except FormationError as exc:
            if raw_texts:  # keep the first attempt's reply on a failed retry
                raise FormationError(str(exc), raw_texts=tuple(raw_texts)) from exc
            raise
        text = reply.text or ""
        raw_texts.append(text)
        try:
            value = _accept(reply, schema, parse)
        except OutputRejectedError as exc:
            reasons.append(str(exc))
            logger.warning(
                "%s: reply %d from %r rejected: %s; raw text: %r",
                schema_name,
                attempt,
                llm.model,
                exc,
                text[:500],
            )
            conversation = list(messages)
            if text.strip():
                conversation.append({"role": "assistant", "content": text})
            conversation.append({"role": "user", "content": RETRY_INSTRUCTION.format(reason=exc)})
            continue
        return StructuredOutput(
            value=value,
            raw_text=text,
            model=llm.model,
            attempts=attempt,
            rejected=reasons[0] if reasons else None,
        )
    raise MalformedOutputError(
        f"{schema_name}: the output of {llm.model!r} was malformed twice "
        f"(1st: {reasons[0]}; 2nd: {reasons[1]}); the raw replies are in .raw_texts",
        raw_texts=tuple(raw_texts),
    )


def check_on_llm_error(value: object) -> OnLLMError:
    """Return ``value`` if it is ``"raise"`` or ``"fallback"``.

    Raises:
        ValidationError: any other value.
    """
    if value == "raise":
        return "raise"
    if value == "fallback":
        return "fallback"
    raise ValidationError(f"on_llm_error must be 'raise' or 'fallback', got {value!r}")


def failure_details(exc: FormationError, model: str) -> dict[str, Any]:
    """Describe a model failure for the provenance of the fallback episodes that replace its output.

    Args:
        exc: The failure.
        model: The model's name.

    Returns:
        ``{"llm_error": {"type", "message", "model", "raw_texts"}}``; each raw text is cut
        to :data:`MAX_KEPT_RAW_CHARS` characters.
    """
    return {
        "llm_error": {
            "type": type(exc).__name__,
            "message": str(exc),
            "model": model,
            "raw_texts": [text[:MAX_KEPT_RAW_CHARS] for text in exc.raw_texts],
        }
    }


# -- the OpenAI-compatible client -----------------------------------------------------------

_RESPONSE_FORMATS = ("json_schema", "json_object", "none")


class OpenAICompatibleLLM:
    """A chat model behind any OpenAI-compatible ``/v1/chat/completions`` endpoint.

    Uses the official ``openai`` SDK (``pip install 'memlane[openai]'``), imported on
    first use. Nothing here reads the environment; the SDK itself reads
    ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL`` when ``api_key`` / ``base_url`` are ``None``.

    Args:
        model: Model name sent with each request (e.g. ``"gpt-4o-mini"``; local servers
            often ignore it). Recorded in provenance.
        base_url: The endpoint, e.g. ``"http://127.0.0.1:8080/v1"``; ``None`` = the SDK's default.
        api_key: API key; local servers that need none still need a placeholder string
            (e.g. ``"local"``) because the SDK refuses to start without one.
        client: A ready ``openai.OpenAI`` client (overrides ``base_url``, ``api_key``,
            ``timeout_seconds`` and ``max_retries``).
        temperature: Sampling temperature in [0, 2] (default 0: most repeatable).
        max_tokens: Reply length limit in tokens, >= 1 (default 300). A reply that hits
            it is cut off and counts as malformed.
        timeout_seconds: Per-request timeout in seconds, > 0 (default 60).
        max_retries: The SDK's own retries of failed *requests* (connection errors, 429,
            5xx), >= 0 (default 2). Malformed *output* is retried once by
            :func:`complete_json`, independently of this.
        response_format: How to ask for JSON (:data:`ResponseFormat`; default ``"json_schema"``).
        seed: Sampling seed sent with each request, or ``None``.

    Raises:
        ValidationError: an argument out of range.
    """

    def __init__(  # noqa: PLR0913  (keyword-only client options, as openai.OpenAI takes them)
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        temperature: float = 0.0,
        max_tokens: int = 300,
        timeout_seconds: float = 60.0,
        max_retries: int = 2,
        response_format: ResponseFormat = "json_schema",
        seed: int | None = None,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise ValidationError("model must be a non-empty string")
        if not isinstance(temperature, int | float) or not 0.0 <= temperature <= 2.0:
            raise ValidationError(f"temperature must be in [0, 2], got {temperature!r}")
        if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
            raise ValidationError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        if not isinstance(timeout_seconds, int | float) or not timeout_seconds > 0:
            raise ValidationError(f"timeout_seconds must be > 0, got {timeout_seconds!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise ValidationError(f"max_retries must be an integer >= 0, got {max_retries!r}")
        if response_format not in _RESPONSE_FORMATS:
            raise ValidationError(
                f"response_format must be one of {list(_RESPONSE_FORMATS)}, got {response_format!r}"
            )
        self._model = model.strip()
        self._base_url = base_url
        self._api_key = api_key
        self._client = client
        self.temperature = float(temperature)
        self.max_tokens = max_tokens
        self._timeout = float(timeout_seconds)
        self._max_retries = max_retries
        self.response_format: ResponseFormat = response_format
        self.seed = seed

    @property
    def model(self) -> str:
        """The model name sent with each request."""
        return self._model

    def _get_client(self) -> Any:
        if self._client is None:
            try:
                import openai
            except ImportError as exc:
                raise FormationError(
                    "the openai package is needed for LLM formation: pip install 'memlane[openai]'"
                ) from exc
            try:
                self._client = openai.OpenAI(
                    api_key=self._api_key,
                    base_url=self._base_url,
                    timeout=self._timeout,
                    max_retries=self._max_retries,
                )
            except openai.OpenAIError as exc:  # raised when no API key is configured
                raise FormationError(
                    f"cannot create the OpenAI client ({exc}); pass api_key= (any placeholder "
                    "for a local server that needs none) or set OPENAI_API_KEY"
                ) from exc
        return self._client

    def request_body(
        self, messages: Sequence[Mapping[str, str]], *, json_schema: Mapping[str, Any], schema_name: str
    ) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for one request.

        Args:
            messages: The chat messages.
            json_schema: The reply's schema (sent only with ``response_format="json_schema"``).
            schema_name: The schema's name.

        Returns:
            ``model``, ``messages``, ``temperature``, ``max_tokens``, and
            ``response_format`` / ``seed`` when they apply.
        """
        body: dict[str, Any] = {
            "model": self._model,
            "messages": [dict(m) for m in messages],
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.response_format == "json_schema":
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": schema_name, "schema": dict(json_schema), "strict": True},
            }
        elif self.response_format == "json_object":
            body["response_format"] = {"type": "json_object"}
        if self.seed is not None:
            body["seed"] = self.seed
        return body

    def chat(
        self, messages: Sequence[Mapping[str, str]], *, json_schema: Mapping[str, Any], schema_name: str
    ) -> ChatReply:
        """Send one chat completion request; return the first choice's raw reply.

        Args:
            messages: The chat messages (``role``/``content`` strings).
            json_schema: The reply's schema (see ``response_format``).
            schema_name: The schema's name (letters, digits, ``_`` and ``-``).

        Returns:
            The raw :class:`ChatReply` (text unchanged; not validated here).

        Raises:
            FormationError: ``openai`` missing, no API key, or the request failed (the
                SDK's exception is chained as ``__cause__``).
        """
        client = self._get_client()
        body = self.request_body(messages, json_schema=json_schema, schema_name=schema_name)
        try:
            response = client.chat.completions.create(**body)
        except Exception as exc:  # the SDK's errors all become one typed error here
            raise FormationError(f"chat request to {self._model!r} failed: {exc}") from exc
        choices = getattr(response, "choices", None) or []
        if not choices:
            return ChatReply(text=None, finish_reason=None, model=getattr(response, "model", None))
        choice = choices[0]
        message = getattr(choice, "message", None)
        return ChatReply(
            text=getattr(message, "content", None),
            finish_reason=getattr(choice, "finish_reason", None),
            refusal=getattr(message, "refusal", None),
            model=getattr(response, "model", None),
        )

    def __repr__(self) -> str:
        return (
            f"OpenAICompatibleLLM(model={self._model!r}, base_url={self._base_url!r}, "
            f"max_tokens={self.max_tokens}, response_format={self.response_format!r})"
        )
