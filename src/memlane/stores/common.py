"""Backend-neutral halves of the episode stores: row codecs, write checks and the shared store base.

Both backends keep an episode in the same columns, in the same order (their ``_COLUMNS``);
they differ only in how a value is encoded (a time as Unix microseconds in SQLite, a
``timestamptz`` in PostgreSQL; tags as JSON text or ``text[]``, ...). A :class:`RowCodec`
names those encodings, so building a row from an :class:`~memlane.models.Episode` and an
episode from a row is written once. The checks every write makes (vector shapes and the
bound model, supersessions and merges that must find their rows) and the results that do
not depend on SQL (:class:`~memlane.stores.base.StoreStats`, keyset pagination) live here
too; the SQL stays in each backend.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from json.encoder import c_make_encoder, encode_basestring  # type: ignore[attr-defined]
from typing import Any, cast

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import index_terms, index_terms_batch, keyword_text, terms_column
from memlane.errors import EmbeddingModelMismatchError, EpisodeNotFoundError, ValidationError
from memlane.models import Episode
from memlane.stores.base import FACET_PATHS, IndexReport, StoreStats, Supersession, check_metadata_path

__all__ = [
    "SQL_OPERATORS",
    "EpisodeBatch",
    "EpisodeStoreBase",
    "MergeInto",
    "RowCodec",
    "canonical_json",
    "check_binding",
    "check_dims",
    "check_facet_path",
    "check_superseded",
    "check_values_limit",
    "checked_metadata_value",
    "checked_vectors",
    "decoded_distinct",
    "paginate",
    "store_stats",
    "supersede_params",
]

SQL_OPERATORS = {"eq": "=", "ne": "=", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}
"""A :class:`~memlane.stores.base.MetadataCondition` operator as SQL (``ne`` is the negated ``eq``)."""


def _same(value: Any) -> Any:
    return value


_CANONICAL_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)
_CANONICAL = _CANONICAL_ENCODER.encode
"""``json.dumps(value, ensure_ascii=False, sort_keys=True)`` without building an encoder per call."""

_FLAT = (
    None
    if c_make_encoder is None
    else c_make_encoder(
        None, _CANONICAL_ENCODER.default, encode_basestring, None, ": ", ", ", True, False, True
    )
)
"""The C encoder :data:`_CANONICAL` builds per call, built once without a cycle check (``markers=None``):
used only for an object whose values are all scalars, which cannot hold a cycle."""

_SCALARS = frozenset({str, int, float, bool, type(None)})


def checked_metadata_value(path: tuple[str, ...], value: Any) -> str:
    """The JSON text :meth:`Store.set_metadata` writes at ``path``, after checking both.

    Raises:
        ValidationError: a bad path, a path under ``caption`` (indexed text) or a value JSON
            cannot hold (NaN, infinity, an object that is not JSON).
    """
    check_metadata_path(path)
    if path[0] == "caption":
        raise ValidationError("set_metadata cannot change 'caption': it is keyword-indexed text")
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"metadata value is not JSON: {exc}") from exc


def check_values_limit(limit: object) -> int:
    """``limit`` of :meth:`Store.metadata_values` checked to be an int in ``1..2**31 - 1``.

    Raises:
        ValidationError: a bool, a non-integer or out of range.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit < 2**31:
        raise ValidationError(f"limit must be an integer in 1..2**31-1, got {limit!r}")
    return limit


def check_facet_path(path: object) -> tuple[str, ...]:
    """``path`` of :meth:`Store.facet_values` checked to be one of :data:`FACET_PATHS`.

    Raises:
        ValidationError: another path.
    """
    if path not in FACET_PATHS:
        raise ValidationError(f"facet path must be one of {list(FACET_PATHS)}, got {path!r}")
    return cast(tuple[str, ...], path)


def decoded_distinct(texts: Iterable[str | None], limit: int) -> list[Any]:
    """The distinct decoded JSON values of ``texts`` (``None`` skipped), at most ``limit`` of them."""
    found: dict[str, Any] = {}
    for text in texts:
        if text is None:
            continue
        value = json.loads(text)
        found.setdefault(canonical_json(value), value)
        if len(found) >= limit:
            break
    return list(found.values())


def canonical_json(value: Any) -> str:
    """JSON text with sorted keys and non-ASCII characters kept, as both backends store metadata.

    Byte for byte ``json.dumps(value, ensure_ascii=False, sort_keys=True)``.
    """
    if type(value) is dict:
        if not value:
            return "{}"
        if _FLAT is not None and _SCALARS.issuperset(map(type, value.values())):
            return "".join(_FLAT(value, 0))
    return _CANONICAL(value)


@dataclass(frozen=True, slots=True)
class RowCodec:
    """How one backend encodes episode and session values in its columns, and decodes them.

    Defaults are the driver's own conversions (identity, ``list``, ``bool``).

    Attributes:
        time_out: A time column's value -> timezone-aware UTC ``datetime``.
        time_in: UTC ``datetime`` -> the time column's value.
        tags_in: Tags -> the tags column's value.
        tags_out: The tags column's value -> an iterable of tags.
        json_in: A JSON mapping -> the metadata column's value.
        json_out: A metadata column's value -> the JSON mapping.
        flag_in: A ``bool`` -> the flag column's value.
    """

    time_out: Callable[[Any], datetime]
    time_in: Callable[[datetime], Any] = _same
    tags_in: Callable[[tuple[str, ...]], Any] = list
    tags_out: Callable[[Any], Sequence[str]] = _same
    json_in: Callable[[Mapping[str, Any]], Any] = _same
    json_out: Callable[[Any], Any] = _same
    flag_in: Callable[[bool], Any] = bool

    def opt_time_in(self, value: datetime | None) -> Any:
        """:attr:`time_in`, with ``None`` kept."""
        return None if value is None else self.time_in(value)

    def opt_time_out(self, value: Any) -> datetime | None:
        """:attr:`time_out`, with ``None`` kept."""
        return None if value is None else self.time_out(value)

    def episode_row(self, ep: Episode, vector: Any) -> tuple[Any, ...]:
        """The values to insert, in column order.

        ``id .. metadata, embedding, embedding_model, valid_from .. last_retrieved_at, terms,
        token_count``; ``vector`` is the encoded embedding or ``None``; ``embedding_model`` is
        stored only with one. ``terms``/``token_count`` are the analysed keyword text
        (:func:`memlane.analysis.index_terms` of :func:`memlane.analysis.keyword_text`), the same
        on every backend.
        """
        time_in = self.time_in  # hot path (bulk inserts): local names, inline None checks
        terms, token_count = index_terms(keyword_text(ep.content, ep.metadata))
        return (
            ep.id,
            ep.tenant_id,
            ep.session_id,
            ep.event_type,
            ep.content,
            self.tags_in(ep.tags),
            ep.importance,
            time_in(ep.created_at),
            self.json_in(dict(ep.metadata)),
            vector,
            ep.embedding_model if vector is not None else None,
            time_in(ep.valid_from),
            None if ep.valid_until is None else time_in(ep.valid_until),
            time_in(ep.recorded_at),
            None if ep.invalidated_at is None else time_in(ep.invalidated_at),
            ep.superseded_by,
            ep.supersede_reason,
            None if ep.archived_at is None else time_in(ep.archived_at),
            self.flag_in(ep.session_scoped),
            int(ep.retrieve_count),
            None if ep.last_retrieved_at is None else time_in(ep.last_retrieved_at),
            terms_column(terms),
            token_count,
        )

    def episode_rows(
        self, episodes: Sequence[Episode], vectors: Sequence[Any] | None
    ) -> list[tuple[Any, ...]]:
        """:meth:`episode_row` of a whole batch (the same tuples), with the per-row work shared.

        The keyword texts are analysed in one :func:`memlane.analysis.index_terms_batch` call;
        a time that is the same object as the row's ``created_at`` (a defaulted ``valid_from``)
        or as the previous row's ``recorded_at`` (the batch's "now") is encoded once; equal tag
        tuples are encoded once.

        Args:
            episodes: The batch.
            vectors: One encoded embedding per episode, or ``None`` (no vectors).
        """
        time_in, tags_in, json_in, flag_in = self.time_in, self.tags_in, self.json_in, self.flag_in
        analysed = index_terms_batch([keyword_text(ep.content, ep.metadata) for ep in episodes])
        tag_memo: dict[tuple[str, ...], Any] = {}
        last_recorded: Any = None
        last_recorded_in: Any = None
        rows: list[tuple[Any, ...]] = []
        for i, ep in enumerate(episodes):
            vector = None if vectors is None else vectors[i]
            created = ep.created_at
            created_in = time_in(created)
            recorded = ep.recorded_at
            if recorded is not last_recorded:
                last_recorded, last_recorded_in = recorded, time_in(recorded)
            tags = ep.tags
            tags_value = tag_memo.get(tags)
            if tags_value is None:
                tags_value = tag_memo[tags] = tags_in(tags)
            metadata = ep.metadata
            terms, token_count = analysed[i]
            rows.append(
                (
                    ep.id,
                    ep.tenant_id,
                    ep.session_id,
                    ep.event_type,
                    ep.content,
                    tags_value,
                    ep.importance,
                    created_in,
                    json_in(metadata if type(metadata) is dict else dict(metadata)),
                    vector,
                    ep.embedding_model if vector is not None else None,
                    created_in if ep.valid_from is created else time_in(ep.valid_from),
                    None if ep.valid_until is None else time_in(ep.valid_until),
                    last_recorded_in,
                    None if ep.invalidated_at is None else time_in(ep.invalidated_at),
                    ep.superseded_by,
                    ep.supersede_reason,
                    None if ep.archived_at is None else time_in(ep.archived_at),
                    flag_in(ep.session_scoped),
                    int(ep.retrieve_count),
                    None if ep.last_retrieved_at is None else time_in(ep.last_retrieved_at),
                    terms,
                    token_count,
                )
            )
        return rows

    def episode(self, row: Sequence[Any]) -> Episode:
        """The episode of a row read as ``seq, id, ..., retrieve_count, last_retrieved_at`` (``_COLUMNS``)."""
        time_out = self.time_out  # hot path (every fetch): local names, inline None checks
        return Episode(
            id=row[1],
            tenant_id=row[2],
            session_id=row[3],
            event_type=row[4],
            content=row[5],
            tags=tuple(self.tags_out(row[6])),
            importance=row[7],
            created_at=time_out(row[8]),
            metadata=self.json_out(row[9]),
            embedding_model=row[10],
            valid_from=time_out(row[11]),
            valid_until=None if row[12] is None else time_out(row[12]),
            recorded_at=time_out(row[13]),
            invalidated_at=None if row[14] is None else time_out(row[14]),
            superseded_by=row[15],
            supersede_reason=row[16],
            archived_at=None if row[17] is None else time_out(row[17]),
            session_scoped=bool(row[18]),
            retrieve_count=int(row[19]),
            last_retrieved_at=None if row[20] is None else time_out(row[20]),
        )


@dataclass(frozen=True, slots=True)
class MergeInto:
    """Archive ``original_ids`` into the merged episode ``merged_id``, in the transaction inserting it.

    Attributes:
        merged_id: The new episode's id.
        original_ids: Episodes folded into it (active, not superseded).
        at: Archive time (UTC).
        reason: Recorded as each original's ``supersede_reason``.
    """

    merged_id: str
    original_ids: Sequence[str]
    at: datetime
    reason: str

    def check(self, archived: int) -> None:
        """Raise unless ``archived`` rows, one per distinct original, were updated.

        Raises:
            EpisodeNotFoundError: an original is unknown, archived or superseded.
        """
        if archived != len(set(self.original_ids)):
            raise EpisodeNotFoundError(
                "an episode to merge is unknown, archived or superseded: nothing was merged"
            )


def check_dims(bound: tuple[str, int] | None, dims: int) -> None:
    """Raise unless vectors of ``dims`` fit the bound model (anything fits an unbound store).

    Raises:
        EmbeddingModelMismatchError: the store is bound to another dimension.
    """
    if bound is not None and dims != bound[1]:
        raise EmbeddingModelMismatchError(f"vectors have {dims} dims, the store is bound to {bound[1]}")


def checked_vectors(
    rows: int, vectors: NDArray[np.floating] | None, bound_model: Callable[[], tuple[str, int] | None]
) -> NDArray[np.float32] | None:
    """Check a write's vectors: one per row, of the bound model's dimension.

    Args:
        rows: How many rows are written.
        vectors: ``[rows, dims]`` vectors, or ``None`` (rows without vectors).
        bound_model: Reads the store's ``(model_id, dims)``; called only when there are vectors.

    Returns:
        The vectors as float32 ``[rows, dims]``, or ``None``.

    Raises:
        ValidationError: not a ``[rows, dims]`` matrix.
        EmbeddingModelMismatchError: another dimension than the bound model's.
    """
    if vectors is None:
        return None
    matrix = np.asarray(vectors, dtype=np.float32)
    if matrix.ndim != 2 or matrix.shape[0] != rows:
        raise ValidationError(f"vectors must have shape [{rows}, dims], got {matrix.shape}")
    check_dims(bound_model(), int(matrix.shape[1]))
    return matrix


def check_binding(location: str, bound: tuple[str, int], model_id: str, dims: int) -> None:
    """Raise unless the store's binding ``bound`` is ``(model_id, dims)``.

    Raises:
        EmbeddingModelMismatchError: the store holds vectors of another model or dimension.
    """
    if bound != (model_id, dims):
        raise EmbeddingModelMismatchError(
            f"{location} holds vectors of model {bound[0]!r} ({bound[1]} dims); refusing embedder "
            f"{model_id!r} ({dims} dims). Open it with the original embedder or re-embed the store."
        )


def supersede_params(sup: Supersession, codec: RowCodec) -> list[Any]:
    """Parameters of the backend's supersede ``UPDATE``, in this order.

    ``valid_until, invalidated_at, superseded_by, supersede_reason`` (the new values), the old
    ``id``, then its ``tenant_id`` when the supersession names one.
    """
    params = [
        codec.time_in(sup.valid_until),
        codec.time_in(sup.invalidated_at),
        sup.new_id,
        sup.reason,
        sup.old_id,
    ]
    if sup.tenant_id is not None:
        params.append(sup.tenant_id)
    return params


def check_superseded(sup: Supersession, updated: int) -> None:
    """Raise unless the supersede ``UPDATE`` changed exactly one row.

    Raises:
        EpisodeNotFoundError: ``sup.old_id`` is unknown (for its tenant) or already superseded.
    """
    if updated != 1:
        raise EpisodeNotFoundError(
            f"episode {sup.old_id!r} not found or already superseded: nothing was written"
        )


def store_stats(
    counts: Sequence[Any],
    event_types: Mapping[Any, Any],
    codec: RowCodec,
    *,
    embedding_model: tuple[str, int] | None,
    schema_version: int,
    location: str,
) -> StoreStats:
    """A :class:`StoreStats` from the counts row and the per-type counts.

    Args:
        counts: ``(episodes, with_vectors, tenants, sessions, oldest, newest, superseded,
            archived)`` as queried, times encoded as the backend stores them (``None`` when empty).
        event_types: ``{event_type: count}``.
        codec: Decodes the times.
        embedding_model: The store's binding.
        schema_version: Its schema version.
        location: Its displayable location.
    """
    total, vectors, tenants, sessions, oldest, newest, superseded, archived = counts
    return StoreStats(
        episodes=int(total),
        with_vectors=int(vectors),
        tenants=int(tenants),
        sessions=int(sessions),
        event_types={str(k): int(v) for k, v in event_types.items()},
        oldest=codec.opt_time_out(oldest),
        newest=codec.opt_time_out(newest),
        embedding_model=embedding_model,
        schema_version=schema_version,
        location=location,
        superseded=int(superseded or 0),
        archived=int(archived or 0),
    )


def paginate(
    read: Callable[[tuple[Any, int]], Sequence[Sequence[Any]]], start: tuple[Any, int], codec: RowCodec
) -> Iterator[Episode]:
    """Keyset pagination over ``(created_at, seq)``: yield every episode, oldest first.

    Args:
        read: Reads the next batch of ``_COLUMNS`` rows after a ``(created_at, seq)`` key
            (encoded as the backend stores it), in that order; empty when done.
        start: A key before every row.
        codec: Decodes the rows.
    """
    last = start
    while True:
        rows = read(last)
        if not rows:
            return
        for row in rows:
            yield codec.episode(row)
        last = (rows[-1][8], int(rows[-1][0]))


@dataclass(frozen=True, slots=True)
class EpisodeBatch:
    """One atomic write of :meth:`EpisodeStoreBase.insert` or :meth:`EpisodeStoreBase.merge`.

    Attributes:
        episodes: New episodes (at least one).
        vectors: Their float32 ``[len(episodes), dims]`` vectors, checked against the bound
            model, or ``None``.
        supersessions: Older episodes to retire in the same transaction.
        merge: Originals to archive into ``episodes[0]``, or ``None``.
    """

    episodes: Sequence[Episode]
    vectors: NDArray[np.float32] | None
    supersessions: Sequence[Supersession] = ()
    merge: MergeInto | None = None


class EpisodeStoreBase:
    """The backend-neutral half of :meth:`Store.insert` and :meth:`Store.merge`.

    A backend implements :attr:`embedding_model` and :meth:`_write_episodes`: one transaction
    that inserts the batch's episodes, retires its supersessions and archives its merge's
    originals (all or nothing).
    """

    @property
    def embedding_model(self) -> tuple[str, int] | None:
        """``(model_id, dims)`` the store is bound to, or ``None``."""
        raise NotImplementedError  # pragma: no cover - every backend overrides it

    def _write_episodes(self, batch: EpisodeBatch) -> None:
        raise NotImplementedError  # pragma: no cover - every backend overrides it

    def optimize(self) -> IndexReport:
        """:meth:`Store.optimize` for a backend whose database keeps its indexes current at write time:
        nothing to build (backends with derived indexes override it)."""
        return IndexReport(vectors=0)

    def _checked(
        self, episodes: Sequence[Episode], vectors: NDArray[np.float32] | None
    ) -> NDArray[np.float32] | None:
        return checked_vectors(len(episodes), vectors, lambda: self.embedding_model)

    def insert(
        self,
        episodes: Sequence[Episode],
        vectors: NDArray[np.float32] | None,
        supersessions: Sequence[Supersession] = (),
    ) -> None:
        """Append ``episodes`` in one transaction (all or none), retiring ``supersessions`` in it.

        Args:
            episodes: New episodes; ids must not exist yet.
            vectors: float32 ``[len(episodes), dims]`` L2-normalised, or ``None``.
            supersessions: Older episodes to retire in the same transaction (see
                :class:`~memlane.stores.base.Supersession`).

        Raises:
            DuplicateEpisodeError: an id already exists or repeats in the batch.
            EmbeddingModelMismatchError: the vectors' dimension differs from the bound model's.
            EpisodeNotFoundError: a superseded id is unknown (for its tenant) or already
                superseded; nothing is written.
            ValidationError: ``vectors`` is not ``[len(episodes), dims]``, or (PostgreSQL) a
                string contains a NUL character.
            StoreError: the database failed.
        """
        if episodes:
            self._write_episodes(EpisodeBatch(episodes, self._checked(episodes, vectors), supersessions))

    def merge(
        self,
        merged: Episode,
        vector: NDArray[np.float32] | None,
        original_ids: Sequence[str],
        at: datetime,
        reason: str,
    ) -> int:
        """Insert ``merged`` and archive ``original_ids`` pointing at it, in one transaction.

        Each original gets ``archived_at = at``, ``superseded_by = merged.id`` and
        ``supersede_reason = reason``; its valid and transaction times are left as they were.

        Returns:
            Number of originals archived (== ``len(set(original_ids))``).

        Raises:
            EpisodeNotFoundError: an original is unknown, already archived or already
                superseded (nothing is written).
            DuplicateEpisodeError: ``merged.id`` exists.
        """
        matrix = None if vector is None else np.asarray(vector, dtype=np.float32)[None, :]
        merge = MergeInto(merged.id, original_ids, at, reason)
        self._write_episodes(EpisodeBatch([merged], self._checked([merged], matrix), (), merge))
        return len(set(original_ids))
