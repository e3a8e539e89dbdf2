"""The HTTP API's error convention, in one place: memlane errors -> status code + JSON body.

Every error response has the same body::

    {"error": {"type": "ValidationError", "message": "content must be a non-empty string"}}

(plus ``"details"``, a list of ``{"loc", "msg", "type"}``, for request-validation errors).

=====================================  ======  ===================================================
Error                                  Status  Meaning for the client
=====================================  ======  ===================================================
body that cannot be parsed at all      400     e.g. a 20,000-digit number (FastAPI's own answer)
missing or unknown API key             401     send ``Authorization: Bearer <key>`` / ``X-API-Key``
unknown id, or another tenant's id     404     never reveals whether the id exists elsewhere
                                              (:class:`EpisodeNotFoundError` too: supersede, history)
agent key on an admin operation        403     forget, compact and prune need an ``admin`` key
request body over the size limit       413     send less
malformed request, bad value           422     :class:`~memlane.errors.ValidationError` and schema errors
:class:`DuplicateEpisodeError`         409     the id already exists (episodes are append-only)
:class:`EmbeddingError`                502     the embedding model or remote embedding API failed
:class:`EmbedderUnavailableError`      503     the embedder cannot run on the server
:class:`StoreError`                    503     the database failed (e.g. locked); retry later
:class:`StoreClosedError`              503     the server is shutting down
:class:`SchemaVersionError`,           500     server misconfiguration
:class:`EmbeddingModelMismatchError`,
:class:`ConfigError`, anything else
=====================================  ======  ===================================================

For 4xx errors the message is memlane's own (it describes the client's input). For 5xx
errors the message is generic — store and embedder messages can contain file paths or
hostnames — and the details are logged instead. A request body refused by the shared
argument policy (:mod:`memlane.operations.arguments`) gets the policy's message as is, exactly as the
Python API and the tools word it. Every body is written by :class:`SafeJSONResponse`, which
never fails to encode (a lone surrogate in a message becomes a ``\\udc00`` escape), so a
bad character is a 422, never a 500 that drops the connection.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Mapping
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from memlane.errors import (
    ConfigError,
    DuplicateEpisodeError,
    EmbedderUnavailableError,
    EmbeddingError,
    EmbeddingModelMismatchError,
    EpisodeNotFoundError,
    FactNotFoundError,
    MemlaneError,
    SchemaVersionError,
    StoreClosedError,
    StoreError,
    ValidationError,
)
from memlane.validation import safe_text
from memlane.wire import error_body

__all__ = [
    "STATUS_BY_ERROR",
    "SafeJSONResponse",
    "error_body",
    "http_error_response",
    "install_error_handlers",
    "public_error",
    "status_for",
]

logger = logging.getLogger(__name__)

STATUS_BY_ERROR: tuple[tuple[type[MemlaneError], int], ...] = (
    (DuplicateEpisodeError, 409),
    (EpisodeNotFoundError, 404),
    (FactNotFoundError, 404),
    (StoreClosedError, 503),
    (SchemaVersionError, 500),
    (StoreError, 503),
    (EmbeddingModelMismatchError, 500),
    (EmbedderUnavailableError, 503),
    (EmbeddingError, 502),
    (ValidationError, 422),
    (ConfigError, 500),
    (MemlaneError, 500),
)
"""Status per memlane error class; the first matching entry wins (most specific first)."""

_GENERIC_5XX = {
    500: "internal server error; the details were logged",
    502: "the embedding model failed; the details were logged",
    503: "the service is temporarily unavailable; the details were logged",
}


class SafeJSONResponse(JSONResponse):
    """A JSON response that always encodes: text that UTF-8 cannot hold is written ASCII-escaped."""

    def render(self, content: Any) -> bytes:
        """``content`` as compact UTF-8 JSON, or ASCII JSON (``\\udc00`` escapes) if UTF-8 fails."""
        try:
            return super().render(content)
        except UnicodeEncodeError:
            return json.dumps(content, ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode(
                "ascii"
            )


def status_for(exc: MemlaneError) -> int:
    """HTTP status for a memlane error (see :data:`STATUS_BY_ERROR`)."""
    for cls, status in STATUS_BY_ERROR:
        if isinstance(exc, cls):
            return status
    return 500  # pragma: no cover - MemlaneError is the last entry


def _status_type(status: int) -> str:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        return "HTTPError"
    return "".join(word.capitalize() for word in phrase.replace("-", " ").split())


def http_error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A JSON error response for a plain HTTP status (type = the status phrase, e.g. ``NotFound``)."""
    return SafeJSONResponse(error_body(_status_type(status), message), status_code=status, headers=headers)


def public_error(exc: MemlaneError, where: str) -> tuple[int, str]:
    """The status and the message a client may see for ``exc`` (HTTP API and inspector pages).

    A 5xx error's own text can hold internals (a database path, a connection URL): it is
    logged (with ``where``) and the client gets a generic message instead.
    """
    status = status_for(exc)
    if status < 500:
        return status, str(exc)
    logger.error("%s failed: %s: %s", where, type(exc).__name__, exc)
    return status, _GENERIC_5XX.get(status, _GENERIC_5XX[500])


async def _memlane_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, MemlaneError)
    status, message = public_error(exc, f"{request.method} {request.url.path}")
    return SafeJSONResponse(error_body(type(exc).__name__, message), status_code=status)


def _endpoints(routes: Iterable[Any]) -> Iterator[Any]:
    """The routes with methods, also those of included routers (FastAPI wraps each one)."""
    for route in routes:
        included = getattr(route, "original_router", None)
        if included is not None:
            yield from _endpoints(included.routes)
        elif getattr(route, "methods", None):
            yield route


def _allowed_methods(request: Request) -> str:
    """Every method the request's path supports (Starlette names only the first matching route's)."""
    methods: set[str] = set()
    for route in _endpoints(request.app.router.routes):
        match, _ = route.matches(request.scope)
        if match is not Match.NONE:
            methods |= set(route.methods)
    return ", ".join(sorted(methods))


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else _status_type(exc.status_code)
    headers = dict(exc.headers or {})
    if exc.status_code == 405:
        headers["Allow"] = _allowed_methods(request)
    return http_error_response(exc.status_code, message, headers or None)


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    policy = [err.get("ctx", {}).get("error") for err in errors]
    if errors and all(isinstance(e, ValidationError) for e in policy):  # the shared argument policy
        return SafeJSONResponse(error_body("ValidationError", str(policy[0])), status_code=422)
    details = [
        {
            "loc": [safe_text(str(part)) for part in err.get("loc", ())],
            "msg": safe_text(str(err.get("msg", ""))),
            "type": str(err.get("type", "")),
        }
        for err in errors
    ]
    message = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details) or "invalid request"
    return SafeJSONResponse(error_body("ValidationError", message, details), status_code=422)


async def _unexpected_error(request: Request, exc: Exception) -> JSONResponse:
    logger.exception("%s %s failed unexpectedly", request.method, request.url.path, exc_info=exc)
    return SafeJSONResponse(error_body("InternalServerError", _GENERIC_5XX[500]), status_code=500)


def install_error_handlers(app: FastAPI) -> None:
    """Register the handlers that turn every error into the documented status and body."""
    app.add_exception_handler(MemlaneError, _memlane_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected_error)
