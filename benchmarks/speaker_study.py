"""Whose turn is evidence: the agent-turn discount of the default ranking (issue #20 item 1).

On BEAM (long user-assistant chats) the assistant's replies restate the user's requests at length and
fill the top 10 (52 % of plain cosine's top 10 on BEAM 1-10), while 78 % of the evidence turns are the
user's. The default ranking multiplies an agent turn's relevance by ``1 - d`` unless the query is
addressed to the agent (:class:`memlane.config.profile.Speakers`,
:func:`memlane.recall.relevance.agent_signal`). This study records the candidates of
``recall_episodes(question, limit=10)`` on BEAM 1-10 and LoCoMo 0-4 (never LoCoMo 5-9) through
:func:`fusion_study.capture`, checks that re-ranking with the defaults gives the public API's hits, and
re-ranks them:

* ``d`` in {0, 0.1, 0.2, 0.3, 0.5, 1} for the defaults and for ``retrieval="dense"``;
* the same without the second-person rule (every agent turn discounted);
* the choice of ``d`` by leave-one-conversation-out cross-validation over the 15 conversations
  (:func:`fusion_study.cross_validate`), with per-conversation paired bootstrap CIs against plain
  dense (``d = 0``) and against dense with the same ``d``.

LoCoMo has no agent turns (its turns are tagged with the two speakers' names), so every ``d`` ranks it
as ``d = 0`` does; it is kept in the cross-validation so the choice is made on both kinds of
conversation. Writes ``benchmarks/results/speaker_study.{json,md}``.

    python benchmarks/speaker_study.py          # ~10 min on 2 cores (embeds both benchmarks)
    python benchmarks/speaker_study.py /tmp /work/shared/datasets   # workdir, datasets directory
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from _results import write_results
from fusion_study import BASE, DATASETS, Question, _cell, capture, cross_validate, paired_ci, recall10

from memlane.config.profile import RankingProfile, Speakers
from memlane.recall.ranking import rank
from memlane.recall.relevance import entity_signal
from memlane.stores.sqlite import SQLiteStore

DISCOUNTS = (0.0, 0.1, 0.2, 0.3, 0.5, 1.0)


def profile(d: float) -> RankingProfile:
    """The default profile with agent discount ``d``."""
    return replace(BASE, speakers=Speakers(agent_discount=d))


def without_rule(questions: list[Question], store: SQLiteStore) -> list[Question]:
    """The questions with every agent turn flagged, whether or not the query addresses the agent."""
    tags = {k: e.tags for k, e in store.fetch(sorted({k for q in questions for k in q.keys})).items()}
    tag = BASE.speakers.agent_tag
    return [
        replace(q, signals=replace(q.signals, agent=entity_signal([tags[k] for k in q.keys], tag)))
        for q in questions
    ]


def per_type(questions: list[Question], scores: np.ndarray) -> dict[str, float]:
    """Mean R@10 per question type."""
    by: dict[str, list[float]] = defaultdict(list)
    for q, s in zip(questions, scores, strict=True):
        by[q.type].append(float(s))
    return {t: float(np.mean(v)) for t, v in sorted(by.items())}


def _dense_of_choices(
    conversations: dict[str, list[str]], scores: dict[str, dict[str, np.ndarray]], choices: list[str]
) -> dict[str, np.ndarray]:
    """Per benchmark, each question's dense R@10 under the ``d`` chosen without its conversation."""
    out = {n: np.zeros(len(c)) for n, c in conversations.items()}
    for choice in choices:
        where, label = choice.split(": ", 1)
        name, conv = where.split(" ", 1)
        held = np.asarray(conversations[name], dtype=object) == conv
        out[name][held] = scores[name][label.replace("defaults", "dense")][held]
    return out


def main(workdir: Path, out: Path, datasets: Path = DATASETS) -> None:
    data = capture(workdir, datasets)
    store = SQLiteStore(workdir / "fusion-study.db")
    exact = {
        n: float(np.mean([[q.ids[r.index] for r in rank(q.signals, BASE, q.options)] == q.top for q in qs]))
        for n, qs in data.items()
    }
    sets = {"rule": data, "no rule": {n: without_rule(qs, store) for n, qs in data.items()}}
    store.close()
    scores: dict[str, dict[str, np.ndarray]] = {n: {} for n in data}
    for rule, questions in sets.items():
        for n, qs in questions.items():
            for d in DISCOUNTS:
                for mode in (None, "dense"):
                    label = f"{'defaults' if mode is None else 'dense'} d={d:g} {rule}"
                    scores[n][label] = recall10(qs, profile(d), mode)
    conversations = {n: [q.conversation for q in qs] for n, qs in data.items()}
    cv_labels = [f"defaults d={d:g} rule" for d in DISCOUNTS]
    picked, choices = cross_validate(conversations, scores, cv_labels)
    picked_dense = _dense_of_choices(conversations, scores, choices)
    doc: dict[str, Any] = {"reproduces_public_recall": exact, "cv_choices": choices, "benchmarks": {}}
    for n, qs in data.items():
        clusters = conversations[n]
        plain = scores[n]["dense d=0 rule"]
        rows = {}
        same = {**scores[n], "cross-validated choice": picked_dense[n]}
        for label, s in {**scores[n], "cross-validated choice": picked[n]}.items():
            same_d = same[label.replace("defaults", "dense")] if label.startswith("defaults") else same[label]
            rows[label] = {
                "recall_at_10": float(s.mean()),
                "minus_plain_dense": paired_ci(s, plain, clusters),
                "minus_dense_same_d": paired_ci(s, same_d, clusters),
                "per_type": per_type(qs, s),
            }
        doc["benchmarks"][n] = {"questions": len(qs), "rows": rows}
    write_results(out, doc, markdown(doc))
    print(markdown(doc))


def markdown(doc: dict[str, Any]) -> str:
    """Per benchmark: each variant's R@10 with paired CIs, then R@10 per question type."""
    lines = [
        "Speaker study (benchmarks/speaker_study.py): BEAM 1-10 and LoCoMo 0-4, R@10 of "
        "`recall_episodes(question, limit=10)` re-ranked offline from the recorded candidates with the "
        "agent-turn discount d (re-ranking with the defaults reproduces the public API's hits on "
        f"{doc['reproduces_public_recall']}). `rule`: no discount when the query addresses the agent "
        "(second person); `no rule`: every agent turn discounted. `plain dense` = dense with d = 0. "
        "CIs: per-conversation paired bootstrap, 95%.",
    ]
    for name, bench in doc["benchmarks"].items():
        lines += [
            "",
            f"**{name}** ({bench['questions']} questions)",
            "",
            "| variant | R@10 | minus plain dense | minus dense with the same d |",
            "| --- | ---: | --- | --- |",
        ]
        for label, row in bench["rows"].items():
            lines.append(
                f"| {label} | {row['recall_at_10']:.3f} | {_cell(row['minus_plain_dense'])} | "
                f"{_cell(row['minus_dense_same_d'])} |"
            )
        types = list(next(iter(bench["rows"].values()))["per_type"])
        shown = [label for label in bench["rows"] if "no rule" not in label or "d=0.3" in label]
        lines += ["", "| variant | " + " | ".join(types) + " |", "| --- |" + " ---: |" * len(types)]
        for label in shown:
            cells = " | ".join(f"{bench['rows'][label]['per_type'][t]:.3f}" for t in types)
            lines.append(f"| {label} | {cells} |")
    lines += ["", "Cross-validation (left-out conversation: choice): " + "; ".join(doc["cv_choices"]) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:3]]
    main(
        args[0] if args else Path("/tmp"),
        Path("benchmarks/results/speaker_study.json"),
        *args[1:],
    )
