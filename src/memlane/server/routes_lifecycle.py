"""HTTP routes for the lifecycle: supersede, history, contradictions, stats, and the admin jobs.

``forget``, ``compact`` and ``prune`` change many episodes at once, so they need an API key
whose role is ``admin`` or ``operator`` (403 for ``agent`` keys). Each only reports what it
would do unless the body says ``"dry_run": false`` (an empty or ``null`` body is a dry run),
and unless it is a dry run its ``now`` may not be later than the server's clock
(:data:`ADMIN_CLOCK_SKEW`): a future ``now`` would expire what has not expired.
``forget`` and ``compact`` act on the key's tenant
(``scope: tenant``, the default) or one of its sessions. ``prune`` applies the store's
retention (``retention_days``) to the key's tenant (episodes and stored conversations); an
``operator`` key's prune is store-wide (every tenant).
"""

import dataclasses
from datetime import timedelta
from typing import Any

from fastapi import APIRouter, Response

from memlane import EpisodicMemory, wire
from memlane.config import DEFAULT_COMPACT_SIMILARITY
from memlane.errors import ValidationError
from memlane.models import Scope
from memlane.operations import handlers as operations
from memlane.operations.fields import Request, bounded
from memlane.operations.requests import (
    CompactBody,
    ContradictionsBody,
    ForgetBody,
    PruneBody,
    SupersedeBody,
)
from memlane.server.deps import (
    ADMIN_ONLY,
    API_PREFIX,
    ERRORS,
    NOT_FOUND,
    AdminKey,
    AppState,
    IdPath,
    State,
    Tenant,
    with_body,
)
from memlane.server.deps import wire as respond
from memlane.server.schemas import (
    CompactReportOut,
    ContradictionsOut,
    EpisodeList,
    ForgetReportOut,
    PruneOut,
    StatsOut,
    SupersedeOut,
)

__all__ = ["lifecycle_router"]


def _memory(state: AppState, tenant: str, args: dict[str, Any]) -> Any:
    return state.context(tenant, args.pop("session_id", None), args.pop("scope", Scope.TENANT.value))


def _args(body: Any) -> dict[str, Any]:
    if isinstance(body, dict):
        return body
    return {} if body is None else dict(body.arguments())


def lifecycle_router(max_limit: int) -> APIRouter:
    """The lifecycle routes for one ``max_limit`` (bodies: the operations' request types)."""
    router = APIRouter(prefix=API_PREFIX, responses=ERRORS, tags=["lifecycle"])
    _episode_routes(router, max_limit)
    _admin_routes(router)
    return router


def _episode_routes(router: APIRouter, max_limit: int) -> None:
    supersede_body = bounded(SupersedeBody, max_limit)
    contradictions_body = bounded(ContradictionsBody, max_limit)

    @router.post(
        "/episodes/{episode_id}/supersede",
        status_code=201,
        response_model=SupersedeOut,
        responses=NOT_FOUND,
        summary="Replace an episode with a new one (the old one becomes history)",
    )
    @with_body(supersede_body)
    def supersede(episode_id: IdPath, body: Request, tenant: Tenant, state: State) -> Response:
        """``{"episode": <new>, "superseded": <old id>}``; 404 if the old one is unknown or superseded."""
        args = _args(body)
        memory = state.context(tenant, args.pop("session_id", None), Scope.TENANT.value)
        result = operations.supersede_episode(memory, {**args, "episode_id": episode_id}, "full")
        return respond(result, status_code=201)

    @router.get(
        "/episodes/{episode_id}/history",
        response_model=EpisodeList,
        responses=NOT_FOUND,
        summary="The supersede chain of an episode, oldest first",
    )
    def history(episode_id: IdPath, tenant: Tenant, state: State) -> Response:
        """Every version of the fact, oldest first (any session of the key's tenant)."""
        memory = state.context(tenant, None, Scope.TENANT.value)
        return respond(operations.episode_history(memory, {"episode_id": episode_id}, "full"))

    @router.post(
        "/contradictions",
        response_model=ContradictionsOut,
        summary="Current episodes a text may contradict (nothing changes)",
    )
    @with_body(contradictions_body)
    def contradictions(body: Request, tenant: Tenant, state: State) -> Response:
        """``{"count", "candidates": [{"episode", "score", "reason"}]}``, most similar first."""
        args = _args(body)
        return respond(operations.find_contradictions(_memory(state, tenant, args), args, "full"))

    @router.get("/stats", response_model=StatsOut, summary="What the key's tenant holds")
    def stats(tenant: Tenant, state: State) -> Response:
        """Episode counts (active, superseded, archived), sessions, event types, oldest/newest, schema."""
        found = state.context(tenant, None, Scope.TENANT.value).stats()
        out = wire.encode({f.name: getattr(found, f.name) for f in dataclasses.fields(found)})
        out.pop("location", None)
        out["active"] = found.active
        return respond(out)


ADMIN_CLOCK_SKEW = timedelta(minutes=5)
"""How far past the server's clock the ``now`` of an admin job that changes something may be
(clients' clocks drift a little): a later ``now`` would expire, forget or archive what is not yet
due, so it is refused (#22 item 2). A dry run may look ahead ("what would go by 2030?")."""


def _admin_args(memory: EpisodicMemory, body: Any) -> dict[str, Any]:
    """An admin body's arguments: ``dry_run`` true unless sent false; ``now`` not in the future
    unless a dry run.

    Raises:
        ValidationError: not a dry run and ``now`` later than the server's clock plus
            :data:`ADMIN_CLOCK_SKEW`.
    """
    args = _args(body)
    args.setdefault("dry_run", True)  # an empty or null body only reports
    clock_now = memory.clock.now()
    now = args.get("now")
    if not args["dry_run"] and now is not None and now > clock_now + ADMIN_CLOCK_SKEW:
        raise ValidationError(
            f"now must not be later than the server's clock ({clock_now.isoformat()}) by more than "
            f"{int(ADMIN_CLOCK_SKEW.total_seconds())} s unless dry_run is true, got {now.isoformat()}"
        )
    return args


def _admin_routes(router: APIRouter) -> None:
    @router.post(
        "/admin/forget",
        response_model=ForgetReportOut,
        responses=ADMIN_ONLY,
        tags=["admin"],
        summary="Archive faded episodes of the key's tenant (admin keys only; dry run by default)",
    )
    def forget(key: AdminKey, state: State, body: ForgetBody | None = None) -> Response:
        """The :meth:`memlane.EpisodicMemory.forget` report (``dry_run``, the default, changes nothing)."""
        args = _args(body)
        memory = _memory(state, key.tenant_id, args)
        args = _admin_args(memory, args)
        report = memory.forget(args.get("now"), dry_run=args["dry_run"], threshold=args.get("threshold"))
        return respond(report.to_dict())

    @router.post(
        "/admin/compact",
        response_model=CompactReportOut,
        responses=ADMIN_ONLY,
        tags=["admin"],
        summary="Merge near-duplicates, archive stale episodes (admin keys; dry run by default)",
    )
    def compact(key: AdminKey, state: State, body: CompactBody | None = None) -> Response:
        """The :meth:`memlane.EpisodicMemory.compact` report (``dry_run``, the default, changes nothing)."""
        args = _args(body)
        memory = _memory(state, key.tenant_id, args)
        args = _admin_args(memory, args)
        report = memory.compact(
            similarity=args.get("similarity", DEFAULT_COMPACT_SIMILARITY),
            never_retrieved_older_than_days=args.get("never_retrieved_older_than_days"),
            dry_run=args["dry_run"],
            now=args.get("now"),
        )
        return respond(report.to_dict())

    @router.post(
        "/admin/prune",
        response_model=PruneOut,
        responses=ADMIN_ONLY,
        tags=["admin"],
        summary="Delete episodes and sessions past retention_days (admin keys only; dry run by default)",
    )
    def prune(key: AdminKey, state: State, body: PruneBody | None = None) -> Response:
        """``{"dry_run", "all_tenants", "episodes", "sessions"}``: what the retention deleted (or would).

        An ``admin`` key prunes its own tenant; an ``operator`` key the whole store.
        """
        memory = state.context(key.tenant_id, None, Scope.TENANT.value)
        args = _admin_args(memory, body)
        dry_run, everyone = args["dry_run"], key.is_operator
        at = args.get("now")
        sessions = memory.sessions.prune(at, dry_run=True, all_tenants=everyone)
        count = memory.prune(at, dry_run=dry_run, all_tenants=everyone)
        return respond({"dry_run": dry_run, "all_tenants": everyone, "episodes": count, "sessions": sessions})
