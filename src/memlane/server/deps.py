"""What the HTTP routers share: the app state, authentication (tenant and role), error docs, bodies.

* :class:`AppState` holds the settings and the served memory, and hands out one memory per
  (tenant, session, scope) (cached).
* :data:`Tenant` authenticates a request and gives the key's tenant; :data:`AdminKey`
  also requires the key's role to be ``admin`` or ``operator`` (403 otherwise): destructive,
  tenant-wide operations (forget, compact, prune) use it.
* :func:`wire` returns a :mod:`memlane.wire` result as the response as is (the
  bodies are the request types of :mod:`memlane.operations.requests`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Annotated, Any, Literal, TypeVar

from fastapi import Depends, HTTPException, Path, Request
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer
from pydantic import BaseModel, Field

from memlane import EpisodicMemory
from memlane.config.api_keys import ApiKey
from memlane.config.file import ServerSettings
from memlane.models import Scope
from memlane.server.errors import SafeJSONResponse
from memlane.server.inspector.throttle import KeyFailures, client_address
from memlane.validation import VISIBLE_PATTERN, check_limit

__all__ = [
    "ADMIN_ONLY",
    "API_PREFIX",
    "ERRORS",
    "NOT_FOUND",
    "AdminKey",
    "AppState",
    "ErrorDetail",
    "ErrorOut",
    "IdPath",
    "MemoryFactory",
    "ScopeName",
    "State",
    "Tenant",
    "check_not_throttled",
    "wire",
    "with_body",
]

API_PREFIX = "/v1"
CONTEXT_CACHE_SIZE = 1024

MemoryFactory = Callable[[], EpisodicMemory]
"""Opens the app's memory at startup; the app closes it at shutdown."""

# -- wire formats ------------------------------------------------------------------------

IdPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=200,
        pattern=VISIBLE_PATTERN,
        description="An id (1-200 characters, not blank).",
    ),
]
"""An episode or session id in a path (what :func:`memlane.validation.check_identifier` accepts)."""

ScopeName = Literal["session", "tenant"]
SCOPE_HELP = (
    "What a read may see: 'session' (this session only) or 'tenant' (every session of the key's "
    "tenant). Default: the server's configured scope."
)


class ErrorDetail(BaseModel):
    """What went wrong."""

    type: str = Field(description="Error kind, e.g. ValidationError, Unauthorized, NotFound.")
    message: str
    details: list[dict[str, Any]] | None = None


class ErrorOut(BaseModel):
    """The body of every error response."""

    error: ErrorDetail


# -- application state -------------------------------------------------------------------


@dataclass
class AppState:
    """What the endpoints share: the settings, the memory, and per-context memories."""

    settings: ServerSettings
    max_limit: int
    factory: MemoryFactory
    memory: EpisodicMemory | None = None
    failures: KeyFailures = field(default_factory=KeyFailures)
    _contexts: OrderedDict[tuple[str, str, Scope], EpisodicMemory] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def base(self) -> EpisodicMemory:
        """The server's memory (opened at startup).

        Raises:
            HTTPException: 503 before startup or after shutdown.
        """
        if self.memory is None:  # pragma: no cover - only before startup / after shutdown
            raise HTTPException(status_code=503, detail="the server is not ready")
        return self.memory

    def default_scope(self) -> Scope:
        """The configured scope for a request that names none (``global`` serves as ``tenant``)."""
        scope = Scope(self.base().config.scope)
        return Scope.TENANT if scope is Scope.GLOBAL else scope

    def context(self, tenant_id: str, session_id: str | None, scope: str | None) -> EpisodicMemory:
        """The memory for one (tenant, session, scope), cached (a new context binds the store)."""
        resolved = self.default_scope() if scope is None else Scope(scope)
        key = (tenant_id, session_id or "default", resolved)
        with self._lock:
            memory = self._contexts.get(key)
            if memory is not None:
                self._contexts.move_to_end(key)
                return memory
        base = self.base()
        memory = base.with_context(
            tenant_id=key[0], session_id=key[1], config=replace(base.config, scope=resolved)
        )
        with self._lock:
            self._contexts[key] = memory
            while len(self._contexts) > CONTEXT_CACHE_SIZE:
                self._contexts.popitem(last=False)
        return memory

    def check_limit(self, limit: int | None) -> None:
        """Refuse a ``limit`` above the server's ``max_limit``.

        Raises:
            ValidationError: ``limit`` is not an integer in [1, ``max_limit``].
        """
        if limit is not None:
            check_limit(limit, maximum=self.max_limit)


def app_state(request: Request) -> AppState:
    """The :class:`AppState` ``create_app`` put on the application (a FastAPI dependency)."""
    state: AppState = request.app.state.memlane
    return state


_bearer = HTTPBearer(auto_error=False, description="The API key as a bearer token.")
_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The API key.")


def _api_key(
    request: Request,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    api_key: Annotated[str | None, Depends(_api_key_header)],
) -> ApiKey:
    """Authenticate the request; return the configured key (tenant and role).

    Raises:
        HTTPException: 401 without a key or with an unknown one.
    """
    presented = bearer.credentials if bearer is not None else api_key
    challenge = {"WWW-Authenticate": "Bearer"}
    if not presented:
        raise HTTPException(
            status_code=401,
            detail="missing API key: send 'Authorization: Bearer <key>' or 'X-API-Key: <key>'",
            headers=challenge,
        )
    state = app_state(request)
    client = client_address(request)
    check_not_throttled(state.failures, client)
    key = state.settings.api_key_for(presented)
    if key is None:
        state.failures.failed(client)
        raise HTTPException(status_code=401, detail="invalid API key", headers=challenge)
    return key


def check_not_throttled(failures: KeyFailures, client: str) -> None:
    """Refuse a client that presented too many unknown keys lately (:mod:`memlane.server.inspector.throttle`).

    Raises:
        HTTPException: 429 with ``Retry-After``.
    """
    refusal = failures.refusal(client)
    if refusal is not None:
        raise HTTPException(status_code=429, detail=refusal[1], headers={"Retry-After": str(refusal[0])})


def _tenant(key: Annotated[ApiKey, Depends(_api_key)]) -> str:
    return key.tenant_id


def _admin_key(key: Annotated[ApiKey, Depends(_api_key)]) -> ApiKey:
    """The key, if its role is ``admin`` or ``operator``.

    Raises:
        HTTPException: 403 for an ``agent`` key.
    """
    if not key.is_admin:
        raise HTTPException(
            status_code=403, detail="this operation needs an admin API key (role: admin in server.api_keys)"
        )
    return key


Tenant = Annotated[str, Depends(_tenant)]
"""The authenticated key's tenant (401 without a valid key)."""
AdminKey = Annotated[ApiKey, Depends(_admin_key)]
"""The authenticated key (tenant and role), for ``admin``/``operator`` keys only (403 for ``agent``)."""
State = Annotated[AppState, Depends(app_state)]

ERRORS: dict[int | str, dict[str, Any]] = {
    400: {"model": ErrorOut, "description": "The body cannot be read at all (e.g. a 20,000-digit number)."},
    401: {"model": ErrorOut, "description": "Missing or unknown API key."},
    429: {"model": ErrorOut, "description": "Too many unknown API keys from this address lately."},
    413: {"model": ErrorOut, "description": "Request body too large."},
    422: {"model": ErrorOut, "description": "Invalid request (also: a body that is not JSON)."},
    502: {"model": ErrorOut, "description": "The embedding model failed; the details were logged."},
    503: {"model": ErrorOut, "description": "Store or embedder unavailable."},
}
NOT_FOUND: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "No such episode for this tenant."}
}

ADMIN_ONLY: dict[int | str, dict[str, Any]] = {
    403: {"model": ErrorOut, "description": "The API key's role is not admin."}
}


F = TypeVar("F", bound=Callable[..., Any])


def with_body(model: type[BaseModel], *, optional: bool = False) -> Callable[[F], F]:
    """Declare a route's ``body`` parameter as ``model`` (a request type built per app, for FastAPI).

    The route is written against :class:`memlane.operations.requests.Request` (what mypy
    checks); FastAPI reads the annotation set here, so the OpenAPI body is ``model``.
    With ``optional``, a missing or ``null`` body is ``None`` (every field of ``model`` is optional).
    """

    def declare(route: F) -> F:
        route.__annotations__["body"] = (model | None) if optional else model
        return route

    return declare


def wire(result: Mapping[str, Any], status_code: int = 200) -> SafeJSONResponse:
    """An operation's :mod:`memlane.wire` result as the response, as is (without ``ok``)."""
    return SafeJSONResponse({k: v for k, v in result.items() if k != "ok"}, status_code=status_code)
