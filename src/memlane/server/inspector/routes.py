"""The inspector's HTTP routes (``/inspect``) and the apps that serve them.

Every page is server-rendered HTML (no script at all) sent with a strict content security
policy; reads go through :mod:`memlane.server.inspector.data`. Authentication and roles:
:mod:`memlane.server.inspector.auth`.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from importlib import resources
from urllib.parse import parse_qs

from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.middleware.trustedhost import TrustedHostMiddleware

from memlane import PRESETS, EpisodeNotFoundError, EpisodicMemory, MemlaneError, ValidationError
from memlane.config.api_keys import ApiKey
from memlane.config.file import ServerSettings
from memlane.graph import DEFAULT_NEIGHBOUR_DEPTH, MAX_GRAPH_DEPTH
from memlane.server.inspector import data, data_graph, pages, pages_graph, pages_sessions, pages_stats
from memlane.server.inspector.auth import (
    COOKIE_NAME,
    LoginSessions,
    Principal,
    principal_from_key,
    same_origin,
)
from memlane.server.inspector.html import Html
from memlane.server.inspector.layout import PREFIX, View
from memlane.server.inspector.throttle import KeyFailures, client_address

__all__ = ["InspectorState", "create_inspector_app", "install_inspector"]

logger = logging.getLogger(__name__)

ErrorDescriber = Callable[[MemlaneError, str], tuple[int, str]]
"""``(error, where) -> (status, message)``: what an error page shows for a memlane error."""

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
        "frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
_MAX_TIMELINE_ROWS = 1000
_SEARCH_DEFAULT = 10


@dataclass
class InspectorState:
    """What the inspector's routes share.

    Attributes:
        memory: Returns the served memory (raises while the app is not running).
        settings: API keys, or ``None`` for the keyless local inspector.
        local_admin: Everyone who reaches the app is an admin (``memlane inspect``).
        max_limit: Largest number of search hits.
        logins: Browser login sessions.
        failures: Unknown keys per client address (shared with ``/v1``: one back-off).
        describe: The status and the text an error page shows for a memlane error (served: the
            API's :func:`memlane.server.errors.public_error`, no internals; the keyless local
            inspector shows the error itself to its one user).
    """

    memory: Callable[[], EpisodicMemory]
    settings: ServerSettings | None
    local_admin: bool
    max_limit: int
    logins: LoginSessions = field(default_factory=LoginSessions)
    failures: KeyFailures = field(default_factory=KeyFailures)
    describe: ErrorDescriber = field(default=lambda exc, where: _describe_locally(exc, where))


def _describe_locally(exc: MemlaneError, where: str) -> tuple[int, str]:
    """The keyless local inspector's error text: the error itself (its one user runs the store)."""
    logger.warning("%s: %s", where, exc)
    return 503, f"{type(exc).__name__}: {exc}"


class _ProblemError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def _state(request: Request) -> InspectorState:
    state: InspectorState = request.app.state.memlane_inspector
    return state


def _html(body: Html, status: int = 200) -> HTMLResponse:
    return HTMLResponse(body, status_code=status, headers=_SECURITY_HEADERS)


def _presented_key(request: Request) -> str | None:
    auth = request.headers.get("authorization", "")
    if auth[:7].lower() == "bearer " and auth[7:].strip():
        return auth[7:].strip()
    return request.headers.get("x-api-key") or None


def _principal(request: Request, state: InspectorState) -> Principal | None:
    """The requester, or ``None``; raises a 401 problem for a presented but unknown key."""
    if state.local_admin:
        return Principal(None, True)
    if state.settings is None:  # pragma: no cover - a served inspector always has settings
        return None
    presented = _presented_key(request)
    if presented is not None:
        key = _known_key(request, state, presented)
        if key is None:
            raise _ProblemError(401, "invalid API key")
        return principal_from_key(key)
    token = request.cookies.get(COOKIE_NAME)
    return None if token is None else state.logins.get(token)


def _known_key(request: Request, state: InspectorState, presented: str) -> ApiKey | None:
    """The configured key ``presented`` is, or ``None`` (counted as a failure of the client).

    Raises:
        _ProblemError: 429, the client presented too many unknown keys lately.
    """
    assert state.settings is not None
    client = client_address(request)
    refusal = state.failures.refusal(client)
    if refusal is not None:
        raise _ProblemError(429, refusal[1])
    key = state.settings.api_key_for(presented)
    if key is None:
        state.failures.failed(client)
    return key


def _view_tenant(who: Principal, requested: str | None) -> str | None:
    if who.is_admin:
        return requested or None
    if requested and requested != who.tenant_id:
        raise _ProblemError(403, "this key may only view its own tenant")
    return who.tenant_id


def _param(request: Request, name: str) -> str | None:
    value = request.query_params.get(name, "").strip()
    return value or None


def _int(request: Request, name: str, default: int, maximum: int) -> int:
    raw = _param(request, name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValidationError(f"{name} must be an integer, got {raw!r}") from None
    if not 1 <= value <= maximum:
        raise ValidationError(f"{name} must be between 1 and {maximum}, got {value}")
    return value


def _date(request: Request, name: str, *, end: bool) -> datetime | None:
    raw = _param(request, name)
    if raw is None:
        return None
    try:
        if len(raw) == 10:  # a date: the whole day (an end date is exclusive of the next day)
            day = datetime.combine(datetime.fromisoformat(raw).date(), time(), tzinfo=UTC)
            return day + timedelta(days=1) if end else day
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise ValidationError(
            f"{name} must be a date (YYYY-MM-DD) or an ISO 8601 time, got {raw!r}"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def _choice(request: Request, name: str, choices: tuple[str, ...], default: str) -> str:
    value = _param(request, name) or default
    if value not in choices:
        raise ValidationError(f"{name} must be one of {list(choices)}, got {value!r}")
    return value


def _filters(request: Request, tenant: str | None, *, status: str = "all") -> data.Filters:
    # one tag per repeated ``tag`` parameter, as on the API (GET /v1/episodes?tag=a&tag=b): no splitting
    tags = tuple(dict.fromkeys(t.strip() for t in request.query_params.getlist("tag") if t.strip()))
    return data.Filters(
        tenant=tenant,
        session=_param(request, "session"),
        event_type=_param(request, "event_type"),
        tags=tags,
        start=_date(request, "start", end=False),
        end=_date(request, "end", end=True),
        status=_choice(request, "status", data.STATUSES, status),
        axis=_choice(request, "axis", data.AXES, "created"),
        limit=_int(request, "limit", 100, _MAX_TIMELINE_ROWS),
    )


def _run(request: Request, render: Callable[[InspectorState, EpisodicMemory, View], Html]) -> Response:
    """Authenticate, resolve the viewed tenant, render; map failures to HTML error pages."""
    state = _state(request)
    view: View | None = None
    try:
        who = _principal(request, state)
        if who is None:
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"{PREFIX}/login?next={_quote(target)}", status_code=303)
        view = View(who, _view_tenant(who, _param(request, "tenant")))
        return _html(render(state, state.memory(), view))
    except _ProblemError as exc:
        return _html(pages.error_page(view, exc.status, exc.message), exc.status)
    except EpisodeNotFoundError as exc:
        return _html(pages.error_page(view, 404, str(exc)), 404)
    except ValidationError as exc:
        return _html(pages.error_page(view, 422, str(exc)), 422)
    except MemlaneError as exc:  # internals (a path, a connection URL) are logged, never shown
        status, message = state.describe(exc, f"inspector {request.url.path}")
        return _html(pages.error_page(view, status, message), status)


def _quote(target: str) -> str:
    from urllib.parse import quote

    return quote(target, safe="")


def _safe_next(value: str | None) -> str:
    """Only redirect within the inspector (no open redirect)."""
    if value and value.startswith(PREFIX) and not value.startswith("//") and "\\" not in value:
        return value
    return PREFIX


def _tenants(memory: EpisodicMemory, view: View) -> list[str]:
    return data.tenants(memory) if view.who.is_admin else []


router = APIRouter(prefix=PREFIX, include_in_schema=False)


@router.get("")
@router.get("/")
def timeline_route(request: Request) -> Response:
    """The timeline of episodes with the filter bar."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        flt = _filters(request, view.tenant)
        return pages.timeline_page(view, flt, data.timeline(memory, flt), _tenants(memory, view))

    return _run(request, render)


@router.get("/search")
def search_route(request: Request) -> Response:
    """Ranked recall with score breakdowns."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        flt = _filters(request, view.tenant, status="active")  # by default what an agent's recall sees
        query = _param(request, "q")
        preset = _param(request, "preset")
        now = _date(request, "now", end=False)
        limit = _int(request, "limit", min(_SEARCH_DEFAULT, state.max_limit), state.max_limit)
        results = None
        if query is not None:
            hits = data.search(memory, query, flt, preset=preset, limit=limit, now=now)
            weights = data.weights_for(memory, preset)
            whys = data.explain(hits)
            results = (hits, whys, weights, memory.config.retrieval, memory.config.fusion)
        form = pages.SearchForm(
            query or "", preset, list(PRESETS), memory.clock.now() if now is None else now, now is not None
        )
        return pages.search_page(view, flt, form, results, _tenants(memory, view))

    return _run(request, render)


@router.get("/episodes/{episode_id:path}")
def episode_route(request: Request, episode_id: str) -> Response:
    """One episode and its supersede chain."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        reader = data.reader(memory, view.tenant)
        episode = reader.get_episode(episode_id)
        if episode is None:
            raise _ProblemError(404, f"no episode {episode_id!r}")
        entities = data_graph.mentioned_entities(memory, episode)
        return pages.episode_page(view, episode, reader.history(episode.id), memory.clock.now(), entities)

    return _run(request, render)


@router.get("/entities")
def entities_route(request: Request) -> Response:
    """The viewed tenant's entities that facts name (admins viewing every tenant pick one)."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        query = _param(request, "q") or ""
        if view.tenant is None:
            return pages_graph.entities_page(view, _tenants(memory, view), None, 0, query)
        limit = _int(request, "limit", 200, _MAX_TIMELINE_ROWS)
        rows, total = data_graph.entity_rows(memory, view.tenant, query, limit)
        return pages_graph.entities_page(view, _tenants(memory, view), rows, total, query)

    return _run(request, render)


@router.get("/entities/{name:path}")
def entity_route(request: Request, name: str) -> Response:
    """One entity: current facts, history with valid and recorded time, linked episodes, neighbourhood."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        depth = _int(request, "depth", DEFAULT_NEIGHBOUR_DEPTH, MAX_GRAPH_DEPTH)
        found = data_graph.entity_view(memory, view.tenant, name, depth)
        if found is None:
            raise _ProblemError(404, f"no entity {name!r}")
        return pages_graph.entity_page(view, found)

    return _run(request, render)


@router.get("/sessions")
def sessions_route(request: Request) -> Response:
    """Sessions with episodes, and stored conversations by agent and user."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        rows, total = data.sessions_overview(
            memory, view.tenant, _int(request, "limit", 200, _MAX_TIMELINE_ROWS)
        )
        agent, user = _param(request, "agent"), _param(request, "user")
        recent, error = None, None
        if agent and user and view.tenant is not None:
            try:
                recent = data.recent_conversations(memory, view.tenant, agent, user, 50)
            except MemlaneError as exc:
                error = str(exc)
        tenants = _tenants(memory, view)
        owners = [] if view.tenant is None else data.conversation_owners(memory, view.tenant)
        lookup = pages_sessions.ConversationLookup(agent or "", user or "", recent, error, owners)
        return pages_sessions.sessions_page(view, tenants, rows, total, lookup)

    return _run(request, render)


@router.get("/sessions/{session_id:path}")
def session_route(request: Request, session_id: str) -> Response:
    """One session: stored conversation (messages, tool calls) and event episodes."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        found = data.session_view(memory, view.tenant, session_id)
        if not found.episodes and found.conversation is None:
            raise _ProblemError(404, f"no session {session_id!r}")
        return pages_sessions.session_page(view, found, memory.clock.now())

    return _run(request, render)


@router.get("/stats")
def stats_route(request: Request) -> Response:
    """Store statistics and episodes over time."""

    def render(state: InspectorState, memory: EpisodicMemory, view: View) -> Html:
        return pages_stats.stats_page(view, data.stats_view(memory, view.tenant), _tenants(memory, view))

    return _run(request, render)


@router.get("/login")
def login_form(request: Request) -> Response:
    """The login form (the local inspector needs none and redirects to the timeline)."""
    if _state(request).local_admin:
        return RedirectResponse(PREFIX, status_code=303)
    return _html(pages.login_page(next_url=_safe_next(request.query_params.get("next"))))


@router.post("/login")
async def login(request: Request) -> Response:
    """Exchange an API key (form field ``key``) for a session cookie."""
    state = _state(request)
    if not same_origin(request):
        return _html(pages.error_page(None, 403, "cross-site login refused"), 403)
    if state.local_admin or state.settings is None:
        return RedirectResponse(PREFIX, status_code=303)
    try:
        form = parse_qs((await request.body()).decode("utf-8", "replace"), max_num_fields=10)
    except ValueError:  # more fields than a login form has (#22 item 11)
        return _html(pages.error_page(None, 400, "the login form has too many fields"), 400)
    presented = (form.get("key") or [""])[0].strip()
    next_url = _safe_next((form.get("next") or [""])[0])
    try:
        key = _known_key(request, state, presented) if presented else None
    except _ProblemError as exc:
        return _html(pages.login_page(exc.message, next_url), exc.status)
    if key is None:
        return _html(pages.login_page("Unknown API key.", next_url), 401)
    token = state.logins.create(principal_from_key(key, via_cookie=True), owner=key.digest)
    response = RedirectResponse(next_url, status_code=303)
    response.set_cookie(
        COOKIE_NAME,
        token,
        max_age=int(state.logins.ttl),
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


@router.post("/logout")
def logout(request: Request) -> Response:
    """Forget the login session and clear its cookie."""
    if not same_origin(request):
        return _html(pages.error_page(None, 403, "cross-site logout refused"), 403)
    token = request.cookies.get(COOKIE_NAME)
    if token is not None:
        _state(request).logins.drop(token)
    response = RedirectResponse(f"{PREFIX}/login", status_code=303)
    response.delete_cookie(COOKIE_NAME, path=PREFIX, httponly=True, samesite="strict")
    return response


@router.get("/static/inspector.css")
def stylesheet() -> Response:
    """The inspector's stylesheet (shipped in the wheel)."""
    css = resources.files("memlane.server.inspector").joinpath("static/inspector.css").read_text("utf-8")
    return Response(
        css,
        media_type="text/css",
        headers={"Cache-Control": "max-age=3600", "X-Content-Type-Options": "nosniff"},
    )


def install_inspector(
    app: FastAPI,
    memory: Callable[[], EpisodicMemory],
    settings: ServerSettings,
    *,
    max_limit: int,
    failures: KeyFailures | None = None,
    describe: ErrorDescriber | None = None,
) -> None:
    """Mount the inspector under ``/inspect`` on an API app (``memlane serve``).

    Args:
        app: The FastAPI app.
        memory: Returns the app's running memory.
        settings: API keys (with roles) that may log in.
        max_limit: Largest number of search hits.
        failures: The API's count of unknown keys per address, to share its back-off.
        describe: How an error page describes a memlane error (default: the error itself).
    """
    state = InspectorState(memory, settings, False, max_limit, failures=failures or KeyFailures())
    if describe is not None:
        state.describe = describe
    app.state.memlane_inspector = state
    app.include_router(router)


def create_inspector_app(
    memory_factory: Callable[[], EpisodicMemory],
    *,
    max_limit: int,
    allowed_hosts: tuple[str, ...] = ("127.0.0.1", "localhost"),
) -> FastAPI:
    """The keyless local inspector (``memlane inspect``): everyone who reaches it is an admin.

    Serve it on 127.0.0.1 only. Requests whose ``Host`` is not in ``allowed_hosts`` are
    refused (400), so a web page cannot reach it through DNS rebinding.

    Args:
        memory_factory: Opens the memory at startup; it is closed at shutdown.
        max_limit: Largest number of search hits, >= 1.
        allowed_hosts: Accepted ``Host`` header names (ports are ignored).
    """
    holder: dict[str, EpisodicMemory] = {}

    def current() -> EpisodicMemory:
        if "memory" not in holder:
            raise MemlaneError("the inspector is not running")
        return holder["memory"]

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        holder["memory"] = memory_factory()
        try:
            yield
        finally:
            holder.pop("memory").close()

    app = FastAPI(
        title="memlane inspector", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    app.add_middleware(TrustedHostMiddleware, allowed_hosts=list(allowed_hosts))
    app.state.memlane_inspector = InspectorState(current, None, True, max_limit)
    app.include_router(router)

    @app.get("/", include_in_schema=False)
    def root() -> Response:
        return RedirectResponse(PREFIX, status_code=307)

    return app
