"""The agent tools: each tool's name, its description for a model, and its request type.

The arguments of every tool are declared once, by its request in
:mod:`memlane.operations.requests`; :mod:`memlane.tools` generates the JSON schemas (OpenAI,
Anthropic, the neutral form the MCP server publishes) and the checks from them. The
descriptions are written for a model choosing between the tools.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from memlane.operations import requests as r
from memlane.operations.fields import Request

__all__ = [
    "CONTRADICTIONS",
    "ENTITY_TIMELINE",
    "EPISODE_HISTORY",
    "FIND_PATHS",
    "GET_CONTEXT",
    "NEIGHBOURS",
    "QUERY_FACTS",
    "RECALL_EPISODES",
    "REMEMBER_EPISODE",
    "REMEMBER_FACT",
    "SEARCH_SESSIONS",
    "SUPERSEDE_EPISODE",
    "TOOLS",
    "ToolSpec",
]

REMEMBER_EPISODE: Final = "remember_episode"
RECALL_EPISODES: Final = "recall_episodes"
SEARCH_SESSIONS: Final = "search_sessions"
GET_CONTEXT: Final = "get_context"
SUPERSEDE_EPISODE: Final = "supersede_episode"
EPISODE_HISTORY: Final = "episode_history"
CONTRADICTIONS: Final = "find_contradictions"
REMEMBER_FACT: Final = "remember_fact"
QUERY_FACTS: Final = "query_facts"
ENTITY_TIMELINE: Final = "entity_timeline"
NEIGHBOURS: Final = "neighbours"
FIND_PATHS: Final = "find_paths"


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One agent tool.

    Attributes:
        name: The tool's name (its request's ``OPERATION``).
        description: What it does, written for a model.
        request: Its arguments, declared once.
    """

    name: str
    description: str
    request: type[Request]


TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        REMEMBER_EPISODE,
        (
            "Save an episode to long-term memory: something worth knowing in a later turn or a future "
            "session, such as a user preference, a decision, a fact learned, the outcome of a task or a "
            "failure to avoid repeating. Write the content so it makes sense on its own later, without "
            "the current conversation (who, what, and why). Do not save secrets (passwords, keys) or "
            "trivial chit-chat. Saved episodes are found again with recall_episodes."
        ),
        r.RememberRequest,
    ),
    ToolSpec(
        RECALL_EPISODES,
        (
            "Search long-term memory for past episodes. With a query, episodes are ranked by a score in "
            "[0, 1] that combines relevance to the query, recency and importance; each result shows "
            "that breakdown. Without a query, the newest episodes matching the filters are returned. "
            "Use it before answering or acting when past preferences, decisions or outcomes may matter. "
            "Filters narrow the search; they never widen it."
        ),
        r.RecallRequest,
    ),
    ToolSpec(
        GET_CONTEXT,
        (
            "Get the relevant past context for answering the user's latest message, as one ready-to-read "
            "block: the best-matching passages of earlier conversations with this user, the best "
            "matching remembered episodes and the current facts about the people and things the message "
            "names, ranked and cut to a token budget. Call it first, before answering a message that may "
            "depend on earlier conversations; pass the user's message as query. When nothing relevant "
            "is found, the block says so."
        ),
        r.ContextRequest,
    ),
    ToolSpec(
        SEARCH_SESSIONS,
        (
            "Search earlier conversations with this user for passages about something ('what did we "
            "say about the hotel?'). Returns the best-matching turns with the turns around them, each "
            "with its date and score. Use recall_episodes for saved facts and preferences instead, "
            "and get_context when you just need background before answering."
        ),
        r.SearchSessionsRequest,
    ),
    ToolSpec(
        SUPERSEDE_EPISODE,
        (
            "Replace a remembered fact that is no longer true with its new version, e.g. the user moved "
            "from Berlin to Lisbon, or a decision was reversed. Give the id of the old episode (from "
            "recall_episodes) and the new content. The old one is kept as history (episode_history "
            "shows it; it no longer appears in normal recalls). Use remember_episode for new facts "
            "that replace nothing."
        ),
        r.SupersedeRequest,
    ),
    ToolSpec(
        EPISODE_HISTORY,
        (
            "Show how a remembered fact changed over time: every version of it, oldest first, with when "
            "each was true (valid_until) and what replaced it (superseded_by). Use it when asked what "
            "was true before, or why a fact changed."
        ),
        r.HistoryRequest,
    ),
    ToolSpec(
        CONTRADICTIONS,
        (
            "Before saving a fact, check whether it may contradict facts already remembered: returns "
            "current episodes that are very similar (same event_type or a shared tag), with a "
            "similarity score. Nothing is changed; if one is outdated, call supersede_episode."
        ),
        r.ContradictionsRequest,
    ),
    ToolSpec(
        REMEMBER_FACT,
        (
            "Save one structured fact about a person, customer, team or thing as (subject, predicate, object "
            "or value), e.g. ('customer_123', 'subscription_tier', value 'enterprise') or ('user', "
            "'lives_in', "
            "'Lisbon'). A new value of a single-valued relation (lives_in, works_at, subscription_tier, "
            "diet, "
            "uses_database...) replaces the current one, which is kept as history; 'likes' and 'dislikes' "
            "replace each other; saying the same fact again changes nothing. Use remember_episode for events "
            "and free text."
        ),
        r.RememberFactRequest,
    ),
    ToolSpec(
        QUERY_FACTS,
        (
            "Look up the facts about one entity (as subject or object): by default what is true now; with "
            "as_of, what was true at that time; with known_at, what memory held then. Use it for 'where does "
            "the user live?', 'which plan is customer_123 on?', or before acting on a customer."
        ),
        r.QueryFactsRequest,
    ),
    ToolSpec(
        ENTITY_TIMELINE,
        (
            "Show how the facts about one entity changed over time: every fact, current and replaced, oldest "
            "first, each with when it was true and why it was replaced."
        ),
        r.EntityTimelineRequest,
    ),
    ToolSpec(
        NEIGHBOURS,
        (
            "List the entities linked to one entity by remembered facts (people it knows, the company it "
            "works at, the city it lives in), nearest first with their distance in hops; depth walks "
            "further. Use it to explore what memory connects to someone before asking query_facts about "
            "each."
        ),
        r.NeighboursRequest,
    ),
    ToolSpec(
        FIND_PATHS,
        (
            "Find how two entities are connected: chains of remembered facts from source to target, "
            "shortest first, e.g. ('Ana', 'introduced', 'Bob'), ('Bob', 'works_at', 'Acme'). Use it for "
            "multi-hop questions such as 'who did Ana introduce me to?' or 'how do I know Acme?'."
        ),
        r.FindPathsRequest,
    ),
)
"""Every tool, in registration order; each request's ``OPERATION`` is the tool's name."""
