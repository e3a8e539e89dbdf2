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

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, Protocol

from memlane.clock import ensure_utc
from memlane.context import MemoryContext
from memlane.errors import StoreError, ValidationError
from memlane.graph.context import query_fact_groups
from memlane.models import RecallHit
from memlane.recall.methods import RecallOptions, recall_episodes
from memlane.recall.pipeline import RecallQuery
from memlane.recall.ranking import RankingWeights, resolve_weights
from memlane.sessions.context import (
    DEFAULT_MAX_ITEM_CHARS,
    DEFAULT_TOKEN_BUDGET,
    ContextBlock,
    ContextItem,
    Placement,
    assemble_context,
    check_budget,
    event_item,
    facts_item,
    inject_block,
    latest_user_index,
    snippet_item,
)
from memlane.sessions.messages import MAX_SESSION_MESSAGES, message_text, validate_messages
from memlane.sessions.models import Message, SessionEpisode, SessionSnippet
from memlane.sessions.search import SnippetOptions, WindowSource, read_messages, search_windows
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
from memlane.validation import (
    MAX_QUERY_CHARS,
    check_at_least,
    check_flag,
    check_fraction,
    check_identifier,
    check_limit,
    check_query,
    normalize_metadata,
)

__all__ = ["SessionMemory"]

TokenizerSpec = TokenCounter | Callable[[str], int] | str | None


def _session_store(ctx: MemoryContext) -> SessionStore:
    store = ctx.store
    if not isinstance(store, SupportsSessions):
        raise StoreError(f"{type(store).__name__} does not store session episodes (no session_store)")
    return store.session_store


class HasContext(Protocol):
    """Anything that works over a :class:`memlane.context.MemoryContext` (an ``EpisodicMemory``)."""

    @property
    def context(self) -> MemoryContext:
        """The memory's context."""
        ...


class SessionMemory:
    """Session episodes over an :class:`~memlane.memory.EpisodicMemory`'s store (see the module docstring).

    Args:
        memory: The memory's :class:`memlane.context.MemoryContext` (its store, embedder,
            clock, tenant and configuration), or an :class:`~memlane.memory.EpisodicMemory`,
            whose ``context`` is taken (so this module never imports the facade).

    Raises:
        StoreError: the memory's store does not support session episodes.
    """

    def __init__(self, memory: MemoryContext | HasContext) -> None:
        self._ctx = memory if isinstance(memory, MemoryContext) else memory.context
        self.store: SessionStore = _session_store(self._ctx)

    @property
    def tenant_id(self) -> str:
        """The tenant every session is stored and read under."""
        return self._ctx.tenant_id

    def _check_open(self) -> None:
        self._ctx.check_open()

    def _owner(self, agent_id: object, user_id: object) -> SessionOwner:
        return SessionOwner(
            self.tenant_id, check_identifier(agent_id, "agent_id"), check_identifier(user_id, "user_id")
        )

    def _retention_cutoff(self, at: datetime) -> datetime | None:
        return self._ctx.retained_after(at)

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
        in one transaction: either all of it is stored or nothing is. If the embedder fails
        and ``config.embedding_fallback`` is on (the default), the turns are stored without
        vectors (a warning is logged): search finds them by keywords only, until re-embedded.

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
            ValidationError: a malformed message (the error names its index and field), more
                than :data:`~memlane.sessions.messages.MAX_MESSAGES` messages, an append past
                :data:`~memlane.sessions.messages.MAX_SESSION_MESSAGES`, a bad argument, or an
                append to another agent's or user's session. Nothing is stored.
            DuplicateSessionError: the session exists and ``append`` is false. Nothing is stored.
            EmbeddingError: the embedder failed and ``config.embedding_fallback`` is off.
            StoreError: the store failed.
        """
        self._check_open()
        session_id = check_identifier(session_id, "session_id")
        owner = self._owner(agent_id, user_id)
        parsed = validate_messages(messages)
        append = check_flag(append, "append")
        self._check_session_size(session_id, len(parsed), append=append)
        now = self._ctx.clock.now()
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
        vectors = self._ctx.embed([t.text for t in turns], "remember") if turns else None
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
            embedding_model=None if turns and vectors is None else self._ctx.embedder.model_id,
        )
        header = self.store.insert_session(write, vectors, append=append)
        if header.message_count == len(parsed):
            return self._episode(header, parsed)
        return self._episode(header, self._messages(header))

    def _check_session_size(self, session_id: str, adding: int, *, append: bool) -> None:
        """Refuse an append that would take the session past :data:`MAX_SESSION_MESSAGES`."""
        existing = self.store.get_session(self.tenant_id, session_id) if append else None
        held = 0 if existing is None else existing.message_count
        if held + adding > MAX_SESSION_MESSAGES:
            raise ValidationError(
                f"session {session_id!r} would hold {held + adding:,} messages; "
                f"a session holds at most {MAX_SESSION_MESSAGES:,}"
            )

    # -- reading -----------------------------------------------------------------------

    def _messages(
        self, header: SessionHeader, first: int = 0, last: int | None = None
    ) -> tuple[Message, ...]:
        return read_messages(self.store, header, first, last)

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
        cutoff = self._retention_cutoff(self._ctx.clock.now())
        if cutoff is not None and header.ended_at < cutoff:
            return None
        if agent_id is not None and header.agent_id != check_identifier(agent_id, "agent_id"):
            return None
        if user_id is not None and header.user_id != check_identifier(user_id, "user_id"):
            return None
        return self._episode(header, self._messages(header))

    def owners(self, *, now: datetime | None = None) -> list[tuple[str, str, int]]:
        """Who this tenant's stored conversations belong to: what to pass as ``agent_id``/``user_id``.

        Args:
            now: Reference time for retention (timezone-aware); default the clock.

        Returns:
            ``(agent_id, user_id, sessions)`` per owner, most sessions first (ties by agent,
            then user); sessions past ``retention_days`` are not counted. Empty when the
            tenant has no stored conversation.

        Raises:
            StoreError: the store failed.
        """
        self._check_open()
        cutoff = self._retention_cutoff(self._ctx.now(now))
        return self.store.session_owners(self.tenant_id, cutoff)

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
        at = self._ctx.now(now)
        headers = self.store.list_recent_sessions(owner, limit, self._retention_cutoff(at))
        return [self._episode(h, self._messages(h)) for h in headers]

    def search_sessions(  # noqa: PLR0913  (public signature: the search's query and snippet options)
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
        min_relevance: float | None = None,
    ) -> list[SessionSnippet]:
        """The passages of this agent's and user's past sessions that best match ``query``.

        The owner's turn windows (each embedded and analysed for keywords at store time) are
        ranked by the same recall pipeline as event episodes
        (:func:`memlane.recall.pipeline.rank_candidates`; see :mod:`memlane.sessions.search`):
        dense candidates by cosine similarity (exact search), keyword candidates from every
        window of the owner by BM25 (the owner's windows are the statistics), fused as
        ``config.retrieval`` and the ranking profile (``config.profile``) say, with the time-window boost of
        ``config.temporal``; recency ``decay ** age_days`` from the turn's time, importance
        0.5 for every turn, as turns are unrated. If the embedder fails and
        ``config.embedding_fallback`` is on (the default), the search uses keywords only, logs
        a warning and marks every breakdown ``fallback=True``. Each snippet is the matched
        turn with ``context_turns`` turns on each side. A lower-ranked match whose turn is
        already shown inside a better snippet of the same session is skipped, so snippets
        never repeat a turn's match. A match whose own strength
        (:func:`~memlane.sessions.context.match_strength`, its calibrated dense cosine) is below
        the relevance floor ``min_relevance`` is left out, so an unrelated query finds nothing.

        Args:
            agent_id: The agent.
            user_id: The user.
            query: Natural-language query (non-empty).
            top_k: Maximum snippets, >= 1 (default 3).
            now: Reference time for recency, retention and time expressions (timezone-aware);
                default the clock.
            weights: Ranking weights: :class:`RankingWeights`, a preset name or a mapping;
                default the memory's ``config.weights``.
            context_turns: Turns of context on each side of the match, >= 0 (default 1).
            max_per_session: At most this many snippets per session (>= 1), or ``None``.
            exclude_session_id: Leave out this session (e.g. the conversation in progress).
            min_relevance: The relevance floor in [0, 1]; default the memory's
                ``config.context_min_relevance`` (0 keeps every match).

        Returns:
            Up to ``top_k`` :class:`SessionSnippet`, best score first (fewer, or none, when
            fewer matches reach the floor).

        Raises:
            ValidationError: a bad argument. EmbeddingError: the query could not be embedded
            and ``config.embedding_fallback`` is off. StoreError: the store failed.
        """
        self._check_open()
        owner = self._owner(agent_id, user_id)
        options = SnippetOptions(
            top_k=check_limit(top_k, "top_k"),
            context_turns=check_at_least(context_turns, "context_turns", 0),
            max_per_session=None
            if max_per_session is None
            else check_at_least(max_per_session, "max_per_session", 1),
            excluded=None
            if exclude_session_id is None
            else check_identifier(exclude_session_id, "exclude_session_id"),
            min_relevance=self._floor(min_relevance),
        )
        at = self._ctx.now(now)
        recall = RecallQuery(
            text=check_query(query),
            limit=options.top_k,
            at=at,
            weights=resolve_weights(weights, self._ctx.config.ranking_weights),
            retrieval=self._ctx.config.retrieval,
            min_relevance=0.0,
            local_now=now,
        )
        source = WindowSource(self.store, owner, self._retention_cutoff(at))
        return search_windows(source, self._ctx.config, self._ctx.embed_query, recall, options)

    def _floor(self, min_relevance: float | None) -> float:
        """The relevance floor of a context read: ``min_relevance`` checked, else the configured one."""
        if min_relevance is None:
            return self._ctx.config.context_min_relevance
        return check_fraction(min_relevance, "min_relevance")

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

    def prune(self, now: datetime | None = None, *, dry_run: bool = False, all_tenants: bool = True) -> int:
        """Delete every session whose ``ended_at`` is older than ``retention_days``.

        Args:
            now: Reference time (timezone-aware); default the clock.
            dry_run: Only count what would be deleted.
            all_tenants: ``True`` (default): every tenant; ``False``: this tenant only.

        Returns:
            Sessions deleted, or that would be (0 when the memory's ``retention_days`` is ``None``).
        """
        self._check_open()
        at = self._ctx.now(now)
        dry_run, all_tenants = check_flag(dry_run, "dry_run"), check_flag(all_tenants, "all_tenants")
        cutoff = self._retention_cutoff(at)
        if cutoff is None:
            return 0
        tenant = None if all_tenants else self.tenant_id
        return self.store.delete_sessions_ended_before(cutoff, tenant, dry_run=dry_run)

    # -- context -----------------------------------------------------------------------

    def build_context_block(  # noqa: PLR0913  (public signature: the context block's options)
        self,
        query: str,
        *,
        agent_id: str,
        user_id: str,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
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
        include_facts: bool = True,
    ) -> ContextBlock:
        """Build the ``[Past Conversation Context]`` block and report what went into it.

        Candidates are up to ``session_top_k`` session snippets (:meth:`search_sessions`),
        up to ``event_limit`` event episodes (``memory.recall_episodes(query)``, in the
        memory's own scope) and, for each entity the query names, the knowledge graph's facts
        valid now about it (:func:`memlane.graph.context.query_fact_groups`; none when the query
        names no entity with facts), all ranked with the same weights and held to the same
        relevance floor; they are selected greedily by score while the whole block stays within
        ``token_budget`` (format and rules in :mod:`memlane.sessions.context`).

        Args:
            query: What the context is for, usually the latest user message (non-empty).
            agent_id: Whose sessions to search: the agent.
            user_id: Whose sessions to search: the user.
            token_budget: Hard limit on the block's tokens, an int >= 0 (default
                :data:`~memlane.sessions.context.DEFAULT_TOKEN_BUDGET`, 1000).
            include_events: Consider event episodes (default ``True``).
            include_sessions: Consider session snippets (default ``True``).
            session_top_k: Session snippets considered, >= 1.
            event_limit: Event episodes considered, >= 1.
            min_relevance: The relevance floor, in [0, 1]: leave out candidates whose own match
                strength is below it: their breakdown's ``dense`` signal (the calibrated cosine
                ``clip((cosine - 0.1) / 0.6, 0, 1)``), or their keyword-based ``own_relevance``
                when no vectors were compared (``retrieval="keyword"``, an embedding fallback);
                see :func:`~memlane.sessions.context.match_strength`. Default the memory's
                ``config.context_min_relevance``; 0 keeps all. If none is left the block says
                that nothing relevant was found (:data:`~memlane.sessions.context.NOTHING_RELEVANT_BLOCK`).
            now: Reference time (timezone-aware); default the clock.
            weights: Ranking weights for both kinds; default the memory's.
            context_turns: Context turns around each session match, >= 0.
            exclude_session_id: A session to leave out (the one in progress).
            tokenizer: Encoding name (``"o200k_base"`` default, ``"cl100k_base"``), a
                :class:`~memlane.sessions.tokens.TokenCounter` or a function ``text -> int``.
            max_item_chars: Cap on one message's, event's or fact's characters in the block, >= 1.
            include_facts: Consider the facts about the entities the query names (default ``True``).

        Returns:
            The :class:`~memlane.sessions.context.ContextBlock` (``relevant`` is ``False`` and
            ``text`` the "nothing relevant" note when no candidate reached the floor; ``""`` for
            a zero budget); ``tokens <= token_budget`` always.

        Raises:
            ValidationError: a bad argument. EmbeddingError, StoreError: as for the searches
            (with ``config.embedding_fallback`` on, both searches degrade to keywords instead).
        """
        self._check_open()
        with self._ctx.one_query():  # the searches below embed the query once
            query = check_query(query)
            budget = check_budget(token_budget)
            counter = resolve_token_counter(tokenizer)
            max_item_chars = check_at_least(max_item_chars, "max_item_chars", 1)
            floor = self._floor(min_relevance)
            at = self._ctx.now(now)
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
                    min_relevance=floor,
                ):
                    candidates.append(snippet_item(snippet, max_item_chars=max_item_chars))
            if budget > 0 and check_flag(include_events, "include_events"):
                hits: list[RecallHit] = recall_episodes(
                    self._ctx,
                    query,
                    None,
                    None,
                    check_limit(event_limit, "event_limit"),
                    RecallOptions(now=at, weights=weights),
                )
                candidates.extend(event_item(h, max_item_chars=max_item_chars) for h in hits if h.breakdown)
            if budget > 0 and check_flag(include_facts, "include_facts"):
                groups = query_fact_groups(self._ctx, query, now=at, weights=weights)
                candidates.extend(facts_item(g, at, max_item_chars=max_item_chars) for g in groups)
            return assemble_context(candidates, token_budget=budget, counter=counter, min_relevance=floor)

    def build_context(
        self,
        query: str,
        *,
        agent_id: str,
        user_id: str,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        include_events: bool = True,
        **options: Any,
    ) -> str:
        """The ``[Past Conversation Context]`` block as text (see :meth:`build_context_block`).

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
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        query: str | None = None,
        placement: Placement = "system",
        **options: Any,
    ) -> list[dict[str, Any]]:
        """Return a new message list with the context block placed before the latest user message.

        The caller's list and its message dicts are never modified (the result is a deep
        copy). When nothing reaches the relevance floor (``min_relevance``, default
        ``config.context_min_relevance``), or nothing fits the budget, nothing is injected: the
        copy is returned unchanged (the "nothing relevant" note of :meth:`build_context_block`
        is not sent to the model).

        Args:
            messages: The OpenAI-format messages about to be sent (validated).
            agent_id: Whose sessions to search: the agent.
            user_id: Whose sessions to search: the user.
            token_budget: Hard limit on the block's tokens, an int >= 0 (default
                :data:`~memlane.sessions.context.DEFAULT_TOKEN_BUDGET`, 1000).
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
            query = text[-MAX_QUERY_CHARS:]  # a long message: its end is what was just asked
        block = self.build_context_block(
            query, agent_id=agent_id, user_id=user_id, token_budget=token_budget, **options
        )
        return inject_block(
            [m.raw for m in parsed], block.text if block.relevant else "", placement=placement
        )

    def __repr__(self) -> str:
        return f"SessionMemory(store={self.store!r}, tenant_id={self.tenant_id!r})"
