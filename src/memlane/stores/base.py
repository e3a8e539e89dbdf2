"""The ``Store`` protocol: what every storage backend provides to ``EpisodicMemory``.

Stores filter, fetch and persist. They never rank by recency or importance — that is
:mod:`memlane.recall.ranking`'s job, identical for every backend. A store's contract is
written once as a test suite (``tests/contract``) that every backend must pass.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import tag_words
from memlane.errors import ValidationError
from memlane.models import Episode

__all__ = [
    "FACET_PATHS",
    "METADATA_OPERATORS",
    "VALUE_INDEX_ROOTS",
    "EpisodeFilter",
    "IndexReport",
    "KeywordCandidates",
    "LinkedEpisodes",
    "MetadataCondition",
    "Neighbours",
    "Store",
    "StoreStats",
    "Supersession",
    "VectorCandidates",
    "check_metadata_path",
    "under_value_root",
    "unique_keys",
    "value_indexed",
    "with_best",
]


METADATA_OPERATORS = ("eq", "ne", "gt", "gte", "lt", "lte")
"""The comparisons a :class:`MetadataCondition` can make (``eq`` and ``ne`` for every scalar type)."""

FACET_PATHS: tuple[tuple[str, ...], ...] = (("langgraph", "namespace"),)
"""Metadata paths whose distinct values every store keeps indexed: :meth:`Store.facet_values` lists them.

Each store indexes the value at the path of its active episodes (neither retired nor archived) by
event type and tenant, at write time (SQLite and PostgreSQL schema migration 13), so listing the
distinct values costs an index probe per value, never a scan. ``("langgraph", "namespace")`` is where
:class:`memlane.integrations.langgraph.MemlaneStore` keeps an item's namespace. Adding a path is a
schema migration.
"""

VALUE_INDEX_ROOTS: tuple[tuple[str, ...], ...] = (("langgraph", "value"),)
"""Metadata objects whose scalar leaves every store keeps in a value index (a schema migration of each).

For every episode holding an object at one of these paths, each string, number and boolean leaf
below it (keys of nested objects; array elements are left out) is a row ``(path, kind, value,
episode)`` of a side table kept by triggers on every write, indexed on ``(path, kind, value)``. A
:class:`MetadataCondition` on such a leaf (``eq`` with a non-null operand, ``gt gte lt lte``) is
then an index range probe, which the stores use to drive a filtered read when it is the most
selective condition (:mod:`memlane.stores.sqlite.value_index`,
:func:`memlane.stores.postgres.filters.value_sql`); the plain JSON test gives the same rows.
``("langgraph", "value")`` is where :class:`memlane.integrations.langgraph.MemlaneStore` keeps an
item's value. Adding a root is a schema migration.
"""

_MAX_PATH_DEPTH = 16
_MAX_SEGMENT = 256

MetadataScalar = str | int | float | bool | None
"""A JSON scalar a :class:`MetadataCondition` compares with (``bool``/``None`` only by ``eq``/``ne``)."""


def check_metadata_path(path: object) -> tuple[str, ...]:
    """``path`` checked to be a metadata path (see :attr:`MetadataCondition.path`).

    Raises:
        ValidationError: not a tuple of 1-16 keys of 1-256 characters without control
            characters, ``"`` or ``\\``.
    """
    if not isinstance(path, tuple) or not 1 <= len(path) <= _MAX_PATH_DEPTH:
        raise ValidationError(f"metadata path must be a tuple of 1-{_MAX_PATH_DEPTH} keys, got {path!r}")
    for key in path:
        if (
            not isinstance(key, str)
            or not 1 <= len(key) <= _MAX_SEGMENT
            or any(ch in key for ch in '"\\')
            or any(ord(ch) < 32 or ord(ch) == 127 for ch in key)
        ):
            raise ValidationError(
                f"bad metadata path key {key!r}: 1-{_MAX_SEGMENT} characters without quotes, "
                "backslashes or control characters"
            )
    return path


def unique_keys(keys: NDArray[np.integer[Any]]) -> NDArray[np.int64]:
    """The distinct values of ``keys`` (int ``[n]``), ascending, as int64 ``[m]``: ``np.unique(keys)``.

    One sort and one comparison of neighbours instead of :func:`numpy.unique`, whose hash-based
    path costs ~10x more on the few hundred row keys of a recall (numpy 2.4, 925 keys: 324 us vs
    31 us); the same values in the same order.
    """
    ordered = np.sort(np.asarray(keys, dtype=np.int64).ravel())
    if len(ordered) < 2:
        return ordered
    first = np.empty(len(ordered), dtype=bool)
    first[0] = True
    np.not_equal(ordered[1:], ordered[:-1], out=first[1:])
    return ordered[first]


SAMPLE_STRIDE = 8
""":func:`with_best` bounds the ``k``-th best value below by every 8th value (measured best of 4, 8, 16)."""


def with_best(values: NDArray[np.floating[Any]], k: int) -> tuple[NDArray[np.int64], float]:
    """The ``k``-th largest of ``values`` and the positions of every value at or above it.

    Above ``SAMPLE_STRIDE * 4 * k`` values, the ``k``-th largest of every :data:`SAMPLE_STRIDE`-th
    value is a lower bound of it (the ``k``-th best of any subset is at most that of the whole): only
    the values at or above that bound are partitioned, about ``1/8 + 8 k / n`` of them; below, every
    value. Measured at ``k`` 500 (2 shared cores): the keyword top-k
    (:func:`~memlane.stores.keyword_postings.best_first`) 0.57x at 22k scores and 0.37x at 59k,
    :meth:`VectorCandidates.top` 0.42x at 30-50k cosines.

    Args:
        values: ``[n]`` finite values, ``n >= k``.
        k: Rank of the value wanted, ``1 <= k <= n``.

    Returns:
        ``(at_least, kth)``: the exact ``k``-th largest value and the int64 ascending positions of
        every value ``>= kth`` (``k`` of them and any tied with the ``k``-th).
    """
    n = len(values)
    if n < SAMPLE_STRIDE * 4 * k:
        kth = float(np.partition(values, n - k)[n - k])
        return np.flatnonzero(values >= kth), kth
    sample = values[::SAMPLE_STRIDE]
    near = np.flatnonzero(values >= np.partition(sample, len(sample) - k)[len(sample) - k])
    top = values[near]
    kth = float(np.partition(top, len(top) - k)[len(top) - k])
    return near[top >= kth], kth


@dataclass(frozen=True, slots=True)
class MetadataCondition:
    """A condition on the JSON value at ``path`` inside an episode's ``metadata``, evaluated in SQL.

    Semantics (the same on every backend; ``tests/contract``):

    * ``eq``: the value at ``path`` has the operand's JSON type and equals it. Numbers compare
      as numbers (``1 == 1.0``); ``True``/``False`` match only JSON booleans; ``None`` matches
      JSON ``null`` *or* a missing path.
    * ``ne``: not ``eq`` (a missing path is "not equal" to any operand except ``None``).
    * ``gt gte lt lte``: a number operand against JSON numbers, a string operand against JSON
      strings (code-point order); a value of another type, or a missing path, fails.

    Attributes:
        path: Object keys from the root of ``metadata``, 1-16 of them, each 1-256 characters
            without control characters, ``"`` or ``\\`` (so a path is always literal: it is
            bound as a parameter, never written into SQL).
        op: One of :data:`METADATA_OPERATORS`.
        value: The operand: a string, a finite number, a bool or ``None``.

    Raises:
        ValidationError: a bad path, operator or operand.
    """

    path: tuple[str, ...]
    op: str
    value: MetadataScalar

    def __post_init__(self) -> None:
        check_metadata_path(self.path)
        if self.op not in METADATA_OPERATORS:
            raise ValidationError(f"metadata operator must be one of {METADATA_OPERATORS}, got {self.op!r}")
        value = self.value
        ordered = isinstance(value, str) or (isinstance(value, int | float) and not isinstance(value, bool))
        if not (value is None or isinstance(value, bool) or ordered):
            raise ValidationError(f"metadata operand must be a JSON scalar, got {type(value).__name__}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValidationError(f"metadata operand must be finite, got {value!r}")
        if self.op not in ("eq", "ne") and not ordered:
            raise ValidationError(f"{self.op} compares numbers or strings, got {value!r}")

    @property
    def kind(self) -> str:
        """The operand's JSON type: ``"string"``, ``"number"``, ``"boolean"`` or ``"null"``."""
        if self.value is None:
            return "null"
        if isinstance(self.value, bool):
            return "boolean"
        return "string" if isinstance(self.value, str) else "number"


def under_value_root(condition: MetadataCondition) -> bool:
    """Whether ``condition`` tests a leaf under one of :data:`VALUE_INDEX_ROOTS` (its value is indexed)."""
    path = condition.path
    return any(len(path) > len(root) and path[: len(root)] == root for root in VALUE_INDEX_ROOTS)


def value_indexed(condition: MetadataCondition) -> bool:
    """Whether ``condition`` is a value index range: :func:`under_value_root`, not ``ne``, not ``None``.

    (``ne`` and ``eq None`` pass rows without the leaf, which the index does not hold.)
    """
    return condition.op != "ne" and condition.kind != "null" and under_value_root(condition)


@dataclass(frozen=True, slots=True)
class EpisodeFilter:
    """Conditions an episode must meet (all of them) to be returned.

    Attributes:
        tenant_id: Exact tenant, or ``None`` for any tenant.
        session_id: Exact session, or ``None`` for any session.
        event_type: Exact event type, or ``None`` for any.
        tags: Normalised tags that must *all* be present (AND); empty = no tag condition.
        created_after: Inclusive lower bound on ``created_at`` (UTC), or ``None``.
        created_before: Exclusive upper bound on ``created_at`` (UTC), or ``None``.
        valid_at: Valid-time slice: only episodes true at this instant,
            ``valid_from <= valid_at`` and (``valid_until`` is null or ``> valid_at``); ``None``
            = no valid-time condition.
        still_valid_at: Only episodes whose validity has not ended at this instant:
            ``valid_until`` is null or ``> still_valid_at`` (no lower bound: episodes that
            become true later pass); ``None`` = no condition.
        recorded_by: Transaction-time bound: only episodes with ``recorded_at <= recorded_by``;
            ``None`` = no bound.
        current_at: Only episodes not retired at this instant: ``invalidated_at`` is null or
            ``> current_at``; ``None`` = retired episodes included.
        exclude_archived: Only episodes with a null ``archived_at`` (default ``False``).
        retained_after: Retention: only episodes with ``created_at >= retained_after`` or
            ``importance >= never_forget_from``; ``None`` = no condition.
        never_forget_from: Importance from which ``retained_after`` does not apply, or ``None``.
        metadata: :class:`MetadataCondition` s on the episode's metadata that must all hold
            (evaluated in SQL); empty = no condition.
    """

    tenant_id: str | None = None
    session_id: str | None = None
    event_type: str | None = None
    tags: tuple[str, ...] = ()
    created_after: datetime | None = None
    created_before: datetime | None = None
    valid_at: datetime | None = None
    still_valid_at: datetime | None = None
    recorded_by: datetime | None = None
    current_at: datetime | None = None
    exclude_archived: bool = False
    retained_after: datetime | None = None
    never_forget_from: float | None = None
    metadata: tuple[MetadataCondition, ...] = ()


@dataclass(frozen=True, slots=True)
class Supersession:
    """Retire episode ``old_id`` in favour of ``new_id``, in the transaction that inserts ``new_id``.

    The store sets, on the old row, ``valid_until``, ``invalidated_at``, ``superseded_by =
    new_id`` and ``supersede_reason``. Nothing is deleted.

    Attributes:
        old_id: The episode being superseded; it must exist, belong to ``tenant_id`` (when
            not ``None``) and not be superseded already.
        new_id: The superseding episode (inserted in the same call).
        valid_until: End of the old episode's valid time (UTC, exclusive).
        invalidated_at: Transaction time of the retirement (UTC).
        reason: Why (free text), or ``None``.
        tenant_id: Only supersede ``old_id`` if it belongs to this tenant; ``None`` for any.
    """

    old_id: str
    new_id: str
    valid_until: datetime
    invalidated_at: datetime
    reason: str | None = None
    tenant_id: str | None = None


@dataclass(frozen=True, slots=True)
class VectorCandidates:
    """Episodes that pass a filter, with their cosine similarity to a query vector.

    Parallel arrays of length ``n``; ``keys`` are the store's opaque row keys, valid
    for :meth:`Store.fetch`.

    Attributes:
        keys: int64 ``[n]``.
        cosine: float32/float64 ``[n]``, cosine similarity in [-1, 1].
        created_at_seconds: float64 ``[n]``, ``created_at`` as Unix seconds.
        importance: float64 ``[n]``, rating in [1, 10], NaN if unrated.
        exhaustive: ``True`` if every filtered episode with a vector is included (exact
            search); ``False`` if the store returned only its nearest neighbours.
    """

    keys: NDArray[np.int64]
    cosine: NDArray[np.floating]
    created_at_seconds: NDArray[np.float64]
    importance: NDArray[np.float64]
    exhaustive: bool = True

    @classmethod
    def empty(cls) -> VectorCandidates:
        """Return a candidate set with no rows."""
        return cls(
            keys=np.zeros(0, dtype=np.int64),
            cosine=np.zeros(0, dtype=np.float32),
            created_at_seconds=np.zeros(0, dtype=np.float64),
            importance=np.zeros(0, dtype=np.float64),
        )

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]], *, exhaustive: bool) -> VectorCandidates:
        """Build from ``(key, cosine, created_at_seconds[, importance])`` rows.

        Rows without the fourth column (or with ``None`` there) are unrated (NaN).
        """
        if not rows:
            return cls.empty()
        n = len(rows)
        importance = (
            np.fromiter((np.nan if r[3] is None else r[3] for r in rows), dtype=np.float64, count=n)
            if len(rows[0]) > 3
            else np.full(n, np.nan, dtype=np.float64)
        )
        return cls(
            keys=np.fromiter((r[0] for r in rows), dtype=np.int64, count=n),
            cosine=np.fromiter((r[1] for r in rows), dtype=np.float64, count=n),
            created_at_seconds=np.fromiter((r[2] for r in rows), dtype=np.float64, count=n),
            importance=importance,
            exhaustive=exhaustive,
        )

    def __len__(self) -> int:
        return len(self.keys)

    def top(self, n: int) -> VectorCandidates:
        """The ``n`` most similar rows: cosine descending, ties to the lower key (the pool rule).

        Every backend trims its dense candidates with this order (PostgreSQL's exact path sorts
        ``cosine DESC, seq``), so an exact scan and an approximate index that finds the same
        top-``n`` hand the ranking the same pool. Order of the result: best first.

        Args:
            n: Pool size, >= 1.
        """
        if len(self.keys) == 0:
            return self
        cosine = np.asarray(self.cosine, dtype=np.float64)
        if len(self.keys) > n:
            # Everything strictly above the n-th best cosine, then the ties at it by key.
            at_least, kth = with_best(cosine, n)
            above = at_least[cosine[at_least] > kth]
            tied = at_least[cosine[at_least] == kth]
            tied = tied[np.argsort(self.keys[tied], kind="stable")][: n - len(above)]
            chosen = np.concatenate([above, tied])
        else:
            chosen = np.arange(len(self.keys))
        chosen = chosen[np.lexsort((self.keys[chosen], -cosine[chosen]))]
        return VectorCandidates(
            keys=self.keys[chosen],
            cosine=self.cosine[chosen],
            created_at_seconds=self.created_at_seconds[chosen],
            importance=self.importance[chosen],
            exhaustive=self.exhaustive and len(chosen) == len(self.keys),
        )


@dataclass(frozen=True, slots=True)
class KeywordCandidates:
    """Episodes that pass a filter and match at least one keyword term, with a keyword score.

    Parallel arrays of length ``n``, best match first; ``keys`` are the store's opaque row
    keys, valid for :meth:`Store.fetch`. Episodes with and without vectors are included.

    Attributes:
        keys: int64 ``[n]``.
        score: float64 ``[n]``, the backend's full-text score, >= 0, higher is better: BM25
            in SQLite (FTS5 ``-bm25()``; Robertson & Zaragoza 2009, k1 = 1.2, b = 0.75), cover
            density in PostgreSQL (``ts_rank_cd``). Scales differ between backends; only the
            order within one result is comparable (see :mod:`memlane.recall.ranking`).
        created_at_seconds: float64 ``[n]``, ``created_at`` as Unix seconds.
        importance: float64 ``[n]``, rating in [1, 10], NaN if unrated.
    """

    keys: NDArray[np.int64]
    score: NDArray[np.float64]
    created_at_seconds: NDArray[np.float64]
    importance: NDArray[np.float64]

    @classmethod
    def empty(cls) -> KeywordCandidates:
        """Return a candidate set with no rows."""
        return cls(
            keys=np.zeros(0, dtype=np.int64),
            score=np.zeros(0, dtype=np.float64),
            created_at_seconds=np.zeros(0, dtype=np.float64),
            importance=np.zeros(0, dtype=np.float64),
        )

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]]) -> KeywordCandidates:
        """Build from ``(key, score, created_at_seconds, importance_or_None)`` rows, best first."""
        if not rows:
            return cls.empty()
        n = len(rows)
        return cls(
            keys=np.fromiter((r[0] for r in rows), dtype=np.int64, count=n),
            score=np.fromiter((max(0.0, float(r[1])) for r in rows), dtype=np.float64, count=n),
            created_at_seconds=np.fromiter((r[2] for r in rows), dtype=np.float64, count=n),
            importance=np.fromiter(
                (np.nan if r[3] is None else r[3] for r in rows), dtype=np.float64, count=n
            ),
        )

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, slots=True)
class Neighbours:
    """Candidates with their session and their nearest episodes by insertion order in that session.

    Parallel rows of length ``n`` (one per requested key that passes the filter). Sessions and
    tags are coded: a row's session is ``session_names[session_codes[i]]`` and its tags
    ``tag_lists[tag_codes[i]]`` (:attr:`session_ids` and :attr:`tags` spell them out), so a
    recall compares and gathers integers instead of strings and parses each distinct tag list
    once.

    Attributes:
        keys: int64 ``[n]`` the requested row keys.
        session_codes: int64 ``[n]`` each row's session: equal codes = equal ``session_id``
            (its tenant is the filter's or the row's).
        session_names: ``session_id`` of each session code.
        tag_codes: int64 ``[n]`` each row's tag list (index into ``tag_lists``).
        tag_lists: The distinct tag lists (each a tuple of tags).
        adjacent: int64 ``[n, 2 * radius]`` row keys of the episodes ``radius .. 1`` before and
            ``1 .. radius`` after each row, by insertion order, within the same tenant and
            session and passing the same filter; -1 where there is none.
        words: A tag's words (:func:`memlane.analysis.tag_words`, or the store's cache of it).
    """

    keys: NDArray[np.int64]
    session_codes: NDArray[np.int64]
    session_names: Sequence[str]
    tag_codes: NDArray[np.int64]
    tag_lists: Sequence[tuple[str, ...]]
    adjacent: NDArray[np.int64]
    words: Callable[[str], frozenset[str]] = tag_words

    @classmethod
    def from_rows(cls, rows: Sequence[Sequence[Any]], radius: int) -> Neighbours:
        """Build from ``(key, session_id, tags, adjacent_1, ..., adjacent_2r)`` rows (``None`` = none)."""
        n = len(rows)
        width = 2 * radius
        adjacent = np.array(
            [[-1 if key is None else key for key in row[3 : 3 + width]] for row in rows], dtype=np.int64
        ).reshape(n, width)
        sessions: dict[str, int] = {}
        tag_lists: dict[tuple[str, ...], int] = {}
        session_codes = [sessions.setdefault(str(r[1]), len(sessions)) for r in rows]
        tag_codes = [tag_lists.setdefault(tuple(r[2]), len(tag_lists)) for r in rows]
        return cls(
            keys=np.fromiter((int(r[0]) for r in rows), dtype=np.int64, count=n),
            session_codes=np.asarray(session_codes, dtype=np.int64).reshape(n),
            session_names=list(sessions),
            tag_codes=np.asarray(tag_codes, dtype=np.int64).reshape(n),
            tag_lists=list(tag_lists),
            adjacent=adjacent,
        )

    @property
    def session_ids(self) -> list[str]:
        """``[n]`` each row's ``session_id``."""
        return [self.session_names[c] for c in self.session_codes.tolist()]

    @property
    def tags(self) -> list[tuple[str, ...]]:
        """``[n]`` each row's tags."""
        return [self.tag_lists[c] for c in self.tag_codes.tolist()]

    def __len__(self) -> int:
        return len(self.keys)


@dataclass(frozen=True, slots=True)
class LinkedEpisodes:
    """Episodes linked to entities in the knowledge graph (:meth:`Store.linked_episodes`).

    Attributes:
        links: ``(row key, entity id)`` for every link of a requested or extra row to a wanted entity,
            sorted by key then entity id.
        extra_keys: int64 ``[k]`` row keys of the extra episodes (passing the filter, linked to a
            wanted entity, not requested), most wanted entities first, then newest (higher key) first.
        extra_ids: ``[k]`` their episode ids.
        created_at_seconds: float64 ``[k]`` their ``created_at``.
        importance: float64 ``[k]`` their importance, NaN if unrated.
    """

    links: list[tuple[int, str]]
    extra_keys: NDArray[np.int64]
    extra_ids: list[str]
    created_at_seconds: NDArray[np.float64]
    importance: NDArray[np.float64]

    @classmethod
    def from_rows(cls, links: Sequence[Sequence[Any]], extra: Sequence[Sequence[Any]]) -> LinkedEpisodes:
        """Build from ``(key, entity id)`` links and ``(key, id, created_at_seconds, importance)`` rows."""
        k = len(extra)
        return cls(
            links=sorted({(int(r[0]), str(r[1])) for r in links}),
            extra_keys=np.fromiter((int(r[0]) for r in extra), dtype=np.int64, count=k),
            extra_ids=[str(r[1]) for r in extra],
            created_at_seconds=np.fromiter((float(r[2]) for r in extra), dtype=np.float64, count=k),
            importance=np.fromiter(
                (np.nan if r[3] is None else float(r[3]) for r in extra), dtype=np.float64, count=k
            ),
        )


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What :meth:`Store.optimize` built: the search indexes a recall then finds ready.

    Attributes:
        vectors: Rows in the store's in-memory vector index (episodes with a vector); 0 for a
            backend without one (PostgreSQL searches in the database).
        ann_rows: Rows the approximate (ANN) index lists (PostgreSQL: rows with a vector in the
            HNSW index); 0 when the store searches exactly.
        ann_trained: Whether this call (re)trained (PostgreSQL: rebuilt) the ANN index.
        saved: Files written beside the database (cold-start vector file, ANN lists).
    """

    vectors: int
    ann_rows: int = 0
    ann_trained: bool = False
    saved: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class StoreStats:
    """Summary of what a store holds.

    Attributes:
        episodes: Number of episodes (matching the filter given to :meth:`Store.stats`).
        with_vectors: How many of them have an embedding.
        tenants: Distinct tenants.
        sessions: Distinct (tenant, session) pairs.
        event_types: Episode count per event type.
        oldest: Earliest ``created_at``, or ``None`` if empty.
        newest: Latest ``created_at``, or ``None`` if empty.
        embedding_model: ``(model_id, dims)`` the store is bound to, or ``None``.
        schema_version: Applied schema migration number.
        location: Human-readable location (file path or redacted URL).
        superseded: How many of ``episodes`` were replaced by a newer one (``superseded_by``
            or ``invalidated_at`` set: :meth:`~memlane.EpisodicMemory.supersede`, a compaction merge).
        archived: How many were archived (``archived_at`` set: forgetting, stale compaction)
            and not superseded.
    """

    episodes: int
    with_vectors: int
    tenants: int
    sessions: int
    event_types: dict[str, int] = field(default_factory=dict)
    oldest: datetime | None = None
    newest: datetime | None = None
    embedding_model: tuple[str, int] | None = None
    schema_version: int = 0
    location: str = ""
    superseded: int = 0
    archived: int = 0

    @property
    def active(self) -> int:
        """Episodes neither superseded nor archived: what a plain recall can return."""
        return self.episodes - self.superseded - self.archived


@runtime_checkable
class Store(Protocol):
    """Persistence for episodes. Implementations: ``SQLiteStore`` (default), ``PostgresStore``.

    All methods raise :class:`memlane.errors.StoreError` (or a subclass) for backend
    failures, never a driver exception. Untrusted strings are always bound parameters.
    """

    def bind_embedding_model(self, model_id: str, dims: int) -> None:
        """Record the embedding model on first use; afterwards refuse any other.

        Raises:
            EmbeddingModelMismatchError: the store already holds vectors of another
                ``model_id`` or ``dims``.
        """
        ...

    def insert(
        self,
        episodes: Sequence[Episode],
        vectors: NDArray[np.float32] | None,
        supersessions: Sequence[Supersession] = (),
    ) -> None:
        """Append episodes atomically (all or none), retiring ``supersessions`` in the same transaction.

        Args:
            episodes: New episodes with unique ids.
            vectors: float32 ``[len(episodes), dims]`` L2-normalised, or ``None`` to store
                them without vectors.
            supersessions: Older episodes to retire in favour of the new ones (see
                :class:`Supersession`).

        Raises:
            DuplicateEpisodeError: an id already exists (nothing is written).
            EmbeddingModelMismatchError: vectors of the wrong dimension.
            EpisodeNotFoundError: a superseded id does not exist (for its tenant) or is
                already superseded (nothing is written).
        """
        ...

    def list_recent(self, flt: EpisodeFilter, limit: int) -> list[Episode]:
        """Return up to ``limit`` (>= 1) episodes passing ``flt``, newest ``created_at`` first."""
        ...

    def vector_candidates(
        self, flt: EpisodeFilter, query: NDArray[np.float32], top_n: int
    ) -> VectorCandidates:
        """Return episodes passing ``flt`` that have vectors, with cosine to ``query``.

        Args:
            flt: The filter; no returned row may fail it.
            query: float32 ``[dims]`` unit vector.
            top_n: Pool size, >= 1: exactly the ``top_n`` most similar rows (fewer when fewer
                pass ``flt``), best first, ties to the lower key (:meth:`VectorCandidates.top`).
                An approximate index may miss some of them; it never returns more.
        """
        ...

    def keyword_candidates(self, flt: EpisodeFilter, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """Return the best ``top_n`` episodes passing ``flt`` that match any of ``terms``.

        Args:
            flt: The filter; no returned row may fail it.
            terms: Plain terms from :func:`memlane.analysis.query_terms` (letters and digits
                only). The store quotes each term on its own and ORs them, so no term is ever
                read as full-text query syntax. Empty -> no candidates.
            top_n: Maximum rows, >= 1, best keyword score first.
        """
        ...

    def neighbours(self, flt: EpisodeFilter, keys: Sequence[int], radius: int = 2) -> Neighbours:
        """Return the session, tags and stored insertion-order neighbours of candidate rows.

        The neighbours are the ``radius`` rows before and after each key in its (tenant,
        session), by insertion order, whatever they hold: the ranking treats one that is not
        itself a candidate as absent, so a row failing the recall's filter never contributes.
        Cost: a few index probes per key (index on tenant, session, key), independent of the
        size of the scope.

        Args:
            flt: The recall's filter (kept for the signature; the rows of ``keys`` already pass it).
            keys: Row keys from the ``*_candidates`` methods.
            radius: How many neighbours on each side (>= 1).
        """
        ...

    def linked_episodes(
        self, flt: EpisodeFilter, tenant_id: str, entities: Sequence[str], keys: Sequence[int], extra: int
    ) -> LinkedEpisodes:
        """The knowledge-graph links of candidate rows to ``entities``, and further linked episodes.

        Two set-based statements over the episode -> entity links of :mod:`memlane.stores.graph_base`
        (no statement per key or per entity): the extra episodes, then the links of every requested
        and extra row.

        Args:
            flt: The recall's filter: no extra row fails it.
            tenant_id: The tenant whose graph the entity ids belong to; only its links count
                (entity ids are per tenant).
            entities: Entity ids (canonical) to look for.
            keys: Row keys of the recall's candidates (their links are returned, whatever their number).
            extra: At most this many further episodes (>= 0) passing ``flt``, linked to any of
                ``entities`` and not in ``keys``: most distinct wanted entities first, then newest.
        """
        ...

    def fetch(self, keys: Sequence[int]) -> dict[int, Episode]:
        """Return ``{key: episode}`` for row keys from the ``*_candidates`` methods.

        Keys whose rows were deleted meanwhile are absent from the result.
        """
        ...

    def get(self, episode_id: str) -> Episode | None:
        """Return the episode with this id, or ``None``."""
        ...

    def count(self, flt: EpisodeFilter) -> int:
        """Number of episodes passing ``flt``."""
        ...

    def iter_episodes(self, flt: EpisodeFilter, batch_size: int = 1000) -> Iterator[Episode]:
        """Yield every episode passing ``flt``, oldest first (``created_at``, then insertion)."""
        ...

    def delete_created_before(
        self, cutoff: datetime, keep_importance_from: float | None = None, tenant_id: str | None = None
    ) -> int:
        """Delete every episode with ``created_at < cutoff`` (of one tenant, or table-wide); return how many.

        Args:
            cutoff: Exclusive bound on ``created_at`` (UTC).
            keep_importance_from: Episodes rated at least this are kept (never-forget);
                ``None`` = no exemption.
            tenant_id: Only this tenant's episodes; ``None`` = every tenant.
        """
        ...

    def archive(self, episode_ids: Sequence[str], at: datetime) -> int:
        """Set ``archived_at = at`` on the given (not yet archived) episodes; return how many.

        Archiving deletes nothing; an archived episode keeps its row, vector and history.
        """
        ...

    def record_retrievals(self, keys: Sequence[int], at: datetime) -> int:
        """Add 1 to ``retrieve_count`` and set ``last_retrieved_at = at`` on rows ``keys``.

        May be deferred (both built-in stores buffer the counts, :mod:`memlane.stores.retrievals`)
        until the next write, :meth:`flush` or ``close``; it must not invalidate any search
        index or cache (the two columns are never filtered on by recall).

        Args:
            keys: Row keys from the ``*_candidates`` methods (unknown keys are ignored).
            at: The recall's reference time (UTC).

        Returns:
            Rows written now (0 while the counts are buffered).
        """
        ...

    def flush(self) -> int:
        """Write every deferred retrieval count now; return how many rows were updated."""
        ...

    def optimize(self) -> IndexReport:
        """Build or bring up to date every derived search index now, off the recall path.

        After a bulk ingest, so that no recall pays for it: SQLite reads the new vectors into its
        index, writes its cold-start file and trains (or, once the store grew 4x, retrains) the
        ANN lists of a store above its ANN threshold; a recall never trains them. PostgreSQL
        folds the rows written since the last fold (searched exactly meanwhile) into its partial
        HNSW index. Results never change: the indexes
        are derived, and every cosine a search returns is exact.

        Raises:
            StoreError: the database failed.
        """
        ...

    def vectors(self, episode_ids: Sequence[str]) -> dict[str, NDArray[np.float32]]:
        """Return ``{id: float32 [dims] unit vector}`` for the given episodes that have a vector."""
        ...

    def merge(
        self,
        merged: Episode,
        vector: NDArray[np.float32] | None,
        original_ids: Sequence[str],
        at: datetime,
        reason: str,
    ) -> int:
        """Insert ``merged`` and archive ``original_ids`` into it, atomically (all or none).

        Each original gets ``archived_at = at``, ``superseded_by = merged.id`` (the pointer
        :meth:`superseded_links` and ``history`` follow) and ``supersede_reason = reason``;
        its valid and transaction times are unchanged and nothing is deleted.

        Args:
            merged: The new episode (a fresh id).
            vector: Its float32 ``[dims]`` unit vector, or ``None``.
            original_ids: Episodes folded into it (distinct, active, not superseded).
            at: Archive time (UTC).
            reason: Recorded on each original, e.g. ``"merged: compaction cosine>=0.95"``.

        Returns:
            Number of originals archived.

        Raises:
            EpisodeNotFoundError: an original is unknown, archived or superseded (nothing written).
            DuplicateEpisodeError: ``merged.id`` exists.
        """
        ...

    def delete_session_scoped(self, tenant_id: str, session_id: str) -> int:
        """Delete the ``session_scoped`` episodes of one session; return how many."""
        ...

    def superseded_links(self, episode_ids: Sequence[str]) -> list[Episode]:
        """Return the episodes superseded by any of ``episode_ids`` (``superseded_by IN ids``)."""
        ...

    def delete(self, episode_id: str, tenant_id: str | None) -> bool:
        """Delete one episode by id (with its tags and vector), if it belongs to ``tenant_id``.

        Episodes are otherwise append-only; this exists for explicit removal (a user's
        request, a wrong memory). Atomic: the episode is either fully gone or untouched.

        Args:
            episode_id: The episode's id.
            tenant_id: Only delete it if it belongs to this tenant; ``None`` for any tenant.

        Returns:
            ``True`` if an episode was deleted, ``False`` if none matched (unknown id, or
            another tenant's episode: the two cases are indistinguishable on purpose).
        """
        ...

    def stats(self, flt: EpisodeFilter) -> StoreStats:
        """Summarise the episodes passing ``flt``."""
        ...

    def metadata_values(self, flt: EpisodeFilter, path: tuple[str, ...], limit: int) -> list[Any]:
        """The distinct JSON values at ``path`` in the metadata of the episodes passing ``flt``.

        One SQL statement (``SELECT DISTINCT``); episodes without the path are left out.

        Args:
            flt: Which episodes.
            path: Object keys from the root of ``metadata`` (checked like
                :attr:`MetadataCondition.path`).
            limit: At most this many values (>= 1), in no particular order.

        Returns:
            The decoded values (``str``, numbers, lists, dicts, ...), each once.

        Raises:
            ValidationError: a bad path or limit.
        """
        ...

    def facet_values(self, tenant_id: str | None, event_type: str, path: tuple[str, ...]) -> list[Any]:
        """The distinct JSON values at a facet ``path`` among the active episodes of ``event_type``.

        Active: neither retired (``invalidated_at`` is null) nor archived, whatever the time; an
        episode without the path is left out. Read from the facet's index: one probe per distinct
        value (and per tenant when ``tenant_id`` is ``None``), whatever the number of episodes.
        The result equals :meth:`metadata_values` over ``EpisodeFilter(tenant_id=tenant_id,
        event_type=event_type, exclude_archived=True)`` restricted to rows never retired.

        Args:
            tenant_id: One tenant, or ``None`` for every tenant.
            event_type: The episodes' event type.
            path: One of :data:`FACET_PATHS`.

        Returns:
            The decoded values, each once, in no particular order.

        Raises:
            ValidationError: ``path`` is not one of :data:`FACET_PATHS`.
        """
        ...

    def set_metadata(self, episode_ids: Sequence[str], path: tuple[str, ...], value: Any) -> int:
        """Set the JSON value at ``path`` in the metadata of the given episodes; return how many changed.

        The object holding the last key must exist (``{"a": {}}`` for ``("a", "b")``); episodes
        where it does not are unchanged. Neither the keyword index nor the vectors change, so
        ``path`` may not start with ``"caption"`` (indexed text).

        Args:
            episode_ids: The episodes (unknown ids are ignored).
            path: Object keys (checked like :attr:`MetadataCondition.path`).
            value: Any JSON-serialisable value.

        Raises:
            ValidationError: a bad path, a ``caption`` path or a value JSON cannot hold.
        """
        ...

    def close(self) -> None:
        """Release connections; later calls raise ``StoreClosedError``. Idempotent."""
        ...
