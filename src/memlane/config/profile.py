"""The ranking profile: every knob of ranked recall in one frozen value, and named profiles (recipes).

:class:`RankingProfile` holds the fusion and its weights, the dense calibration, the keyword
saturation (and names the BM25 constants the stores score with, :data:`memlane.bm25.DEFAULT_BM25`),
the conversation-context weights, the boosts, the tie band, the candidate pool sizes and the
recency decay. :func:`memlane.recall.ranking.rank` reads nothing else; the formulas are in
:mod:`memlane.recall.relevance` and :mod:`memlane.recall.ranking`. The values are hand-set round
numbers chosen on LoCoMo conversations 0-4 one knob at a time (``memlane eval locomo``); the fusion's
coverage power and the keyword saturation were then chosen by per-conversation cross-validation over
BEAM 1-10 and LoCoMo 0-4 (``benchmarks/fusion_study.py``, issue #20).

Named profiles are recipes, ready-made values to pass as they are or to adjust with
:func:`dataclasses.replace` (after graphiti's ``search_config_recipes``): :data:`HYBRID_CONVEX`
(the default), :data:`HYBRID_NOISY_OR` and :data:`HYBRID_RRF`, all in :data:`PROFILES`.
:class:`memlane.MemoryConfig` picks one by its ``fusion`` and sets its ``decay_per_day``
(:attr:`memlane.MemoryConfig.profile`).

The relevance/recency/importance weights (:class:`RankingWeights`, :data:`PRESETS`) are a per-recall
choice (``weights=``), so they are not part of the profile; by default they only order hits inside its
tie band, a preset may widen that band (``tie_band``) or use the seed's plain mean (``formula="seed"``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields

from memlane.bm25 import DEFAULT_BM25, Bm25Params
from memlane.errors import ValidationError

__all__ = [
    "DEFAULT_DECAY_PER_DAY",
    "DEFAULT_PROFILE",
    "FORMULAS",
    "FUSION_METHODS",
    "HYBRID_CONVEX",
    "HYBRID_NOISY_OR",
    "HYBRID_RRF",
    "PRESETS",
    "PROFILES",
    "RETRIEVAL_MODES",
    "Boosts",
    "ContextWeights",
    "DenseCalibration",
    "Fusion",
    "Pools",
    "RankingProfile",
    "RankingWeights",
    "Speakers",
    "resolve_weights",
]

DEFAULT_DECAY_PER_DAY = 0.995
"""Default recency decay factor per day of age (0.995**30 ~= 0.8604)."""

RETRIEVAL_MODES = ("hybrid", "dense", "keyword")
"""How a ranked recall finds and scores candidates: both signals fused, embeddings only, or
the full-text index only."""

FUSION_METHODS = ("convex", "noisy_or", "rrf")
"""How hybrid retrieval combines the calibrated dense and keyword signals (:class:`Fusion`)."""


def _number(owner: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValidationError(f"{owner}.{name} must be a finite number, got {value!r}")
    return float(value)


def _check_unit(owner: object, *names: str) -> None:
    """Every named field of ``owner`` is a finite number in [0, 1]."""
    for name in names:
        if not 0.0 <= _number(type(owner).__name__, name, getattr(owner, name)) <= 1.0:
            raise ValidationError(
                f"{type(owner).__name__}.{name} out of range [0, 1]: {getattr(owner, name)!r}"
            )


def _check_positive(owner: object, *names: str) -> None:
    """Every named field of ``owner`` is a finite number > 0."""
    for name in names:
        if _number(type(owner).__name__, name, getattr(owner, name)) <= 0.0:
            raise ValidationError(f"{type(owner).__name__}.{name} must be > 0, got {getattr(owner, name)!r}")


@dataclass(frozen=True, slots=True)
class Fusion:
    """How base relevance combines the calibrated dense and keyword signals.

    Attributes:
        method: ``"convex"`` (``w * dense + (1 - w) * keyword``; Bruch, Gai & Ingber 2023),
            ``"noisy_or"`` (``1 - (1 - dense) * (1 - lam * keyword)``) or ``"rrf"`` (weighted
            reciprocal rank fusion; Cormack, Clarke & Büttcher 2009).
        dense_weight: Dense share ``w`` of ``convex`` and ``rrf``, in [0, 1] (0.4, from
            {0.3 ... 0.6}: 0.4 and 0.5 tie on R@10, 0.4 is better on the session metric). For
            ``convex`` it is the share when few candidates match a query term; see
            ``coverage_power``.
        keyword_weight: ``lam`` of the noisy-OR, in [0, 1] (0.6).
        rrf_k: RRF's rank offset ``k``, > 0 (5; the paper's 60 flattens the top of short lists).
        coverage_power: ``p`` of the convex fusion's coverage-adaptive keyword share
            ``(1 - w) * (1 - coverage) ** p``, where ``coverage`` is the fraction of the recall's
            candidates that match any query term (:func:`memlane.recall.relevance.keyword_coverage`):
            a keyword signal that marks most candidates as matches says little about which one
            is meant, so the dense share grows to ``1 - (1 - w) * (1 - coverage) ** p``.
            ``>= 0``; 0 keeps the fixed share ``1 - w`` (the fusion before issue #20). 1, chosen
            from {0 (off), 1, 1.5, 2, 3} with keyword saturation {4, 8} by leave-one-conversation-out
            cross-validation over BEAM 1-10 and LoCoMo 0-4 (``benchmarks/fusion_study.py``).

    Raises:
        ValidationError: an unknown method or a value out of range.
    """

    method: str = "convex"
    dense_weight: float = 0.4
    keyword_weight: float = 0.6
    rrf_k: float = 5.0
    coverage_power: float = 1.0

    def __post_init__(self) -> None:
        if self.method not in FUSION_METHODS:
            raise ValidationError(f"fusion must be one of {list(FUSION_METHODS)}, got {self.method!r}")
        _check_unit(self, "dense_weight", "keyword_weight")
        _check_positive(self, "rrf_k")
        if _number("Fusion", "coverage_power", self.coverage_power) < 0.0:
            raise ValidationError(f"Fusion.coverage_power must be >= 0, got {self.coverage_power!r}")


@dataclass(frozen=True, slots=True)
class DenseCalibration:
    """Absolute calibration of cosine similarity: ``clip((cos - floor) / (ceil - floor), 0, 1)``.

    Attributes:
        floor: Cosine that means "unrelated" (0.1; MiniLM-class embedders put unrelated short
            texts near 0-0.2).
        ceil: Cosine that means "the same thing said differently" (0.7), > ``floor``.

    Raises:
        ValidationError: values out of [-1, 1] or ``ceil <= floor``.
    """

    floor: float = 0.1
    ceil: float = 0.7

    def __post_init__(self) -> None:
        low, high = (
            _number("DenseCalibration", "floor", self.floor),
            _number("DenseCalibration", "ceil", self.ceil),
        )
        if not -1.0 <= low < high <= 1.0:
            raise ValidationError(f"DenseCalibration needs -1 <= floor < ceil <= 1, got {low!r}, {high!r}")


@dataclass(frozen=True, slots=True)
class ContextWeights:
    """Weights of the conversation context (:func:`memlane.recall.relevance.contextual_relevance`).

    Attributes:
        neighbour: Weight of the best +-1 stored neighbour in the same group (0.5), >= 0.
        neighbour2: Weight of the best +-2 neighbour (0.2), >= 0.
        group: Weight of the group's best episode (0.35), >= 0.
        group_gap_s: A pause longer than this many seconds between consecutive candidates of a
            session starts a new group (3600), > 0.

    Raises:
        ValidationError: a value out of range.
    """

    neighbour: float = 0.5
    neighbour2: float = 0.2
    group: float = 0.35
    group_gap_s: float = 3600.0

    def __post_init__(self) -> None:
        for name in ("neighbour", "neighbour2", "group"):
            if _number("ContextWeights", name, getattr(self, name)) < 0.0:
                raise ValidationError(f"ContextWeights.{name} must be >= 0, got {getattr(self, name)!r}")
        _check_positive(self, "group_gap_s")


@dataclass(frozen=True, slots=True)
class Boosts:
    """Noisy-OR lifts of relevance: ``1 - (1 - r) * (1 - strength)`` when the condition holds.

    Attributes:
        entity: When the query names exactly one of the candidates' tags and the episode carries it (0.2).
        time_window: When the episode lies in the time window the query names (0.3, from {0.2, 0.3, 0.5}).
        graph: Strength of the knowledge-graph entity signal (:mod:`memlane.recall.entities`): the
            lift is ``1 - (1 - r) * (1 - graph * g)`` with ``g`` in [0, 1] how much of the query's
            entities (and their 1-hop neighbours) the episode is linked to. 0 turns the stage off
            (no graph query runs, no extra candidates).
        graph_neighbours: What a link to a 1-hop neighbour of a query entity (over the object-facts)
            counts for in ``g``, against 1 for a link to the entity itself (0.5).

    Raises:
        ValidationError: a value outside [0, 1].
    """

    entity: float = 0.2
    time_window: float = 0.3
    graph: float = 0.0
    graph_neighbours: float = 0.5

    def __post_init__(self) -> None:
        _check_unit(self, "entity", "time_window", "graph", "graph_neighbours")


@dataclass(frozen=True, slots=True)
class Speakers:
    """Whose words an episode holds: the agent's own turns rank below the user's at equal relevance.

    In a user-assistant conversation the assistant's reply restates the user's request at length
    and elaborates on it, so a query about what the user said, asked for or prefers matches the
    reply about as well as the user's own turn (and, being long, often better), and the replies crowd
    the user's statements out of the top results (on BEAM 1-10, 52 % of plain cosine's top 10 are
    assistant turns, while 78 % of the evidence turns are the user's). The agent's turn is first-hand
    only when the query asks about the agent's words ("what did you recommend ...", not the request
    form "can you list ..."), so the discount applies unless it does
    (:func:`memlane.recall.relevance.addresses_agent`).

    Attributes:
        agent_tag: The tag that marks the agent's own turn (``"assistant"``: memlane's turn
            formation, :func:`memlane.formation.raw_turn_episodes`, tags every turn with its role).
        agent_discount: ``d`` in [0, 1] (0.3): an agent turn's relevance (and own relevance) is
            multiplied by ``1 - d`` after context and boosts, unless the query addresses the agent;
            its neighbours' context still counts it in full. 0 turns it off. Chosen by
            leave-one-conversation-out cross-validation over BEAM 1-10 from {0, 0.1, 0.2, 0.3, 0.5,
            1} (LoCoMo has no agent turns; ``benchmarks/results/speaker_study.md``).

    Raises:
        ValidationError: ``agent_discount`` outside [0, 1] or an empty ``agent_tag``.
    """

    agent_tag: str = "assistant"
    agent_discount: float = 0.3

    def __post_init__(self) -> None:
        _check_unit(self, "agent_discount")
        if not isinstance(self.agent_tag, str) or not self.agent_tag.strip():
            raise ValidationError(f"Speakers.agent_tag must be a non-empty string, got {self.agent_tag!r}")


@dataclass(frozen=True, slots=True)
class Pools:
    """How many candidates a ranked read draws: ``max(per_hit * limit, minimum)``.

    Attributes:
        recall_per_hit: Episode recall pool per requested hit (20).
        recall_minimum: Smallest episode recall pool (500: on LoCoMo conversations 0-4, ``limit=10``
            scored R@10 0.793 with 200 and 0.800 with 500).
        session_per_hit: Session search pool per requested snippet (20).
        session_minimum: Smallest session search pool (200).

    Raises:
        ValidationError: a value that is not an integer >= 1.
    """

    recall_per_hit: int = 20
    recall_minimum: int = 500
    session_per_hit: int = 20
    session_minimum: int = 200

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValidationError(f"Pools.{f.name} must be an integer >= 1, got {value!r}")

    def recall(self, limit: int) -> int:
        """Candidates of an episode recall returning ``limit`` hits: ``max(20 * limit, 500)``."""
        return max(self.recall_per_hit * int(limit), self.recall_minimum)

    def sessions(self, top_k: int) -> int:
        """Turn windows a session search returning ``top_k`` snippets draws: ``max(20 * top_k, 200)``."""
        return max(self.session_per_hit * int(top_k), self.session_minimum)


@dataclass(frozen=True, slots=True)
class RankingProfile:
    """Every knob of ranked recall (formulas: :mod:`memlane.recall.relevance`, :mod:`memlane.recall.ranking`).

    Attributes:
        fusion: How dense and keyword evidence make base relevance (:class:`Fusion`).
        dense: Calibration of cosine similarity (:class:`DenseCalibration`).
        keyword_saturation: ``s`` of the keyword signal ``(bm25 / best) * (1 - exp(-best / s))``,
            in BM25 units, > 0 (8, chosen with ``Fusion.coverage_power`` by cross-validation over
            BEAM 1-10 and LoCoMo 0-4; it was 4, chosen on LoCoMo 0-4 alone: a long query that
            matches many common words of long turns sums to a large BM25 and saturated at once).
        context: Conversation-context weights (:class:`ContextWeights`).
        boosts: Entity and time-window boosts (:class:`Boosts`).
        speakers: The discount of the agent's own turns (:class:`Speakers`).
        tie_band: ``eps0``, in [0, 1] (0.1): recency and importance together add at most
            ``tie_band`` times their share of the weights to relevance, so a relevance lead
            larger than that always wins.
        pools: Candidate pool sizes (:class:`Pools`).
        decay_per_day: Recency decay per day of age, in (0, 1] (0.995).

    Raises:
        ValidationError: a value out of range or of the wrong type.
    """

    fusion: Fusion = field(default_factory=Fusion)
    dense: DenseCalibration = field(default_factory=DenseCalibration)
    keyword_saturation: float = 8.0
    context: ContextWeights = field(default_factory=ContextWeights)
    boosts: Boosts = field(default_factory=Boosts)
    speakers: Speakers = field(default_factory=Speakers)
    tie_band: float = 0.1
    pools: Pools = field(default_factory=Pools)
    decay_per_day: float = DEFAULT_DECAY_PER_DAY

    def __post_init__(self) -> None:
        for name, kind in (
            ("fusion", Fusion),
            ("dense", DenseCalibration),
            ("context", ContextWeights),
            ("boosts", Boosts),
            ("speakers", Speakers),
            ("pools", Pools),
        ):
            if not isinstance(getattr(self, name), kind):
                raise ValidationError(
                    f"RankingProfile.{name} must be a {kind.__name__}, got {getattr(self, name)!r}"
                )
        _check_positive(self, "keyword_saturation")
        _check_unit(self, "tie_band")
        if not 0.0 < _number("RankingProfile", "decay_per_day", self.decay_per_day) <= 1.0:
            raise ValidationError(f"decay_per_day must be in (0, 1], got {self.decay_per_day!r}")

    @property
    def bm25(self) -> Bm25Params:
        """The BM25 constants and match limit the stores score with (:data:`memlane.bm25.DEFAULT_BM25`)."""
        return DEFAULT_BM25


HYBRID_CONVEX = RankingProfile()
"""The default: convex fusion ``w * dense + (1 - w) * keyword`` with the coverage-adaptive dense share
``w = 1 - 0.6 * (1 - coverage)`` (0.4 when no other candidate matches a query term), context, boosts,
tie band 0.1."""

HYBRID_NOISY_OR = RankingProfile(fusion=Fusion(method="noisy_or"))
"""As :data:`HYBRID_CONVEX` with noisy-OR fusion ``1 - (1 - dense) * (1 - 0.6 * keyword)``."""

HYBRID_RRF = RankingProfile(fusion=Fusion(method="rrf"))
"""As :data:`HYBRID_CONVEX` with weighted reciprocal rank fusion (``k = 5``, dense weight 0.4)."""

DEFAULT_PROFILE = HYBRID_CONVEX
"""The profile of :class:`memlane.MemoryConfig` ``()``."""

PROFILES: Mapping[str, RankingProfile] = {
    "convex": HYBRID_CONVEX,
    "noisy_or": HYBRID_NOISY_OR,
    "rrf": HYBRID_RRF,
}
"""The named profiles, by the ``fusion`` name that selects them in :class:`memlane.MemoryConfig`."""


FORMULAS = ("relevance_first", "seed")
"""How :class:`RankingWeights` combine the signals (:func:`memlane.recall.ranking.scores_of`).

``"relevance_first"``: ``(relevance + band * (w_rec * recency + w_imp * importance)) / (1 + band)``
over memlane's relevance, where ``band`` is the weights' ``tie_band`` or the profile's. ``"seed"``: the
seed formula, the weighted mean ``w_rel * clip(cosine, 0, 1) + w_rec * recency + w_imp * importance``
of the raw cosine similarity (no keywords, context or boosts), recency and importance."""


@dataclass(frozen=True, slots=True)
class RankingWeights:
    """Relative weights of the three signals (only their ratios matter), and how they combine.

    Args:
        relevance: Weight of relevance, finite and >= 0.
        recency: Weight of recency, finite and >= 0.
        importance: Weight of importance, finite and >= 0.
        tie_band: For ``formula="relevance_first"``: how far recency and importance reach, in
            [0, 1]; ``None`` takes the profile's (0.1: they only break near-ties). At 1 they weigh
            as much as relevance does (the ``agent_context``, ``cold_start`` and ``conversation``
            presets).
        formula: ``"relevance_first"`` or ``"seed"`` (:data:`FORMULAS`). This and ``tie_band`` are
            keyword-only.

    Raises:
        ValidationError: a weight is negative, NaN, infinite or not a number, or all are zero;
            a tie band out of [0, 1]; an unknown formula.
    """

    relevance: float = 1.0
    recency: float = 1.0
    importance: float = 1.0
    tie_band: float | None = field(default=None, kw_only=True)
    formula: str = field(default="relevance_first", kw_only=True)

    def __post_init__(self) -> None:
        for name in ("relevance", "recency", "importance"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ValidationError(f"weight {name!r} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise ValidationError(f"weight {name!r} must be finite and >= 0, got {value!r}")
        if self.relevance + self.recency + self.importance <= 0:
            raise ValidationError("at least one ranking weight must be > 0")
        if self.tie_band is not None:
            _check_unit(self, "tie_band")
        if self.formula not in FORMULAS:
            raise ValidationError(f"formula must be one of {list(FORMULAS)}, got {self.formula!r}")

    def normalized(self) -> tuple[float, float, float]:
        """Return ``(relevance, recency, importance)`` divided by their sum (they add up to 1)."""
        total = self.relevance + self.recency + self.importance
        return (self.relevance / total, self.recency / total, self.importance / total)


PRESETS: Mapping[str, RankingWeights] = {
    "balanced": RankingWeights(1.0, 1.0, 1.0),
    "specific_question": RankingWeights(0.6, 0.2, 0.2),
    "agent_context": RankingWeights(0.3, 0.2, 0.5, tie_band=1.0),
    "conversation": RankingWeights(0.3, 0.5, 0.2, tie_band=1.0),
    "cold_start": RankingWeights(0.3, 0.0, 0.7, tie_band=1.0),
    "relevance_only": RankingWeights(1.0, 0.0, 0.0),
    "seed": RankingWeights(1.0, 1.0, 1.0, formula="seed"),
}
"""Named weight presets. ``balanced`` (equal weights, Park et al. 2023) is the default.

``balanced``, ``specific_question`` and ``relevance_only`` are relevance-first (the profile's tie band);
``agent_context``, ``cold_start`` and ``conversation`` reach as far as relevance (``tie_band=1``), so an
important (or recent) episode outranks a better match by up to ``w * (signal gap)`` of relevance;
``seed`` is the seed formula: the plain average of cosine, ``0.995 ** days`` and ``importance / 10``."""


def resolve_weights(
    weights: RankingWeights | str | Mapping[str, float] | None,
    default: RankingWeights,
) -> RankingWeights:
    """Turn a preset name, a mapping or ``None`` into :class:`RankingWeights`.

    Args:
        weights: A :class:`RankingWeights`, a preset name from :data:`PRESETS`, a mapping
            with any of the keys ``relevance``/``recency``/``importance`` (missing keys
            weigh 0), or ``None`` for ``default``.
        default: Returned when ``weights`` is ``None``.

    Raises:
        ValidationError: unknown preset name or mapping key, or invalid weight values.
    """
    if weights is None:
        return default
    if isinstance(weights, RankingWeights):
        return weights
    if isinstance(weights, str):
        try:
            return PRESETS[weights]
        except KeyError:
            known = ", ".join(sorted(PRESETS))
            raise ValidationError(f"unknown weight preset {weights!r}; known presets: {known}") from None
    if isinstance(weights, Mapping):
        unknown = set(weights) - {"relevance", "recency", "importance"}
        if unknown:
            raise ValidationError(f"unknown weight keys: {sorted(unknown)}")
        return RankingWeights(
            relevance=weights.get("relevance", 0.0),
            recency=weights.get("recency", 0.0),
            importance=weights.get("importance", 0.0),
        )
    raise ValidationError(
        f"weights must be a RankingWeights, preset name or mapping, got {type(weights).__name__}"
    )
