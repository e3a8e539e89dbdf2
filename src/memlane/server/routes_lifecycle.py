"""HTTP routes for the lifecycle: supersede, history, contradictions, stats, and the admin jobs.

``forget``, ``compact`` and ``prune`` change many episodes at once, so they need an API key
whose role is ``admin`` (403 for ``agent`` keys); each takes ``dry_run`` to report what it
would do without changing anything. ``forget`` and ``compact`` act on the key's tenant
(``scope: tenant``, the default) or one of its sessions. ``prune`` applies the store's
retention (``retention_days``), which is store-wide by design: it deletes expired episodes
of every tenant, so it is meant for the operator's admin key.
"""

import dataclasses
from typing import Any

from fastapi import APIRouter, Response

from memlane import wire
from memlane.config import DEFAULT_COMPACT_SIMILARITY
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
    AdminTenant,
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


def _admin_routes(router: APIRouter) -> None:
    @router.post(
        "/admin/forget",
        response_model=ForgetReportOut,
        responses=ADMIN_ONLY,
        tags=["admin"],
        summary="Archive episodes whose strength decayed (admin keys only)",
    )
    def forget(tenant: AdminTenant, state: State, body: ForgetBody | None = None) -> Response:
        """The :meth:`memlane.EpisodicMemory.forget` report (``dry_run`` changes nothing)."""
        args = _args(body)
        report = _memory(state, tenant, args).forget(
            args.get("now"), dry_run=args.get("dry_run", False), threshold=args.get("threshold")
        )
        return respond(report.to_dict())

    @router.post(
        "/admin/compact",
        response_model=CompactReportOut,
        responses=ADMIN_ONLY,
        tags=["admin"],
        summary="Merge near-duplicates and archive stale episodes (admin keys only)",
    )
    def compact(tenant: AdminTenant, state: State, body: CompactBody | None = None) -> Response:
        """The :meth:`memlane.EpisodicMemory.compact` report (``dry_run`` changes nothing)."""
        args = _args(body)
        report = _memory(state, tenant, args).compact(
            similarity=args.get("similarity", DEFAULT_COMPACT_SIMILARITY),
            never_retrieved_older_than_days=args.get("never_retrieved_older_than_days"),
            dry_run=args.get("dry_run", False),
            now=args.get("now"),
        )
        return respond(report.to_dict())

    @router.post(
        "/admin/prune",
        response_model=PruneOut,
        responses=ADMIN_ONLY,
        tags=["admin"],
        summary="Delete episodes past retention_days, store-wide (admin keys only)",
    )
    def prune(tenant: AdminTenant, state: State, body: PruneBody | None = None) -> Response:
        """``{"dry_run", "episodes"}``: episodes deleted (or that would be) by the store's retention."""
        args = _args(body)
        dry_run = args.get("dry_run", False)
        count = state.context(tenant, None, Scope.TENANT.value).prune(args.get("now"), dry_run=dry_run)
        return respond({"dry_run": dry_run, "episodes": count})
