"""One typed request per operation: the single declaration every interface is generated from.

Each model declares one operation's arguments (type, bounds, default, description and memlane
check: see :mod:`memlane.operations.fields`). The tool requests (``RecallRequest``, ...) are what
a model may send; the HTTP bodies (``RecallBody``, ...) extend them with the arguments only an
application gives (``session_id``, ``metadata``, ``now``, ``weights``). :mod:`memlane.tools`
generates the tool/MCP schemas from the requests, :mod:`memlane.server` uses the bodies as FastAPI
models (so ``/openapi.json`` is generated from them), and every interface checks its arguments
with :func:`~memlane.operations.fields.check_request`.

The requests are declared one room a module (:mod:`~memlane.operations.episodes_requests`,
:mod:`~memlane.operations.sessions_requests`, :mod:`~memlane.operations.graph_requests`,
:mod:`~memlane.operations.admin_requests`) and re-exported here on first use (PEP 562): a name
read from this module imports its room only, so ``memlane recall`` builds the episode requests
and not the other rooms' (issue #24 item 7, starts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memlane.lazy import lazy_exports

if TYPE_CHECKING:
    from memlane.operations.admin_requests import CompactBody, ForgetBody, PruneBody
    from memlane.operations.episodes_requests import (
        ContradictionsBody,
        ContradictionsRequest,
        HistoryRequest,
        RecallBody,
        RecallRequest,
        RememberBody,
        RememberRequest,
        SupersedeBody,
        SupersedeRequest,
    )
    from memlane.operations.fields import Request
    from memlane.operations.graph_requests import (
        EntityTimelineRequest,
        FindPathsBody,
        FindPathsRequest,
        NeighboursBody,
        NeighboursRequest,
        QueryFactsBody,
        QueryFactsRequest,
        RememberFactBody,
        RememberFactRequest,
    )
    from memlane.operations.sessions_requests import (
        ContextBody,
        ContextRequest,
        InjectContextBody,
        SearchSessionsBody,
        SearchSessionsRequest,
        StoreSessionBody,
    )

    OPERATIONS: tuple[type[Request], ...]

__all__ = [
    "OPERATIONS",
    "CompactBody",
    "ContextBody",
    "ContextRequest",
    "ContradictionsBody",
    "ContradictionsRequest",
    "EntityTimelineRequest",
    "FindPathsBody",
    "FindPathsRequest",
    "ForgetBody",
    "HistoryRequest",
    "InjectContextBody",
    "NeighboursBody",
    "NeighboursRequest",
    "PruneBody",
    "QueryFactsBody",
    "QueryFactsRequest",
    "RecallBody",
    "RecallRequest",
    "RememberBody",
    "RememberFactBody",
    "RememberFactRequest",
    "RememberRequest",
    "SearchSessionsBody",
    "SearchSessionsRequest",
    "StoreSessionBody",
    "SupersedeBody",
    "SupersedeRequest",
]

_HOMES: dict[str, tuple[str, ...]] = {
    "memlane.operations.episodes_requests": (
        "ContradictionsBody",
        "ContradictionsRequest",
        "HistoryRequest",
        "RecallBody",
        "RecallRequest",
        "RememberBody",
        "RememberRequest",
        "SupersedeBody",
        "SupersedeRequest",
    ),
    "memlane.operations.sessions_requests": (
        "ContextBody",
        "ContextRequest",
        "InjectContextBody",
        "SearchSessionsBody",
        "SearchSessionsRequest",
        "StoreSessionBody",
    ),
    "memlane.operations.graph_requests": (
        "EntityTimelineRequest",
        "FindPathsBody",
        "FindPathsRequest",
        "NeighboursBody",
        "NeighboursRequest",
        "QueryFactsBody",
        "QueryFactsRequest",
        "RememberFactBody",
        "RememberFactRequest",
    ),
    "memlane.operations.admin_requests": ("CompactBody", "ForgetBody", "PruneBody"),
}

_BODIES = (
    "RememberBody",
    "RecallBody",
    "SupersedeBody",
    "ContradictionsBody",
    "SearchSessionsBody",
    "ContextBody",
    "InjectContextBody",
    "StoreSessionBody",
    "ForgetBody",
    "CompactBody",
    "PruneBody",
    "RememberFactBody",
    "QueryFactsBody",
    "NeighboursBody",
    "FindPathsBody",
)
"""The names of :data:`OPERATIONS`: the HTTP bodies (each extends its tool request where there is one)."""

_request, __dir__ = lazy_exports(__name__, globals(), _HOMES)


def __getattr__(name: str) -> object:
    """A request, imported from its room on first use; ``OPERATIONS`` imports every room.

    Raises:
        AttributeError: no request has that name.
    """
    if name == "OPERATIONS":
        operations = tuple(_request(body) for body in _BODIES)
        globals()[name] = operations
        return operations
    return _request(name)
