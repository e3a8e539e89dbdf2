"""The operations every interface runs: checked arguments in, a wire-format result out.

One function per operation takes a memory and arguments already checked by
:mod:`memlane.operations.arguments` and returns the JSON result that :mod:`memlane.tools` (and so the
MCP server) and the HTTP API send, encoded by :mod:`memlane.wire`. The interfaces differ
only in where the arguments come from (a model's tool call, a request body, a path) and in
the default ``detail``: ``"compact"`` for tools and MCP (a model reads it), ``"full"`` for
HTTP. The Python API returns the value types whose ``to_dict()`` is the full form, so a
result is the same through Python, async Python, HTTP and MCP (tests/server/test_parity.py).

Session operations need an owner: ``agent_id``/``user_id`` are arguments on HTTP and bound
to the tools (like the tenant: a model never chooses whose memory it reads).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memlane import wire
from memlane.errors import ValidationError

if TYPE_CHECKING:
    from memlane import EpisodicMemory

__all__ = [
    "Owner",
    "build_context",
    "entity_timeline",
    "episode_history",
    "find_contradictions",
    "find_paths",
    "neighbours",
    "query_facts",
    "recall_episodes",
    "recent_sessions",
    "remember_episode",
    "remember_fact",
    "search_sessions",
    "supersede_episode",
]


@dataclass(frozen=True, slots=True)
class Owner:
    """Whose sessions a session operation reads (within the memory's tenant).

    Attributes:
        agent_id: The agent (1-200 characters).
        user_id: The user (1-200 characters).
    """

    agent_id: str = "default"
    user_id: str = "default"

    def resolve(self, args: Mapping[str, Any]) -> Owner:
        """This owner, with ``agent_id``/``user_id`` from ``args`` where given (HTTP)."""
        return Owner(args.get("agent_id", self.agent_id), args.get("user_id", self.user_id))


def _detail(args: Mapping[str, Any], default: wire.Detail) -> wire.Detail:
    detail: wire.Detail = args.get("detail", default)
    return detail


def _episode(episode: Any, detail: wire.Detail) -> dict[str, Any]:
    return wire.episode(episode) if detail == "full" else wire.compact_episode(episode)


def _weights(args: Mapping[str, Any]) -> Any:
    """The ranking weights of a read: custom ``weights`` or a named ``preset`` (not both).

    Raises:
        ValidationError: both were given.
    """
    if "preset" in args and "weights" in args:
        raise ValidationError("give either preset or weights, not both")
    return args.get("weights", args.get("preset"))


def remember_episode(memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail) -> dict[str, Any]:
    """``remember_episode`` -> ``{"ok": true, "episode": {...}}``."""
    episode = memory.remember_episode(
        args["event_type"],
        args["content"],
        args.get("tags"),
        args.get("importance"),
        created_at=args.get("created_at"),
        metadata=args.get("metadata"),
    )
    return {"ok": True, "episode": _episode(episode, _detail(args, default))}


_RECALL_OPTIONS = ("now", "retrieval", "min_relevance", "as_of", "known_at", "include_archived")


def recall_episodes(
    memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail, *, key: str = "episodes"
) -> dict[str, Any]:
    """``recall_episodes`` -> ``{"ok": true, "count", "ranked", <key>: [...]}`` (best first)."""
    query = args.get("query")
    found = memory.recall_episodes(
        query,
        args.get("event_type"),
        args.get("tags"),
        args.get("limit"),
        weights=_weights(args),
        **{name: args[name] for name in _RECALL_OPTIONS if name in args},
    )
    return {
        "ok": True,
        "count": len(found),
        "ranked": query is not None,
        key: wire.hits(found, _detail(args, default)),
    }


def supersede_episode(
    memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail
) -> dict[str, Any]:
    """``supersede_episode`` -> ``{"ok": true, "episode": <the new one>, "superseded": <old id>}``."""
    episode = memory.supersede(
        args["episode_id"],
        args["event_type"],
        args["content"],
        args.get("tags"),
        args.get("importance"),
        valid_from=args.get("valid_from"),
        metadata=args.get("metadata"),
        reason=args.get("reason"),
    )
    return {
        "ok": True,
        "episode": _episode(episode, _detail(args, default)),
        "superseded": args["episode_id"],
    }


def episode_history(memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail) -> dict[str, Any]:
    """``episode_history`` -> ``{"ok": true, "count", "episodes": [...]}``, oldest first."""
    chain = memory.history(args["episode_id"])
    detail = _detail(args, default)
    return {"ok": True, "count": len(chain), "episodes": [_episode(e, detail) for e in chain]}


def find_contradictions(
    memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail
) -> dict[str, Any]:
    """``find_contradictions`` -> ``{"ok", "count", "candidates": [{"episode", "score", "reason"}]}``."""
    found = memory.find_contradictions(
        args["text"],
        event_type=args.get("event_type"),
        tags=args.get("tags"),
        threshold=args.get("threshold"),
        limit=args.get("limit", 5),
        now=args.get("now"),
    )
    detail = _detail(args, default)
    return {
        "ok": True,
        "count": len(found),
        "candidates": [
            {"episode": _episode(c.episode, detail), "score": c.score, "reason": c.reason} for c in found
        ],
    }


def search_sessions(
    memory: EpisodicMemory, args: Mapping[str, Any], owner: Owner, default: wire.Detail
) -> dict[str, Any]:
    """``search_sessions`` -> ``{"ok": true, "count", "snippets": [...]}``, best first.

    Compact snippets: ``session_id``, ``when``, ``score``, ``why`` and the window's
    ``messages`` as ``{"role", "content"}`` with ``matched`` on the matched turn; full: every field.
    """
    who = owner.resolve(args)
    found = memory.sessions.search_sessions(
        who.agent_id,
        who.user_id,
        args["query"],
        args.get("top_k", 3),
        now=args.get("now"),
        weights=_weights(args),
        context_turns=args.get("context_turns", 1),
        max_per_session=args.get("max_per_session"),
        exclude_session_id=args.get("exclude_session_id"),
        min_relevance=args.get("min_relevance"),
    )
    if _detail(args, default) == "full":
        snippets = [s.to_dict() for s in found]
    else:
        snippets = [
            {
                "session_id": s.session_id,
                "when": wire.timestamp(s.created_at),
                "score": s.score,
                "why": wire.why(s.breakdown),
                "messages": [
                    {
                        "role": m.role,
                        "content": m.raw.get("content"),
                        **({"matched": True} if s.match_start <= i < s.match_end else {}),
                    }
                    for i, m in enumerate(s.messages)
                ],
            }
            for s in found
        ]
    return {"ok": True, "count": len(snippets), "snippets": snippets}


def recent_sessions(
    memory: EpisodicMemory, args: Mapping[str, Any], owner: Owner, default: wire.Detail
) -> dict[str, Any]:
    """``recent_sessions`` -> ``{"ok": true, "count", "sessions": [...]}``, newest first."""
    who = owner.resolve(args)
    found = memory.sessions.recall_recent(
        who.agent_id, who.user_id, args.get("limit", 5), now=args.get("now")
    )
    return {"ok": True, "count": len(found), "sessions": [s.to_dict() for s in found]}


_CONTEXT_OPTIONS = (
    "token_budget",
    "include_events",
    "include_sessions",
    "include_facts",
    "session_top_k",
    "event_limit",
    "min_relevance",
    "now",
    "context_turns",
    "exclude_session_id",
)


def context_options(args: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments of ``build_context_block`` present in ``args`` (weights from preset/weights)."""
    options = {name: args[name] for name in _CONTEXT_OPTIONS if name in args}
    if "weights" in args or "preset" in args:
        options["weights"] = _weights(args)
    return options


def build_context(
    memory: EpisodicMemory, args: Mapping[str, Any], owner: Owner, default: wire.Detail
) -> dict[str, Any]:
    """``get_context`` -> ``{"ok": true, "text", "tokens", ...}``: the ``[Past Conversation Context]`` block.

    Compact: ``text``, ``tokens``, ``items`` (kind, label, when) and ``relevant`` (``False``: nothing
    reached the relevance floor and ``text`` says so); full: the whole
    :meth:`memlane.sessions.context.ContextBlock.to_dict` (breakdowns and counts included).
    """
    who = owner.resolve(args)
    block = memory.sessions.build_context_block(
        args["query"],
        agent_id=who.agent_id,
        user_id=who.user_id,
        **context_options(args),
    )
    full = block.to_dict()
    if _detail(args, default) == "full":
        return {"ok": True, **full}
    items = [{"kind": i["kind"], "label": i["label"], "when": i["at"]} for i in full["items"]]
    return {
        "ok": True,
        "text": block.text,
        "tokens": block.tokens,
        "items": items,
        "relevant": block.relevant,
    }


# -- the knowledge graph ------------------------------------------------------------------------

_FACT_COMPACT = ("id", "subject", "predicate", "object", "value", "valid_from", "valid_until", "confidence")


def _fact(fact: Any, detail: wire.Detail) -> dict[str, Any]:
    """A fact's wire form: every field (``full``) or what a model needs (``compact``; retired ones say so)."""
    full: dict[str, Any] = fact.to_dict()
    if detail == "full":
        return full
    out = {k: full[k] for k in _FACT_COMPACT if full[k] is not None}
    if full["invalidated_at"] is not None:
        out["retired"] = full["supersede_reason"] or True
    return out


_FACT_ARGUMENTS = (
    "object",
    "value",
    "subject_type",
    "object_type",
    "valid_from",
    "valid_until",
    "confidence",
    "importance",
    "source_episode_id",
    "source_session_id",
    "method",
    "now",
)


def remember_fact(memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail) -> dict[str, Any]:
    """``remember_fact`` -> ``{"ok": true, "fact", "duplicate", "superseded": [...]}``."""
    result = memory.remember_fact(
        args["subject"], args["predicate"], **{k: args[k] for k in _FACT_ARGUMENTS if k in args}
    )
    detail = _detail(args, default)
    return {
        "ok": True,
        "fact": _fact(result.fact, detail),
        "duplicate": result.duplicate,
        "superseded": [_fact(f, detail) for f in result.superseded],
    }


def query_facts(memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail) -> dict[str, Any]:
    """``query_facts`` -> ``{"ok": true, "count", "facts": [...]}``, oldest ``valid_from`` first."""
    found = memory.query_facts(
        args["entity"],
        **{k: args[k] for k in ("as_of", "known_at", "predicate", "limit", "now") if k in args},
    )
    detail = _detail(args, default)
    return {"ok": True, "count": len(found), "facts": [_fact(f, detail) for f in found]}


def entity_timeline(memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail) -> dict[str, Any]:
    """``entity_timeline`` -> ``{"ok": true, "count", "facts": [...]}`` (current and retired)."""
    found = memory.entity_timeline(args["entity"])
    detail = _detail(args, default)
    return {"ok": True, "count": len(found), "facts": [_fact(f, detail) for f in found]}


def _neighbour(neighbour: Any, detail: wire.Detail) -> dict[str, Any]:
    """A neighbour's wire form: the entity in full (``full``), or its name, type and hops (``compact``)."""
    if detail == "full":
        full: dict[str, Any] = neighbour.to_dict()
        return full
    entity = neighbour.entity
    return {"entity": entity.name, "id": entity.id, "type": entity.entity_type, "hops": neighbour.hops}


def neighbours(memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail) -> dict[str, Any]:
    """``neighbours`` -> ``{"ok": true, "count", "neighbours": [...]}``, nearest first (the entity at 0)."""
    found = memory.neighbours(args["entity"], **{k: args[k] for k in ("depth", "as_of", "now") if k in args})
    detail = _detail(args, default)
    return {"ok": True, "count": len(found), "neighbours": [_neighbour(n, detail) for n in found]}


def find_paths(memory: EpisodicMemory, args: Mapping[str, Any], default: wire.Detail) -> dict[str, Any]:
    """``find_paths`` -> ``{"ok": true, "count", "paths": [[fact, ...], ...]}``, shortest first."""
    found = memory.find_paths(
        args["source"],
        args["target"],
        **{k: args[k] for k in ("max_depth", "limit", "as_of", "now") if k in args},
    )
    detail = _detail(args, default)
    return {"ok": True, "count": len(found), "paths": [[_fact(f, detail) for f in path] for path in found]}
