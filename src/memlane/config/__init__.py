"""Configuration objects. The process environment is read here and nowhere else."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache

from memlane.config.forgetting import ForgettingPolicy
from memlane.config.profile import (
    DEFAULT_DECAY_PER_DAY,
    DEFAULT_PROFILE,
    FUSION_METHODS,
    PROFILES,
    RETRIEVAL_MODES,
    RankingProfile,
    RankingWeights,
    resolve_weights,
)
from memlane.errors import ConfigError, ValidationError
from memlane.models import Scope

__all__ = [
    "DEFAULT_COMPACT_SIMILARITY",
    "DEFAULT_CONTEXT_MIN_RELEVANCE",
    "DEFAULT_DB_PATH",
    "DEFAULT_REEMBED_BATCH_SIZE",
    "MemoryConfig",
    "config_path_from_env",
    "database_from_env",
]

DEFAULT_DB_PATH = "memlane.db"
"""SQLite file used when neither ``--db`` nor ``MEMLANE_DB`` is given (relative to the working dir)."""

DEFAULT_COMPACT_SIMILARITY = 0.95
"""Cosine above which :meth:`memlane.EpisodicMemory.compact` merges episodes, unless told otherwise
(every interface's default: Python, CLI, HTTP)."""

DEFAULT_CONTEXT_MIN_RELEVANCE = 0.3
"""The relevance floor of the context paths (:attr:`MemoryConfig.context_min_relevance`): a candidate
of the context block, of ``inject_context`` or of ``search_sessions`` whose own match strength
(:func:`memlane.sessions.context.match_strength`) is below it is left out. Calibrated by
``benchmarks/relevance_floor.py`` (results in ``benchmarks/results/relevance_floor.md``): a floor at
which 95 % of the LoCoMo 0-4 and BEAM 1-10 questions keep their top-5 evidence (LoCoMo 0.967, BEAM
0.984 at 0.3; the rerun on today's defaults puts the largest such floor at 0.35, where LoCoMo
keeps 0.952, too close to the bar to move the default), while 84 % of unrelated queries (off-topic, the
other benchmark's questions) get nothing. A cosine floor cannot tell an on-topic question whose
answer is absent (BEAM's abstention questions) from an answerable one."""

DEFAULT_REEMBED_BATCH_SIZE = 256
"""Texts :func:`memlane.lifecycle.reembed.reembed` embeds and commits per batch, unless told otherwise
(its default and ``memlane reembed --batch-size``'s)."""


@lru_cache(maxsize=64)
def _profile_of(
    fusion: str, decay_per_day: float, graph_boost: float | None = None, agent_discount: float | None = None
) -> RankingProfile:
    """The named profile of ``fusion`` with ``decay_per_day`` and, unless ``None``, the graph boost
    ``graph_boost`` and the agent-turn discount ``agent_discount`` (a profile is immutable, so every
    recall of a configuration shares it)."""
    profile = replace(PROFILES[fusion], decay_per_day=decay_per_day)
    if graph_boost is not None:
        profile = replace(profile, boosts=replace(profile.boosts, graph=graph_boost))
    if agent_discount is not None:
        profile = replace(profile, speakers=replace(profile.speakers, agent_discount=agent_discount))
    return profile


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    """Semantics of an :class:`memlane.EpisodicMemory`.

    Attributes:
        scope: What a recall may see (:class:`memlane.Scope` or its string value);
            default ``session``.
        default_limit: Results returned when ``limit`` is not given, >= 1 (default 5).
        retention_days: Episodes older than this many days (by ``created_at``) are hidden
            from recall and pruned; ``None`` (default) keeps everything. > 0.
        prune_probability: Fraction of ``remember_episode`` calls that also prune expired
            episodes, in [0, 1] (default 0.01, i.e. about 1 call in 100).
        decay_per_day: Recency decay factor per day of age, in (0, 1] (default 0.995).
        weights: Default ranking weights: a :class:`memlane.config.profile.RankingWeights`, a
            preset name (default ``"balanced"``) or a mapping.
        retrieval: How ranked recalls find candidates: ``"hybrid"`` (default: embeddings and
            the keyword index, fused), ``"dense"`` (embeddings only) or ``"keyword"``
            (full-text index only; never calls the embedder).
        fusion: How hybrid retrieval fuses the two calibrated signals into base relevance:
            ``"convex"`` (default, ``w * dense + (1 - w) * keyword``,
            ``w = 1 - 0.6 * (1 - coverage)``), ``"noisy_or"`` or ``"rrf"`` (reciprocal rank fusion):
            the name of the ranking profile (:attr:`profile`, :data:`memlane.config.profile.PROFILES`);
            see :mod:`memlane.recall.relevance`.
        min_relevance: Ranked hits whose own relevance (without the neighbours' context) is
            below this, in [0, 1], are dropped (default 0: keep all).
        context_min_relevance: The relevance floor of the context paths, in [0, 1] (default
            :data:`DEFAULT_CONTEXT_MIN_RELEVANCE`): the context block
            (:meth:`memlane.sessions.SessionMemory.build_context_block`, ``inject_context``,
            the ``get_context`` tool, ``/v1/context``) and ``search_sessions`` leave out every
            candidate whose own match strength (its calibrated dense cosine;
            :func:`memlane.sessions.context.match_strength`) is below it, so an unrelated query
            injects nothing. A call's ``min_relevance`` overrides it; 0 turns it off.
        temporal: Whether time expressions in a query ("last May") boost episodes created in
            that window (default ``True``; see :mod:`memlane.recall.temporal`).
        embedding_fallback: When the embedder fails (``EmbeddingError``), store episodes
            without a vector and recall by keywords only, with a logged warning, instead of
            raising (default ``True``). An embedding *model mismatch* always raises.
        contradiction_threshold: Confidence, in (0, 1], from which
            :meth:`memlane.EpisodicMemory.find_contradictions` proposes an episode as a
            contradiction candidate (default 0.8; see :mod:`memlane.lifecycle.contradiction`).
        auto_supersede: Whether :meth:`memlane.EpisodicMemory.remember_episode` retires the
            contradiction candidates of each new episode automatically (default ``False``:
            candidates are only proposed). Every automatic retirement is recorded on the old
            episode (``supersede_reason = "auto: contradiction confidence=... cosine=..."``).
        forgetting: Whether ranked recalls use each episode's forgetting half-life for the
            recency signal (``0.5 ** (age_days / half_life)``, 1 for never-forget episodes;
            :mod:`memlane.config.forgetting`) instead of ``decay_per_day ** age_days``. Default
            ``False``, so existing rankings do not change silently. :meth:`forget` works
            either way.
        forgetting_policy: Importance -> half-life mapping
            (:class:`memlane.config.forgetting.ForgettingPolicy` or
            ``{"bands": {9: null, 7: 30, 4: 7, 1: 1}, "unrated": 7}``); default the
            issue-7 bands. Its never-forget bands (importance >= 9 by default) are also
            exempt from retention pruning.
        forget_action: What :meth:`memlane.EpisodicMemory.forget` does to a faded episode:
            ``"archive"`` (default: set ``archived_at``; hidden from recall, kept) or ``"delete"``.
        forget_threshold: Default strength, in (0, 1), below which ``forget`` removes an
            episode (default 0.05, about 4.3 half-lives).
        track_retrievals: Whether every ranked recall (one with a ``query``) adds 1 to the
            ``retrieve_count`` of each episode it returns and sets its ``last_retrieved_at`` to
            the recall's ``now``, in one batched ``UPDATE`` (default ``True``). Structured
            lookups (no query) are not counted. :meth:`memlane.EpisodicMemory.compact` uses the
            counts to archive episodes never retrieved.
        link_entities: Whether every write links the episode to the entities found in it
            without a model (tags, speakers, quoted and capitalised names, e-mail and id-like
            tokens: :func:`memlane.mentions.extract_mentions`), so
            :meth:`memlane.EpisodicMemory.episodes_about` finds it (default ``True``; about 0.6 ms per
            episode here, in a second transaction after the insert; a failed link is logged).
        graph_boost: Strength, in [0, 1], of the knowledge-graph entity signal of ranked recall
            (:attr:`memlane.config.profile.Boosts.graph`: episodes linked to the entities the query
            names and to their 1-hop neighbours; :mod:`memlane.recall.entities`); ``None`` (default)
            keeps the profile's (0: off, see ``benchmarks/results/entity_study.md``).
        agent_discount: The share, in [0, 1], of relevance an agent turn (an episode tagged
            ``"assistant"``, as memlane's turn formation tags the assistant's turns) loses when the query
            does not ask about the agent's words (:class:`memlane.config.profile.Speakers`); ``None``
            (default) keeps the profile's (0.3; 0: off, see ``benchmarks/results/speaker_study.md``).
        importance: The importance of an episode written without one: ``None`` (default:
            unrated, ranked as 5) or ``"auto"`` (estimated 1-10 from its content by
            :func:`memlane.importance.estimate_importance`; deterministic, no model).
            An explicit rating always wins.

    Raises:
        ConfigError: any value out of range; the message names the key.
    """

    scope: Scope | str = Scope.SESSION
    default_limit: int = 5
    retention_days: float | None = None
    prune_probability: float = 0.01
    decay_per_day: float = DEFAULT_DECAY_PER_DAY
    weights: RankingWeights | str | Mapping[str, float] = field(default="balanced")
    retrieval: str = "hybrid"
    fusion: str = DEFAULT_PROFILE.fusion.method
    min_relevance: float = 0.0
    context_min_relevance: float = DEFAULT_CONTEXT_MIN_RELEVANCE
    temporal: bool = True
    embedding_fallback: bool = True
    contradiction_threshold: float = 0.8
    auto_supersede: bool = False
    forgetting: bool = False
    forgetting_policy: ForgettingPolicy | Mapping[str, object] = field(default_factory=ForgettingPolicy)
    forget_action: str = "archive"
    forget_threshold: float = 0.05
    track_retrievals: bool = True
    link_entities: bool = True
    graph_boost: float | None = None
    agent_discount: float | None = None
    importance: str | None = None

    def __post_init__(self) -> None:
        try:
            object.__setattr__(self, "scope", Scope(self.scope))
        except ValueError:
            raise ConfigError(
                f"scope must be one of {[s.value for s in Scope]}, got {self.scope!r}"
            ) from None
        _check_limits(self)
        try:
            object.__setattr__(self, "weights", resolve_weights(self.weights, RankingWeights()))
        except ValidationError as exc:
            raise ConfigError(f"weights: {exc}") from None
        if self.retrieval not in RETRIEVAL_MODES:
            raise ConfigError(f"retrieval must be one of {list(RETRIEVAL_MODES)}, got {self.retrieval!r}")
        if self.fusion not in FUSION_METHODS:
            raise ConfigError(f"fusion must be one of {list(FUSION_METHODS)}, got {self.fusion!r}")
        _check_thresholds(self)
        _check_forgetting(self)
        for name in ("graph_boost", "agent_discount"):
            value = getattr(self, name)
            if value is not None and (not _is_number(value) or not 0.0 <= value <= 1.0):
                raise ConfigError(f"{name} must be a number in [0, 1] or null, got {value!r}")
        if self.importance not in (None, "auto"):
            raise ConfigError(f"importance must be 'auto' or None (unrated), got {self.importance!r}")
        for name in (
            "temporal",
            "embedding_fallback",
            "auto_supersede",
            "forgetting",
            "track_retrievals",
            "link_entities",
        ):
            if not isinstance(getattr(self, name), bool):
                raise ConfigError(f"{name} must be true or false, got {getattr(self, name)!r}")

    @property
    def profile(self) -> RankingProfile:
        """The :class:`memlane.config.profile.RankingProfile` of ranked recalls.

        The named profile of ``fusion`` (:data:`memlane.config.profile.PROFILES`) with this
        configuration's ``decay_per_day``, ``graph_boost`` and ``agent_discount``.
        """
        return _profile_of(self.fusion, self.decay_per_day, self.graph_boost, self.agent_discount)

    @property
    def policy(self) -> ForgettingPolicy:
        """The resolved :class:`memlane.config.forgetting.ForgettingPolicy`."""
        assert isinstance(self.forgetting_policy, ForgettingPolicy)
        return self.forgetting_policy

    @property
    def ranking_weights(self) -> RankingWeights:
        """The resolved default :class:`RankingWeights`."""
        assert isinstance(self.weights, RankingWeights)
        return self.weights


def _is_number(value: object) -> bool:
    """A real number (``int`` or ``float``), not a ``bool``."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _check_limits(config: MemoryConfig) -> None:
    """``default_limit``, ``retention_days``, ``prune_probability`` and ``decay_per_day``."""
    limit = config.default_limit
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ConfigError(f"default_limit must be a positive integer, got {limit!r}")
    days = config.retention_days
    if days is not None and (not _is_number(days) or not math.isfinite(days) or days <= 0):
        raise ConfigError(f"retention_days must be a positive number or None, got {days!r}")
    if not isinstance(config.prune_probability, int | float) or not 0.0 <= config.prune_probability <= 1.0:
        raise ConfigError(f"prune_probability must be in [0, 1], got {config.prune_probability!r}")
    if not isinstance(config.decay_per_day, int | float) or not 0.0 < config.decay_per_day <= 1.0:
        raise ConfigError(f"decay_per_day must be in (0, 1], got {config.decay_per_day!r}")


def _check_thresholds(config: MemoryConfig) -> None:
    """``min_relevance``, ``context_min_relevance`` and ``contradiction_threshold``."""
    for name in ("min_relevance", "context_min_relevance"):
        value = getattr(config, name)
        if not _is_number(value) or not 0.0 <= value <= 1.0:
            raise ConfigError(f"{name} must be a number in [0, 1], got {value!r}")
    threshold = config.contradiction_threshold
    if not _is_number(threshold) or not 0.0 < threshold <= 1.0:
        raise ConfigError(f"contradiction_threshold must be a number in (0, 1], got {threshold!r}")


def _check_forgetting(config: MemoryConfig) -> None:
    """``forgetting_policy`` (a mapping becomes a policy), ``forget_action`` and ``forget_threshold``."""
    if isinstance(config.forgetting_policy, Mapping):
        object.__setattr__(
            config, "forgetting_policy", ForgettingPolicy.from_mapping(config.forgetting_policy)
        )
    elif not isinstance(config.forgetting_policy, ForgettingPolicy):
        raise ConfigError(f"forgetting_policy must be a mapping, got {config.forgetting_policy!r}")
    if config.forget_action not in ("archive", "delete"):
        raise ConfigError(f"forget_action must be 'archive' or 'delete', got {config.forget_action!r}")
    if not _is_number(config.forget_threshold) or not 0.0 < config.forget_threshold < 1.0:
        raise ConfigError(f"forget_threshold must be a number in (0, 1), got {config.forget_threshold!r}")


def database_from_env(environ: Mapping[str, str] | None = None) -> str:
    """Return ``MEMLANE_DB`` from the environment, or :data:`DEFAULT_DB_PATH`.

    Args:
        environ: Mapping to read instead of ``os.environ`` (for tests).
    """
    env = os.environ if environ is None else environ
    return env.get("MEMLANE_DB") or DEFAULT_DB_PATH


def config_path_from_env(environ: Mapping[str, str] | None = None) -> str | None:
    """Return ``MEMLANE_CONFIG`` (a YAML config file path) from the environment, or ``None``.

    Args:
        environ: Mapping to read instead of ``os.environ`` (for tests).
    """
    env = os.environ if environ is None else environ
    return env.get("MEMLANE_CONFIG") or None
