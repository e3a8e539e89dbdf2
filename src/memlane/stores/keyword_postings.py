"""An in-memory inverted index over the analysed ``terms`` column: exact per-scope BM25 top-k in numpy.

The store's SQL index (SQLite FTS5, PostgreSQL GIN) finds *every* row holding a query term and
memlane's BM25 (:func:`memlane.bm25.score_matches`) then scores them in Python: a cost that grows
with the matches (20 % of a 100k-row scope for a common word). This index keeps, per term, the
rows holding it (their position in the index, term frequency) as numpy arrays, so a recall
computes the same BM25 for all the scope's matches with a few array operations
(:meth:`KeywordPostings.score`: per term a gather, a scope test and a scatter-add into one dense
score array, in the query's term order, the order :mod:`memlane.bm25` sums in, so every score is
the same float) and takes the best with ``argpartition`` (:func:`best_first`).

It is derived data: built from the rows of the source of truth (the SQLite file), never written
anywhere, and kept in step by its owner (:mod:`memlane.stores.sqlite.fts`): rows appended since
it was built are added as a tail segment (folded into the main one when the tail outgrows
:data:`TAIL_FRACTION` of the rows), rows deleted are dropped on :meth:`KeywordPostings.retain`.
Nothing acknowledged can be lost by a crash: a new process rebuilds the index from the file.

The statistics are the caller's (``N`` and ``avgdl`` of the recall's scope); the document
frequencies are counted here over the scope's rows only (:meth:`KeywordPostings.scope_postings`), so
another tenant's or session's rows never change a score.
"""

from __future__ import annotations

import itertools
import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from memlane.analysis import tag_words
from memlane.bm25 import DEFAULT_BM25, Bm25Params, contribution, idf, length_norm
from memlane.stores.base import Neighbours, unique_keys, with_best
from memlane.stores.common_terms import CommonTermFilter

__all__ = [
    "GAIN_BUDGET",
    "GAIN_MIN_ROWS",
    "TAIL_FRACTION",
    "KeywordPostings",
    "PostingRows",
    "Scope",
    "TermPostings",
    "best_first",
    "best_passing",
    "indexed_neighbours",
    "posting_batches",
    "scored_matches",
]

TAIL_FRACTION = 16
"""The tail segment is folded into the main one once it holds over ``rows / 16`` (and 1,024) rows."""

_TAIL_MIN = 1024


@dataclass(frozen=True, slots=True)
class PostingRows:
    """Rows to add to the index, in row-key order (all above the index's last key).

    Attributes:
        seqs: Row keys, increasing.
        tenants: Each row's ``tenant_id``.
        sessions: Each row's ``session_id``.
        terms: Each row's analysed text (space-joined terms, :mod:`memlane.analysis`).
        token_counts: Each row's ``token_count`` (the BM25 document length).
        created_us: Each row's ``created_at`` in Unix microseconds.
        importance: Each row's importance, ``None`` if unrated.
        tags: Each row's tags as stored (JSON text).
    """

    seqs: Sequence[int]
    tenants: Sequence[str]
    sessions: Sequence[str]
    terms: Sequence[str]
    token_counts: Sequence[int]
    created_us: Sequence[int]
    importance: Sequence[float | None]
    tags: Sequence[str]


class _Cursor(Protocol):
    def fetchmany(self, size: int) -> Sequence[Sequence[Any]]: ...


def posting_batches(cursor: _Cursor, size: int) -> Iterator[PostingRows]:
    """A DB-API cursor's rows, ``size`` at a time, as :class:`PostingRows` (:meth:`KeywordPostings.extend`).

    The cursor's columns are :class:`PostingRows`' fields, in order (``seq, tenant_id, session_id,
    terms, token_count, created_at_us, importance, tags``), its rows in key order.
    """
    while batch := cursor.fetchmany(size):
        yield PostingRows(*zip(*batch, strict=True))


@dataclass(frozen=True, slots=True)
class _Segment:
    """Postings of a run of rows: per term, the rows (index positions) holding it and how often."""

    vocab: dict[str, int]
    start: NDArray[np.int64]  # [V + 1] term id -> its first posting
    rows: NDArray[np.int64]  # [P] index position of the posting's row, increasing per term
    tf: NDArray[np.float64]  # [P] the term's count in that row

    def __post_init__(self) -> None:
        """Make the arrays read-only: :meth:`postings` hands out views of them."""
        for array in (self.start, self.rows, self.tf):
            array.flags.writeable = False

    @classmethod
    def build(cls, texts: Sequence[str], base: int) -> _Segment:
        """The postings of ``texts``, the rows at index positions ``base, base + 1, ...``."""
        lengths = np.zeros(len(texts), dtype=np.int64)
        tokens: list[str] = []
        for i, text in enumerate(texts):
            split = str(text).split()
            lengths[i] = len(split)
            tokens.extend(split)
        numbering = _numbering({})
        ids = _ids(numbering, tokens)
        vocab = dict(numbering)
        row = np.repeat(np.arange(base, base + len(texts), dtype=np.int64), lengths)
        order = np.argsort(ids, kind="stable")  # tokens are in row order: (term, row) order
        ids, row = ids[order], row[order]
        first = np.ones(len(ids), dtype=bool)
        first[1:] = (ids[1:] != ids[:-1]) | (row[1:] != row[:-1])
        at = np.flatnonzero(first)
        tf = np.diff(np.append(at, len(ids))).astype(np.float64)
        start = np.searchsorted(ids[at], np.arange(len(vocab) + 1)).astype(np.int64)
        return cls(vocab, start, row[at], tf)

    def postings(self, term: str) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """Rows holding ``term`` and its count in each."""
        tid = self.vocab.get(term)
        if tid is None:
            return _NO_ROWS, _NO_TF
        lo, hi = int(self.start[tid]), int(self.start[tid + 1])
        return self.rows[lo:hi], self.tf[lo:hi]

    def retained(self, keep: NDArray[np.bool_], position: NDArray[np.int64]) -> _Segment:
        """This segment without the rows where ``keep`` is false, renumbered by ``position``."""
        alive = keep[self.rows]
        before = np.concatenate([[0], np.cumsum(alive)]).astype(np.int64)
        return _Segment(self.vocab, before[self.start], position[self.rows[alive]], self.tf[alive])

    def merged(self, tail: _Segment) -> _Segment:
        """This segment and ``tail`` (rows after all of this one's) as one segment."""
        return _Segment.joined([self, tail])

    @staticmethod
    def joined(segments: Sequence[_Segment]) -> _Segment:
        """``segments`` (each one's rows after all of the one before) as one segment (one sort)."""
        if len(segments) == 1:
            return segments[0]
        numbering = _numbering(segments[0].vocab)  # one copy of the vocabulary for all segments
        ids = [segments[0].term_ids()]
        ids += [_ids(numbering, list(s.vocab))[s.term_ids()] for s in segments[1:]]
        vocab = dict(numbering)
        every = np.concatenate(ids)
        order = np.argsort(every, kind="stable")  # each term's rows stay in segment order
        start = np.searchsorted(every[order], np.arange(len(vocab) + 1)).astype(np.int64)
        rows = np.concatenate([s.rows for s in segments])[order]
        return _Segment(vocab, start, rows, np.concatenate([s.tf for s in segments])[order])

    def term_ids(self) -> NDArray[np.int64]:
        """int64 ``[P]`` the term id of each posting."""
        return np.repeat(np.arange(len(self.start) - 1, dtype=np.int64), np.diff(self.start))


_NO_ROWS = np.zeros(0, dtype=np.int64)
_NO_TF = np.zeros(0, dtype=np.float64)


@dataclass(frozen=True, slots=True)
class TermPostings:
    """The rows of a scope holding one term, one part per segment of the index (views, no copies).

    A term's postings live in the main segment and, for rows added since its last fold, the tail
    segment; concatenating the two would copy every posting of the term on each search (at 1M
    rows and common words about 0.5 ms a term), so a search reads them part by part.

    Attributes:
        parts: ``(rows, tf)`` per segment holding the term: index positions of the rows
            (increasing within a part, every part's above the previous part's) and the term's
            count in each row.
    """

    parts: tuple[tuple[NDArray[np.int64], NDArray[np.float64]], ...]

    def __len__(self) -> int:
        """The term's document frequency in the scope."""
        return sum(len(rows) for rows, _ in self.parts)

    @property
    def rows(self) -> NDArray[np.int64]:
        """int64 ``[df]`` every part's rows, increasing (a copy when there are several parts)."""
        return _joined([rows for rows, _ in self.parts], _NO_ROWS)

    @property
    def tf(self) -> NDArray[np.float64]:
        """float64 ``[df]`` the term's count in each of :attr:`rows`."""
        return _joined([tf for _, tf in self.parts], _NO_TF)


def _numbering(vocab: dict[str, int]) -> defaultdict[str, int]:
    """A copy of ``vocab`` that gives a token it lacks the next id when looked up (in C, no Python loop)."""
    return defaultdict(itertools.count(len(vocab)).__next__, vocab)


def _ids(numbering: defaultdict[str, int], tokens: Sequence[str]) -> NDArray[np.int64]:
    """int64 ``[len(tokens)]`` each token's id in ``numbering`` (:func:`_numbering`; new ones added)."""
    return np.fromiter(map(numbering.__getitem__, tokens), dtype=np.int64, count=len(tokens))


def _joined(arrays: list[NDArray[Any]], empty: NDArray[Any]) -> NDArray[Any]:
    """The arrays end to end (the one array itself when there is one)."""
    if not arrays:
        return empty
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


_CLEAR_WHOLE = 16
""":meth:`KeywordPostings.score` clears its whole scratch once over ``1 / 16`` of the rows matched."""

GAIN_MIN_ROWS = 256
""":meth:`KeywordPostings.score` keeps the contributions of a term in at least this many rows of a scope."""

GAIN_BUDGET = 4
"""The kept contributions hold at most ``4 * rows`` floats in all (the oldest kept are dropped first)."""

Scope = tuple[str | None, str | None]
"""``(tenant_id, session_id)`` of a search; ``None`` = every tenant / every session."""

_GainKey = tuple[str, Scope, int, int, float, float, float]


class KeywordPostings:
    """Postings of every row of a store, with each row's key, scope, length and fixed columns.

    Attributes:
        seqs: int64 ``[rows]`` row keys, ascending.
        lengths: float64 ``[rows]`` BM25 document lengths.
        created_s: float64 ``[rows]`` ``created_at`` as Unix seconds (``created_at_us / 1e6``).
        importance: float64 ``[rows]`` importance, NaN if unrated.
        tag_codes: int64 ``[rows]`` each row's tag list (index into :attr:`tag_lists`).
        tag_lists: The distinct tag lists of the rows, each parsed once when its first row
            enters the index (a tuple of tags).
        session_names: The ``session_id`` of each (tenant, session) code.
        names: The distinct ``session_id`` of each name code (:attr:`name_codes`; one session
            name in two tenants has one name code).

    Not thread-safe: its owner serialises :meth:`append`, :meth:`retain` and the searches
    (:meth:`score` sums into scratch arrays it keeps between calls, reset after each).
    """

    def __init__(self) -> None:
        self.seqs = _NO_ROWS
        self.lengths = _NO_TF
        self.created_s = _NO_TF
        self.importance = _NO_TF
        self.tag_codes = _NO_ROWS
        self.tag_lists: list[tuple[str, ...]] = []
        self._tag_codes: dict[str, int] = {}  # tags as stored (JSON text) -> tag code
        self._words: dict[str, frozenset[str]] = {}  # tag -> its words (tag_words), filled on demand
        self._tenant = np.zeros(0, dtype=np.int32)
        self._session = np.zeros(0, dtype=np.int32)
        self._tenant_codes: dict[str, int] = {}
        self._session_codes: dict[tuple[str, str], int] = {}
        self.session_names: list[str] = []
        self.names: list[str] = []
        self._name_codes: dict[str, int] = {}  # session_id -> name code
        self._name_of: list[int] = []  # (tenant, session) code -> name code
        self._name_array = _NO_ROWS  # _name_of as an array, rebuilt when sessions were added
        self._main: _Segment | None = None
        self._tail: _Segment | None = None
        self._tail_from = 0  # index position of the first row of the tail segment
        self._by_session: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None
        self._counts: tuple[NDArray[np.int64], NDArray[np.int64]] | None = None  # rows per code
        self._tokens: tuple[NDArray[np.float64], NDArray[np.float64]] | None = None  # tokens per code
        self._total: NDArray[np.float64] = _NO_TF  # score scratch, all zeros between searches
        self._norms: tuple[tuple[float, float, float], NDArray[np.float64]] | None = None  # (k1, b, avg)
        self._seen: NDArray[np.bool_] = np.zeros(0, dtype=bool)  # match scratch, all False between
        # (term, scope, df, N, k1, b, avgdl) -> the term's contributions to its scope rows (read-only)
        self._gains: dict[_GainKey, tuple[NDArray[np.float64], ...]] = {}
        self._gain_floats = 0

    def __len__(self) -> int:
        return len(self.seqs)

    @property
    def last_seq(self) -> int:
        """The highest row key held (0 when empty)."""
        return int(self.seqs[-1]) if len(self.seqs) else 0

    @property
    def session_of(self) -> NDArray[np.int32]:
        """int32 ``[rows]`` each row's (tenant, session) code (index into :attr:`session_names`)."""
        return self._session

    def append(self, rows: PostingRows) -> None:
        """Add rows whose keys are all above :attr:`last_seq` (a tail segment, folded in when large)."""
        self.extend([rows])

    def extend(self, batches: Iterable[PostingRows]) -> None:
        """Add batches of rows, each batch's keys above the one before's and :attr:`last_seq`'s.

        Each batch's postings are built on their own and then joined in one sort (an initial load
        of 1M rows in 50,000-row batches no longer re-sorts the whole index for each batch).
        """
        added = [self._add_rows(rows) for rows in batches if rows.seqs]
        if not added:
            return
        new = _Segment.joined(added)
        if self._main is None:
            self._main, self._tail_from = new, len(self.seqs)
            return
        tail = new if self._tail is None else self._tail.merged(new)
        if len(self.seqs) - self._tail_from > max(_TAIL_MIN, len(self.seqs) // TAIL_FRACTION):
            self._main, self._tail = self._main.merged(tail), None
            self._tail_from = len(self.seqs)
        else:
            self._tail = tail

    def _add_rows(self, rows: PostingRows) -> _Segment:
        """Append ``rows``' columns to the held rows; their postings (not yet in a segment of the index)."""
        base = len(self.seqs)
        self._changed()
        tenant = [self._tenant_codes.setdefault(t, len(self._tenant_codes)) for t in rows.tenants]
        session = [self._session_code(t, s) for t, s in zip(rows.tenants, rows.sessions, strict=True)]
        self.seqs = np.concatenate([self.seqs, np.asarray(rows.seqs, dtype=np.int64)])
        self.lengths = np.concatenate([self.lengths, np.asarray(rows.token_counts, dtype=np.float64)])
        created = np.asarray(rows.created_us, dtype=np.int64) / 1e6
        self.created_s = np.concatenate([self.created_s, created])
        self.importance = np.concatenate([self.importance, np.asarray(rows.importance, dtype=np.float64)])
        tag_codes = np.fromiter((self._tag_code(t) for t in rows.tags), dtype=np.int64, count=len(rows.tags))
        self.tag_codes = np.concatenate([self.tag_codes, tag_codes])
        self._tenant = np.concatenate([self._tenant, np.asarray(tenant, dtype=np.int32)])
        self._session = np.concatenate([self._session, np.asarray(session, dtype=np.int32)])
        return _Segment.build(rows.terms, base)

    def _changed(self) -> None:
        """Drop what is derived from the rows held (they are about to change)."""
        self._by_session = None
        self._counts = None
        self._tokens = None
        self._norms = None
        self._gains.clear()
        self._gain_floats = 0

    def _session_code(self, tenant: str, session: str) -> int:
        key = (tenant, session)
        code = self._session_codes.get(key)
        if code is None:
            code = self._session_codes[key] = len(self.session_names)
            self.session_names.append(session)
            name = self._name_codes.setdefault(session, len(self._name_codes))
            if name == len(self.names):
                self.names.append(session)
            self._name_of.append(name)
        return code

    @property
    def name_codes(self) -> NDArray[np.int64]:
        """int64 ``[sessions]`` per (tenant, session) code, the code of its ``session_id`` alone."""
        if len(self._name_array) != len(self._name_of):
            self._name_array = np.asarray(self._name_of, dtype=np.int64)
        return self._name_array

    def _tag_code(self, stored: str) -> int:
        """The code of a row's tags as stored (JSON text), parsing a list not seen before."""
        code = self._tag_codes.get(stored)
        if code is None:
            code = self._tag_codes[stored] = len(self.tag_lists)
            self.tag_lists.append(tuple(json.loads(stored)))
        return code

    def tag_words(self, tag: str) -> frozenset[str]:
        """:func:`memlane.analysis.tag_words` of ``tag``, computed once per distinct tag."""
        words = self._words.get(tag)
        if words is None:
            words = self._words[tag] = tag_words(tag)
        return words

    def retain(self, seqs: NDArray[np.int64]) -> None:
        """Drop every row whose key is not in ``seqs`` (the keys the source of truth still holds)."""
        keep = np.isin(self.seqs, seqs)
        if keep.all():
            return
        position = (np.cumsum(keep) - 1).astype(np.int64)
        self._changed()
        self.seqs, self.lengths = self.seqs[keep], self.lengths[keep]
        self.created_s, self.importance, self.tag_codes = (
            self.created_s[keep],
            self.importance[keep],
            self.tag_codes[keep],
        )
        self._tenant, self._session = self._tenant[keep], self._session[keep]
        main = None if self._main is None else self._main.retained(keep, position)
        if main is not None and self._tail is not None:
            main = main.merged(self._tail.retained(keep, position))
        self._main, self._tail, self._tail_from = main, None, len(self.seqs)

    def _term_postings(self, term: str, scope: tuple[str | None, str | None]) -> TermPostings:
        """Rows of ``scope`` holding ``term``, per segment, and its count in each."""
        parts = [s.postings(term) for s in (self._main, self._tail) if s is not None]
        parts = [(rows, tf) for rows, tf in parts if len(rows)]
        tenant, session = scope
        if tenant is None or self._whole(tenant, session):  # every row is in scope: nothing to drop
            return TermPostings(tuple(parts))
        if session is None:
            codes, code = self._tenant, self._tenant_codes.get(tenant, -1)
        else:
            codes, code = self._session, self._session_codes.get((tenant, session), -1)
        kept = [(rows[keep], tf[keep]) for rows, tf in parts if (keep := codes[rows] == code).any()]
        return TermPostings(tuple(kept))

    def _whole(self, tenant: str, session: str | None) -> bool:
        """Whether every held row is in the scope (then a posting's scope test always passes)."""
        if self._counts is None:
            self._counts = np.bincount(self._tenant), np.bincount(self._session)
        if session is None:
            code, counts = self._tenant_codes.get(tenant, -1), self._counts[0]
        else:
            code, counts = self._session_codes.get((tenant, session), -1), self._counts[1]
        return 0 <= code < len(counts) and int(counts[code]) == len(self.seqs)

    def scope_size(self, scope: Scope) -> tuple[int, float]:
        """``(N, total tokens)`` of the held rows of ``scope`` (the BM25 statistics of every stored row).

        The token total is a float64 sum of integer lengths, exact below 2^53, so ``tokens / N``
        is the ``avgdl`` a backend computes from exact integer sums (``scope_stats``). Kept per
        tenant and per session code until the rows held change.
        """
        tenant, session = scope
        if tenant is None:
            return len(self.seqs), float(self.lengths.sum())
        if self._counts is None:
            self._counts = np.bincount(self._tenant), np.bincount(self._session)
        if self._tokens is None:
            by_tenant = np.bincount(self._tenant, weights=self.lengths).astype(np.float64)
            self._tokens = by_tenant, np.bincount(self._session, weights=self.lengths).astype(np.float64)
        counts, tokens = self._counts, self._tokens
        if session is None:
            code, side = self._tenant_codes.get(tenant, -1), 0
        else:
            code, side = self._session_codes.get((tenant, session), -1), 1
        if not 0 <= code < len(counts[side]):
            return 0, 0.0
        return int(counts[side][code]), float(tokens[side][code])

    def neighbours(self, keys: NDArray[np.int64], radius: int) -> tuple[NDArray[np.int64], NDArray[np.int64]]:
        """Each held key's ``radius`` nearest rows before and after it in its tenant and session.

        Rows are ordered by ``(tenant and session, key)`` once per change of the index (one
        ``lexsort``); each key's neighbours are then a ``searchsorted`` and a few gathers.

        Args:
            keys: int64 ``[n]`` row keys (keys the index does not hold are left out).
            radius: Neighbours on each side, >= 1.

        Returns:
            ``(positions, adjacent)``: index positions ``[m]`` of the held keys, in the order
            given, and int64 ``[m, 2 * radius]`` the keys ``radius .. 1`` before and
            ``1 .. radius`` after each (insertion order), -1 where the session has none.
        """
        if self._by_session is None:
            order = np.lexsort((self.seqs, self._session)).astype(np.int64)
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order), dtype=np.int64)
            self._by_session = order, rank
        order, rank = self._by_session
        at = np.minimum(np.searchsorted(self.seqs, keys), max(len(self.seqs) - 1, 0))  # >= 0
        rows = at[self.seqs[at] == keys] if len(self.seqs) else _NO_ROWS
        offsets = np.concatenate([np.arange(-radius, 0), np.arange(1, radius + 1)])
        near = rank[rows][:, None] + offsets[None, :]
        inside = (near >= 0) & (near < len(order))
        other = order[np.minimum(np.maximum(near, 0), max(len(order) - 1, 0))]  # np.clip is slower
        same = inside & (self._session[other] == self._session[rows][:, None])
        return rows, np.where(same, self.seqs[other], -1).astype(np.int64)

    def scope_postings(
        self, terms: Sequence[str], scope: tuple[str | None, str | None]
    ) -> dict[str, TermPostings]:
        """Per term (in the order given), the rows of ``scope`` holding it and its count in each.

        ``len`` of a term's :class:`TermPostings` is its document frequency in the scope.
        """
        return {t: self._term_postings(t, scope) for t in terms}

    def score(
        self,
        postings: dict[str, TermPostings],
        df: dict[str, int],
        n_rows: int,
        avgdl: float,
        params: Bm25Params,
        *,
        scope: Scope | None = None,
    ) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
        """BM25 of every row of the scope holding a term of ``df``: ``(index positions, scores)``.

        The same numbers as :func:`memlane.bm25.score_matches` with the same arguments: each
        term's contribution ``idf * f * (k1 + 1) / (f + k1 * (1 - b + b * len / avgdl))`` is
        added to its rows' scores term by term, in ``df``'s order (float addition in the order
        :mod:`memlane.bm25` sums).

        Args:
            postings: :meth:`scope_postings` of (at least) ``df``'s terms in the scope.
            df: Query term -> document frequency in the scope (only the kept terms).
            n_rows: ``N`` of the scope (>= 1).
            avgdl: Mean document length of the scope.
            params: ``k1`` and ``b``.
            scope: The scope ``postings`` were taken for (:meth:`scope_postings`). Given, the
                contributions of each term in at least :data:`GAIN_MIN_ROWS` rows are kept until the
                rows held change (at most :data:`GAIN_BUDGET` floats per row in all), keyed by the
                term, the scope, ``df``, ``n_rows``, ``avgdl`` and ``params``: a later search with the
                same key adds the kept array, the same floats as computing it again.

        Returns:
            Positions (increasing) of the matching rows in the index and their scores (> 0).
        """
        k1, b = params.k1, params.b
        avg = max(float(avgdl), 1e-9)
        if len(self._total) != len(self.seqs):
            self._total = np.zeros(len(self.seqs), dtype=np.float64)
            self._seen = np.zeros(len(self.seqs), dtype=bool)
        total, seen = self._total, self._seen  # zeros / False: every search resets what it set
        try:
            every = self._row_norms(k1, b, avg) if self._worth_every_norm(postings, df) else None
            for term, d in df.items():
                found = postings[term]
                key = None if scope is None else (term, scope, d, n_rows, k1, b, avg)
                gains = None if key is None else self._gains.get(key)
                if gains is None:
                    gains = self._contributions(found, idf(d, n_rows), params, avg, every)
                    if key is not None and len(found) >= GAIN_MIN_ROWS:
                        self._keep_gain(key, gains)
                for (rows, _), gain in zip(found.parts, gains, strict=True):
                    total[rows] += gain
                    seen[rows] = True
        finally:
            hit = np.flatnonzero(seen)  # the matched rows (a bool scan is faster than a float one)
            scores = total[hit]
            if len(hit) * _CLEAR_WHOLE > len(total):  # many matches: one memset beats two scatters
                total.fill(0.0)
                seen.fill(False)
            else:
                total[hit], seen[hit] = 0.0, False
        nonzero = scores != 0.0  # as np.flatnonzero(total): a sum that is exactly 0 is no match
        if not nonzero.all():
            hit, scores = hit[nonzero], scores[nonzero]
        return hit, scores

    def _contributions(
        self,
        found: TermPostings,
        weight: float,
        params: Bm25Params,
        avg: float,
        every: NDArray[np.float64] | None,
    ) -> tuple[NDArray[np.float64], ...]:
        """A term's BM25 contribution to each row of each part (``every``: the rows' norms, if kept)."""
        k1, b = params.k1, params.b
        return tuple(
            contribution(
                weight, f, length_norm(self.lengths[rows], k1, b, avg) if every is None else every[rows], k1
            )
            for rows, f in found.parts
        )

    def _keep_gain(self, key: _GainKey, gains: tuple[NDArray[np.float64], ...]) -> None:
        """Keep ``gains`` (one array per part) under ``key``, dropping the oldest kept beyond the budget."""
        for gain in gains:
            gain.flags.writeable = False
        self._gains[key] = gains
        self._gain_floats += sum(len(g) for g in gains)
        budget = GAIN_BUDGET * max(len(self.seqs), GAIN_MIN_ROWS)
        while self._gain_floats > budget and len(self._gains) > 1:
            oldest = next(iter(self._gains))
            self._gain_floats -= sum(len(g) for g in self._gains.pop(oldest))

    def _worth_every_norm(self, postings: dict[str, TermPostings], df: dict[str, int]) -> bool:
        """Whether the query's postings outnumber half the rows (then every row's norm is cheaper)."""
        return sum(len(postings[t]) for t in df) * 2 > len(self.seqs)

    def _row_norms(self, k1: float, b: float, avg: float) -> NDArray[np.float64]:
        """``k1 * ((1 - b) + b * length / avg)`` of every row, kept until the rows or the arguments change.

        The same expression, element by element, as :meth:`score` computes for a term's rows.
        """
        key = (k1, b, avg)
        if self._norms is None or self._norms[0] != key:
            self._norms = key, length_norm(self.lengths, k1, b, avg)
        return self._norms[1]


def best_first(keys: NDArray[np.int64], scores: NDArray[np.float64], count: int) -> NDArray[np.int64]:
    """Indices of the best ``count`` of ``scores``, best first (ties: lower key first), exact.

    The ``count``-th best score (the cut) is found by :func:`memlane.stores.base.with_best` (a sampled
    lower bound, then a partition of the scores above it); every row scoring at least that is then
    sorted by ``(-score, key)``, so rows tied at the cut are chosen by key as a full sort would.

    Args:
        keys: int64 ``[n]`` the rows' keys (the tie order).
        scores: float64 ``[n]`` finite scores.
        count: How many to return.

    Returns:
        int64 ``[min(count, n)]`` indices into ``scores``, best first.
    """
    n = len(scores)
    if n == 0 or count <= 0:
        return _NO_ROWS
    if count >= n:
        pick = np.arange(n, dtype=np.int64)
    else:
        pick = with_best(scores, count)[0]
    order = np.lexsort((keys[pick], -scores[pick]))
    return pick[order][:count].astype(np.int64)


def scored_matches(
    postings: KeywordPostings,
    terms: Sequence[str],
    statistics: tuple[int, float],
    scope: Scope,
    common: CommonTermFilter,
) -> tuple[NDArray[np.int64], NDArray[np.float64]]:
    """Index positions (increasing) and BM25 scores of every row of ``scope`` holding a kept term.

    The terms kept are those of :meth:`CommonTermFilter.kept` over their document frequencies in the
    scope (the postings' own counts); the scores are :meth:`KeywordPostings.score`'s with
    :data:`~memlane.bm25.DEFAULT_BM25`, the same floats as :func:`memlane.bm25.score_matches`.

    Args:
        postings: The index, up to date.
        terms: Distinct non-empty query terms, in query order.
        statistics: ``(N, avgdl)`` of the scope.
        scope: ``(tenant_id, session_id)`` of the statistics.
        common: The common-term rule.

    Returns:
        Two empty arrays when the scope is empty or no term is kept.
    """
    n, avgdl = statistics
    if not n or not terms:
        return _NO_ROWS, _NO_TF
    found = postings.scope_postings(terms, scope)
    df = common.kept({t: len(rows) for t, rows in found.items()}, n)
    if not df:
        return _NO_ROWS, _NO_TF
    return postings.score(found, df, n, avgdl, DEFAULT_BM25, scope=scope)


def best_passing(
    seqs: NDArray[np.int64],
    rows: NDArray[np.int64],
    scores: NDArray[np.float64],
    check: Callable[[NDArray[np.int64]], NDArray[np.bool_]],
    top_n: int,
) -> NDArray[np.int64]:
    """Indices (into ``rows``) of the best ``top_n`` scored rows that pass a filter, best first.

    ``rows`` are index positions (increasing) of the scored rows and ``seqs`` the index's row
    keys, so ties broken by position are broken by key. Only the rows checked have their keys
    gathered. The rows are checked best first (:func:`best_first`), ``top_n + 32`` at first, then
    twice as many each time, until ``top_n`` passed or every row was checked.

    Args:
        seqs: int64 ``[rows held]`` the index's row keys.
        rows: int64 ``[m]`` index positions of the scored rows, increasing.
        scores: float64 ``[m]`` their scores.
        check: ``check(keys)`` -> bool ``[len(keys)]``, which keys pass the filter (the store's query).
        top_n: Maximum rows, >= 1.
    """
    ranked = best_first(rows, scores, top_n + 32)
    passed: list[NDArray[np.int64]] = []
    done, step, count = 0, len(ranked), 0
    while done < len(rows) and count < top_n:
        if done == len(ranked):  # the first rows were not enough: rank every match
            ranked, step = best_first(rows, scores, len(rows)), 2 * step
        chunk = ranked[done : done + step]
        done += len(chunk)
        passed.append(chunk[check(seqs[rows[chunk]])])
        count += len(passed[-1])
    return np.concatenate(passed)[:top_n] if passed else _NO_ROWS


def indexed_neighbours(postings: KeywordPostings, keys: Sequence[int], radius: int) -> Neighbours:
    """:meth:`~memlane.stores.base.Store.neighbours`'s answer from caught-up postings (no SQL).

    The postings hold every stored row with its tenant, session and tags (each distinct tag list
    parsed once, when its first row entered them), so this is the answer of the stores' SQL
    plans (:func:`memlane.stores.sqlite.neighbours.stored_neighbours`,
    :func:`memlane.stores.postgres.neighbours.neighbours_statement`) for the rows they hold: the
    neighbours come from :meth:`KeywordPostings.neighbours`, the session and tag codes are
    gathers, and the tags' words come from the postings' cache (:meth:`KeywordPostings.tag_words`).
    The caller holds the postings' lock and has brought them to its snapshot.

    Args:
        postings: The store's postings, refreshed.
        keys: Row keys (unknown ones are left out of the result).
        radius: Neighbours on each side, >= 1.

    Returns:
        One row per held key, in key order.
    """
    wanted = unique_keys(np.asarray(keys, dtype=np.int64))
    rows, adjacent = postings.neighbours(wanted, radius)
    return Neighbours(
        keys=postings.seqs[rows],
        session_codes=postings.name_codes[postings.session_of[rows]],
        session_names=postings.names,
        tag_codes=postings.tag_codes[rows],
        tag_lists=postings.tag_lists,
        adjacent=adjacent,
        words=postings.tag_words,
    )
