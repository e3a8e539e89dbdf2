"""What the inspector shows, read through memlane's public API only.

Every read goes through an :class:`memlane.EpisodicMemory` made with
:meth:`~memlane.EpisodicMemory.with_context` for the viewed tenant (``tenant`` scope, or
``global`` for an admin looking at every tenant) with ``track_retrievals`` off, so looking
at the memory never changes its bookkeeping. Reads use ``iter_episodes`` (timeline, sessions,
stats), ``recall_episodes`` (search, exactly the ranking an agent gets), ``history``,
``get_episode``, ``stats`` and ``sessions.get_session``/``recall_recent``.

The timeline and stats stream every episode in view (``iter_episodes``) and filter in
Python: fine for inspecting stores of up to a few hundred thousand episodes, not an
analytics engine.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from memlane import (
    PRESETS,
    Episode,
    EpisodicMemory,
    RankingWeights,
    RecallHit,
    Scope,
    ScoreBreakdown,
    SessionEpisode,
    StoreError,
    StoreStats,
    ValidationError,
)

__all__ = [
    "AXES",
    "STATUSES",
    "Explanation",
    "Filters",
    "SessionRow",
    "SessionView",
    "StatsView",
    "Timeline",
    "axis_time",
    "episode_status",
    "explain",
    "reader",
    "recent_conversations",
    "search",
    "session_view",
    "sessions_overview",
    "stats_view",
    "tenants",
    "timeline",
    "weights_for",
]

STATUSES = ("all", "active", "archived", "superseded", "ended")
"""Status filter values. ``superseded``: retired by a newer episode (``superseded_by`` or
``invalidated_at`` set); ``archived``: put away by ``forget``/``compact``; ``ended``: its
``valid_until`` has passed; ``active``: none of these."""

AXES = ("created", "valid", "recorded")
"""Time axes: ``created`` (when it happened, ``created_at``), ``valid`` (when what it says was
true, ``valid_from``..``valid_until``) and ``recorded`` (when memlane learned it, ``recorded_at``)."""


@dataclass(frozen=True, slots=True)
class Filters:
    """The filter bar: what to show (every field optional).

    Attributes:
        tenant: Tenant to view, or ``None`` for every tenant (admins only).
        session: Exact session id.
        event_type: Exact event type.
        tags: Tags that must all be present.
        start: Inclusive lower bound on the chosen ``axis`` (UTC).
        end: Exclusive upper bound on the chosen ``axis`` (UTC).
        status: One of :data:`STATUSES`.
        axis: One of :data:`AXES`: what ``start``/``end`` and the sort order refer to.
        limit: Maximum rows, >= 1.
    """

    tenant: str | None = None
    session: str | None = None
    event_type: str | None = None
    tags: tuple[str, ...] = ()
    start: datetime | None = None
    end: datetime | None = None
    status: str = "all"
    axis: str = "created"
    limit: int = 100


def reader(base: EpisodicMemory, tenant: str | None, session: str | None = None) -> EpisodicMemory:
    """A read-only view of ``base``'s store for one tenant (and session), or every tenant.

    Args:
        base: The served memory (its store, embedder, clock and configuration are shared).
        tenant: The tenant, or ``None`` for every tenant (``global`` scope).
        session: Narrow to one session of ``tenant`` (``session`` scope).

    Raises:
        ValidationError: a blank or over-long tenant or session id.
    """
    scope = Scope.GLOBAL if tenant is None else (Scope.TENANT if session is None else Scope.SESSION)
    return base.with_context(
        tenant_id=tenant or base.tenant_id,
        session_id=session or base.session_id,
        config=replace(base.config, scope=scope, track_retrievals=False),
    )


def episode_status(episode: Episode, now: datetime) -> str:
    """One of ``superseded``, ``archived``, ``ended``, ``active`` (see :data:`STATUSES`)."""
    if episode.superseded_by is not None or (
        episode.invalidated_at is not None and episode.invalidated_at <= now
    ):
        return "superseded"
    if episode.archived_at is not None:
        return "archived"
    if episode.valid_until is not None and episode.valid_until <= now:
        return "ended"
    return "active"


def axis_time(episode: Episode, axis: str) -> datetime:
    """The time of ``episode`` on ``axis`` (see :data:`AXES`; ``valid`` gives ``valid_from``)."""
    if axis == "valid":
        return episode.valid_from
    if axis == "recorded":
        return episode.recorded_at
    return episode.created_at


def _in_range(episode: Episode, flt: Filters, now: datetime) -> bool:
    if flt.start is None and flt.end is None:
        return True
    if flt.axis == "valid":  # the valid interval overlaps [start, end)
        lo, hi = episode.valid_from, episode.valid_until or now
        return (flt.end is None or lo < flt.end) and (flt.start is None or hi > flt.start)
    t = axis_time(episode, flt.axis)
    return (flt.start is None or t >= flt.start) and (flt.end is None or t < flt.end)


@dataclass(frozen=True, slots=True)
class Timeline:
    """Timeline rows and what the filter bar can offer.

    Attributes:
        episodes: Up to ``limit`` matching episodes, newest first on the chosen axis.
        matched: How many episodes matched in total.
        statuses: Matching episodes per status (before the status filter).
        sessions: Session ids seen in view (for the filter's suggestions), sorted.
        event_types: Event types seen in view, sorted.
        now: The memory clock's "now" used for statuses.
    """

    episodes: list[Episode]
    matched: int
    statuses: dict[str, int]
    sessions: list[str]
    event_types: list[str]
    now: datetime


def timeline(base: EpisodicMemory, flt: Filters) -> Timeline:
    """The episodes in view that pass ``flt``, newest first on ``flt.axis``.

    Raises:
        ValidationError: a bad id or tag. StoreError: the store failed.
    """
    now = base.clock.now()
    session_scoped = flt.tenant is not None and flt.session is not None
    memory = reader(base, flt.tenant, flt.session if session_scoped else None)
    rows: list[Episode] = []
    statuses: Counter[str] = Counter()
    sessions: set[str] = set()
    event_types: set[str] = set()
    for episode in memory.iter_episodes(flt.event_type, flt.tags):
        sessions.add(episode.session_id)
        event_types.add(episode.event_type)
        if flt.session is not None and episode.session_id != flt.session:
            continue
        if not _in_range(episode, flt, now):
            continue
        status = episode_status(episode, now)
        statuses[status] += 1
        if flt.status in ("all", status):
            rows.append(episode)
    rows.sort(key=lambda ep: (axis_time(ep, flt.axis), ep.recorded_at, ep.id), reverse=True)
    matched = len(rows)
    return Timeline(rows[: flt.limit], matched, dict(statuses), sorted(sessions), sorted(event_types), now)


def tenants(base: EpisodicMemory) -> list[str]:
    """Every tenant with at least one episode, sorted (admins' tenant filter)."""
    return sorted({ep.tenant_id for ep in reader(base, None).iter_episodes()})


# -- search -------------------------------------------------------------------------------


def weights_for(base: EpisodicMemory, preset: str | None) -> RankingWeights:
    """The weights a search with ``preset`` uses (the memory's default when ``None``).

    Raises:
        ValidationError: an unknown preset name.
    """
    if preset is None:
        weights = base.config.weights
        assert isinstance(weights, RankingWeights)
        return weights
    if preset not in PRESETS:
        raise ValidationError(
            f"unknown weight preset {preset!r}; known presets: {', '.join(sorted(PRESETS))}"
        )
    return PRESETS[preset]


def search(
    base: EpisodicMemory,
    query: str,
    flt: Filters,
    *,
    preset: str | None,
    limit: int,
    now: datetime | None = None,
) -> list[RecallHit]:
    """Rank episodes for ``query`` exactly as ``recall_episodes`` does for an agent.

    Session, event type and tags filter as in a recall. Status ``active`` is exactly an
    agent's recall; ``all`` also ranks archived episodes (``include_archived``); ``archived``
    keeps only those. Superseded and ended episodes are never returned by a recall, and the
    time range is not a recall filter. ``now`` replays the recall at another time (recency,
    retention, time words; default the memory's clock).

    Raises:
        ValidationError: a bad argument. EmbeddingError: the query could not be embedded and
            fallback is off. StoreError: the store failed.
    """
    session_scoped = flt.tenant is not None and flt.session is not None
    memory = reader(base, flt.tenant, flt.session if session_scoped else None)
    hits = memory.recall_episodes(
        query,
        flt.event_type,
        flt.tags,
        limit,
        now=now,
        weights=weights_for(base, preset),
        include_archived=flt.status in ("all", "archived"),
    )
    if flt.session is not None and not session_scoped:
        hits = [h for h in hits if h.episode.session_id == flt.session]
    if flt.status not in ("all", "active"):
        at = base.clock.now() if now is None else now
        hits = [h for h in hits if episode_status(h.episode, at) == flt.status]
    return hits


@dataclass(frozen=True, slots=True)
class Explanation:
    """Why a hit ranked where it did, in numbers and words, read from its breakdown.

    Attributes:
        contributions: ``signal -> points`` (:attr:`memlane.ScoreBreakdown.contributions`);
            they add up to the score.
        lines: Short sentences for people.
    """

    contributions: dict[str, float]
    lines: list[str] = field(default_factory=list)


_FUSION_NAMES = {"noisy_or": "noisy-OR", "rrf": "reciprocal rank fusion", "convex": "convex fusion"}


def _signal(value: float | None) -> str:
    return "none" if value is None else f"{value:.3f}"


def _relevance_line(b: ScoreBreakdown) -> str:
    base = b.relevance if b.base_relevance is None else b.base_relevance
    if b.fallback:
        return f"Embedder unavailable: base relevance {base:.3f} from keywords only."
    if b.fusion is not None:
        fused = _FUSION_NAMES.get(b.fusion, b.fusion)
        signals = f"dense {_signal(b.dense)} and keyword {_signal(b.keyword)}"
        return f"Base relevance {base:.3f}: {signals}, by {fused}."
    source = "the keyword index" if b.retrieval == "keyword" else "embedding similarity"
    signals = f"dense {_signal(b.dense)}, keyword {_signal(b.keyword)}"
    return f"Base relevance {base:.3f} from {source} only ({signals})."


def _lift_lines(b: ScoreBreakdown) -> list[str]:
    lines: list[str] = []
    names = {
        "entity": "the query names its tag",
        "time_window": "it happened inside the time the query names",
        "graph": "the knowledge graph links it to entities the query names",
    }
    for boost in b.boosts:
        lines.append(f"Boosted by {boost.strength:g} ({boost.name}): {names.get(boost.name, boost.name)}.")
    if b.in_window is False:
        lines.append("Not boosted: it happened outside the time the query names.")
    if b.agent_discount is not None:
        lines.append(
            f"Discounted by {b.agent_discount:g}: the agent's own turn, "
            "and the query does not ask about the agent's words."
        )
    own = b.own_relevance
    if own is not None and abs(b.relevance - own) > 5e-4:
        lines.append(
            f"Conversation context: its session neighbours move relevance from {own:.3f} "
            f"to {b.relevance:.3f}."
        )
    return lines


def _score_line(b: ScoreBreakdown) -> str:
    terms = " + ".join(
        f"{c.signal} {c.value:.3f} \N{MULTIPLICATION SIGN} {c.weight:.3f}" for c in b.contributions
    )
    return f"Score {b.score:.3f} = {terms}."


def _decision_line(position: int, b: ScoreBreakdown) -> str:
    if b.lead is None:
        return f"#{position}: nothing ranked below it."
    text = f"#{position}: {b.lead:.3f} ahead of the next candidate, decided by {b.decided_by}"
    if b.decided_by in ("recency", "importance") and b.tie_band is not None:
        text += f" (their relevance is within the tie band {b.tie_band:.3f})"
    elif b.decided_by == "order":
        text += " (equal scores: the newer episode first)"
    return text + "."


def explain(hits: list[RecallHit]) -> list[Explanation]:
    """One :class:`Explanation` per ranked hit (same order), rendered from each hit's breakdown.

    Nothing is recomputed: the contributions, boosts, tie band and deciding signal are the
    ranking's own (:class:`memlane.ScoreBreakdown`); the sentences say where relevance came
    from, what lifted it, how the score is made and which signal put the hit above the next one.
    """
    out: list[Explanation] = []
    for position, hit in enumerate(hits, start=1):
        b = hit.breakdown
        if b is None:
            out.append(Explanation({}, ["Listed without a query: no ranking."]))
            continue
        parts = {c.signal: c.points for c in b.contributions}
        lines = [_relevance_line(b), *_lift_lines(b), _score_line(b), _decision_line(position, b)]
        out.append(Explanation(parts, lines))
    return out


# -- sessions -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SessionRow:
    """One session seen in the episodes: id, tenant, count and time span."""

    tenant_id: str
    session_id: str
    episodes: int
    first: datetime
    last: datetime


def sessions_overview(base: EpisodicMemory, tenant: str | None, limit: int) -> tuple[list[SessionRow], int]:
    """Sessions that have episodes, newest activity first, and how many there are in total."""
    rows: dict[tuple[str, str], SessionRow] = {}
    for ep in reader(base, tenant).iter_episodes():
        key = (ep.tenant_id, ep.session_id)
        row = rows.get(key)
        if row is None:
            rows[key] = SessionRow(ep.tenant_id, ep.session_id, 1, ep.created_at, ep.created_at)
        else:
            rows[key] = SessionRow(
                row.tenant_id,
                row.session_id,
                row.episodes + 1,
                min(row.first, ep.created_at),
                max(row.last, ep.created_at),
            )
    ordered = sorted(rows.values(), key=lambda r: (r.last, r.session_id), reverse=True)
    return ordered[:limit], len(ordered)


@dataclass(frozen=True, slots=True)
class SessionView:
    """One session: its event episodes (oldest first) and its stored conversation, if any."""

    session_id: str
    tenant_id: str | None
    episodes: list[Episode]
    conversation: SessionEpisode | None


def session_view(base: EpisodicMemory, tenant: str | None, session_id: str) -> SessionView:
    """The episodes of ``session_id`` and, when ``tenant`` is given, its stored conversation.

    Raises:
        ValidationError: a bad id. StoreError: the store failed.
    """
    if tenant is None:
        episodes = [ep for ep in reader(base, None).iter_episodes() if ep.session_id == session_id]
        return SessionView(session_id, None, episodes, None)
    memory = reader(base, tenant, session_id)
    episodes = list(memory.iter_episodes())
    try:
        sessions = memory.sessions
    except StoreError:  # a store without session episodes: events only
        return SessionView(session_id, tenant, episodes, None)
    return SessionView(session_id, tenant, episodes, sessions.get_session(session_id))


def recent_conversations(
    base: EpisodicMemory, tenant: str, agent_id: str, user_id: str, limit: int
) -> list[SessionEpisode]:
    """The newest stored conversations of one agent and user in ``tenant`` (``recall_recent``).

    Raises:
        ValidationError: a bad id or limit. StoreError: the store failed or has no sessions.
    """
    return reader(base, tenant).sessions.recall_recent(agent_id, user_id, limit)


def conversation_owners(base: EpisodicMemory, tenant: str) -> list[tuple[str, str, int]]:
    """``(agent_id, user_id, sessions)`` of ``tenant``'s stored conversations (``SessionMemory.owners``).

    Empty for a store without session episodes.

    Raises:
        ValidationError: a bad tenant id. StoreError: the store failed.
    """
    try:
        sessions = reader(base, tenant).sessions
    except StoreError:
        return []
    return sessions.owners()


# -- stats --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatsView:
    """Store statistics for the view plus episodes over time.

    Attributes:
        stats: :meth:`memlane.EpisodicMemory.stats` of the view.
        statuses: Episodes per status.
        per_tenant: Episodes per tenant (meaningful for an all-tenants view).
        labels: Time-bin labels, oldest first.
        happened: Episodes per bin by ``created_at``.
        recorded: Episodes per bin by ``recorded_at``.
        bin_name: ``day``, ``week`` or ``month``.
    """

    stats: StoreStats
    statuses: dict[str, int]
    per_tenant: dict[str, int]
    labels: list[str]
    happened: list[int]
    recorded: list[int]
    bin_name: str


def _bin_start(t: datetime, unit: str) -> datetime:
    t = t.astimezone(UTC) if t.utcoffset() else t  # (a stored UTC time needs no conversion)
    day = datetime(t.year, t.month, t.day, tzinfo=UTC)
    if unit == "day":
        return day
    if unit == "week":
        return day - timedelta(days=min(day.weekday(), (day - datetime.min.replace(tzinfo=UTC)).days))
    return datetime(t.year, t.month, 1, tzinfo=UTC)


def _next_bin(t: datetime, unit: str) -> datetime | None:
    """The start of the bin after ``t``'s, or ``None`` past year 9999 (a time stored before the
    instant bounds of :mod:`memlane.clock` existed must not break the page)."""
    try:
        if unit == "day":
            return t + timedelta(days=1)
        if unit == "week":
            return t + timedelta(days=7)
        return datetime(t.year + (t.month == 12), t.month % 12 + 1, 1, tzinfo=UTC)
    except (OverflowError, ValueError):
        return None


def stats_view(base: EpisodicMemory, tenant: str | None, *, max_bins: int = 60) -> StatsView:
    """Statistics of the view and its episodes binned by day, week or month (at most ``max_bins``).

    Raises:
        StoreError: the store failed.
    """
    memory = reader(base, tenant)
    now = base.clock.now()
    created: list[datetime] = []
    recorded: list[datetime] = []
    statuses: Counter[str] = Counter()
    per_tenant: Counter[str] = Counter()
    for ep in memory.iter_episodes():
        created.append(ep.created_at)
        recorded.append(ep.recorded_at)
        statuses[episode_status(ep, now)] += 1
        per_tenant[ep.tenant_id] += 1
    stats = memory.stats()
    if not created:
        return StatsView(stats, {}, {}, [], [], [], "day")
    lo, hi = min(*created, *recorded), max(*created, *recorded)
    days = (hi - lo).days + 1
    unit = "day" if days <= max_bins else "week" if days <= max_bins * 7 else "month"
    starts: list[datetime] = []
    cursor: datetime | None = _bin_start(lo, unit)
    while cursor is not None and cursor <= hi:
        starts.append(cursor)
        cursor = _next_bin(cursor, unit)
    if len(starts) > max_bins * 3:  # very long spans: one bin per year's month would still fit
        starts = starts[-max_bins * 3 :]
    index = {s: i for i, s in enumerate(starts)}
    happened_counts = [0] * len(starts)
    recorded_counts = [0] * len(starts)
    for t in created:
        i = index.get(_bin_start(t, unit))
        if i is not None:
            happened_counts[i] += 1
    for t in recorded:
        i = index.get(_bin_start(t, unit))
        if i is not None:
            recorded_counts[i] += 1
    fmt = "%Y-%m" if unit == "month" else "%Y-%m-%d"
    labels = [s.strftime(fmt) for s in starts]
    return StatsView(stats, dict(statuses), dict(per_tenant), labels, happened_counts, recorded_counts, unit)
