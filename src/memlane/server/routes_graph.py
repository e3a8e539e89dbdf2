"""HTTP routes for the knowledge graph: facts, their history, neighbourhoods, paths and health.

Every route acts on the API key's tenant (another tenant's entities do not exist for it);
writes record the body's ``session_id`` (default ``"default"``) on the fact. Bodies are the
operations' request types (:mod:`memlane.operations.requests`), so the checks, the error
messages and ``/openapi.json`` are the tools' and the MCP server's.
"""

from typing import Annotated, Any

from fastapi import APIRouter, Path, Response
from pydantic import BaseModel, ConfigDict, Field

from memlane.models import Scope
from memlane.operations import handlers as operations
from memlane.operations.fields import Request, bounded
from memlane.operations.requests import FindPathsBody, NeighboursBody, QueryFactsBody, RememberFactBody
from memlane.server.deps import API_PREFIX, ERRORS, State, Tenant, with_body
from memlane.server.deps import wire as respond
from memlane.validation import MAX_LABEL_LENGTH, VISIBLE_PATTERN

__all__ = ["graph_router"]

EntityPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=MAX_LABEL_LENGTH,
        pattern=VISIBLE_PATTERN,
        description="An entity name or alias.",
    ),
]


class FactOut(BaseModel):
    """A fact: every field of :class:`memlane.graph.Fact` (``detail: "full"``, the default), or the
    compact form (``detail: "compact"``: the fields set, and ``retired`` for a retired one)."""

    model_config = ConfigDict(extra="allow")

    id: str
    subject: str
    predicate: str
    object: str | None = Field(
        default=None, description="The object entity; absent in compact detail when null."
    )
    value: str | None = Field(
        default=None, description="The literal value; absent in compact detail when null."
    )


class RememberFactOut(BaseModel):
    """The stored fact (or the one it duplicates) and the facts it superseded."""

    fact: FactOut
    duplicate: bool
    superseded: list[FactOut]


class FactList(BaseModel):
    """Facts, oldest ``valid_from`` first."""

    count: int
    facts: list[FactOut]


class NeighbourOut(BaseModel):
    """An entity and its distance in facts: the entity's every field (:class:`memlane.graph.Entity`,
    ``detail: "full"``), or its name with ``id`` and ``type`` (``detail: "compact"``)."""

    model_config = ConfigDict(extra="allow")

    entity: dict[str, Any] | str
    hops: int


class NeighbourList(BaseModel):
    """Entities near an entity, nearest first."""

    count: int
    neighbours: list[NeighbourOut]


class PathList(BaseModel):
    """Chains of facts, shortest first."""

    count: int
    paths: list[list[FactOut]]


class GraphOut(BaseModel):
    """The graph's health (:class:`memlane.graph.GraphStats`)."""

    model_config = ConfigDict(extra="allow")


def _args(body: Any) -> dict[str, Any]:
    return {} if body is None else dict(body.arguments())


def graph_router(max_limit: int) -> APIRouter:
    """The knowledge-graph routes for one ``max_limit``."""
    router = APIRouter(prefix=API_PREFIX, responses=ERRORS, tags=["knowledge graph"])
    query_body = bounded(QueryFactsBody, max_limit)

    @router.post("/facts", status_code=201, response_model=RememberFactOut, summary="Store one fact")
    def remember_fact(body: RememberFactBody, tenant: Tenant, state: State) -> Response:
        """The fact as stored (or the current one it duplicates) and the facts it closed."""
        args = _args(body)
        memory = state.context(tenant, args.pop("session_id", None), Scope.TENANT.value)
        return respond(operations.remember_fact(memory, args, "full"), status_code=201)

    @router.post("/facts/query", response_model=FactList, summary="The facts about an entity, at a time")
    @with_body(query_body)
    def query_facts(body: Request, tenant: Tenant, state: State) -> Response:
        """Current facts by default; ``as_of`` = true then; ``known_at`` = held as current then."""
        args = _args(body)
        memory = state.context(tenant, args.pop("session_id", None), args.pop("scope", Scope.TENANT.value))
        return respond(operations.query_facts(memory, args, "full"))

    @router.get("/entities/{entity}/timeline", response_model=FactList, summary="Every fact about an entity")
    def timeline(entity: EntityPath, tenant: Tenant, state: State) -> Response:
        """Current and retired facts, by valid time (any session of the key's tenant)."""
        memory = state.context(tenant, None, Scope.TENANT.value)
        return respond(operations.entity_timeline(memory, {"entity": entity}, "full"))

    @router.post("/graph/neighbours", response_model=NeighbourList, summary="Entities near an entity")
    @with_body(bounded(NeighboursBody, max_limit))
    def neighbours(body: Request, tenant: Tenant, state: State) -> Response:
        """The entities within ``depth`` hops, nearest first (the entity itself at 0)."""
        args = _args(body)
        memory = state.context(tenant, args.pop("session_id", None), args.pop("scope", Scope.TENANT.value))
        return respond(operations.neighbours(memory, args, "full"))

    @router.post("/graph/paths", response_model=PathList, summary="Fact chains between two entities")
    @with_body(bounded(FindPathsBody, max_limit))
    def paths(body: Request, tenant: Tenant, state: State) -> Response:
        """Chains of facts from ``source`` to ``target``, shortest first."""
        args = _args(body)
        memory = state.context(tenant, args.pop("session_id", None), args.pop("scope", Scope.TENANT.value))
        return respond(operations.find_paths(memory, args, "full"))

    @router.get("/graph/stats", response_model=GraphOut, summary="The health of the tenant's graph")
    def stats(tenant: Tenant, state: State) -> Response:
        """Triples per session, average confidence, invalid share, merges, and the failed gates."""
        return respond(state.context(tenant, None, Scope.TENANT.value).graph_stats().to_dict())

    return router
