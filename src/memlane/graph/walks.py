"""The bounds and defaults of the graph walks (``neighbours``, ``find_paths``), declared once.

The facade's signatures take their defaults from here, the request declarations of
:mod:`memlane.operations.requests` their bounds and their described defaults, so the tools, MCP,
HTTP, the OpenAPI document and the CLI say what Python does. A light module (no engine import):
the request declarations read it when ``memlane --help`` runs.
"""

from __future__ import annotations

from typing import Final

from memlane.validation import MAX_GRAPH_DEPTH

__all__ = [
    "DEFAULT_NEIGHBOUR_DEPTH",
    "DEFAULT_PATH_DEPTH",
    "DEFAULT_PATH_LIMIT",
    "MAX_GRAPH_DEPTH",
    "MAX_PATHS",
]

DEFAULT_NEIGHBOUR_DEPTH: Final = 1
"""Hops a ``neighbours`` walk takes by default (the direct neighbours)."""

DEFAULT_PATH_DEPTH: Final = 3
"""Longest chain of facts ``find_paths`` looks for by default ("who did X introduce me to" is 2)."""

DEFAULT_PATH_LIMIT: Final = 5
"""Chains ``find_paths`` returns by default, shortest first."""

MAX_PATHS: Final = 100
"""Most chains one ``find_paths`` call returns."""
