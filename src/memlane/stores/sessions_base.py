"""The ``SessionStore`` protocol: persistence of session episodes (whole conversations).

A session store lives beside an episode store and shares its database and connections:
a store that supports sessions exposes it as its ``session_store`` attribute
(:class:`SupportsSessions`), e.g. :class:`~memlane.stores.sqlite.sessions.SQLiteSessionStore`
for :class:`~memlane.stores.sqlite.SQLiteStore`.

What a backend stores, per session (unique per ``(tenant_id, session_id)``):

* a header row (owner ``tenant_id``/``agent_id``/``user_id``, ``started_at``/``ended_at``,
  message and turn counts, metadata);
* its messages, one row per position, each the message's JSON text exactly as memlane
  serialised it (so it reads back byte for byte);
* one window row per turn (its position range, time, embedded text and vector). A window
  stored while the embedder failed (``SessionWrite.embedding_model`` ``None``) holds a zero
  vector and the model id ``""`` (:data:`NO_VECTOR_MODEL`): vector search skips it, keyword
  search finds it, and re-embedding gives it a vector.

Keyword search (:meth:`SessionStore.window_keyword_candidates`) scores every window of the owner
(within retention) that contains a query term with BM25 whose statistics (``N``, ``df``,
``avgdl``) are the owner's windows only (:func:`memlane.bm25.score_matches`, the
episodes' scoring, and :class:`~memlane.stores.common_terms.CommonTermFilter`, their
common-term rule): another owner's sessions never change a score.

Like the episode stores, session stores filter and fetch; ranking happens in the recall
pipeline (:mod:`memlane.recall.pipeline`, run by :mod:`memlane.sessions.search`). Every
method raises :class:`memlane.errors.StoreError` (or a subclass) for backend failures,
never a driver exception, and binds every untrusted string as a parameter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import index_terms_batch
from memlane.bm25 import score_matches
from memlane.errors import DuplicateSessionError, ValidationError
from memlane.stores.base import KeywordCandidates, VectorCandidates
from memlane.stores.common import RowCodec, check_dims
from memlane.stores.common_terms import CommonTermFilter

__all__ = [
    "NO_VECTOR_MODEL",
    "SessionAppend",
    "SessionHeader",
    "SessionOwner",
    "SessionStore",
    "SessionStoreBase",
    "SessionWrite",
    "StoredWindow",
    "SupportsSessions",
    "WindowInput",
    "checked_window_vectors",
    "header_from_row",
    "refuse_duplicate",
    "window_from_row",
    "window_keyword_scores",
]

NO_VECTOR_MODEL = ""
"""``embedding_model`` of a window stored without a vector (the embedder failed; a zero vector)."""


@dataclass(frozen=True, slots=True)
class SessionOwner:
    """Whose sessions: a tenant's agent talking with a user. All three must match.

    Attributes:
        tenant_id: The memory's tenant.
        agent_id: The agent.
        user_id: The user.
    """

    tenant_id: str
    agent_id: str
    user_id: str


@dataclass(frozen=True, slots=True)
class SessionHeader:
    """A stored session without its messages.

    Attributes:
        key: The store's row key of the session.
        tenant_id: Owner tenant.
        session_id: The caller's id (unique per tenant).
        agent_id: Owner agent.
        user_id: Owner user.
        started_at: When it began (UTC).
        ended_at: When its last stored part ended (UTC).
        message_count: Messages stored (positions ``0 .. message_count - 1``).
        turn_count: Windows stored (turn numbers ``0 .. turn_count - 1``).
        metadata: JSON mapping.
    """

    key: int
    tenant_id: str
    session_id: str
    agent_id: str
    user_id: str
    started_at: datetime
    ended_at: datetime
    message_count: int
    turn_count: int
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @property
    def owner(self) -> SessionOwner:
        """The session's owner."""
        return SessionOwner(self.tenant_id, self.agent_id, self.user_id)


@dataclass(frozen=True, slots=True)
class WindowInput:
    """One turn to index, with positions relative to its batch.

    Attributes:
        turn: Turn number within the batch (0-based; the store adds the session's turn count).
        first: Batch position of the turn's first message (the store adds the message count).
        last: Batch position of its last message (inclusive).
        text: The text that was embedded.
        created_at: The turn's time (UTC).
    """

    turn: int
    first: int
    last: int
    text: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class SessionWrite:
    """One ``store_session`` call: a new session, or a batch appended to one.

    Attributes:
        owner: Whose session it is.
        session_id: The session id.
        started_at: Start of this batch (UTC).
        ended_at: End of this batch (UTC), ``>= started_at``.
        metadata: New session's metadata, or keys to merge into an existing one's.
        messages: Each message's JSON text, in order.
        windows: The batch's turns (may be empty: a batch of system messages only).
        embedding_model: Model that embedded the windows, or ``None`` when they are stored
            without vectors (the embedder failed and the fallback is on).
    """

    owner: SessionOwner
    session_id: str
    started_at: datetime
    ended_at: datetime
    metadata: Mapping[str, Any]
    messages: Sequence[str]
    windows: Sequence[WindowInput]
    embedding_model: str | None


@dataclass(frozen=True, slots=True)
class StoredWindow:
    """A stored window with its session's header.

    Attributes:
        key: The window's row key (as in :meth:`SessionStore.window_candidates`).
        session: The session it belongs to.
        turn: Its turn number within the session.
        first: Session position of its first message.
        last: Session position of its last message (inclusive).
        created_at: Its time (UTC).
        text: The text that was embedded (what session search matches keywords against).
    """

    key: int
    session: SessionHeader
    turn: int
    first: int
    last: int
    created_at: datetime
    text: str = ""


@runtime_checkable
class SessionStore(Protocol):
    """Persistence for session episodes (see the module docstring)."""

    def insert_session(
        self, write: SessionWrite, vectors: NDArray[np.float32] | None, *, append: bool
    ) -> SessionHeader:
        """Store a new session, or append a batch to an existing one, atomically.

        Args:
            write: The session or batch.
            vectors: float32 ``[len(write.windows), dims]`` L2-normalised, or ``None`` when
                there are no windows.
            append: Append to the session if it exists (creating it otherwise). Appending
                extends ``started_at``/``ended_at`` to cover the batch, merges the metadata
                keys and continues positions and turn numbers.

        Returns:
            The session's header after the write.

        Raises:
            DuplicateSessionError: the session exists and ``append`` is false (nothing written).
            ValidationError: ``append`` to a session of another agent or user.
            EmbeddingModelMismatchError: vectors of another dimension than the store's.
        """
        ...

    def get_session(self, tenant_id: str, session_id: str) -> SessionHeader | None:
        """The header of ``(tenant_id, session_id)``, or ``None``."""
        ...

    def session_messages(self, session_key: int, first: int = 0, last: int | None = None) -> list[str]:
        """Message JSON texts of a session at positions ``first..last`` (inclusive; ``None`` = to the end)."""
        ...

    def list_recent_sessions(
        self, owner: SessionOwner, limit: int, ended_after: datetime | None = None
    ) -> list[SessionHeader]:
        """Up to ``limit`` (>= 1) of ``owner``'s sessions, newest ``ended_at`` first (ties: newest row).

        Args:
            owner: Whose sessions.
            limit: Maximum number.
            ended_after: Only sessions with ``ended_at >= ended_after`` (retention), or ``None``.
        """
        ...

    def window_candidates(
        self,
        owner: SessionOwner,
        query: NDArray[np.float32],
        top_n: int,
        created_after: datetime | None = None,
    ) -> VectorCandidates:
        """``owner``'s windows with their cosine similarity to ``query`` (exact search).

        Args:
            owner: Only this owner's windows are returned.
            query: float32 ``[dims]`` unit vector.
            top_n: The caller needs at least the ``top_n`` most similar; a store may return all.
            created_after: Only windows with ``created_at >= created_after``, or ``None``.

        Returns:
            Candidates keyed by window row key; ``importance`` is NaN (unrated). Windows stored
            without a vector are never candidates.
        """
        ...

    def window_keyword_candidates(
        self,
        owner: SessionOwner,
        terms: Sequence[str],
        top_n: int,
        created_after: datetime | None = None,
    ) -> KeywordCandidates:
        """``owner``'s windows that contain a query term, with their BM25 (see the module docstring).

        Args:
            owner: Only this owner's windows are searched; its windows are the statistics.
            terms: Distinct query terms (:func:`memlane.analysis.query_terms`); empty -> none.
            top_n: Maximum windows, >= 1.
            created_after: Only windows with ``created_at >= created_after``, or ``None``.

        Returns:
            Up to ``top_n`` candidates keyed by window row key, best BM25 first; ``importance``
            is NaN (unrated).
        """
        ...

    def fetch_windows(self, keys: Sequence[int]) -> dict[int, StoredWindow]:
        """``{key: window}`` for keys from :meth:`window_candidates` (deleted ones absent)."""
        ...

    def turn_spans(self, session_key: int, first_turn: int, last_turn: int) -> dict[int, tuple[int, int]]:
        """``{turn: (first_position, last_position)}`` of the session's turns ``first_turn..last_turn``."""
        ...

    def session_owners(
        self, tenant_id: str, ended_after: datetime | None = None
    ) -> list[tuple[str, str, int]]:
        """``(agent_id, user_id, sessions)`` of every owner of ``tenant_id``'s sessions, most sessions first.

        Args:
            tenant_id: The tenant.
            ended_after: Only sessions with ``ended_at >= ended_after`` (retention), or ``None``.

        Returns:
            One row per (agent, user) with a session; ties ordered by agent, then user.
        """
        ...

    def delete_session(self, tenant_id: str, session_id: str) -> bool:
        """Delete a session with its messages and windows; ``False`` if it does not exist."""
        ...

    def delete_sessions_ended_before(
        self, cutoff: datetime, tenant_id: str | None = None, *, dry_run: bool = False
    ) -> int:
        """Delete every session with ``ended_at < cutoff``; return how many.

        Args:
            cutoff: Exclusive bound on ``ended_at`` (UTC).
            tenant_id: Only this tenant's sessions; ``None`` = every tenant.
            dry_run: Only count them.
        """
        ...


@runtime_checkable
class SupportsSessions(Protocol):
    """An episode store that also stores session episodes."""

    @property
    def session_store(self) -> SessionStore:
        """The companion :class:`SessionStore` over the same database and connections."""
        ...


# -- helpers shared by the backends' session stores ----------------------------------------


def header_from_row(row: Sequence[Any], codec: RowCodec) -> SessionHeader:
    """The header of a row read as ``seq, tenant_id, session_id, agent_id, user_id, started_at,
    ended_at, message_count, turn_count, metadata`` (the backends' ``_HEADER``)."""
    return SessionHeader(
        key=int(row[0]),
        tenant_id=row[1],
        session_id=row[2],
        agent_id=row[3],
        user_id=row[4],
        started_at=codec.time_out(row[5]),
        ended_at=codec.time_out(row[6]),
        message_count=int(row[7]),
        turn_count=int(row[8]),
        metadata=dict(codec.json_out(row[9])),
    )


def window_from_row(row: Sequence[Any], codec: RowCodec) -> StoredWindow:
    """A window row: ``seq, turn, first_position, last_position, created_at``, the header, ``text``."""
    return StoredWindow(
        key=int(row[0]),
        session=header_from_row(row[5:-1], codec),
        turn=int(row[1]),
        first=int(row[2]),
        last=int(row[3]),
        created_at=codec.time_out(row[4]),
        text=str(row[-1]),
    )


def checked_window_vectors(
    write: SessionWrite,
    vectors: NDArray[np.floating] | None,
    bound_model: Callable[[], tuple[str, int] | None],
) -> NDArray[np.float32]:
    """Check a write's vectors: one per window, of the bound model's dimension.

    Args:
        write: The session or batch.
        vectors: ``[len(write.windows), dims]``, or ``None`` when there are no windows or
            ``write.embedding_model`` is ``None`` (stored without vectors).
        bound_model: Reads the store's ``(model_id, dims)``; called only when there are windows.

    Returns:
        float32 ``[len(write.windows), dims]`` (``[0, 0]`` without windows; zeros for windows
        stored without vectors).

    Raises:
        ValidationError: not one vector per window.
        EmbeddingModelMismatchError: another dimension than the bound model's.
    """
    if not write.windows:
        return np.zeros((0, 0), dtype=np.float32)
    if write.embedding_model is None:
        bound = bound_model()
        return np.zeros((len(write.windows), 1 if bound is None else bound[1]), dtype=np.float32)
    if vectors is None or vectors.ndim != 2 or vectors.shape[0] != len(write.windows):
        shape = None if vectors is None else vectors.shape
        raise ValidationError(f"need one vector per window ({len(write.windows)}), got {shape}")
    check_dims(bound_model(), int(vectors.shape[1]))
    return np.asarray(vectors, dtype=np.float32)


def refuse_duplicate(write: SessionWrite, *, append: bool) -> None:
    """Called when ``write``'s session exists already: raise unless appending is allowed.

    Raises:
        DuplicateSessionError: ``append`` is false (sessions are append-only).
    """
    if not append:
        raise DuplicateSessionError(
            f"session {write.session_id!r} already exists for tenant {write.owner.tenant_id!r} "
            "(sessions are append-only: pass append=True to add turns)"
        )


@dataclass(frozen=True, slots=True)
class SessionAppend:
    """Where a write's rows go: a new session (offsets 0) or after an existing one's.

    Attributes:
        offset: Position of the write's first message in the session.
        turn_offset: Turn number of the write's first window in the session.
        metadata: The session's metadata after the write.
    """

    offset: int
    turn_offset: int
    metadata: Mapping[str, Any]

    @classmethod
    def new(cls, write: SessionWrite) -> SessionAppend:
        """A new session."""
        return cls(0, 0, dict(write.metadata))

    @classmethod
    def after(cls, existing: SessionHeader, write: SessionWrite) -> SessionAppend:
        """Append ``write`` to ``existing``, the session already stored under its id.

        Raises:
            ValidationError: the session belongs to another agent or user.
        """
        owner = write.owner
        if existing.owner != owner:
            raise ValidationError(
                f"session {write.session_id!r} belongs to agent {existing.agent_id!r} and user "
                f"{existing.user_id!r}; cannot append as agent {owner.agent_id!r}, "
                f"user {owner.user_id!r}"
            )
        return cls(existing.message_count, existing.turn_count, {**existing.metadata, **write.metadata})

    def counts(self, write: SessionWrite) -> tuple[int, int]:
        """``(message_count, turn_count)`` of the session after the write."""
        return self.offset + len(write.messages), self.turn_offset + len(write.windows)

    def message_rows(self, key: int, write: SessionWrite) -> list[tuple[int, int, str]]:
        """``(session_key, position, message)`` rows of the write's messages."""
        return [(key, self.offset + i, text) for i, text in enumerate(write.messages)]

    def window_rows(
        self, key: int, write: SessionWrite, vectors: Sequence[Any], codec: RowCodec
    ) -> list[tuple[Any, ...]]:
        """``(session_key, turn, first_position, last_position, created_at, text, vector, model)`` rows."""
        return [
            (
                key,
                self.turn_offset + w.turn,
                self.offset + w.first,
                self.offset + w.last,
                codec.time_in(w.created_at),
                w.text,
                vector,
                NO_VECTOR_MODEL if write.embedding_model is None else write.embedding_model,
            )
            for w, vector in zip(write.windows, vectors, strict=True)
        ]


def window_keyword_scores(
    rows: Sequence[tuple[int, str, float]], terms: Sequence[str], top_n: int
) -> KeywordCandidates:
    """BM25 of ``terms`` over an owner's windows, the windows themselves the statistics.

    Args:
        rows: ``(key, text, created_at_seconds)`` of every window of the owner (within retention).
        terms: Distinct query terms.
        top_n: Maximum windows, >= 1.

    Returns:
        Up to ``top_n`` candidates, best BM25 first (ties: lower key first); terms in no window,
        or (from :attr:`CommonTermFilter.MIN_ROWS` windows) in over half of them, are not scored.
    """
    wanted = frozenset(t for t in terms if t)
    if not rows or not wanted:
        return KeywordCandidates.empty()
    analysed: list[tuple[int, str, int, float, None]] = []
    df: dict[str, int] = dict.fromkeys(wanted, 0)
    total = 0
    for (key, _, created), (column, length) in zip(
        rows, index_terms_batch([r[1] for r in rows]), strict=True
    ):
        total += length
        for term in wanted.intersection(column.split()):
            df[term] += 1
        analysed.append((key, column, length, created, None))
    kept = CommonTermFilter().kept(df, len(rows))
    if not kept:
        return KeywordCandidates.empty()
    return KeywordCandidates.from_rows(score_matches(analysed, kept, len(rows), total / len(rows), top_n))


class SessionStoreBase:
    """The backend-neutral half of :meth:`SessionStore.window_candidates` and keyword search."""

    def _owner_windows(
        self, owner: SessionOwner, created_after: datetime | None
    ) -> list[tuple[int, str, float]]:
        raise NotImplementedError  # pragma: no cover - every backend overrides it

    def window_keyword_candidates(
        self,
        owner: SessionOwner,
        terms: Sequence[str],
        top_n: int,
        created_after: datetime | None = None,
    ) -> KeywordCandidates:
        """``owner``'s windows matching ``terms`` (:meth:`SessionStore.window_keyword_candidates`)."""
        if not any(terms):
            return KeywordCandidates.empty()
        return window_keyword_scores(self._owner_windows(owner, created_after), terms, max(1, int(top_n)))

    def _search_windows(
        self, owner: SessionOwner, query: NDArray[np.float32], top_n: int, created_after: datetime | None
    ) -> VectorCandidates:
        raise NotImplementedError  # pragma: no cover - every backend overrides it

    def window_candidates(
        self,
        owner: SessionOwner,
        query: NDArray[np.float32],
        top_n: int,
        created_after: datetime | None = None,
    ) -> VectorCandidates:
        """``owner``'s windows with their cosine to ``query`` (:meth:`SessionStore.window_candidates`)."""
        return self._search_windows(
            owner, np.asarray(query, dtype=np.float32).reshape(-1), top_n, created_after
        )
