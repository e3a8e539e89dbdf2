"""The HTTP API (FastAPI): remember, recall, list, export, get and delete episodes per tenant.

Install with ``pip install 'memlane[server]'`` and run with ``memlane --config memlane.yaml serve``,
or build the app yourself::

    app = create_app(lambda: EpisodicMemory.from_config("memlane.yaml"), load_config("memlane.yaml").server)
    uvicorn.run(app, host="127.0.0.1", port=8080)

Tenancy and auth:

* Every ``/v1`` endpoint needs an API key, sent as ``Authorization: Bearer <key>`` or
  ``X-API-Key: <key>``. Keys are configured as a mapping key -> tenant (``server.api_keys``,
  best stored hashed as ``sha256:<hex>``); a missing or unknown key is a 401.
* The tenant is **always** the key's tenant. Request bodies have no tenant field (an
  unknown field is a 422), and an episode of another tenant is a 404 exactly like an
  unknown id, so ids cannot be probed across tenants.
* ``session_id`` (body or query, default ``"default"``) selects the session within the
  tenant; ``scope`` is ``session`` or ``tenant`` (default: the configured scope; a
  configured ``global`` scope is narrowed to ``tenant`` here, as HTTP never crosses tenants).
  Get and delete by id look across every session of the tenant.

Limits: request bodies over ``server.max_request_bytes`` (default 1 MiB) are refused with
413; ``limit`` above ``episodic_memory.max_limit`` (default 50) is a 422.

The memory inspector (read-only web pages) is mounted at ``/inspect``: log in with an API
key; ``admin`` keys may view every tenant (:mod:`memlane.server.inspector`).

Arguments: request bodies are checked by :mod:`memlane.operations.arguments` before anything else (the
policy shared with Python, tool calls and MCP: strict types, unknown fields refused, the
same ``ValidationError`` message), so a bad value is a 422 whose message is the Python
API's own. Responses never fail to encode (:class:`memlane.server.errors.SafeJSONResponse`).

``GET /health`` needs no key. OpenAPI: ``/openapi.json``. There is no ``/docs`` or ``/redoc``:
FastAPI's pages load Swagger UI/ReDoc scripts from a CDN, which must not run on the inspector's
origin (its cookie) and show a blank page offline; open ``/openapi.json`` in any OpenAPI viewer.
Errors follow :mod:`memlane.server.errors`. Endpoints are synchronous and run in the
server's thread pool; the memory is opened when the app starts and closed when it stops.
``memlane serve`` answers ``GET /health`` while this app is still being built
(:class:`memlane.server.front.LoadingFront`); every other request waits for it.
"""

import itertools
import json
import logging
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from typing import Annotated, Any, Literal

from fastapi import APIRouter, FastAPI, HTTPException, Query, Response
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, Field
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Send
from starlette.types import Scope as AsgiScope

from memlane import EpisodicMemory, __version__
from memlane import wire as wire_format
from memlane.config.file import DEFAULT_MAX_LIMIT, ServerSettings
from memlane.errors import MemlaneError
from memlane.models import Scope
from memlane.operations import handlers as operations
from memlane.operations.fields import Request, bounded
from memlane.operations.requests import RecallBody, RememberBody
from memlane.server.deps import (
    API_PREFIX,
    ERRORS,
    NOT_FOUND,
    SCOPE_HELP,
    AppState,
    IdPath,
    MemoryFactory,
    ScopeName,
    State,
    Tenant,
    wire,
    with_body,
)
from memlane.server.errors import SafeJSONResponse, http_error_response, install_error_handlers, public_error
from memlane.server.front import health_body
from memlane.server.inspector.routes import install_inspector
from memlane.server.inspector.throttle import KeyFailures
from memlane.server.routes_graph import graph_router
from memlane.server.routes_lifecycle import lifecycle_router
from memlane.server.routes_sessions import sessions_router
from memlane.server.schemas import CompactEpisodeOut, EpisodeList, EpisodeOut, RecallResponse

__all__ = ["API_PREFIX", "BodySizeLimit", "create_app", "episodes_router"]

logger = logging.getLogger(__name__)


class Health(BaseModel):
    """Liveness."""

    status: Literal["ok"]
    version: str


class EpisodeQuery(BaseModel):
    """The filters of a listing or an export (query parameters)."""

    session_id: str | None = Field(default=None, min_length=1, max_length=200)
    scope: ScopeName | None = Field(default=None, description=SCOPE_HELP)
    event_type: str | None = Field(default=None, min_length=1, max_length=200)
    tag: list[str] | None = Field(default=None, description="Repeatable; episodes must have ALL tags.")

    def memory(self, state: AppState, tenant: str) -> EpisodicMemory:
        """The memory these filters read (the session and scope within the tenant)."""
        return state.context(tenant, self.session_id, self.scope)


Where = Annotated[EpisodeQuery, Query()]


EXPORT_INTERRUPTED = "the export was interrupted by a store error; the details were logged"


def _export_lines(episodes: Iterator[Any]) -> Iterator[bytes]:
    """JSON Lines of ``episodes``; a store failure mid-stream ends them with an error record."""
    try:
        for episode in episodes:
            yield (json.dumps(episode.to_dict(), ensure_ascii=False) + "\n").encode("utf-8")
    except MemlaneError as exc:
        logger.exception("export interrupted")
        error = {"error": {"type": type(exc).__name__, "message": EXPORT_INTERRUPTED}}
        yield (json.dumps(error) + "\n").encode("utf-8")


def episodes_router(max_limit: int) -> APIRouter:
    """The episode routes (``/v1/episodes``, ``/v1/recall``, ``/v1/export``) for one ``max_limit``.

    The bodies are the operations' request types (:mod:`memlane.operations.requests`) with
    their counts bounded by ``max_limit``, so the OpenAPI document says what the checks accept.
    """
    router = APIRouter(prefix=API_PREFIX, responses=ERRORS, tags=["episodes"])
    remember_body = bounded(RememberBody, max_limit)
    recall_body = bounded(RecallBody, max_limit)

    @router.post(
        "/episodes",
        status_code=201,
        response_model=EpisodeOut | CompactEpisodeOut,
        summary="Remember an episode",
    )
    @with_body(remember_body)
    def remember(body: Request, tenant: Tenant, state: State) -> Response:
        """Append one episode for the key's tenant (and ``session_id``) and return it with its new id."""
        args = body.arguments()
        memory = state.context(tenant, args.pop("session_id", None), None)
        return wire(operations.remember_episode(memory, args, "full")["episode"], status_code=201)

    @router.post("/recall", response_model=RecallResponse, summary="Recall episodes")
    @with_body(recall_body, optional=True)
    def recall(tenant: Tenant, state: State, body: Request | None = None) -> Response:
        """Ranked recall by ``query`` (with a score breakdown per hit), or newest first without one.

        ``as_of``/``known_at`` ask the time model (README: Time model); ``retrieval`` and
        ``min_relevance`` override the configured ones for this call.
        """
        args: dict[str, Any] = {} if body is None else body.arguments()
        memory = state.context(tenant, args.pop("session_id", None), args.pop("scope", None))
        return wire(operations.recall_episodes(memory, args, "full", key="hits"))

    _read_routes(router, max_limit)
    return router


def _read_routes(router: APIRouter, max_limit: int) -> None:
    limit_query = Annotated[
        int | None,
        Query(description=f"1-{max_limit}.", json_schema_extra={"minimum": 1, "maximum": max_limit}),
    ]

    @router.get("/episodes", response_model=EpisodeList, summary="List episodes, newest first")
    def list_episodes(tenant: Tenant, state: State, where: Where, limit: limit_query = None) -> Response:
        """The newest episodes in scope that match the filters (no embedding involved)."""
        state.check_limit(limit)
        hits = where.memory(state, tenant).recall_episodes(None, where.event_type, where.tag or [], limit)
        return wire({"count": len(hits), "episodes": [wire_format.episode(h.episode) for h in hits]})

    @router.get(
        "/export",
        summary="Export episodes as JSON Lines",
        response_class=StreamingResponse,
        responses={200: {"content": {"application/x-ndjson": {}}, "description": "One episode per line."}},
    )
    def export(tenant: Tenant, state: State, where: Where) -> StreamingResponse:
        """Every episode in scope, oldest first, one JSON object per line (the ``memlane export`` format).

        The first page is read before the 200 is sent (a store that fails at once is a 503); a
        failure later ends the stream with one ``{"error": {...}}`` line instead of a silent cut.
        """
        episodes = iter(
            where.memory(state, tenant).iter_episodes(event_type=where.event_type, tags=where.tag or [])
        )
        first = list(itertools.islice(episodes, 1))  # runs the first page's query now
        return StreamingResponse(
            _export_lines(itertools.chain(first, episodes)), media_type="application/x-ndjson"
        )

    @router.get(
        "/episodes/{episode_id}", response_model=EpisodeOut, responses=NOT_FOUND, summary="Get an episode"
    )
    def get_episode(episode_id: IdPath, tenant: Tenant, state: State) -> Response:
        """One episode of the key's tenant (any session); 404 if unknown or another tenant's."""
        episode = state.context(tenant, None, Scope.TENANT.value).get_episode(episode_id)
        if episode is None:
            raise HTTPException(status_code=404, detail=f"no episode {episode_id!r}")
        return wire(wire_format.episode(episode))

    @router.delete(
        "/episodes/{episode_id}", status_code=204, responses=NOT_FOUND, summary="Delete an episode"
    )
    def delete_episode(episode_id: IdPath, tenant: Tenant, state: State) -> Response:
        """Delete one episode of the key's tenant (any session); 404 if unknown or another tenant's."""
        if not state.context(tenant, None, Scope.TENANT.value).delete_episode(episode_id):
            raise HTTPException(status_code=404, detail=f"no episode {episode_id!r}")
        return Response(status_code=204)


health_router = APIRouter(tags=["health"])


@health_router.get("/health", response_model=Health, summary="Liveness check (no API key needed)")
def health() -> Health:
    """``{"status": "ok", "version"}`` while the server runs (:func:`memlane.server.front.health_body`)."""
    return Health.model_validate(health_body())


# -- the app ----------------------------------------------------------------------------


class BodySizeLimit:
    """ASGI middleware: refuse request bodies over ``max_bytes`` with a JSON 413.

    A declared ``Content-Length`` over the limit is refused before the body is read; a
    body without one (chunked) is counted as it arrives and refused when it crosses the
    limit (the endpoint never sees it).

    Args:
        app: The wrapped ASGI app.
        max_bytes: Largest accepted body, in bytes.
    """

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        """Serve one ASGI connection with the limit applied."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        message = f"request body larger than {self.max_bytes} bytes"
        declared = Headers(scope=scope).get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            await http_error_response(413, message)(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            incoming = await receive()
            if incoming["type"] == "http.request":
                received += len(incoming.get("body", b""))
                if received > self.max_bytes:
                    raise HTTPException(status_code=413, detail=message)  # -> the JSON error handler
            return incoming

        await self.app(scope, limited_receive, send)


def create_app(
    memory_factory: MemoryFactory,
    settings: ServerSettings,
    *,
    max_limit: int = DEFAULT_MAX_LIMIT,
    key_failures: KeyFailures | None = None,
) -> FastAPI:
    """Build the HTTP API over the memory that ``memory_factory`` opens.

    Args:
        memory_factory: Called once at startup; returns the memory to serve (its store and
            embedder are shared by every tenant; its config gives scope, limits and ranking
            defaults). The app closes it at shutdown.
        settings: API keys (key -> tenant) and ``max_request_bytes``; see
            :class:`memlane.config.file.ServerSettings`.
        max_limit: Largest ``limit`` a request may ask for, >= 1 (default 50).
        key_failures: The back-off for unknown API keys (default: 100 per address and minute;
            :mod:`memlane.server.inspector.throttle`).

    Returns:
        The FastAPI application (serve it with uvicorn).

    Raises:
        ConfigError: no API keys are configured (every request would be refused), or
            ``max_limit`` < 1.
    """
    settings.check_servable(max_limit)
    state = AppState(
        settings=settings, max_limit=max_limit, factory=memory_factory, failures=key_failures or KeyFailures()
    )

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        state.memory = memory_factory()
        logger.info("serving %r", state.memory)
        try:
            yield
        finally:
            memory, state.memory = state.memory, None
            state._contexts.clear()
            memory.close()

    app = FastAPI(
        title="memlane",
        version=__version__,
        summary="Episodic memory for AI agents: remember and recall episodes per tenant.",
        description=(
            "Authenticate every `/v1` request with an API key (`Authorization: Bearer <key>` or "
            "`X-API-Key: <key>`). The key decides the tenant; another tenant's episodes are "
            'invisible (404). Errors: `{"error": {"type", "message"}}`.'
        ),
        lifespan=lifespan,
        default_response_class=SafeJSONResponse,
        docs_url=None,  # no CDN scripts on the inspector's origin (#22 item 15)
        redoc_url=None,
    )
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_request_bytes)
    app.state.memlane = state
    install_error_handlers(app)
    app.include_router(health_router)
    app.include_router(episodes_router(max_limit))
    app.include_router(sessions_router(max_limit))
    app.include_router(lifecycle_router(max_limit))
    app.include_router(graph_router(max_limit))
    install_inspector(  # /inspect (server/inspector/): the API's back-off and its 5xx texts
        app, state.base, settings, max_limit=max_limit, failures=state.failures, describe=public_error
    )
    return app
