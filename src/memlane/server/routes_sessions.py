"""HTTP routes for session episodes and the context block (``/v1/sessions``, ``/v1/context``).

Sessions belong to the key's tenant; ``agent_id``/``user_id`` (default ``"default"``) say
whose conversations within it. Bodies are checked by :mod:`memlane.operations.arguments` (the one
policy) and documented with the tool schemas of :mod:`memlane.operations.tool_specs`; results are the
:mod:`memlane.operations.handlers` results in the full :mod:`memlane.operations.wire` form.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, HTTPException, Query, Response

from memlane.operations import handlers as operations
from memlane.operations.arguments import (
    STORE_SESSION_ARGUMENTS,
    http_context_arguments,
    http_session_search_arguments,
    inject_context_arguments,
)
from memlane.operations.tool_specs import GET_CONTEXT, SEARCH_SESSIONS, extra_tool_specs
from memlane.server.deps import API_PREFIX, ERRORS, State, Tenant, body_doc, checked_body, wire
from memlane.server.schemas import SessionOut
from memlane.validation import MAX_LIMIT

__all__ = ["router"]

router = APIRouter(prefix=API_PREFIX, responses=ERRORS, tags=["sessions"])

_SPECS = {name: params for name, _, params in extra_tool_specs(MAX_LIMIT)}
_OWNER_SCHEMA = {
    "agent_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Default 'default'."},
    "user_id": {"type": "string", "minLength": 1, "maxLength": 200, "description": "Default 'default'."},
    "now": {"type": "string", "format": "date-time", "description": "Reference time; default now."},
    "weights": {"type": "object", "description": "Custom weights {relevance, recency, importance}."},
}


def _with_owner(tool: str, **more: Any) -> dict[str, Any]:
    schema = dict(_SPECS[tool])
    schema["properties"] = {**schema["properties"], **_OWNER_SCHEMA, **more}
    return schema


_MESSAGES = {"type": "array", "items": {"type": "object"}, "description": "OpenAI-format messages."}
_STORE_SCHEMA = {
    "type": "object",
    "properties": {
        "session_id": {"type": "string", "minLength": 1, "maxLength": 200},
        "messages": _MESSAGES,
        **{k: v for k, v in _OWNER_SCHEMA.items() if k in ("agent_id", "user_id")},
        "started_at": {"type": "string", "format": "date-time"},
        "ended_at": {"type": "string", "format": "date-time"},
        "metadata": {"type": "object"},
        "append": {"type": "boolean", "description": "Add turns to an existing session (else 409)."},
    },
    "required": ["session_id", "messages"],
    "additionalProperties": False,
}
_STORE_EXAMPLE = {
    "session_id": "s-42",
    "agent_id": "travel-bot",
    "user_id": "alice",
    "messages": [
        {"role": "user", "content": "Book me a window seat to Lisbon."},
        {"role": "assistant", "content": "Done: 14A on TP 553."},
    ],
}
Raw = Annotated[Any, Body()]


@router.post(
    "/sessions",
    status_code=201,
    response_model=SessionOut,
    summary="Store a conversation (or append turns)",
    openapi_extra=body_doc(_STORE_SCHEMA, _STORE_EXAMPLE),
    responses={409: {"description": "The session exists and append is false."}},
)
def store_session(tenant: Tenant, state: State, body: Raw = None) -> Response:
    """Store one conversation for the key's tenant, or with ``append: true`` add turns to it."""
    args = checked_body(body, STORE_SESSION_ARGUMENTS)
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


@router.get("/sessions", summary="Recent conversations, newest first")
def recent_sessions(
    tenant: Tenant,
    state: State,
    agent_id: Annotated[str, Query(min_length=1, max_length=200)] = "default",
    user_id: Annotated[str, Query(min_length=1, max_length=200)] = "default",
    limit: Annotated[int, Query(ge=1)] = 5,
) -> Response:
    """The newest sessions of ``agent_id`` and ``user_id`` with all their messages."""
    state.check_limit(limit)
    args = {"agent_id": agent_id, "user_id": user_id, "limit": limit}
    return wire(
        operations.recent_sessions(state.context(tenant, None, None), args, operations.Owner(), "full")
    )


@router.post(
    "/sessions/search",
    summary="Search past conversations",
    openapi_extra=body_doc(
        _with_owner(SEARCH_SESSIONS), {"query": "hotel in Lisbon", "user_id": "alice", "top_k": 3}
    ),
)
def search_sessions(tenant: Tenant, state: State, body: Raw = None) -> Response:
    """The passages of ``agent_id``'s and ``user_id``'s past sessions that best match ``query``."""
    args = checked_body(body, http_session_search_arguments(state.max_limit))
    memory = state.context(tenant, None, None)
    return wire(operations.search_sessions(memory, args, operations.Owner(), "full"))


@router.get(
    "/sessions/{session_id}",
    response_model=SessionOut,
    responses={404: {"description": "No such session for this tenant."}},
    summary="Get a conversation",
)
def get_session(session_id: str, tenant: Tenant, state: State) -> Response:
    """One stored conversation of the key's tenant, every message; 404 if unknown."""
    session = state.context(tenant, None, None).sessions.get_session(session_id)
    if session is None:
        raise HTTPException(status_code=404, detail=f"no session {session_id!r}")
    return wire(session.to_dict())


@router.delete("/sessions/{session_id}", status_code=204, summary="Delete a conversation")
def delete_session(session_id: str, tenant: Tenant, state: State) -> Response:
    """Delete one conversation of the key's tenant (messages and index); 404 if unknown."""
    if not state.context(tenant, None, None).sessions.delete_session(session_id):
        raise HTTPException(status_code=404, detail=f"no session {session_id!r}")
    return Response(status_code=204)


@router.post(
    "/context",
    summary="The [Past Conversation Context] block",
    openapi_extra=body_doc(
        _with_owner(GET_CONTEXT), {"query": "Where should I stay in Lisbon?", "token_budget": 800}
    ),
)
def context(tenant: Tenant, state: State, body: Raw = None) -> Response:
    """Build the context block for ``query`` within ``token_budget`` (default 1000)."""
    args = checked_body(body, http_context_arguments(state.max_limit))
    return wire(operations.build_context(state.context(tenant, None, None), args, operations.Owner(), "full"))


@router.post(
    "/context/inject",
    summary="Insert the context block into a message list",
    openapi_extra=body_doc(
        _with_owner(
            GET_CONTEXT,
            messages=_MESSAGES,
            placement={"type": "string", "enum": ["system", "user"]},
        ),
        {"messages": [{"role": "user", "content": "Where should I stay in Lisbon?"}], "token_budget": 800},
    ),
)
def inject_context(tenant: Tenant, state: State, body: Raw = None) -> Response:
    """``{"messages": [...]}``: the messages with the block placed before the latest user message."""
    args = checked_body(body, inject_context_arguments(state.max_limit))
    owner = operations.Owner().resolve(args)
    messages = state.context(tenant, None, None).sessions.inject_context(
        args["messages"],
        agent_id=owner.agent_id,
        user_id=owner.user_id,
        token_budget=args.get("token_budget", 1000),
        query=args.get("query"),
        placement=args.get("placement", "system"),
        **operations.context_options(args),
    )
    return wire({"messages": messages})
