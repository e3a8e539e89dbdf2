"""One scenario of every operation, driven through the sync API or the async one, normalised for comparison.

The scenario is written once, against awaitable methods: :class:`SyncAsAwaitable` gives the
sync :class:`memlane.EpisodicMemory` that shape by calling each method directly on the
calling thread (no pool, no executor), so the same script exercises both APIs.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import datetime, timedelta
from enum import Enum
from typing import Any

from memlane import AsyncEpisodicMemory, EpisodeInput, EpisodicMemory
from tests.conftest import T0


class SyncAsAwaitable:
    """The sync memory (or its ``sessions``) with each method made awaitable, run in place."""

    def __init__(self, target: Any) -> None:
        self._target = target

    @property
    def sessions(self) -> SyncAsAwaitable:
        return SyncAsAwaitable(self._target.sessions)

    def __getattr__(self, name: str) -> Callable[..., Awaitable[Any]]:
        method = getattr(self._target, name)

        async def call(*args: Any, **kwargs: Any) -> Any:
            return method(*args, **kwargs)

        return call

    async def iter_episodes(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        for episode in self._target.iter_episodes(*args, **kwargs):
            yield episode


Memoryish = AsyncEpisodicMemory | SyncAsAwaitable

_ID = re.compile(r"\b[0-9a-f]{32}\b")


def normalise(value: Any, ids: dict[str, str]) -> Any:
    """A JSON-like copy of ``value`` with generated episode ids renamed ``id#n`` in order of appearance."""
    if isinstance(value, str):
        return _ID.sub(lambda m: ids.setdefault(m.group(0), f"id#{len(ids)}"), value)
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, Enum):
        return value.value
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: normalise(getattr(value, f.name), ids) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {normalise(k, ids): normalise(v, ids) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [normalise(v, ids) for v in value]
    return value


FACTS = [
    ("preference", "User prefers window seats on long flights", ["travel"], 6, 30),
    ("preference", "User is vegetarian and avoids fish", ["food"], 8, 20),
    ("fact", "User lives in Lisbon near the river", ["home"], 7, 60),
    ("fact", "User works as a backend engineer on payment systems", ["work"], 5, 10),
    ("task", "Book a table for four at an Italian restaurant on Friday", ["food", "todo"], 4, 2),
    ("task", "Renew the passport before the trip to Japan", ["travel", "todo"], 9, 5),
    ("note", "The team standup moved to 9:30 every weekday", ["work"], 3, 1),
    ("note", "User's sister Ana visits in December", ["family"], None, 40),
]

CONVERSATIONS = [
    (
        "conv-1",
        [
            {"role": "user", "content": "Please onboard Acme Corp as a new vendor."},
            {"role": "assistant", "content": "Done: I submitted the vendor onboarding form for Acme Corp."},
        ],
        3,
    ),
    (
        "conv-2",
        [
            {"role": "user", "content": "What's a good vegetarian place near the river in Lisbon?"},
            {"role": "assistant", "content": "Try the Ribeira market; several stalls are vegetarian."},
        ],
        1,
    ),
]


async def run_scenario(m: Memoryish) -> list[Any]:
    """Every operation once or more; returns the raw results in order."""
    out: list[Any] = []
    stored = await m.remember_episodes(
        [
            EpisodeInput(kind, text, tags=tags, importance=imp, created_at=T0 - timedelta(days=age))
            for kind, text, tags, imp, age in FACTS
        ]
    )
    out.append(stored)
    out.append(await m.remember_episode("fact", "User's favourite editor is Helix", ["work"], 2))
    moved = await m.supersede(
        stored[2].id, "fact", "User moved from Lisbon to Berlin", ["home"], 7, reason="the user moved"
    )
    out.append(moved)
    out.append(await m.history(moved.id))
    for query, kwargs in [
        ("where does the user live?", {}),
        ("food preferences", {"tags": ["food"]}),
        ("travel plans", {"retrieval": "keyword"}),
        ("travel plans", {"retrieval": "dense", "limit": 3}),
        ("work", {"event_type": "fact", "weights": "agent_context"}),
        ("where does the user live?", {"as_of": T0 - timedelta(days=1)}),
        ("where does the user live?", {"known_at": T0 - timedelta(days=1)}),
        ("passport", {"min_relevance": 0.5}),
    ]:
        out.append(await m.recall_episodes(query, **kwargs))
    out.append(await m.recall_episodes(tags=["todo"], limit=10))
    out.append(await m.get_episode(moved.id))
    out.append(await m.find_contradictions("User lives in Porto", tags=["home"], threshold=0.3))
    out.append(await m.count())
    out.append(await m.stats())
    out.append([ep async for ep in m.iter_episodes(tags=["travel"])])
    for session_id, messages, age in CONVERSATIONS:
        at = T0 - timedelta(days=age)
        out.append(
            await m.sessions.store_session(
                session_id, messages, agent_id="agent", user_id="user", started_at=at, ended_at=at
            )
        )
    out.append(
        await m.sessions.store_session(
            "conv-1",
            [{"role": "user", "content": "Did the Acme onboarding go through?"}],
            agent_id="agent",
            user_id="user",
            append=True,
        )
    )
    out.append(await m.sessions.recall_recent(agent_id="agent", user_id="user", limit=5))
    out.append(await m.sessions.search_sessions(agent_id="agent", user_id="user", query="vendor onboarding"))
    out.append(await m.sessions.get_session("conv-2"))
    out.append(
        await m.sessions.build_context_block(
            "vegetarian food in Lisbon", agent_id="agent", user_id="user", token_budget=300
        )
    )
    out.append(
        await m.sessions.build_context("Acme vendor", agent_id="agent", user_id="user", token_budget=200)
    )
    out.append(
        await m.sessions.inject_context(
            [{"role": "user", "content": "Where should we eat tonight?"}],
            agent_id="agent",
            user_id="user",
            token_budget=250,
        )
    )
    out.append(await m.forget(now=T0 + timedelta(days=400), dry_run=True))
    out.append(await m.compact(similarity=0.9, never_retrieved_older_than_days=15, dry_run=True))
    out.append(await m.delete_episode(stored[6].id))
    out.append(await m.sessions.delete_session("conv-2"))
    out.append(await m.count())
    out.append(await m.end_session())
    return out


def scenario_memory(store: Any, embedder: Any, clock: Any) -> EpisodicMemory:
    """The memory both runs use (tenant scope, so sessions and episodes meet)."""
    from memlane import MemoryConfig

    return EpisodicMemory(
        store,
        embedder,
        clock=clock,
        tenant_id="acme",
        session_id="s1",
        config=MemoryConfig(scope="tenant", default_limit=5),
    )
