"""Session search: turn windows ranked by the one recall pipeline, then cut into snippets.

:meth:`memlane.sessions.SessionMemory.search_sessions` runs
:func:`memlane.recall.pipeline.rank_candidates` over a :class:`WindowSource` (the owner's
turn windows), exactly as episode recall runs it over episodes: the query is embedded (if the
embedder fails and ``config.embedding_fallback`` is on, the search continues by keywords and
every breakdown says ``fallback=True``); dense candidates come from the windows' vectors and
keyword candidates from the store's keyword search over every window of the owner
(:meth:`~memlane.stores.sessions_base.SessionStore.window_keyword_candidates`, BM25 with the
owner's windows as statistics), fused by the configured ``retrieval`` and ranking profile, boosted
inside a time window the query names (``config.temporal``) and ranked by
:func:`memlane.recall.ranking.rank`. Windows have no stored neighbours (no context signals)
and are unrated (importance 0.5).

Windows whose own match strength (:func:`memlane.sessions.context.match_strength`, the calibrated
dense cosine) is below the relevance floor (``SnippetOptions.min_relevance``, by default
:attr:`memlane.MemoryConfig.context_min_relevance`) are left out, so an unrelated query finds nothing.
:func:`collect_snippets` then turns the remaining windows into snippets, best first: each is the
matched turn with ``context_turns`` turns on each side; a match whose turn is already shown in
a better snippet of the same session is skipped, and at most ``max_per_session`` come from one
session.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memlane.config import MemoryConfig
from memlane.models import ScoreBreakdown
from memlane.recall.candidates import MergedCandidates
from memlane.recall.pipeline import NO_CONTEXT, Context, QueryEmbedder, RecallQuery, rank_candidates
from memlane.sessions.context import match_strength
from memlane.sessions.messages import validate_message
from memlane.sessions.models import SYSTEM_ROLES, Message, SessionSnippet
from memlane.stores.base import KeywordCandidates, VectorCandidates
from memlane.stores.sessions_base import SessionHeader, SessionOwner, SessionStore, StoredWindow

__all__ = ["SnippetOptions", "WindowSource", "collect_snippets", "read_messages", "search_windows"]


@dataclass(frozen=True, slots=True)
class WindowSource:
    """An owner's turn windows (within retention): the :class:`~memlane.recall.pipeline.CandidateSource`
    of session search.

    Attributes:
        store: The session store.
        owner: Whose windows.
        created_after: Only windows created from then (retention), or ``None``.
    """

    store: SessionStore
    owner: SessionOwner
    created_after: datetime | None

    def dense(self, vector: NDArray[np.float32], top_n: int) -> VectorCandidates:
        """The owner's windows by cosine to the query vector (windows without a vector excluded)."""
        return self.store.window_candidates(self.owner, vector, top_n=top_n, created_after=self.created_after)

    def keyword(self, terms: Sequence[str], top_n: int) -> KeywordCandidates:
        """The owner's windows by BM25 of the query terms."""
        return self.store.window_keyword_candidates(self.owner, terms, top_n, self.created_after)

    def context(self, query: str, candidates: MergedCandidates) -> Context:
        """Windows have no context signals."""
        return NO_CONTEXT

    def linked(
        self, query: str, candidates: MergedCandidates, vector: NDArray[np.float32] | None
    ) -> tuple[MergedCandidates, NDArray[np.float64] | None]:
        """Windows are not linked to the knowledge graph: the candidates as they are, no signal."""
        return candidates, None


@dataclass(frozen=True, slots=True)
class SnippetOptions:
    """How ranked windows become snippets (checked by the caller).

    Attributes:
        top_k: Maximum snippets, >= 1.
        context_turns: Turns of context on each side of the match, >= 0.
        max_per_session: At most this many snippets per session (>= 1), or ``None``.
        excluded: A session id to leave out, or ``None``.
        min_relevance: The relevance floor: windows whose own match strength
            (:func:`memlane.sessions.context.match_strength`) is below it, in [0, 1], are left out.
    """

    top_k: int
    context_turns: int = 1
    max_per_session: int | None = None
    excluded: str | None = None
    min_relevance: float = 0.0

    @property
    def chunk(self) -> int:
        """Ranked windows fetched per store read: ``max(4 * top_k, 50)``."""
        return max(self.top_k * 4, 50)


def search_windows(
    source: WindowSource,
    config: MemoryConfig,
    embed_query: QueryEmbedder,
    recall: RecallQuery,
    options: SnippetOptions,
) -> list[SessionSnippet]:
    """Rank ``source``'s windows for ``recall`` (the recall pipeline) and collect the snippets.

    Args:
        source: The owner's windows.
        config: The memory's configuration (fusion, temporal, decay).
        embed_query: The context's query embedder (``None`` on a failure with the fallback on).
        recall: The checked query (``limit`` is ignored: the profile's session pool of windows is ranked).
        options: The snippets wanted (the windows below ``options.min_relevance`` are left out).

    Returns:
        Up to ``options.top_k`` snippets, best first.

    Raises:
        EmbeddingError: the embedder failed and the fallback is off. StoreError: the store failed.
    """
    pool = config.profile.pools.sessions(options.top_k)
    ranking = rank_candidates(source, config, embed_query, replace(recall, limit=pool), pool)
    kept = [
        (key, r.breakdown)
        for key, r in zip(ranking.keys, ranking.ranked, strict=True)
        if match_strength(r.breakdown) >= options.min_relevance
    ]
    return collect_snippets(source.store, [k for k, _ in kept], [b for _, b in kept], options)


@dataclass(slots=True)
class _Shown:
    """The turns already shown per session, and the snippets per session."""

    ranges: dict[int, list[tuple[int, int]]] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)

    def allows(self, window: StoredWindow, options: SnippetOptions) -> bool:
        key = window.session.key
        if window.session.session_id == options.excluded:
            return False
        if any(lo <= window.turn <= hi for lo, hi in self.ranges.get(key, [])):
            return False
        return options.max_per_session is None or self.counts.get(key, 0) < options.max_per_session

    def add(self, window: StoredWindow, span: tuple[int, int]) -> None:
        key = window.session.key
        self.ranges.setdefault(key, []).append(span)
        self.counts[key] = self.counts.get(key, 0) + 1


def collect_snippets(
    store: SessionStore, keys: Sequence[int], breakdowns: Sequence[ScoreBreakdown], options: SnippetOptions
) -> list[SessionSnippet]:
    """The snippets of ranked windows, best first (see the module docstring).

    Args:
        store: The session store.
        keys: Window keys, best first.
        breakdowns: Their score breakdowns (parallel).
        options: The snippets wanted.

    Returns:
        Up to ``options.top_k`` snippets.

    Raises:
        StoreError: the store failed.
    """
    snippets: list[SessionSnippet] = []
    shown = _Shown()
    for start in range(0, len(keys), options.chunk):
        chunk = range(start, min(start + options.chunk, len(keys)))
        windows = store.fetch_windows([keys[i] for i in chunk])
        for i in chunk:
            window = windows.get(keys[i])
            if window is None or not shown.allows(window, options):
                continue
            snippet, span = build_snippet(store, window, options.context_turns, breakdowns[i])
            snippets.append(snippet)
            shown.add(window, span)
            if len(snippets) == options.top_k:
                return snippets
    return snippets


def build_snippet(
    store: SessionStore, window: StoredWindow, context_turns: int, breakdown: ScoreBreakdown
) -> tuple[SessionSnippet, tuple[int, int]]:
    """The snippet of one matched window and the range of turns it shows.

    Raises:
        StoreError: the store failed.
    """
    spans = (
        store.turn_spans(window.session.key, window.turn - context_turns, window.turn + context_turns)
        if context_turns
        else {}
    )
    spans.setdefault(window.turn, (window.first, window.last))
    first = min(lo for lo, _ in spans.values())
    last = max(hi for _, hi in spans.values())
    messages: list[Message] = []
    positions: list[int] = []
    match_start = match_end = -1
    for offset, message in enumerate(read_messages(store, window.session, first, last)):
        position = first + offset
        if message.role in SYSTEM_ROLES:
            continue
        if window.first <= position <= window.last:
            match_start = len(messages) if match_start < 0 else match_start
            match_end = len(messages) + 1
        messages.append(message)
        positions.append(position)
    snippet = SessionSnippet(
        session_id=window.session.session_id,
        agent_id=window.session.agent_id,
        user_id=window.session.user_id,
        created_at=window.created_at,
        messages=tuple(messages),
        positions=tuple(positions),
        match_start=max(match_start, 0),
        match_end=max(match_end, 0),
        breakdown=breakdown,
    )
    return snippet, (min(spans), max(spans))


def read_messages(
    store: SessionStore, header: SessionHeader, first: int = 0, last: int | None = None
) -> tuple[Message, ...]:
    """A session's stored messages at positions ``first..last`` (inclusive; ``None`` = to the end).

    Raises:
        ValidationError: a stored message no longer validates. StoreError: the store failed.
    """
    texts = store.session_messages(header.key, first, last)
    return tuple(validate_message(json.loads(t), f"stored message of {header.session_id!r}") for t in texts)
