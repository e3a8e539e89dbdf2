"""Superseding episodes, their history, and contradiction candidates.

Episodes are bi-temporal (Snodgrass 1999, *Developing Time-Oriented Database Applications
in SQL*): when episode B supersedes A, in the transaction that inserts B, A gets
``valid_until`` = B's ``valid_from`` (never before A's own ``valid_from``: the fact stopped
being true then), ``invalidated_at`` = B's ``recorded_at`` (memlane retired it now),
``superseded_by`` = B's id and a ``supersede_reason``. Nothing is deleted, so a recall
``as_of`` an earlier time still finds A, and :func:`history` walks the chain.

A *contradiction candidate* of a text is a current episode in scope (still valid and not
superseded) that shares its event type or at least one tag, whose embedding has a cosine
similarity >= :data:`CANDIDATE_MIN_COSINE` with the text's, and which
:func:`memlane.lifecycle.contradiction.judge` finds contradicting it (same subject and
predicate, another value; or one negates the other) with a confidence >= a threshold
(default 0.8). Similarity alone cannot tell a contradiction ("lives in Paris" vs "lives in
Berlin", cosine 0.67) from a compatible statement ("lives in Paris" vs "works in Paris",
0.90). Candidates are proposed for review; ``MemoryConfig(auto_supersede=True)`` retires them
automatically instead, each with its confidence, cosine and reason.

:class:`memlane.EpisodicMemory` validates and scopes; the functions here do the work.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime

import numpy as np
from numpy.typing import NDArray

from memlane.errors import EpisodeNotFoundError
from memlane.lifecycle.contradiction import judge
from memlane.models import Contradiction, Episode
from memlane.stores.base import EpisodeFilter, Store, Supersession
from memlane.validation import check_contradiction_threshold, check_identifier, check_text, normalize_tags

__all__ = [
    "CANDIDATE_MIN_COSINE",
    "ContradictionSubject",
    "auto_supersessions",
    "check_contradiction_threshold",
    "contradiction_subject",
    "contradictions",
    "history",
    "superseded_episodes",
    "supersession",
]

CANDIDATE_MIN_COSINE = 0.3
"""Cosine below which an episode is not judged at all (all-MiniLM-L6-v2: contradicting
one-sentence facts about one subject score 0.45-0.95; unrelated ones mostly below 0.3)."""

GetEpisode = Callable[[str], "Episode | None"]
"""Looks an id up within the memory's scope (``None`` when it is not in scope)."""


def superseded_episodes(old_ids: Sequence[str] | str, get_episode: GetEpisode) -> list[Episode]:
    """The episodes ``old_ids`` names, each checked to be in scope and not superseded yet.

    Args:
        old_ids: One id or several (duplicates are dropped, order kept).
        get_episode: See :data:`GetEpisode`.

    Raises:
        ValidationError: a blank or over-long id.
        EpisodeNotFoundError: an id not in scope, or an episode already superseded.
    """
    if isinstance(old_ids, str):
        old_ids = [old_ids]
    olds: list[Episode] = []
    for old_id in dict.fromkeys(check_identifier(i, "supersedes id") for i in old_ids):
        old = get_episode(old_id)
        if old is None:
            raise EpisodeNotFoundError(f"no episode {old_id!r} in this memory's scope")
        if old.superseded_by is not None:
            raise EpisodeNotFoundError(f"episode {old_id!r} is already superseded by {old.superseded_by!r}")
        olds.append(old)
    return olds


def supersession(old: Episode, new: Episode, reason: str | None) -> Supersession:
    """Retire ``old`` in favour of ``new`` (see the module docstring for the fields set)."""
    return Supersession(
        old_id=old.id,
        new_id=new.id,
        valid_until=max(old.valid_from, new.valid_from),
        invalidated_at=new.recorded_at,
        reason=reason,
        tenant_id=old.tenant_id,
    )


def auto_supersessions(found: Sequence[Contradiction], new: Episode) -> list[Supersession]:
    """Retire every contradiction candidate in favour of ``new`` (its confidence, cosine and reason kept)."""
    return [
        supersession(
            c.episode,
            new,
            f"auto: contradiction confidence={c.confidence:.2f} cosine={c.score:.3f} ({c.reason})",
        )
        for c in found
    ]


@dataclass(frozen=True, slots=True)
class ContradictionSubject:
    """What a contradiction search is about.

    Attributes:
        text: The statement to check.
        event_type: Event type a candidate may share, or ``None``.
        tags: Tags of which a candidate may share any one.
        exclude: Ids never proposed (the episode itself).
    """

    text: str
    event_type: str | None
    tags: tuple[str, ...]
    exclude: frozenset[str] = frozenset()


def contradiction_subject(
    episode_or_text: Episode | str, event_type: str | None, tags: Sequence[str] | str | None
) -> ContradictionSubject:
    """The subject to search contradictions of.

    A stored episode gives its own content, event type and tags, and is excluded from its
    candidates; a text is checked and uses the given event type and (normalised) tags.

    Raises:
        ValidationError: a blank text or event type, or malformed tags.
    """
    if isinstance(episode_or_text, Episode):
        episode = episode_or_text
        return ContradictionSubject(
            episode.content, episode.event_type, tuple(episode.tags), frozenset({episode.id})
        )
    text = check_text(episode_or_text, "text")
    kind = None if event_type is None else check_identifier(event_type, "event_type")
    return ContradictionSubject(text, kind, normalize_tags(tags))


def contradictions(
    store: Store,
    scope: EpisodeFilter,
    subject: ContradictionSubject,
    vector: NDArray[np.float32],
    *,
    threshold: float,
    limit: int,
    at: datetime,
) -> list[Contradiction]:
    """Contradiction candidates of ``subject``: a vector search per shared attribute, united by row, judged.

    Args:
        store: Where to search.
        scope: The memory's scope filter (tenant/session/retention); narrowed here to
            episodes still valid and current at ``at``, and per search to the subject's event
            type or one of its tags.
        subject: The statement, the attributes a candidate may share, the ids never proposed.
        vector: The statement's embedding, float32 ``[dims]``.
        threshold: Minimum confidence (:func:`memlane.lifecycle.contradiction.judge`), in (0, 1].
        limit: Maximum candidates, >= 1.
        at: Reference time (UTC).

    Returns:
        Candidates, highest ``confidence`` first, then highest ``score`` (cosine), then by id.
    """
    text, event_type, tags, exclude = subject.text, subject.event_type, subject.tags, subject.exclude
    base = replace(scope, still_valid_at=at, current_at=at)
    searches: list[tuple[EpisodeFilter, str | None]] = []
    if event_type is not None:
        searches.append((replace(base, event_type=event_type), None))
    searches.extend((replace(base, tags=(tag,)), tag) for tag in tags)
    found: dict[int, tuple[float, bool, list[str]]] = {}
    for flt, tag in searches:
        candidates = store.vector_candidates(flt, vector, top_n=max(4 * limit, 50))
        for key, cosine in zip(candidates.keys, candidates.cosine, strict=True):
            if float(cosine) < CANDIDATE_MIN_COSINE:
                continue
            score, same_type, shared = found.get(int(key), (float(cosine), False, []))
            found[int(key)] = (score, same_type or tag is None, [*shared, *([tag] if tag else [])])
    episodes = store.fetch(list(found))
    out = []
    for key, (score, same_type, shared) in found.items():
        episode = episodes.get(key)
        if episode is None or episode.id in exclude or episode.superseded_by is not None:
            continue
        verdict = judge(episode.content, text, score)  # evidence reads old -> new
        if verdict.confidence < threshold:
            continue
        reasons = (
            (["same event_type"] if same_type else [])
            + ([f"shared tags: {', '.join(shared)}"] if shared else [])
            + [f"{verdict.kind}: {verdict.evidence}" if verdict.evidence else verdict.kind]
        )
        out.append(
            Contradiction(
                episode=episode,
                score=min(1.0, score),
                reason="; ".join(reasons),
                confidence=round(verdict.confidence, 6),
            )
        )
    out.sort(key=lambda c: (-c.confidence, -c.score, c.episode.id))
    return out[:limit]


def history(
    store: Store, episode_id: str, get_episode: GetEpisode, in_scope: Callable[[Episode], bool]
) -> list[Episode]:
    """The supersede chain through ``episode_id``, oldest first (by ``valid_from``, then ``recorded_at``).

    Follows ``superseded_by`` links backwards, level by level (episodes merged into one
    successor all appear), and forwards to the latest successor; episodes outside the scope
    are left out.

    Args:
        store: Where the links are looked up.
        episode_id: Any episode of the chain.
        get_episode: See :data:`GetEpisode`.
        in_scope: Whether an episode is visible: within the memory's scope and not expired.

    Raises:
        EpisodeNotFoundError: ``episode_id`` is not in scope. ValidationError: a malformed id.
    """
    start = get_episode(episode_id)
    if start is None:
        raise EpisodeNotFoundError(f"no episode {episode_id!r} in this memory's scope")
    chain: dict[str, Episode] = {start.id: start}
    frontier = [start.id]
    while frontier:  # predecessors, level by level
        found = [ep for ep in store.superseded_links(frontier) if ep.id not in chain]
        found = [ep for ep in found if in_scope(ep)]
        chain.update((ep.id, ep) for ep in found)
        frontier = [ep.id for ep in found]
    current = start
    while current.superseded_by is not None and current.superseded_by not in chain:
        nxt = get_episode(current.superseded_by)
        if nxt is None:
            break
        chain[nxt.id] = nxt
        current = nxt
    return sorted(chain.values(), key=lambda ep: (ep.valid_from, ep.recorded_at))
