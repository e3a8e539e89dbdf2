"""``SessionMemory``: whole conversations stored, recalled, searched and injected as context.

Reach it as ``memory.sessions`` on an :class:`~memlane.memory.EpisodicMemory`: it uses that
memory's store (which must support sessions: SQLite and PostgreSQL do), embedder, clock,
tenant and configuration (ranking weights, recency decay, retention).

Ownership and isolation: a session belongs to ``(tenant_id, agent_id, user_id)``; its id
is unique within the tenant. Every read is limited to the memory's tenant (whatever the
memory's :class:`~memlane.models.Scope`), and ``recall_recent``/``search_sessions`` to one
agent and user, so one tenant never sees another's sessions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from memlane.clock import ensure_utc
from memlane.core import MemoryCore
from memlane.embeddings.base import check_vectors
from memlane.errors import StoreError, ValidationError
from memlane.models import RecallHit
from memlane.recall.ranking import RankingWeights, rank, resolve_weights
from memlane.sessions.context import (
    DEFAULT_MAX_ITEM_CHARS,
    ContextBlock,
    ContextItem,
    Placement,
    assemble_context,
    check_budget,
    event_item,
    inject_block,
    latest_user_index,
    snippet_item,
)
from memlane.sessions.keywords import window_keyword_scores
from memlane.sessions.messages import message_text, validate_message, validate_messages
from memlane.sessions.models import SYSTEM_ROLES, Message, SessionEpisode, SessionSnippet
from memlane.sessions.tokens import TokenCounter, resolve_token_counter
from memlane.sessions.windows import split_turns
from memlane.stores.sessions_base import (
    SessionHeader,
    SessionOwner,
    SessionStore,
    SessionWrite,
    SupportsSessions,
    WindowInput,
)
from memlane.validation import check_flag, check_identifier, check_limit, check_text, normalize_metadata

__all__ = ["SessionMemory"]

TokenizerSpec = TokenCounter | Callable[[str], int] | str | None


def _session_store(memory: MemoryCore) -> SessionStore:
    store = memory.store
    if not isinstance(store, SupportsSessions):
        raise StoreError(f"{type(store).__name__} does not store session episodes (no session_store)")
    return store.session_store


def _check_count(value: object, name: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValidationError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return value


class SessionMemory:
    """Session episodes over an :class:`~memlane.memory.EpisodicMemory`'s store (see the module docstring).

    Args:
        memory: Supplies the store, embedder, clock, tenant and configuration: an
            :class:`~memlane.memory.EpisodicMemory` (typed as :class:`memlane.core.MemoryCore`,
            so this module never imports the facade).

    Raises:
        StoreError: the memory's store does not support session episodes.
    """

    def __init__(self, memory: MemoryCore) -> None:
        self.memory = memory
        self.store: SessionStore = _session_store(memory)

    @property
    def tenant_id(self) -> str:
        """The tenant every session is stored and read under."""
        return self.memory.tenant_id

    def _check_open(self) -> None:
        self.memory._check_open()

    def _owner(self, agent_id: object, user_id: object) -> SessionOwner:
        return SessionOwner(
            self.tenant_id, check_identifier(agent_id, "agent_id"), check_identifier(user_id, "user_id")
        )

    def _retention_cutoff(self, at: datetime) -> datetime | None:
        days = self.memory.config.retention_days
        return None if days is None else at - timedelta(days=days)

    # -- writing -----------------------------------------------------------------------

    def store_session(
        self,
        session_id: str,
        messages: Sequence[Mapping[str, Any] | Message],
        *,
        agent_id: str,
        user_id: str,
        started_at: datetime | None = None,
        ended_at: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        append: bool = False,
    ) -> SessionEpisode:
        """Store one conversation (append-only), or append further turns to it.

        The messages are validated, cut into turns (:mod:`memlane.sessions.windows`), each
        turn embedded with the memory's embedder (one batch call), and everything written
        in one transaction: either all of it is stored or nothing is.

        Args:
            session_id: The conversation's id, unique within the tenant (1-200 chars).
            messages: OpenAI-format messages (see :mod:`memlane.sessions.messages`), at least one.
            agent_id: The agent (1-200 chars).
            user_id: The user (1-200 chars).
            started_at: When this conversation (or appended part) began; timezone-aware.
                Default: ``ended_at`` if given, else the clock's now.
            ended_at: When it ended; default ``started_at`` if given, else now. Must be
                ``>= started_at``. Each turn is dated ``started_at`` (drives recency).
            metadata: JSON-serialisable mapping; on append, its keys are merged into the
                session's metadata.
            append: Add these messages to the end of an existing session of the same agent
                and user (creating it if missing). Without it, an existing id is an error.

        Returns:
            The whole session as stored (for an append: every message so far).

        Raises:
            ValidationError: a malformed message (the error names its index and field), a bad
                argument, or an append to another agent's or user's session. Nothing is stored.
            DuplicateSessionError: the session exists and ``append`` is false. Nothing is stored.
            EmbeddingError: the embedder failed. StoreError: the store failed.
        """
        self._check_open()
        session_id = check_identifier(session_id, "session_id")
        owner = self._owner(agent_id, user_id)
        parsed = validate_messages(messages)
        now = self.memory.clock.now()
        start = None if started_at is None else ensure_utc(started_at, "started_at")
        end = None if ended_at is None else ensure_utc(ended_at, "ended_at")
        if start is None and end is None:
            start = end = now
        start = start or end
        end = end or start
        assert start is not None and end is not None
        if end < start:
            raise ValidationError(f"ended_at ({end.isoformat()}) is before started_at ({start.isoformat()})")
        meta = normalize_metadata(metadata)
        turns = split_turns(parsed)
        embedder = self.memory.embedder
        vectors = None
        if turns:
            vectors = check_vectors(
                embedder.embed([t.text for t in turns]), len(turns), embedder.dims, embedder.model_id
            )
        write = SessionWrite(
            owner=owner,
            session_id=session_id,
            started_at=start,
            ended_at=end,
            metadata=meta,
            messages=[m.to_json() for m in parsed],
            windows=[
                WindowInput(turn=t.index, first=t.first, last=t.last, text=t.text, created_at=start)
                for t in turns
            ],
            embedding_model=embedder.model_id,
        )
        header = self.store.insert_session(write, vectors, append=check_flag(append, "append"))
        if header.message_count == len(parsed):
            return self._episode(header, parsed)
        return self._episode(header, self._messages(header))

    # -- reading -----------------------------------------------------------------------

    def _messages(
        self, header: SessionHeader, first: int = 0, last: int | None = None
    ) -> tuple[Message, ...]:
        texts = self.store.session_messages(header.key, first, last)
        return tuple(
            validate_message(json.loads(t), f"stored message of {header.session_id!r}") for t in texts
        )

    @staticmethod
    def _episode(header: SessionHeader, messages: Sequence[Message]) -> SessionEpisode:
        return SessionEpisode(
            session_id=header.session_id,
            tenant_id=header.tenant_id,
            agent_id=header.agent_id,
            user_id=header.user_id,
            messages=tuple(messages),
            started_at=header.started_at,
            ended_at=header.ended_at,
            metadata=dict(header.metadata),
        )

    def get_session(
        self, session_id: str, *, agent_id: str | None = None, user_id: str | None = None
    ) -> SessionEpisode | None:
        """Return the whole stored conversation, if it is this tenant's.

        Args:
            session_id: The session id.
            agent_id: If given, only return it if it belongs to this agent.
            user_id: If given, only return it if it belongs to this user.

        Returns:
            The :class:`SessionEpisode` with every message, or ``None`` (unknown id, another
            tenant's session, another agent's/user's when those are given, or expired: its
            ``ended_at`` older than ``retention_days`` at the clock's now, as
            :meth:`prune` deletes; the cases are indistinguishable on purpose).

        Raises:
            ValidationError: a blank or over-long id. StoreError: the store failed.
        """
        self._check_open()
        header = self.store.get_session(self.tenant_id, check_identifier(session_id, "session_id"))
        if header is None:
            return None
        cutoff = self._retention_cutoff(self.memory.clock.now())
        if cutoff is not None and header.ended_at < cutoff:
            return None
        if agent_id is not None and header.agent_id != check_identifier(agent_id, "agent_id"):
            return None
        if user_id is not None and header.user_id != check_identifier(user_id, "user_id"):
            return None
        return self._episode(header, self._messages(header))

    def recall_recent(
        self, agent_id: str, user_id: str, limit: int = 5, *, now: datetime | None = None
    ) -> list[SessionEpisode]:
        """The newest sessions of this agent and user, with all their messages.

        Args:
            agent_id: The agent.
            user_id: The user.
            limit: Maximum number of sessions, >= 1 (default 5).
            now: Reference time for retention (timezone-aware); default the clock.

        Returns:
            Up to ``limit`` sessions, newest ``ended_at`` first (ties: the later stored first);
            sessions past ``retention_days`` are left out.

        Raises:
            ValidationError: a bad argument. StoreError: the store failed.
        """
        self._check_open()
        owner = self._owner(agent_id, user_id)
        limit = check_limit(limit)
        at = self.memory.clock.now() if now is None else ensure_utc(now, "now")
        headers = self.store.list_recent_sessions(owner, limit, self._retention_cutoff(at))
        return [self._episode(h, self._messages(h)) for h in headers]

    def search_sessions(  # noqa: C901, PLR0913, PLR0915  (limit debt, #19)
        self,
        agent_id: str,
        user_id: str,
        query: str,
        top_k: int = 3,
        *,
        now: datetime | None = None,
        weights: RankingWeights | str | Mapping[str, float] | None = None,
        context_turns: int = 1,
        max_per_session: int | None = None,
        exclude_session_id: str | None = None,
    ) -> list[SessionSnippet]:
        """The passages of this agent's and user's past sessions that best match ``query``.

        Every stored turn was embedded at store time; the query is embedded, the owner's
        turns are scored by cosine similarity (exact search) and ranked with the same
        three-factor scoring as event episodes (:func:`memlane.recall.ranking.rank`: relevance
        ``max(0, cosine)``, recency ``decay ** age_days`` from the turn's time, importance
        0.5 for every turn, as turns are unrated; weighted mean). Each snippet is the
        matched turn with ``context_turns`` turns on each side. A lower-ranked match whose
        turn is already shown inside a better snippet of the same session is skipped, so
        snippets never repeat a turn's match.

        Args:
            agent_id: The agent.
            user_id: The user.
            query: Natural-language query (non-empty).
            top_k: Maximum snippets, >= 1 (default 3).
            now: Reference time for recency and retention (timezone-aware); default the clock.
            weights: Ranking weights: :class:`RankingWeights`, a preset name or a mapping;
                default the memory's ``config.weights``.
            context_turns: Turns of context on each side of the match, >= 0 (default 1).
            max_per_session: At most this many snippets per session (>= 1), or ``None``.
            exclude_session_id: Leave out this session (e.g. the conversation in progress).

        Returns:
            Up to ``top_k`` :class:`SessionSnippet`, best score first.

        Raises:
            ValidationError: a bad argument. EmbeddingError: the query could not be embedded.
            StoreError: the store failed.
        """
        self._check_open()
        owner = self._owner(agent_id, user_id)
        query = check_text(query, "query")
        top_k = check_limit(top_k, "top_k")
        context_turns = _check_count(context_turns, "context_turns", minimum=0)
        if max_per_session is not None:
            max_per_session = _check_count(max_per_session, "max_per_session", minimum=1)
        excluded = (
            None if exclude_session_id is None else check_identifier(exclude_session_id, "exclude_session_id")
        )
        at = self.memory.clock.now() if now is None else ensure_utc(now, "now")
        resolved = resolve_weights(weights, self.memory.config.ranking_weights)
        embedder = self.memory.embedder
        vector = check_vectors(embedder.embed([query]), 1, embedder.dims, embedder.model_id)[0]
        candidates = self.store.window_candidates(
            owner, vector, top_n=max(top_k * 20, 200), created_after=self._retention_cutoff(at)
        )
        keyword = window_keyword_scores(
            query,
            candidates.keys,
            candidates.cosine,
            max(top_k * 20, 200),
            lambda keys: {k: w.text for k, w in self.store.fetch_windows(keys).items()},
        )
        ranked = rank(
            cosine=candidates.cosine,
            keyword=keyword,
            created_at_seconds=candidates.created_at_seconds,
            importance=candidates.importance,
            now_seconds=at.timestamp(),
            weights=resolved,
            decay_per_day=self.memory.config.decay_per_day,
            limit=len(candidates) or 1,
        )
        snippets: list[SessionSnippet] = []
        shown: dict[int, list[tuple[int, int]]] = {}  # session key -> turn ranges already shown
        per_session: dict[int, int] = {}
        for start in range(0, len(ranked), max(top_k * 4, 50)):
            chunk = ranked[start : start + max(top_k * 4, 50)]
            windows = self.store.fetch_windows([int(candidates.keys[r.index]) for r in chunk])
            for r in chunk:
                window = windows.get(int(candidates.keys[r.index]))
                if window is None or window.session.session_id == excluded:
                    continue
                session_key = window.session.key
                if any(lo <= window.turn <= hi for lo, hi in shown.get(session_key, [])):
                    continue
                if max_per_session is not None and per_session.get(session_key, 0) >= max_per_session:
                    continue
                first_turn, last_turn = window.turn - context_turns, window.turn + context_turns
                spans = (
                    self.store.turn_spans(session_key, first_turn, last_turn)
                    if context_turns
                    else {window.turn: (window.first, window.last)}
                )
                spans.setdefault(window.turn, (window.first, window.last))
                first = min(lo for lo, _ in spans.values())
                last = max(hi for _, hi in spans.values())
                stored = self._messages(window.session, first, last)
                messages: list[Message] = []
                positions: list[int] = []
                match_start = match_end = -1
                for offset, message in enumerate(stored):
                    position = first + offset
                    if message.role in SYSTEM_ROLES:
                        continue
                    if window.first <= position <= window.last:
                        if match_start < 0:
                            match_start = len(messages)
                        match_end = len(messages) + 1
                    messages.append(message)
                    positions.append(position)
                snippets.append(
                    SessionSnippet(
                        session_id=window.session.session_id,
                        agent_id=window.session.agent_id,
                        user_id=window.session.user_id,
                        created_at=window.created_at,
                        messages=tuple(messages),
                        positions=tuple(positions),
                        match_start=max(match_start, 0),
                        match_end=max(match_end, 0),
                        breakdown=r.breakdown,
                    )
                )
                shown.setdefault(session_key, []).append((min(spans), max(spans)))
                per_session[session_key] = per_session.get(session_key, 0) + 1
                if len(snippets) == top_k:
                    return snippets
        return snippets

    # -- removal -----------------------------------------------------------------------

    def delete_session(self, session_id: str) -> bool:
        """Delete one of this tenant's sessions (messages and index included).

        Returns:
            ``True`` if it was deleted, ``False`` if this tenant has no such session.

        Raises:
            ValidationError: a blank or over-long id. StoreError: the store failed.
        """
        self._check_open()
        return self.store.delete_session(self.tenant_id, check_identifier(session_id, "session_id"))

    def prune(self, now: datetime | None = None) -> int:
        """Delete every session (all tenants) whose ``ended_at`` is older than ``retention_days``.

        Args:
            now: Reference time (timezone-aware); default the clock.

        Returns:
            Sessions deleted (0 when the memory's ``retention_days`` is ``None``).
        """
        self._check_open()
        at = self.memory.clock.now() if now is None else ensure_utc(now, "now")
        cutoff = self._retention_cutoff(at)
        return 0 if cutoff is None else self.store.delete_sessions_ended_before(cutoff)

    # -- context -----------------------------------------------------------------------

    def build_context_block(  # noqa: PLR0913  (limit debt, #19)
        self,
        query: str,
        *,
        agent_id: str,
        user_id: str,
        token_budget: int,
        include_events: bool = True,
        include_sessions: bool = True,
        session_top_k: int = 5,
        event_limit: int = 5,
        min_relevance: float | None = None,
        now: datetime | None = None,
        weights: RankingWeights | str | Mapping[str, float] | None = None,
        context_turns: int = 1,
        exclude_session_id: str | None = None,
        tokenizer: TokenizerSpec = None,
        max_item_chars: int = DEFAULT_MAX_ITEM_CHARS,
    ) -> ContextBlock:
        """Build the ``[Past Conversation Context]`` block and report what went into it.

        Candidates are up to ``session_top_k`` session snippets (:meth:`search_sessions`) and
        up to ``event_limit`` event episodes (``memory.recall_episodes(query)``, in the
        memory's own scope), all ranked with the same weights; they are selected greedily
        by score while the whole block stays within ``token_budget`` (format and rules in
        :mod:`memlane.sessions.context`).

        Args:
            query: What the context is for, usually the latest user message (non-empty).
            agent_id: Whose sessions to search: the agent.
            user_id: Whose sessions to search: the user.
            token_budget: Hard limit on the block's tokens, an int >= 0.
            include_events: Consider event episodes (default ``True``).
            include_sessions: Consider session snippets (default ``True``).
            session_top_k: Session snippets considered, >= 1.
            event_limit: Event episodes considered, >= 1.
            min_relevance: Leave out candidates whose dense relevance (``max(0, cosine)``, see
                :func:`~memlane.sessions.context.match_strength`) is below this value in
                [0, 1]; if none is left the block is ``""``. ``None`` keeps all.
            now: Reference time (timezone-aware); default the clock.
            weights: Ranking weights for both kinds; default the memory's.
            context_turns: Context turns around each session match, >= 0.
            exclude_session_id: A session to leave out (the one in progress).
            tokenizer: Encoding name (``"o200k_base"`` default, ``"cl100k_base"``), a
                :class:`~memlane.sessions.tokens.TokenCounter` or a function ``text -> int``.
            max_item_chars: Cap on one message's or event's characters in the block, >= 1.

        Returns:
            The :class:`~memlane.sessions.context.ContextBlock` (``text`` is ``""`` when
            nothing was selected); ``tokens <= token_budget`` always.

        Raises:
            ValidationError: a bad argument. EmbeddingError, StoreError: as for the searches.
        """
        self._check_open()
        query = check_text(query, "query")
        budget = check_budget(token_budget)
        counter = resolve_token_counter(tokenizer)
        max_item_chars = _check_count(max_item_chars, "max_item_chars", minimum=1)
        at = self.memory.clock.now() if now is None else ensure_utc(now, "now")
        candidates: list[ContextItem] = []
        owner = self._owner(agent_id, user_id)
        if budget > 0 and check_flag(include_sessions, "include_sessions"):
            for snippet in self.search_sessions(
                owner.agent_id,
                owner.user_id,
                query,
                top_k=check_limit(session_top_k, "session_top_k"),
                now=at,
                weights=weights,
                context_turns=context_turns,
                exclude_session_id=exclude_session_id,
            ):
                candidates.append(snippet_item(snippet, max_item_chars=max_item_chars))
        if budget > 0 and check_flag(include_events, "include_events"):
            hits: list[RecallHit] = self.memory.recall_episodes(
                query, limit=check_limit(event_limit, "event_limit"), now=at, weights=weights
            )
            candidates.extend(event_item(h, max_item_chars=max_item_chars) for h in hits if h.breakdown)
        return assemble_context(candidates, token_budget=budget, counter=counter, min_relevance=min_relevance)

    def build_context(
        self,
        query: str,
        *,
        agent_id: str,
        user_id: str,
        token_budget: int,
        include_events: bool = True,
        **options: Any,
    ) -> str:
        """The ``[Past Conversation Context]`` block as text (``""`` when nothing qualifies).

        Same arguments as :meth:`build_context_block`, which also reports token counts and
        the selected items. The block never has more than ``token_budget`` tokens.

        Raises:
            ValidationError, EmbeddingError, StoreError: as for :meth:`build_context_block`.
        """
        return self.build_context_block(
            query,
            agent_id=agent_id,
            user_id=user_id,
            token_budget=token_budget,
            include_events=include_events,
            **options,
        ).text

    def inject_context(
        self,
        messages: Sequence[Mapping[str, Any] | Message],
        *,
        agent_id: str,
        user_id: str,
        token_budget: int,
        query: str | None = None,
        placement: Placement = "system",
        **options: Any,
    ) -> list[dict[str, Any]]:
        """Return a new message list with the context block placed before the latest user message.

        The caller's list and its message dicts are never modified (the result is a deep
        copy). When nothing qualifies for the block, the copy is returned unchanged.

        Args:
            messages: The OpenAI-format messages about to be sent (validated).
            agent_id: Whose sessions to search: the agent.
            user_id: Whose sessions to search: the user.
            token_budget: Hard limit on the block's tokens, an int >= 0.
            query: What to search for; default the latest user message's text.
            placement: ``"system"`` (default): a system message inserted right before the
                latest user message. ``"user"``: the block is prepended to that message's
                content (for providers that accept a single leading system message only).
            options: Any other :meth:`build_context_block` argument.

        Returns:
            The new list (new dicts).

        Raises:
            ValidationError: malformed messages, no query and no user message with text, or a
                bad argument. EmbeddingError, StoreError: as for :meth:`build_context_block`.
        """
        parsed = validate_messages(messages, allow_empty=True)
        if query is None:
            index = latest_user_index([m.raw for m in parsed])
            text = None if index is None else message_text(parsed[index].raw.get("content"))
            if text is None or not text.strip():
                raise ValidationError("no user message with text to take the query from; pass query=")
            query = text
        block = self.build_context(
            query, agent_id=agent_id, user_id=user_id, token_budget=token_budget, **options
        )
        return inject_block([m.raw for m in parsed], block, placement=placement)

    def __repr__(self) -> str:
        return f"SessionMemory(store={self.store!r}, tenant_id={self.tenant_id!r})"
