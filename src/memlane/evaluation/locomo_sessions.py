"""Session-level LoCoMo retrieval: is the evidence session among the top k sessions found?

Every LoCoMo session is stored as one session episode through
:meth:`memlane.sessions.SessionMemory.store_session` (the import mapping of
:mod:`memlane.sessions.importing`: speaker_a -> user, speaker_b -> assistant, dated from
``session_<n>_date_time``; one user per conversation), in one SQLite file. Each question of
the chosen categories that has evidence is asked with ``search_sessions`` (``now`` = the
conversation's last session time, one snippet per session, no context turns), once per
ranking configuration; the distinct sessions of the ranked snippets, best first, are
scored against the *evidence sessions* (the sessions of the question's evidence turns):

* **Hit@k**: 1 when any evidence session is among the first k sessions (the session-level
  recall@k of issue #4); reported for k = 1, 3, 5, 10.
* **R@5**: the fraction of the evidence sessions among the first 5 (differs from Hit@5
  only for multi-session evidence).
* **MRR**: mean reciprocal rank of the first evidence session (0 when none is in the top 10).

Two reference rows are computed in the same run: **random**, the expected Hit@k of k
sessions drawn uniformly without replacement (``1 - C(N-m, k) / C(N, k)`` for ``N``
sessions of which ``m`` hold evidence; a conversation has 19-32 sessions), and
**single turns -> sessions**, the distinct sessions of the turns ranked by cosine
similarity alone, each turn embedded on its own (``"<speaker>: <text>"``, the turn-level
benchmark's episode content) with the same model, so turn windows can be compared with
single utterances.
The turn-level figures themselves (turn R@k, Hit@10) are quoted from the turn-level
results file when it exists, not rerun.
"""

from __future__ import annotations

import json
import math
import platform
import time
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.embeddings.base import Embedder
from memlane.evaluation.locomo import LOCOMO_CATEGORIES, LocomoConversation, LocomoQuestion, load_locomo
from memlane.evaluation.locomo_run import MemoEmbedder, fresh_database
from memlane.evaluation.metrics import percentile
from memlane.memory import EpisodicMemory
from memlane.recall.ranking import RankingWeights, resolve_weights
from memlane.sessions.importing import locomo_records
from memlane.sessions.memory import SessionMemory
from memlane.sessions.windows import split_turns
from memlane.stores.sqlite import SQLiteStore

__all__ = [
    "DEFAULT_SESSION_CONFIGURATIONS",
    "KS",
    "SessionMetrics",
    "SessionQuestionScore",
    "SessionReport",
    "evidence_sessions",
    "random_hit_at_k",
    "report_to_markdown",
    "run_locomo_sessions",
    "score_sessions",
]

KS = (1, 3, 5, 10)
"""Cut-offs of Hit@k."""

DEFAULT_SESSION_CONFIGURATIONS: Mapping[str, str] = {
    "balanced (default)": "balanced",
    "specific_question": "specific_question",
    "dense relevance only": "relevance_only",
}
"""Configuration label -> weight preset compared by default (the turn-level benchmark's set)."""

AGENT_ID = "locomo"
TURNS_BASELINE = "single turns -> sessions (cosine only)"
RANDOM_BASELINE = "random sessions (expected)"


def evidence_sessions(evidence: Sequence[str]) -> frozenset[int]:
    """Session numbers of evidence ids ``"D<session>:<turn>"`` (``("D3:7", "D3:9", "D5:1")`` -> {3, 5})."""
    return frozenset(int(d.split(":", 1)[0][1:]) for d in evidence)


@dataclass(frozen=True)
class SessionQuestionScore:
    """Session-level scores of one question.

    Attributes:
        category: LoCoMo category 1-5.
        hits: ``{k: 1.0 or 0.0}`` for every k in :data:`KS`.
        recall_at_5: Fraction of the evidence sessions among the first 5 sessions, in [0, 1].
        reciprocal_rank: 1 / rank of the first evidence session (within the top 10), else 0.
    """

    category: int
    hits: dict[int, float]
    recall_at_5: float
    reciprocal_rank: float


def score_sessions(category: int, ranked: Sequence[int], evidence: frozenset[int]) -> SessionQuestionScore:
    """Score a ranking of distinct session numbers (best first) against the evidence sessions.

    Raises:
        ValueError: ``evidence`` is empty.
    """
    if not evidence:
        raise ValueError("a question needs at least one evidence session")
    distinct = list(dict.fromkeys(ranked))
    first = next((i for i, s in enumerate(distinct[:10], start=1) if s in evidence), None)
    return SessionQuestionScore(
        category=category,
        hits={k: 1.0 if evidence.intersection(distinct[:k]) else 0.0 for k in KS},
        recall_at_5=len(evidence.intersection(distinct[:5])) / len(evidence),
        reciprocal_rank=0.0 if first is None else 1.0 / first,
    )


def random_hit_at_k(sessions: int, evidence: int, k: int) -> float:
    """Expected Hit@k of k sessions drawn uniformly without replacement: ``1 - C(N-m, k) / C(N, k)``.

    Args:
        sessions: N >= 1, sessions in the conversation.
        evidence: m in [1, N], how many of them hold evidence.
        k: Sessions drawn, >= 1 (capped at N).
    """
    k = min(k, sessions)
    return 1.0 - math.comb(sessions - evidence, k) / math.comb(sessions, k)


@dataclass(frozen=True)
class SessionMetrics:
    """Means over a group of questions.

    Attributes:
        count: Questions averaged.
        hit: ``{k: mean Hit@k}`` for k in :data:`KS`.
        recall_at_5: Mean R@5 (``nan`` where not measured, e.g. the random baseline).
        mrr: Mean reciprocal rank (``nan`` where not measured).
    """

    count: int
    hit: dict[int, float]
    recall_at_5: float
    mrr: float

    @classmethod
    def of(cls, scores: Sequence[SessionQuestionScore]) -> SessionMetrics:
        """Average ``scores`` (at least one)."""
        n = len(scores)
        if n == 0:
            raise ValueError("cannot average zero questions")
        return cls(
            count=n,
            hit={k: math.fsum(s.hits[k] for s in scores) / n for k in KS},
            recall_at_5=math.fsum(s.recall_at_5 for s in scores) / n,
            mrr=math.fsum(s.reciprocal_rank for s in scores) / n,
        )

    def to_dict(self) -> dict[str, Any]:
        """JSON form: ``{"count", "hit_at_1", ..., "recall_at_5", "mrr"}`` (NaN as ``null``)."""
        out: dict[str, Any] = {"count": self.count}
        out.update({f"hit_at_{k}": v for k, v in self.hit.items()})
        out["recall_at_5"] = None if math.isnan(self.recall_at_5) else self.recall_at_5
        out["mrr"] = None if math.isnan(self.mrr) else self.mrr
        return out


@dataclass(frozen=True)
class ConfigurationResult:
    """Scores of one ranking configuration (or baseline).

    Attributes:
        name: Label.
        weights: Ranking weights (``None`` for the random baseline).
        overall: Means over every question.
        by_category: Category -> means.
    """

    name: str
    weights: RankingWeights | None
    overall: SessionMetrics
    by_category: dict[int, SessionMetrics]


def _group(
    name: str, weights: RankingWeights | None, scores: Sequence[SessionQuestionScore]
) -> ConfigurationResult:
    groups: defaultdict[int, list[SessionQuestionScore]] = defaultdict(list)
    for s in scores:
        groups[s.category].append(s)
    return ConfigurationResult(
        name=name,
        weights=weights,
        overall=SessionMetrics.of(scores),
        by_category={c: SessionMetrics.of(groups[c]) for c in sorted(groups)},
    )


@dataclass(frozen=True)
class SessionReport:
    """Everything one session-level run measured.

    Attributes:
        results: One per configuration, then the baselines.
        conversations: Conversations evaluated.
        sessions: Session episodes stored.
        windows: Turns (windows) embedded.
        questions: Questions scored per configuration.
        skipped_without_evidence: Questions of the chosen categories without evidence.
        store_windows_per_second: Windows embedded and stored per second.
        search_ms_p50: Median ``search_sessions`` latency in ms (query embedding included).
        search_ms_p95: 95th percentile of it.
        embedding_model: The embedder's model id.
        categories: Categories evaluated.
        turn_level: Turn-level figures quoted from the turn-level results file (or empty).
        meta: Machine and run information.
    """

    results: list[ConfigurationResult]
    conversations: int
    sessions: int
    windows: int
    questions: int
    skipped_without_evidence: int
    store_windows_per_second: float
    search_ms_p50: float
    search_ms_p95: float
    embedding_model: str
    categories: tuple[int, ...]
    turn_level: dict[str, Any] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict of the report."""
        return {
            "benchmark": "LoCoMo (locomo10.json), session-level retrieval (search_sessions)",
            "categories": list(self.categories),
            "conversations": self.conversations,
            "sessions": self.sessions,
            "windows": self.windows,
            "questions": self.questions,
            "skipped_without_evidence": self.skipped_without_evidence,
            "embedding_model": self.embedding_model,
            "store_windows_per_second": self.store_windows_per_second,
            "search_ms_p50": self.search_ms_p50,
            "search_ms_p95": self.search_ms_p95,
            "configurations": [
                {
                    "name": r.name,
                    "weights": None
                    if r.weights is None
                    else {
                        "relevance": r.weights.relevance,
                        "recency": r.weights.recency,
                        "importance": r.weights.importance,
                    },
                    "overall": r.overall.to_dict(),
                    "by_category": {str(c): m.to_dict() for c, m in r.by_category.items()},
                }
                for r in self.results
            ],
            "turn_level_quoted": self.turn_level,
            "meta": self.meta,
        }


def _quote_turn_level(path: Path | None) -> dict[str, Any]:
    """``{configuration: {"recall_at_10", "hit_at_10"}}`` from a turn-level ``locomo.json``, if readable."""
    if path is None or not path.is_file():
        return {}
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        quoted = {
            str(c["name"]): {
                "recall_at_10": c["all"]["overall"]["recall_at_10"],
                "hit_at_10": c["all"]["overall"]["hit_at_10"],
            }
            for c in document.get("configurations", [])
        }
    except (ValueError, KeyError, TypeError):
        return {}
    return {"file": path.name, "date": document.get("meta", {}).get("date"), "configurations": quoted}


Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``."""


def _store_sessions(
    sessions: SessionMemory, selected: Sequence[LocomoConversation], progress: Progress | None
) -> tuple[int, int, float]:
    """Store every session of ``selected``; returns ``(sessions, windows, seconds spent storing)``."""
    records = [(conv, r) for conv in selected for r in locomo_records(conv)]
    windows = 0
    store_seconds = 0.0
    for n, (conv, record) in enumerate(records, start=1):
        began = time.perf_counter()
        episode = sessions.store_session(
            record.session_id,
            record.messages,
            agent_id=AGENT_ID,
            user_id=conv.sample_id,
            started_at=record.started_at,
            ended_at=record.ended_at,
            metadata=record.metadata,
        )
        store_seconds += time.perf_counter() - began
        windows += len(split_turns(episode.messages))
        if progress:
            progress("store sessions", n, len(records))
    return len(records), windows, store_seconds


def _embed_turns(
    memo: MemoEmbedder, selected: Sequence[LocomoConversation], progress: Progress | None
) -> dict[str, tuple[NDArray[np.float32], NDArray[np.int64]]]:
    """Sample id -> (every turn's vector, the session index of each turn), for the turn baseline."""
    total_turns = sum(len(c.turns) for c in selected)
    done = 0
    turn_vectors: dict[str, tuple[NDArray[np.float32], NDArray[np.int64]]] = {}
    for conv in selected:
        vectors = memo.embed([t.content for t in conv.turns])
        turn_vectors[conv.sample_id] = (
            vectors,
            np.array([t.session_index for t in conv.turns], dtype=np.int64),
        )
        done += len(conv.turns)
        if progress:
            progress("embed turns", done, total_turns)
    return turn_vectors


def _random_score(
    conv: LocomoConversation, q: LocomoQuestion, evidence: frozenset[int]
) -> SessionQuestionScore:
    """The expected hits of a random session order (the random baseline)."""
    count = len(conv.session_dates)
    return SessionQuestionScore(
        category=q.category,
        hits={k: random_hit_at_k(count, len(evidence), k) for k in KS},
        recall_at_5=math.nan,
        reciprocal_rank=math.nan,
    )


def _search_score(
    sessions: SessionMemory,
    conv: LocomoConversation,
    q: LocomoQuestion,
    evidence: frozenset[int],
    weights: RankingWeights,
) -> tuple[SessionQuestionScore, float]:
    """Score one question's session search under ``weights``, and the search's latency in ms."""
    began = time.perf_counter()
    found = sessions.search_sessions(
        AGENT_ID,
        conv.sample_id,
        q.question,
        top_k=max(KS),
        now=conv.last_session_at,
        weights=weights,
        context_turns=0,
        max_per_session=1,
    )
    milliseconds = (time.perf_counter() - began) * 1000.0
    ranked = [int(s.session_id.rsplit("_", 1)[1]) for s in found]
    return score_sessions(q.category, ranked, evidence), milliseconds


def _turn_score(
    memo: MemoEmbedder,
    turns: tuple[NDArray[np.float32], NDArray[np.int64]],
    q: LocomoQuestion,
    evidence: frozenset[int],
) -> SessionQuestionScore:
    """Score the sessions of the turns ranked by cosine similarity alone (the turn baseline)."""
    vectors, session_of = turns
    cosine = vectors @ memo.embed([q.question])[0]
    order = np.argsort(-cosine, kind="stable")
    return score_sessions(q.category, [int(s) for s in session_of[order]], evidence)


def _random_result(random_scores: Sequence[SessionQuestionScore]) -> ConfigurationResult:
    """The random baseline's result: hit rates only (its recall@5 and MRR are not defined)."""
    random = _group(RANDOM_BASELINE, None, random_scores)
    return ConfigurationResult(
        name=random.name,
        weights=None,
        overall=SessionMetrics(random.overall.count, random.overall.hit, math.nan, math.nan),
        by_category={
            c: SessionMetrics(m.count, m.hit, math.nan, math.nan) for c, m in random.by_category.items()
        },
    )


def run_locomo_sessions(  # noqa: PLR0913  (keyword-only options = `memlane sessions eval` flags)
    path: str | Path,
    *,
    embedder: Embedder,
    workdir: str | Path,
    configurations: Mapping[str, RankingWeights | str] = DEFAULT_SESSION_CONFIGURATIONS,
    categories: Sequence[int] = (1, 2, 3, 4),
    conversations: Sequence[int] | None = None,
    turn_baseline: bool = True,
    turn_results: Path | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> SessionReport:
    """Store every LoCoMo session as a session episode and score session-level retrieval.

    Args:
        path: ``locomo10.json``.
        embedder: The embedder under test (wrapped in :class:`MemoEmbedder`, so each text is
            embedded once).
        workdir: Directory for the SQLite file (``locomo-sessions-eval.db``, replaced if present).
        configurations: Label -> ranking weights (preset name or :class:`RankingWeights`).
        categories: Question categories (LoCoMo 1-5; default 1-4).
        conversations: Positions (0-9) to run; default all.
        turn_baseline: Also embed every turn on its own (``"<speaker>: <text>"``, the
            turn-level benchmark's episode content) and score the sessions of the turns ranked
            by cosine similarity alone.
        turn_results: A turn-level results file (``benchmarks/results/locomo.json``) whose
            figures are quoted in the report.
        progress: Called as ``progress(stage, done, total)``; stages ``"store sessions"``,
            ``"embed turns"``, ``"ask"``.

    Returns:
        The :class:`SessionReport`.

    Raises:
        LocomoFormatError: the file is not LoCoMo-shaped. ValidationError: a bad configuration.
        ValueError: no question to evaluate.
    """
    data, _ = load_locomo(path)
    chosen = list(range(len(data))) if conversations is None else list(conversations)
    selected: list[LocomoConversation] = [data[i] for i in chosen]
    weights = {name: resolve_weights(w, RankingWeights()) for name, w in configurations.items()}
    if not weights:
        raise ValueError("at least one configuration is needed")
    questions = [(conv, q) for conv in selected for q in conv.questions if q.category in categories]
    askable = [(conv, q) for conv, q in questions if q.has_evidence]
    if not askable:
        raise ValueError("no question with evidence in the chosen categories")
    memo = MemoEmbedder(embedder)
    store = SQLiteStore(fresh_database(Path(workdir) / "locomo-sessions-eval.db"))
    scores: dict[str, list[SessionQuestionScore]] = {name: [] for name in weights}
    turn_scores: list[SessionQuestionScore] = []
    random_scores: list[SessionQuestionScore] = []
    latencies: list[float] = []
    try:
        sessions = EpisodicMemory(store, memo, tenant_id="locomo", owns_store=False).sessions
        stored_sessions, windows, store_seconds = _store_sessions(sessions, selected, progress)
        turn_vectors = _embed_turns(memo, selected, progress) if turn_baseline else {}
        for n, (conv, q) in enumerate(askable, start=1):
            evidence = evidence_sessions(q.evidence)
            random_scores.append(_random_score(conv, q, evidence))
            for index, (name, w) in enumerate(weights.items()):
                score, milliseconds = _search_score(sessions, conv, q, evidence, w)
                if index == 0:
                    latencies.append(milliseconds)
                scores[name].append(score)
            if turn_baseline:
                turn_scores.append(_turn_score(memo, turn_vectors[conv.sample_id], q, evidence))
            if progress:
                progress("ask", n, len(askable))
    finally:
        store.close()
    results = [_group(name, weights[name], rows) for name, rows in scores.items()]
    if turn_baseline:
        results.append(
            _group(TURNS_BASELINE, resolve_weights("relevance_only", RankingWeights()), turn_scores)
        )
    results.append(_random_result(random_scores))
    return SessionReport(
        results=results,
        conversations=len(selected),
        sessions=stored_sessions,
        windows=windows,
        questions=len(askable),
        skipped_without_evidence=len(questions) - len(askable),
        store_windows_per_second=windows / store_seconds if store_seconds else math.nan,
        search_ms_p50=percentile(latencies, 50),
        search_ms_p95=percentile(latencies, 95),
        embedding_model=embedder.model_id,
        categories=tuple(categories),
        turn_level=_quote_turn_level(turn_results),
        meta={
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "machine": platform.machine(),
        },
    )


def _fmt(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.3f}"


def report_to_markdown(report: SessionReport) -> str:
    """Render the report as Markdown: Hit@k per configuration and baseline, then Hit@5 per category."""
    cats = list(report.categories)
    lines = [
        f"LoCoMo session-level retrieval, categories {', '.join(map(str, cats))}: "
        f"{report.questions:,} questions; {report.sessions} sessions ({report.windows:,} turn windows) "
        f"in {report.conversations} conversations; embedding model `{report.embedding_model}`.",
        "",
        "| configuration | Hit@1 | Hit@3 | Hit@5 | Hit@10 | R@5 | MRR | "
        + " | ".join(f"Hit@5 cat {c} ({LOCOMO_CATEGORIES.get(c, '?')})" for c in cats)
        + " |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | " + " | ".join("---:" for _ in cats) + " |",
    ]
    for r in report.results:
        o = r.overall
        per_cat = [r.by_category.get(c) for c in cats]
        lines.append(
            f"| {r.name} | "
            + " | ".join(_fmt(o.hit[k]) for k in KS)
            + f" | {_fmt(o.recall_at_5)} | {_fmt(o.mrr)} | "
            + " | ".join("-" if m is None else _fmt(m.hit[5]) for m in per_cat)
            + " |"
        )
    lines += [
        "",
        "Hit@k is 1 when a session holding an evidence turn is among the first k distinct sessions of "
        "`search_sessions` (session-level recall@k); R@5 is the fraction of the evidence sessions in "
        "the top 5; MRR is the mean reciprocal rank of the first evidence session (0 beyond rank 10). "
        "A conversation has 19-32 sessions, so the random row is the floor.",
        f"Store: {report.store_windows_per_second:,.0f} turn windows/s (embedding included). "
        f"search_sessions latency, query embedding included: p50 {report.search_ms_p50:.1f} ms, "
        f"p95 {report.search_ms_p95:.1f} ms; {report.skipped_without_evidence} questions without evidence "
        "skipped.",
    ]
    quoted = report.turn_level.get("configurations") if report.turn_level else None
    if quoted:
        lines += [
            "",
            f"Turn-level figures beside them (quoted from `{report.turn_level.get('file')}`, "
            f"run {report.turn_level.get('date')}; turns, not sessions):",
            "",
            "| configuration | turn R@10 | turn Hit@10 |",
            "| --- | ---: | ---: |",
        ]
        lines += [
            f"| {name} | {values['recall_at_10']:.3f} | {values['hit_at_10']:.3f} |"
            for name, values in quoted.items()
        ]
    return "\n".join(lines) + "\n"
