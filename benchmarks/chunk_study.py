"""Long turns past the embedder's window: how much BEAM/LoCoMo text dense recall never sees, and chunking.

A study (issue #20): the bundled MiniLM (:class:`memlane.embeddings.local.LocalEmbedder`) truncates
every text at 256 word pieces, so the tail of a long assistant turn is invisible to the embeddings.
It measures

* (a) the share of BEAM 1-10 and LoCoMo 0-4 turns (and of their evidence turns, and of all their
  word pieces) beyond the window;
* (b) R@10 of ``recall_episodes(question, limit=10)`` (library defaults), of ``retrieval="dense"``
  and of the coverage-power grid of :mod:`fusion_study` when each turn's vector is

  - ``truncate 256``: today's vector (the first window; must reproduce the recorded cosines),
  - ``truncate 128`` / ``truncate 512``: one shorter window, or one of 512 word pieces (the model's
    position limit; it was trained on 128-256),
  - ``mean of 256 and 512``, ``mean of first two chunks``: the normalised mean of those two vectors,
  - ``mean of chunks``: windows of 256 word pieces (254 + [CLS]/[SEP]) overlapping by ``OVERLAP``,
    each mean-pooled and normalised, averaged and normalised again (one vector, no schema change),
  - ``token-weighted mean``: the same, each window weighted by its word pieces,
  - ``max over chunks``: one vector per window, a turn's cosine is its best window's (multi-vector);

* BM25 length normalisation ``b`` in {0.3 (the stores'), 0.5, 0.75}: every candidate's per-scope BM25
  recomputed as the stores compute it (:func:`memlane.bm25.score_matches` over the conversation's indexed
  terms, the common-term drop of :class:`memlane.stores.common_terms.CommonTermFilter`; ``b = 0.3``
  must reproduce the recorded scores);
* per question type, why dense beats the defaults where it does: the signal ablations of
  :mod:`fusion_study` per type, the keyword share the coverage rule gives each type, and what the
  defaults' top 10 is made of (assistant turns, hits lifted by the conversation context);
* other generalising ideas, from today's signals: context that can only lift (``max(r0, rc)``), lighter
  neighbour/group weights, a keyword share that also shrinks with the query's length
  (``min(1, k0 / terms)``; it patches :func:`memlane.recall.ranking.convex_dense_weight` and
  ``contextual_relevance`` while it ranks);
* the ingest cost of chunking (word pieces encoded and seconds, one BEAM conversation, same process).

The candidates are those :mod:`fusion_study` records with the library defaults: every BEAM
conversation (about 243 turns) lies inside the 500-candidate dense pool, so replacing each candidate's
cosine by the variant's is exactly what the pipeline would rank; no LoCoMo 0-4 turn exceeds 128 word pieces,
so there every variant is today's vector (checked) and LoCoMo keeps its recorded cosines.

Decision by leave-one-conversation-out cross-validation over the 15 tuning conversations (choose the
(representation, b, coverage power) with the best mean of the two benchmarks' R@10 on 14, score it on the
15th), with per-conversation paired bootstrap CIs. LoCoMo 5-9 is never read. Writes
``benchmarks/results/chunk_study.{json,md}``. Outcome: nothing here ships (the results file says why).

    python benchmarks/chunk_study.py [workdir] [datasets]   # ~35 min on 2 cores (reuses its cache in workdir)
"""

from __future__ import annotations

import json
import pickle
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fusion_study
from fusion_study import BASE, Question, recall10

import memlane.recall.ranking as ranking
from memlane.analysis import index_terms_batch, keyword_text, query_terms
from memlane.bm25 import Bm25Params, score_matches
from memlane.config.profile import ContextWeights, RankingProfile
from memlane.embeddings.base import l2_normalize
from memlane.embeddings.local import LocalEmbedder
from memlane.evaluation.beam import MAX_TEXT_CHARS, load_beam
from memlane.evaluation.locomo import load_locomo
from memlane.recall.ranking import convex_dense_weight, rank
from memlane.recall.relevance import contextual_relevance
from memlane.stores.common_terms import CommonTermFilter

DATASETS = fusion_study.DATASETS
WINDOW = 256  # word pieces per window, [CLS] and [SEP] included (the model's training length)
OVERLAP = 32  # word pieces shared by consecutive windows
REPRESENTATIONS = (
    "truncate 256",
    "truncate 128",
    "truncate 512",
    "mean of 256 and 512",
    "mean of first two chunks",
    "mean of chunks",
    "token-weighted mean",
    "max over chunks",
)
POWERS = (0.0, 1.0, 2.0, 3.0)
Vectors = NDArray[np.float32]


class ChunkEncoder:
    """Every window of a text through the bundled MiniLM (its session and tokenizer, no truncation)."""

    def __init__(self, embedder: LocalEmbedder) -> None:
        from tokenizers import Tokenizer

        embedder.embed(["warm up"])  # loads the session
        self._embedder = embedder
        file = resources.files("memlane.embeddings") / "data" / "all-MiniLM-L6-v2-tokenizer.json"
        self._tokenizer = Tokenizer.from_str(file.read_text(encoding="utf-8"))
        self._tokenizer.no_truncation()
        self._tokenizer.no_padding()

    def pieces(self, texts: Sequence[str]) -> list[list[int]]:
        """Word-piece ids of each text without [CLS]/[SEP]."""
        return [e.ids[1:-1] for e in self._tokenizer.encode_batch(list(texts))]

    def windows(self, ids: list[int], size: int, overlap: int) -> list[list[int]]:
        """``[CLS] + piece window + [SEP]`` of at most ``size`` ids, consecutive ones sharing ``overlap``."""
        inner, step = size - 2, size - 2 - overlap
        out, start = [], 0
        while True:
            out.append([101, *ids[start : start + inner], 102])
            if start + inner >= len(ids):
                return out
            start += step

    def encode(self, windows: list[list[int]], batch: int = 16) -> Vectors:
        """Mean-pooled, normalised vector of each window ``[k, 384]`` (sorted by length to pad little)."""
        session = self._embedder._session(1)
        out = np.empty((len(windows), 384), dtype=np.float32)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i]))
        for start in range(0, len(order), batch):
            idx = order[start : start + batch]
            width = max(len(windows[i]) for i in idx)
            ids = np.zeros((len(idx), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for row, i in enumerate(idx):
                ids[row, : len(windows[i])] = windows[i]
                mask[row, : len(windows[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if self._embedder._needs_token_type_ids:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            out[idx] = l2_normalize((hidden * weights).sum(axis=1) / weights.sum(axis=1))
        return out


@dataclass
class Turns:
    """Every turn's vectors under each representation: ``single[rep]`` ``[n, 384]``, ``chunks`` per turn."""

    index: dict[tuple[str, str], int]
    pieces: NDArray[np.int64]
    single: dict[str, Vectors]
    chunks: list[Vectors]


def beam_texts(datasets: Path) -> dict[tuple[str, str], str]:
    """``(conversation, message id) -> episode content`` exactly as ``memlane eval beam`` stores it."""
    return {
        (c.name, str(m.id)): f"{m.role}: {m.content}"[:MAX_TEXT_CHARS]
        for c in load_beam(datasets / fusion_study.BEAM)
        for m in c.messages
    }


def locomo_texts(datasets: Path, *, keyword: bool = False) -> dict[tuple[str, str], str]:
    """``(conversation position, dia_id) -> content`` of LoCoMo 0-4 (``keyword``: with the caption)."""
    convs, _ = load_locomo(datasets / fusion_study.LOCOMO)
    return {
        (str(p), t.dia_id): keyword_text(t.content, {"caption": t.blip_caption} if keyword else None)
        for p in fusion_study.TUNE
        for t in convs[p].turns
    }


@dataclass
class Scope:
    """One conversation's keyword index rows: ``id -> (terms, token count)``, and its BM25 statistics."""

    rows: dict[str, tuple[str, int]]
    sets: dict[str, frozenset[str]]
    avgdl: float


def keyword_scopes(texts: dict[tuple[str, str], str]) -> dict[str, Scope]:
    """Per conversation, every turn's indexed terms as the stores index them."""
    by_conv: dict[str, dict[str, str]] = {}
    for (conv, i), text in texts.items():
        by_conv.setdefault(conv, {})[i] = text
    out = {}
    for conv, turns in by_conv.items():
        rows = dict(zip(turns, index_terms_batch(list(turns.values())), strict=True))
        out[conv] = Scope(
            rows,
            {i: frozenset(t.split()) for i, (t, _) in rows.items()},
            float(np.mean([c for _, c in rows.values()])),
        )
    return out


def bm25_of(question: Question, scope: Scope, text: str, b: float) -> NDArray[np.float64]:
    """``[n]`` per-scope BM25 of the candidates with length normalisation ``b`` (NaN = no match)."""
    terms = query_terms(text)
    df = {t: sum(t in s for s in scope.sets.values()) for t in terms}
    n = len(scope.rows)
    common = CommonTermFilter.MIN_ROWS  # the stores drop a term carried by over half of a large scope
    df = {t: d for t, d in df.items() if d > 0 and (n < common or d <= n / 2)}
    rows = [(k, *scope.rows[i], 0.0, None) for k, i in enumerate(question.ids)]
    out = np.full(len(question.ids), np.nan)
    if df:
        for key, score, _, _ in score_matches(
            rows, df, len(scope.rows), scope.avgdl, len(rows), Bm25Params(b=b)
        ):
            out[key] = score
    return out


def turn_vectors(encoder: ChunkEncoder, texts: dict[tuple[str, str], str]) -> Turns:
    """Encode every window of every text once and build each representation from them."""
    keys = list(texts)
    pieces = encoder.pieces([texts[k] for k in keys])
    chunked = [encoder.windows(p, WINDOW, OVERLAP) for p in pieces]
    flat = [w for ws in chunked for w in ws]
    vectors = encoder.encode(flat)
    bounds = np.cumsum([0, *[len(ws) for ws in chunked]])
    chunks = [vectors[bounds[i] : bounds[i + 1]] for i in range(len(keys))]
    sizes = [np.array([len(w) - 2 for w in ws], dtype=np.float32) for ws in chunked]
    long = encoder.encode([[101, *p[:510], 102] for p in pieces])
    single = {
        "truncate 256": np.stack([c[0] for c in chunks]),
        "truncate 512": long,
        "mean of chunks": l2_normalize(np.stack([c.mean(axis=0) for c in chunks])),
        "token-weighted mean": l2_normalize(
            np.stack([(c * s[:, None]).sum(axis=0) for c, s in zip(chunks, sizes, strict=True)])
        ),
    }
    index = {k: i for i, k in enumerate(keys)}
    return Turns(index, np.array([len(p) for p in pieces]), single, chunks)


def add_representations(encoder: ChunkEncoder, turns: Turns, texts: dict[tuple[str, str], str]) -> Turns:
    """Add the shorter window (128), the mean of the 256 and 512 vectors and of the first two windows."""
    pieces = encoder.pieces([texts[k] for k in turns.index])
    single = dict(turns.single)
    single["truncate 128"] = encoder.encode([[101, *p[:126], 102] for p in pieces])
    single["mean of 256 and 512"] = l2_normalize(single["truncate 256"] + single["truncate 512"])
    single["mean of first two chunks"] = l2_normalize(np.stack([c[:2].mean(axis=0) for c in turns.chunks]))
    return replace(turns, single=single)


def cosines(turns: Turns, conversation: str, ids: list[str], query: Vectors, rep: str) -> NDArray[np.float64]:
    """``[n]`` cosine of the query to each candidate turn under representation ``rep``."""
    rows = [turns.index[(conversation, i)] for i in ids]
    if rep == "max over chunks":
        return np.array([float((turns.chunks[r] @ query).max()) for r in rows])
    return np.asarray(turns.single[rep][rows] @ query, dtype=np.float64)


def lengths(turns: Turns, evidence: set[tuple[str, str]]) -> dict[str, float]:
    """(a): shares of turns, evidence turns and word pieces beyond the window."""
    n = turns.pieces + 2
    ev = np.array([k in evidence for k in turns.index])
    return {
        "turns": len(n),
        "median_pieces": float(np.median(n)),
        "share_over_256": float((n > WINDOW).mean()),
        "share_over_512": float((n > 512).mean()),
        "evidence_turns": int(ev.sum()),
        "evidence_share_over_256": float((n[ev] > WINDOW).mean()) if ev.any() else 0.0,
        "pieces_beyond_256": float(np.clip(n - WINDOW, 0, None).sum() / n.sum()),
        "windows_per_turn": float(np.mean([len(c) for c in turns.chunks])),
    }


def rescored(questions: list[Question], turns: Turns, queries: Vectors, rep: str) -> list[Question]:
    """The questions with each candidate's cosine replaced by representation ``rep``'s."""
    return [
        replace(q, signals=replace(q.signals, cosine=cosines(turns, q.conversation, q.ids, queries[k], rep)))
        for k, q in enumerate(questions)
    ]


def rank_variants() -> dict[str, tuple[RankingProfile, str | None]]:
    """Label -> (profile, retrieval override): defaults, dense, keyword and the coverage-power grid."""
    out: dict[str, tuple[RankingProfile, str | None]] = {
        "defaults": (BASE, None),
        "dense": (BASE, "dense"),
        "keyword": (BASE, "keyword"),
    }
    for p in POWERS:
        out[f"p={p:g}"] = (replace(BASE, fusion=replace(BASE.fusion, coverage_power=p)), None)
    return out


def ablations() -> dict[str, tuple[RankingProfile, str | None]]:
    """Signal ablations for the per-type analysis (all from today's vectors)."""
    no_ctx = ContextWeights(neighbour=0.0, neighbour2=0.0, group=0.0)
    return {
        "defaults": (BASE, None),
        "dense": (BASE, "dense"),
        "keyword": (BASE, "keyword"),
        "defaults, no context": (replace(BASE, context=no_ctx), None),
        "dense, no context": (replace(BASE, context=no_ctx), "dense"),
        "defaults, no group": (replace(BASE, context=ContextWeights(group=0.0)), None),
        "dense, no group": (replace(BASE, context=ContextWeights(group=0.0)), "dense"),
        "defaults, no neighbours": (
            replace(BASE, context=ContextWeights(neighbour=0.0, neighbour2=0.0)),
            None,
        ),
    }


def per_type(
    questions: list[Question], scores: dict[str, NDArray[np.float64]]
) -> dict[str, dict[str, float]]:
    """R@10 of each label per question type."""
    types = sorted({q.type for q in questions})
    kinds = np.array([q.type for q in questions])
    return {t: {label: float(s[kinds == t].mean()) for label, s in scores.items()} for t in types}


def keyword_share(questions: list[Question]) -> dict[str, float]:
    """Mean keyword share ``1 - w`` the coverage rule gives each question type (today's defaults)."""
    kinds = np.array([q.type for q in questions])
    share = np.array([1.0 - convex_dense_weight(q.signals, BASE.fusion) for q in questions])
    return {t: float(share[kinds == t].mean()) for t in sorted(set(kinds))}


def score_table(
    questions: list[Question], table: dict[str, tuple[RankingProfile, str | None]]
) -> dict[str, NDArray[np.float64]]:
    return {label: recall10(questions, profile, mode) for label, (profile, mode) in table.items()}


def _cached(path: Path, make: Callable[[], Any]) -> Any:
    if path.exists():
        return pickle.loads(path.read_bytes())
    value = make()
    path.write_bytes(pickle.dumps(value))
    return value


BS = (0.3, 0.5, 0.75)


def question_texts(datasets: Path) -> dict[str, list[str]]:
    """Each benchmark's scored questions in :func:`fusion_study.capture`'s order."""
    beam = [q.question for c in load_beam(datasets / fusion_study.BEAM) for q in c.questions if q.evidence]
    convs, _ = load_locomo(datasets / fusion_study.LOCOMO)
    locomo = [
        q.question
        for p in fusion_study.TUNE
        for q in convs[p].questions
        if q.category in (1, 2, 3, 4) and q.has_evidence
    ]
    return {"beam": beam, "locomo": locomo}


def with_keyword(
    questions: list[Question], scopes: dict[str, Scope], texts: list[str], b: float
) -> list[Question]:
    """The questions with each candidate's BM25 recomputed with length normalisation ``b``."""
    return [
        replace(q, signals=replace(q.signals, keyword=bm25_of(q, scopes[q.conversation], t, b)))
        for q, t in zip(questions, texts, strict=True)
    ]


def _gap(a: list[Question], b: list[Question], field: str) -> float:
    return float(
        max(
            np.nanmax(
                np.abs(
                    np.nan_to_num(getattr(x.signals, field), nan=-1.0)
                    - np.nan_to_num(getattr(y.signals, field), nan=-1.0)
                )
            )
            for x, y in zip(a, b, strict=True)
        )
    )


def all_scores(
    data: dict[str, list[Question]],
    turns: dict[str, Turns],
    scopes: dict[str, dict[str, Scope]],
    datasets: Path,
) -> tuple[dict[str, dict[str, NDArray[np.float64]]], dict[str, float]]:
    """R@10 of every (representation, b, ranking) on both benchmarks, and the reproduction checks."""
    embedder = LocalEmbedder()
    texts = question_texts(datasets)
    checks = {}
    scores: dict[str, dict[str, NDArray[np.float64]]] = {}
    table = rank_variants()
    for name, questions in data.items():
        assert len(texts[name]) == len(questions)
        queries = embedder.embed(texts[name])
        scores[name] = {}
        keyed = {b: with_keyword(questions, scopes[name], texts[name], b) for b in BS}
        checks[f"{name} bm25 gap at b=0.3"] = _gap(keyed[0.3], questions, "keyword")
        for rep in REPRESENTATIONS:
            if name == "locomo" and rep != REPRESENTATIONS[0]:
                # no LoCoMo 0-4 turn exceeds 128 word pieces: every representation is today's vector
                assert int(turns[name].pieces.max()) + 2 <= 128  # so truncation at 128 changes nothing either
                for b in BS:
                    for label in table:
                        scores[name][f"{rep} | b={b:g} | {label}"] = scores[name][
                            f"{REPRESENTATIONS[0]} | b={b:g} | {label}"
                        ]
                continue
            for b in BS:
                # LoCoMo keeps its recorded cosines: its dense pool (500) is not the whole conversation
                qs = keyed[b] if name == "locomo" else rescored(keyed[b], turns[name], queries, rep)
                if rep == REPRESENTATIONS[0] and b == 0.3:
                    checks[f"{name} cosine gap"] = _gap(qs, questions, "cosine")
                for label, sc in score_table(qs, table).items():
                    scores[name][f"{rep} | b={b:g} | {label}"] = sc
    return scores, checks


@contextmanager
def patched(name: str, function: Callable[..., Any]) -> Iterator[None]:
    """Replace ``memlane.recall.ranking.<name>`` (a formula :func:`rank` calls) while active."""
    real = getattr(ranking, name)
    setattr(ranking, name, function)
    try:
        yield
    finally:
        setattr(ranking, name, real)


def lift_only(base: Any, adjacent: Any, groups: Any, weights: ContextWeights) -> NDArray[np.float64]:
    """Context that can only lift: ``max(r0, rc)`` (today a relevant turn is averaged with its neighbours)."""
    return np.maximum(base, contextual_relevance(base, adjacent, groups, weights))


def query_length_share(k0: float, terms: list[int]) -> Callable[[list[Question]], NDArray[np.float64]]:
    """Keyword share also scaled by ``min(1, k0 / query terms)`` (long queries sum common words)."""

    def run(questions: list[Question]) -> NDArray[np.float64]:
        out = []
        for q, n in zip(questions, terms, strict=True):

            def weight(signals: Any, fusion: Any, n: int = n) -> float:
                w = convex_dense_weight(signals, fusion)
                return 1.0 - (1.0 - w) * (min(1.0, k0 / n) if n else 1.0)

            with patched("convex_dense_weight", weight):
                out.append(recall10([q], BASE, None)[0])
        return np.asarray(out)

    return run


def other_ideas(data: dict[str, list[Question]], texts: dict[str, list[str]]) -> dict[str, dict[str, Any]]:
    """R@10 of each benchmark under the other generalising ideas (today's vectors and BM25)."""
    ctx = BASE.context
    plain: dict[str, RankingProfile] = {
        "neighbour 0.3": replace(BASE, context=replace(ctx, neighbour=0.3)),
        "neighbour 0.3, neighbour2 0.1": replace(BASE, context=replace(ctx, neighbour=0.3, neighbour2=0.1)),
        "group 0.2": replace(BASE, context=replace(ctx, group=0.2)),
    }
    out: dict[str, dict[str, Any]] = {label: {} for label in ["context lifts only: max(r0, rc)", *plain]}
    for k0 in (4, 6, 8):
        out[f"keyword share x min(1, {k0} / query terms)"] = {}
    for name, questions in data.items():
        with patched("contextual_relevance", lift_only):
            out["context lifts only: max(r0, rc)"][name] = recall10(questions, BASE, None)
        for label, profile in plain.items():
            out[label][name] = recall10(questions, profile, None)
        terms = [len(query_terms(t)) for t in texts[name]]
        for k0 in (4, 6, 8):
            out[f"keyword share x min(1, {k0} / query terms)"][name] = query_length_share(k0, terms)(
                questions
            )
    return out


def composition(questions: list[Question], texts: dict[tuple[str, str], str]) -> dict[str, dict[str, float]]:
    """Per BEAM type: assistant turns in the top 10 (defaults, dense), context-lifted hits, evidence role."""
    rows: dict[str, list[list[float]]] = {}
    for q in questions:
        row = []
        for mode in (None, "dense"):
            hits = rank(q.signals, BASE, replace(q.options, retrieval=mode or q.options.retrieval))
            row.append(sum(texts[(q.conversation, q.ids[h.index])].startswith("assistant:") for h in hits))
            if mode is None:
                lifted = sum(h.breakdown.relevance > h.breakdown.own_relevance + 0.05 for h in hits)
        ev = [
            texts[(q.conversation, e)].startswith("assistant:")
            for e in q.evidence
            if (q.conversation, e) in texts
        ]
        rows.setdefault(q.type, []).append([*row, lifted, float(np.mean(ev)) if ev else 0.0])
    keys = ("assistant_top10_defaults", "assistant_top10_dense", "context_lifted_top10", "evidence_assistant")
    table = {t: dict(zip(keys, np.mean(v, axis=0).tolist(), strict=True)) for t, v in sorted(rows.items())}
    every = [r for v in rows.values() for r in v]
    table["all"] = dict(zip(keys, np.mean(every, axis=0).tolist(), strict=True))
    return table


def chunk_effect(
    questions: list[Question], turns: Turns, queries: Vectors, texts: dict[tuple[str, str], str]
) -> dict[str, dict[str, float]]:
    """Per representation, ``retrieval="dense"``: assistant turns in the top 10, and the share of evidence
    turns longer / shorter than the window that reach the top 10."""
    out = {}
    for rep in REPRESENTATIONS:
        assistant, found = [], {"long": [], "short": []}
        for q in rescored(questions, turns, queries, rep):
            hits = rank(q.signals, BASE, replace(q.options, retrieval="dense"))
            top = {q.ids[h.index] for h in hits}
            assistant.append(sum(texts[(q.conversation, i)].startswith("assistant:") for i in top))
            for e in q.evidence:
                if (q.conversation, e) in turns.index:
                    long = turns.pieces[turns.index[(q.conversation, e)]] + 2 > WINDOW
                    found["long" if long else "short"].append(e in top)
        out[rep] = {
            "assistant_top10": float(np.mean(assistant)),
            "long_evidence_found": float(np.mean(found["long"])),
            "long_evidence": len(found["long"]),
            "short_evidence_found": float(np.mean(found["short"])),
            "short_evidence": len(found["short"]),
        }
    return out


def ingest_cost(
    encoder: ChunkEncoder, texts: dict[tuple[str, str], str], conversation: str
) -> dict[str, float]:
    """Embedding cost of one BEAM conversation: word pieces encoded and seconds, truncated vs chunked."""
    pieces = encoder.pieces([t for (c, _), t in texts.items() if c == conversation])
    truncated = [[101, *p[: WINDOW - 2], 102] for p in pieces]
    chunked = [w for p in pieces for w in encoder.windows(p, WINDOW, OVERLAP)]
    out: dict[str, float] = {"turns": len(pieces)}
    for label, windows in (("truncated", truncated), ("chunked", chunked)):
        start = time.perf_counter()
        encoder.encode(windows)
        out[f"{label}_seconds"] = time.perf_counter() - start
        out[f"{label}_pieces"] = float(sum(len(w) for w in windows))
    out["ratio_seconds"] = out["chunked_seconds"] / out["truncated_seconds"]
    out["ratio_pieces"] = out["chunked_pieces"] / out["truncated_pieces"]
    return out


def main(workdir: Path, out_dir: Path, datasets: Path = DATASETS) -> None:
    data: dict[str, list[Question]] = _cached(
        workdir / "capture.pkl", lambda: fusion_study.capture(workdir, datasets)
    )
    encoder = ChunkEncoder(LocalEmbedder())
    turns: dict[str, Turns] = {
        "beam": _cached(workdir / "beam_turns.pkl", lambda: turn_vectors(encoder, beam_texts(datasets))),
        "locomo": _cached(
            workdir / "locomo_turns.pkl", lambda: turn_vectors(encoder, locomo_texts(datasets))
        ),
    }
    turns["beam"] = add_representations(encoder, turns["beam"], beam_texts(datasets))
    scopes = {
        "beam": keyword_scopes(beam_texts(datasets)),
        "locomo": keyword_scopes(locomo_texts(datasets, keyword=True)),
    }
    evidence = {n: {(q.conversation, e) for q in qs for e in q.evidence} for n, qs in data.items()}
    doc: dict[str, Any] = {
        "window": WINDOW,
        "overlap": OVERLAP,
        "lengths": {n: lengths(turns[n], evidence[n]) for n in data},
    }
    doc["ingest_cost"] = ingest_cost(encoder, beam_texts(datasets), "1")
    scores, doc["checks"] = all_scores(data, turns, scopes, datasets)
    grid_labels = [f"{rep} | b={b:g} | p={p:g}" for rep in REPRESENTATIONS for b in BS for p in POWERS]
    picked, doc["cv_choices"] = fusion_study.cross_validate(
        {n: [q.conversation for q in qs] for n, qs in data.items()}, scores, grid_labels
    )
    shown = [f"{rep} | b=0.3 | {label}" for rep in REPRESENTATIONS for label in rank_variants()]
    shown += [f"truncate 256 | b={b:g} | {label}" for b in BS[1:] for label in rank_variants()]
    shown += [f"mean of chunks | b={b:g} | {label}" for b in BS[1:] for label in ("defaults", "dense", "p=2")]
    doc["benchmarks"] = {}
    for name, qs in data.items():
        clusters = [q.conversation for q in qs]
        base, dense = (
            scores[name]["truncate 256 | b=0.3 | defaults"],
            scores[name]["truncate 256 | b=0.3 | dense"],
        )
        rows = {}
        for label in [*shown, "cross-validated choice"]:
            s = picked[name] if label == "cross-validated choice" else scores[name][label]
            rows[label] = {
                "recall_at_10": float(s.mean()),
                "minus_today_defaults": fusion_study.paired_ci(s, base, clusters),
                "minus_today_dense": fusion_study.paired_ci(s, dense, clusters),
            }
        doc["benchmarks"][name] = {"questions": len(qs), "rows": rows}
    beam_q = data["beam"]
    reps = ("truncate 256", "truncate 512", "mean of chunks", "max over chunks")
    focus = [f"{rep} | b=0.3 | {label}" for rep in reps for label in ("defaults", "dense")]
    focus.append("truncate 256 | b=0.75 | defaults")
    doc["beam_per_type"] = per_type(beam_q, {k.replace(" | ", " / "): scores["beam"][k] for k in focus})
    doc["locomo_per_type"] = per_type(
        data["locomo"],
        {k.replace(" | ", " / "): scores["locomo"][k] for k in (focus[0], focus[1], focus[-1])},
    )
    abl = score_table(beam_q, ablations())
    doc["beam_ablations_per_type"] = per_type(beam_q, abl)
    doc["beam_keyword_share_per_type"] = keyword_share(beam_q)
    doc["beam_top10_composition"] = composition(beam_q, beam_texts(datasets))
    beam_queries = LocalEmbedder().embed(question_texts(datasets)["beam"])
    doc["chunk_effect"] = chunk_effect(beam_q, turns["beam"], beam_queries, beam_texts(datasets))
    today = {n: scores[n]["truncate 256 | b=0.3 | defaults"] for n in data}
    doc["other_ideas"] = {
        label: {
            n: {
                "recall_at_10": float(s.mean()),
                "minus_today_defaults": fusion_study.paired_ci(
                    s, today[n], [q.conversation for q in data[n]]
                ),
            }
            for n, s in by.items()
        }
        for label, by in other_ideas(data, question_texts(datasets)).items()
    }
    doc["locomo_keyword_share_per_type"] = keyword_share(data["locomo"])
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "chunk_study.json").write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    (out_dir / "chunk_study.md").write_text(markdown(doc), encoding="utf-8")
    np.savez(
        workdir / "chunk_study_scores.npz",
        **{f"{n}::{k}": v for n, d in scores.items() for k, v in d.items()},
    )
    print(markdown(doc))


def _cell(c: dict[str, float]) -> str:
    return f"{c['mean']:+.3f} [{c['low']:+.3f}, {c['high']:+.3f}]"


def markdown(doc: dict[str, Any]) -> str:
    """The study's tables."""
    lines = [
        f"Chunk study (benchmarks/chunk_study.py): windows of {doc['window']} word pieces overlapping by "
        f"{doc['overlap']}; BEAM 1-10 and LoCoMo 0-4; R@10 of `recall_episodes(question, limit=10)` "
        "re-ranked offline from fusion_study's recorded candidates with each candidate's cosine replaced "
        f"(reproduction of the recorded signals, max abs gap: {doc['checks']}). "
        "CIs: per-conversation paired bootstrap, 95%.",
        "",
        "**(a) Turns beyond the window**",
        "",
        "| benchmark | turns | median word pieces | > 256 | > 512 | evidence turns > 256 | "
        "word pieces past 256 | windows per turn |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, a in doc["lengths"].items():
        lines.append(
            f"| {name} | {a['turns']} | {a['median_pieces']:.0f} | {a['share_over_256']:.1%} | "
            f"{a['share_over_512']:.1%} | {a['evidence_share_over_256']:.1%} of {a['evidence_turns']} | "
            f"{a['pieces_beyond_256']:.1%} | {a['windows_per_turn']:.2f} |"
        )
    cost = doc["ingest_cost"]
    lines += [
        "",
        f"Ingest cost of chunking (BEAM conversation 1, {cost['turns']:.0f} turns, embedding only, "
        f"same process): {cost['chunked_pieces']:.0f} word pieces encoded against "
        f"{cost['truncated_pieces']:.0f} truncated (x{cost['ratio_pieces']:.2f}), "
        f"{cost['chunked_seconds']:.1f} s against {cost['truncated_seconds']:.1f} s "
        f"(x{cost['ratio_seconds']:.2f}). No LoCoMo turn has a second window, so there it costs nothing.",
    ]
    for name, bench in doc["benchmarks"].items():
        lines += [
            "",
            f"**(b) {name}** ({bench['questions']} questions; representation | ranking)",
            "",
            "| variant | R@10 | minus today's defaults | minus today's dense |",
            "| --- | ---: | --- | --- |",
        ]
        for label, row in bench["rows"].items():
            lines.append(
                f"| {label} | {row['recall_at_10']:.3f} | {_cell(row['minus_today_defaults'])} | "
                f"{_cell(row['minus_today_dense'])} |"
            )
    lines += _type_table("BEAM R@10 per question type, by representation", doc["beam_per_type"])
    lines += _type_table("LoCoMo 0-4 R@10 per category", doc["locomo_per_type"])
    lines += _type_table(
        "BEAM R@10 per question type, signal ablations (today's vectors)", doc["beam_ablations_per_type"]
    )
    lines += [
        "",
        "Keyword share `1 - w` the coverage rule gives, mean per type: BEAM "
        + ", ".join(f"{t} {v:.2f}" for t, v in doc["beam_keyword_share_per_type"].items())
        + "; LoCoMo "
        + ", ".join(f"{t} {v:.2f}" for t, v in doc["locomo_keyword_share_per_type"].items())
        + ".",
        "",
        '**What chunking does to dense recall on BEAM** (`retrieval="dense"`, per question; evidence '
        "turns by length)",
        "",
        "| representation | assistant turns in top 10 | long evidence turns found | "
        "short evidence turns found |",
        "| --- | ---: | ---: | ---: |",
        *[
            f"| {rep} | {r['assistant_top10']:.2f} | "
            f"{r['long_evidence_found']:.3f} of {r['long_evidence']} | "
            f"{r['short_evidence_found']:.3f} of {r['short_evidence']} |"
            for rep, r in doc["chunk_effect"].items()
        ],
        "",
        "**Other generalising ideas** (today's vectors and BM25; R@10, minus today's defaults)",
        "",
        "| idea | BEAM | LoCoMo 0-4 |",
        "| --- | --- | --- |",
        *[
            f"| {label} | "
            + " | ".join(
                f"{r[n]['recall_at_10']:.3f} ({_cell(r[n]['minus_today_defaults'])})"
                for n in ("beam", "locomo")
            )
            + " |"
            for label, r in doc["other_ideas"].items()
        ],
        "",
        "**BEAM top 10 composition (library defaults vs dense), mean per question**",
        "",
        "| type | assistant turns, defaults | assistant turns, dense | hits lifted by context | "
        "evidence that is assistant |",
        "| --- | ---: | ---: | ---: | ---: |",
        *[
            f"| {t} | {r['assistant_top10_defaults']:.2f} | {r['assistant_top10_dense']:.2f} | "
            f"{r['context_lifted_top10']:.2f} | {r['evidence_assistant']:.0%} |"
            for t, r in doc["beam_top10_composition"].items()
        ],
        "",
        "Cross-validation over (representation, BM25 b, coverage power) (left-out conversation: choice): "
        + "; ".join(doc["cv_choices"])
        + ".",
    ]
    return "\n".join(lines) + "\n"


def _type_table(title: str, table: dict[str, dict[str, float]]) -> list[str]:
    labels = list(next(iter(table.values())))
    lines = [
        "",
        f"**{title}**",
        "",
        "| type | " + " | ".join(labels) + " |",
        "| --- |" + " ---: |" * len(labels),
    ]
    for t, row in table.items():
        lines.append(f"| {t} | " + " | ".join(f"{row[label]:.3f}" for label in labels) + " |")
    return lines


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:3]]
    main(args[0] if args else Path("/tmp"), Path("benchmarks/results"), *args[1:])
