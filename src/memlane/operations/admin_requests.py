"""The requests of the admin operations: prune, forget, compact (HTTP bodies only: no tool).

One typed request per operation (see :mod:`memlane.operations.requests`, which re-exports every
room's requests).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from memlane.config import DEFAULT_COMPACT_SIMILARITY
from memlane.operations.fields import (
    SESSION_DOC,
    Days,
    Flag,
    Instant,
    Label,
    OpenFraction,
    Request,
    ScopeField,
)

__all__ = ["CompactBody", "ForgetBody", "PruneBody"]


class PruneBody(Request):
    """``POST /v1/admin/prune``: delete episodes and sessions past ``retention_days`` (the key's tenant;
    store-wide for an operator key)."""

    OPERATION: ClassVar[str] = "prune"

    dry_run: Flag | None = Field(
        default=None, description="Only report; change nothing. Default true: send false to apply."
    )
    now: Instant | None = Field(
        default=None,
        description=(
            "Reference time (ISO 8601 with timezone); later than the server's clock only in a dry run. "
            "Default: now."
        ),
    )


class _Where(PruneBody):
    session_id: Label | None = Field(default=None, description=SESSION_DOC)
    scope: ScopeField | None = Field(default=None, description="'session' or 'tenant' (default tenant).")


class ForgetBody(_Where):
    """``POST /v1/admin/forget``: archive episodes whose strength decayed."""

    OPERATION: ClassVar[str] = "forget"

    threshold: OpenFraction | None = Field(
        default=None, description="Strength in (0, 1) below which an episode is archived."
    )


class CompactBody(_Where):
    """``POST /v1/admin/compact``: merge near-duplicates and archive stale episodes."""

    OPERATION: ClassVar[str] = "compact"

    similarity: OpenFraction | None = Field(
        default=None,
        description=(
            f"Cosine similarity in (0, 1) above which episodes merge (default {DEFAULT_COMPACT_SIMILARITY})."
        ),
    )
    never_retrieved_older_than_days: Days | None = Field(
        default=None, description="Also archive episodes never retrieved and older than this many days."
    )
