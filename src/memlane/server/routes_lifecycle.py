"""HTTP routes for the lifecycle: supersede, history, contradictions, stats, and the admin jobs.

``forget``, ``compact`` and ``prune`` change many episodes at once, so they need an API key
whose role is ``admin`` (403 for ``agent`` keys); each takes ``dry_run`` to report what it
would do without changing anything. ``forget`` and ``compact`` act on the key's tenant
(``scope: tenant``, the default) or one of its sessions. ``prune`` applies the store's
retention (``retention_days``), which is store-wide by design: it deletes expired episodes
of every tenant, so it is meant for the operator's admin key.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Body, Response

from memlane.models import Scope
from memlane.operations import handlers as operations
from memlane.operations import wire
from memlane.operations.arguments import (
    COMPACT_ARGUMENTS,
    CONTRADICTIONS_ARGUMENTS,
    FORGET_ARGUMENTS,
    HTTP_SUPERSEDE_ARGUMENTS,
    PRUNE_ARGUMENTS,
    check_choice,
    check_session_id,
)
from memlane.operations.tool_specs import CONTRADICTIONS, SUPERSEDE_EPISODE, extra_tool_specs
from memlane.server.deps import (
    ADMIN_ONLY,
    API_PREFIX,
    ERRORS,
    NOT_FOUND,
    AdminTenant,
    AppState,
    State,
    Tenant,
    body_doc,
    checked_body,
)
from memlane.server.deps import wire as respond
from memlane.server.schemas import EpisodeList
from memlane.validation import MAX_LIMIT

__all__ = ["router"]

router = APIRouter(prefix=API_PREFIX, responses=ERRORS, tags=["lifecycle"])

_SPECS = {name: params for name, _, params in extra_tool_specs(MAX_LIMIT)}
_WHERE = {
    "session_id": {"type": "string", "minLength": 1, "maxLength": 200},
    "scope": {"type": "string", "enum": ["session", "tenant"], "description": "Default tenant."},
}
_SUPERSEDE = HTTP_SUPERSEDE_ARGUMENTS.extended(session_id=check_session_id)
_CONTRADICTIONS = CONTRADICTIONS_ARGUMENTS.extended(
    session_id=check_session_id, scope=check_choice("scope", ("session", "tenant"))
)
Raw = Annotated[Any, Body()]


def _schema(tool: str, drop: tuple[str, ...] = (), **more: Any) -> dict[str, Any]:
    schema = dict(_SPECS[tool])
    props = {k: v for k, v in schema["properties"].items() if k not in drop}
    schema["properties"] = {**props, **more}
    schema["required"] = [r for r in schema["required"] if r not in drop]
    return schema


def _memory(state: AppState, tenant: str, args: dict[str, Any]) -> Any:
    return state.context(tenant, args.pop("session_id", None), args.pop("scope", Scope.TENANT.value))


@router.post(
    "/episodes/{episode_id}/supersede",
    status_code=201,
    responses=NOT_FOUND,
    summary="Replace an episode with a new one (the old one becomes history)",
    openapi_extra=body_doc(
        _schema(SUPERSEDE_EPISODE, ("old_id",), metadata={"type": "object"}, session_id=_WHERE["session_id"]),
        {"event_type": "fact", "content": "The user lives in Lisbon.", "reason": "the user moved"},
    ),
)
def supersede(episode_id: str, tenant: Tenant, state: State, body: Raw = None) -> Response:
    """``{"episode": <new>, "superseded": <old id>}``; 404 if the old one is unknown or already superseded."""
    args = checked_body(body, _SUPERSEDE)
    memory = state.context(tenant, args.pop("session_id", None), Scope.TENANT.value)
    result = operations.supersede_episode(memory, {**args, "old_id": episode_id}, "full")
    return respond(result, status_code=201)


@router.get(
    "/episodes/{episode_id}/history",
    response_model=EpisodeList,
    responses=NOT_FOUND,
    summary="The supersede chain of an episode, oldest first",
)
def history(episode_id: str, tenant: Tenant, state: State) -> Response:
    """Every version of the fact, oldest first (any session of the key's tenant)."""
    memory = state.context(tenant, None, Scope.TENANT.value)
    return respond(operations.episode_history(memory, {"episode_id": episode_id}, "full"))


@router.post(
    "/contradictions",
    summary="Current episodes a text may contradict (nothing changes)",
    openapi_extra=body_doc(
        _schema(CONTRADICTIONS, (), **_WHERE), {"text": "We use PostgreSQL now.", "event_type": "decision"}
    ),
)
def contradictions(tenant: Tenant, state: State, body: Raw = None) -> Response:
    """``{"count", "candidates": [{"episode", "score", "reason"}]}``, most similar first."""
    args = checked_body(body, _CONTRADICTIONS)
    return respond(operations.find_contradictions(_memory(state, tenant, args), args, "full"))


@router.get("/stats", summary="What the key's tenant holds")
def stats(tenant: Tenant, state: State) -> Response:
    """Episode counts (active, superseded, archived), sessions, event types, oldest/newest, schema version."""
    found = state.context(tenant, None, Scope.TENANT.value).stats()
    out = wire.encode({k: v for k, v in vars_of(found).items() if k != "location"})
    out["active"] = found.active
    return respond(out)


def vars_of(value: Any) -> dict[str, Any]:
    """A dataclass's fields as a dict (not deep)."""
    import dataclasses

    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


_DRY = {"dry_run": {"type": "boolean", "description": "Only report; change nothing."}}
_NOW = {"now": {"type": "string", "format": "date-time"}}


def _admin_doc(props: dict[str, Any], example: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": props, "additionalProperties": False}
    return body_doc(schema, example, required=False)


@router.post(
    "/admin/forget",
    responses=ADMIN_ONLY,
    tags=["admin"],
    summary="Archive episodes whose strength decayed (admin keys only)",
    openapi_extra=_admin_doc(
        {**_DRY, **_NOW, "threshold": {"type": "number", "minimum": 0, "maximum": 1}, **_WHERE},
        {"dry_run": True},
    ),
)
def forget(tenant: AdminTenant, state: State, body: Raw = None) -> Response:
    """The :meth:`memlane.EpisodicMemory.forget` report (``dry_run`` changes nothing)."""
    args = checked_body(body, FORGET_ARGUMENTS)
    report = _memory(state, tenant, args).forget(
        args.get("now"), dry_run=args.get("dry_run", False), threshold=args.get("threshold")
    )
    return respond(report.to_dict())


@router.post(
    "/admin/compact",
    responses=ADMIN_ONLY,
    tags=["admin"],
    summary="Merge near-duplicates and archive stale episodes (admin keys only)",
    openapi_extra=_admin_doc(
        {
            **_DRY,
            **_NOW,
            "similarity": {"type": "number", "minimum": 0, "maximum": 1},
            "never_retrieved_older_than_days": {"type": "number", "exclusiveMinimum": 0},
            **_WHERE,
        },
        {"dry_run": True, "similarity": 0.95},
    ),
)
def compact(tenant: AdminTenant, state: State, body: Raw = None) -> Response:
    """The :meth:`memlane.EpisodicMemory.compact` report (``dry_run`` changes nothing)."""
    args = checked_body(body, COMPACT_ARGUMENTS)
    memory = _memory(state, tenant, args)
    report = memory.compact(
        similarity=args.get("similarity", 0.95),
        never_retrieved_older_than_days=args.get("never_retrieved_older_than_days"),
        dry_run=args.get("dry_run", False),
        now=args.get("now"),
    )
    return respond(report.to_dict())


@router.post(
    "/admin/prune",
    responses=ADMIN_ONLY,
    tags=["admin"],
    summary="Delete episodes past retention_days, store-wide (admin keys only)",
    openapi_extra=_admin_doc({**_DRY, **_NOW}, {"dry_run": True}),
)
def prune(tenant: AdminTenant, state: State, body: Raw = None) -> Response:
    """``{"dry_run", "episodes"}``: episodes deleted (or that would be) by the store's retention."""
    args = checked_body(body, PRUNE_ARGUMENTS)
    dry_run = args.get("dry_run", False)
    count = state.context(tenant, None, Scope.TENANT.value).prune(args.get("now"), dry_run=dry_run)
    return respond({"dry_run": dry_run, "episodes": count})
