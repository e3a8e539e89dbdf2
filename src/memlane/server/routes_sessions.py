"""HTTP routes for session episodes and the context block (``/v1/sessions``, ``/v1/context``).

Sessions belong to the key's tenant; ``agent_id``/``user_id`` (default ``"default"``) say
whose conversations within it. The bodies are the operations' request types
(:mod:`memlane.operations.requests`: checked by the one policy, documented from the same
declaration); results are the :mod:`memlane.operations.handlers` results in the full
:mod:`memlane.wire` form.
"""

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, Response

from memlane.operations import handlers as operations
from memlane.operations.fields import Request, bounded
from memlane.operations.requests import (
    ContextBody,
    InjectContextBody,
    SearchSessionsBody,
    StoreSessionBody,
)
from memlane.server.deps import API_PREFIX, ERRORS, ErrorOut, IdPath, State, Tenant, wire, with_body
from memlane.server.schemas import (
    ContextOut,
    MessagesOut,
    RecentSessionsOut,
    SearchSessionsOut,
    SessionOut,
)

__all__ = ["sessions_router"]

_NO_SESSION: dict[int | str, dict[str, Any]] = {
    404: {"model": ErrorOut, "description": "No such session for this tenant."}
}
_OWNER_QUERY = Annotated[str, Query(min_length=1, max_length=200, description="Default 'default'.")]


def sessions_router(max_limit: int) -> APIRouter:
    """The session and context routes for one ``max_limit`` (bodies: the operations' request types)."""
    router = APIRouter(prefix=API_PREFIX, responses=ERRORS, tags=["sessions"])
    store_body = bounded(StoreSessionBody, max_limit)
    search_body = bounded(SearchSessionsBody, max_limit)
    context_body = bounded(ContextBody, max_limit)
    inject_body = bounded(InjectContextBody, max_limit)
    limit_query = Annotated[
        int, Query(description=f"1-{max_limit}.", json_schema_extra={"minimum": 1, "maximum": max_limit})
    ]

    @router.post(
        "/sessions",
        status_code=201,
        response_model=SessionOut,
        summary="Store a conversation (or append turns)",
        responses={409: {"model": ErrorOut, "description": "The session exists and append is false."}},
    )
    @with_body(store_body)
    def store_session(body: Request, tenant: Tenant, state: State) -> Response:
        """Store one conversation for the key's tenant, or with ``append: true`` add turns to it."""
        args = body.arguments()
        sessions = state.context(tenant, None, None).sessions
        session = sessions.store_session(
            args["session_id"],
            args["messages"],
            agent_id=args.get("agent_id", "default"),
            user_id=args.get("user_id", "default"),
            started_at=args.get("started_at"),
            ended_at=args.get("ended_at"),
            metadata=args.get("metadata"),
            append=args.get("append", False),
        )
        return wire(session.to_dict(), status_code=201)

    @router.get("/sessions", response_model=RecentSessionsOut, summary="Recent conversations, newest first")
    def recent_sessions(
        tenant: Tenant,
        state: State,
        agent_id: _OWNER_QUERY = "default",
        user_id: _OWNER_QUERY = "default",
        limit: limit_query = 5,
    ) -> Response:
        """The newest sessions of ``agent_id`` and ``user_id`` with all their messages."""
        state.check_limit(limit)
        args = {"agent_id": agent_id, "user_id": user_id, "limit": limit}
        memory = state.context(tenant, None, None)
        return wire(operations.recent_sessions(memory, args, operations.Owner(), "full"))

    @router.post("/sessions/search", response_model=SearchSessionsOut, summary="Search past conversations")
    @with_body(search_body)
    def search_sessions(body: Request, tenant: Tenant, state: State) -> Response:
        """The passages of ``agent_id``'s and ``user_id``'s past sessions that best match ``query``."""
        memory = state.context(tenant, None, None)
        return wire(operations.search_sessions(memory, body.arguments(), operations.Owner(), "full"))

    @router.get(
        "/sessions/{session_id:path}",  # an id may hold '/' (#22 item 13): routable, not a 404
        response_model=SessionOut,
        responses=_NO_SESSION,
        summary="Get a conversation",
    )
    def get_session(session_id: IdPath, tenant: Tenant, state: State) -> Response:
        """One stored conversation of the key's tenant, every message; 404 if unknown."""
        session = state.context(tenant, None, None).sessions.get_session(session_id)
        if session is None:
            raise HTTPException(status_code=404, detail=f"no session {session_id!r}")
        return wire(session.to_dict())

    @router.delete(
        "/sessions/{session_id:path}", status_code=204, responses=_NO_SESSION, summary="Delete a conversation"
    )
    def delete_session(session_id: IdPath, tenant: Tenant, state: State) -> Response:
        """Delete one conversation of the key's tenant (messages and index); 404 if unknown."""
        if not state.context(tenant, None, None).sessions.delete_session(session_id):
            raise HTTPException(status_code=404, detail=f"no session {session_id!r}")
        return Response(status_code=204)

    @router.post("/context", response_model=ContextOut, summary="The [Past Conversation Context] block")
    @with_body(context_body)
    def context(body: Request, tenant: Tenant, state: State) -> Response:
        """Build the context block for ``query`` within ``token_budget`` (default DEFAULT_TOKEN_BUDGET)."""
        memory = state.context(tenant, None, None)
        return wire(operations.build_context(memory, body.arguments(), operations.Owner(), "full"))

    @router.post(
        "/context/inject", response_model=MessagesOut, summary="Insert the context block into a message list"
    )
    @with_body(inject_body)
    def inject_context(body: Request, tenant: Tenant, state: State) -> Response:
        """``{"messages": [...]}``: the messages with the block placed before the latest user message."""
        args = body.arguments()
        owner = operations.Owner().resolve(args)
        messages = state.context(tenant, None, None).sessions.inject_context(
            args["messages"],
            agent_id=owner.agent_id,
            user_id=owner.user_id,
            query=args.get("query"),
            placement=args.get("placement", "system"),
            **operations.context_options(args),
        )
        return wire({"messages": messages})

    return router
