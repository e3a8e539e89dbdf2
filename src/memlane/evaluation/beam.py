"""The BEAM retrieval benchmark: long user-assistant conversations with labelled evidence messages.

BEAM (Tavakoli et al. 2025, *Beyond a Million Tokens: Benchmarking and Enhancing Long-Term Memory in
LLMs*) has synthetic conversations of a user building software with an assistant, in batches with a
date, and probing questions by type with the ids of the evidence messages. The data has no licence:
it is read in place (``../shared/datasets/beam/100K/<n>/``), never copied, bundled or fitted to.

The run: one memory (tenant and session) per conversation; every message one ``message`` episode
(content ``"<role>: <text>"`` without BEAM's ``->-> i,j`` markers, tagged with its role as memlane's
turn formation tags a turn, cut to the library's 100,000
characters: two generated messages run to 53,108 and 348,853 characters of padding; the message id in
``metadata["message_id"]``); the messages of a batch are one minute apart from 09:00 UTC of the
batch's date (a batch without a date is one day after the previous one); then every question with
evidence is asked with ``recall_episodes(question, limit=10, now=<last message>)`` once per
configuration and scored with R@5 and R@10 over its evidence ids. ``abstention`` questions have no
evidence and are only counted.
Each configuration is compared with the headline row (the first) by a per-conversation paired
bootstrap (:func:`memlane.evaluation.bootstrap.paired_bootstrap`).
"""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from memlane.embeddings.base import Embedder
from memlane.evaluation.bootstrap import PairedDifference, paired_bootstrap
from memlane.evaluation.locomo_run import EvalConfiguration, fresh_database
from memlane.evaluation.metrics import recall_at_k
from memlane.memory import EpisodeInput, EpisodicMemory
from memlane.stores.sqlite import SQLiteStore
from memlane.validation import MAX_TEXT_CHARS

__all__ = [
    "BEAM_CONFIGURATIONS",
    "BEAM_QUESTION_TYPES",
    "BeamConversation",
    "BeamMessage",
    "BeamQuestion",
    "BeamReport",
    "BeamRow",
    "beam_report_to_markdown",
    "default_beam_path",
    "load_beam",
    "parse_beam_conversation",
    "run_beam",
]

BEAM_QUESTION_TYPES = (
    "abstention",
    "contradiction_resolution",
    "event_ordering",
    "information_extraction",
    "instruction_following",
    "knowledge_update",
    "multi_session_reasoning",
    "preference_following",
    "summarization",
    "temporal_reasoning",
)
"""The probing question types of BEAM (``abstention`` has no evidence)."""

BEAM_CONFIGURATIONS: Mapping[str, EvalConfiguration] = {
    "library defaults": EvalConfiguration(
        weights="balanced", description="the library defaults through the public API (the headline row)"
    ),
    "dense": EvalConfiguration(
        weights="balanced", retrieval="dense", description="embeddings only (the bundled MiniLM)"
    ),
    "keyword": EvalConfiguration(
        weights="balanced", retrieval="keyword", description="keyword index only (per-scope BM25)"
    ),
    "plain dense": EvalConfiguration(
        weights="balanced",
        retrieval="dense",
        agent_discount=0.0,
        description="embeddings only without the agent-turn discount (plain cosine, as before it)",
    ),
}
"""Label -> configuration; the first is the headline row every other one is compared with."""

TURN_LIMIT = 10
_MARKER = re.compile(r"\s*->->\s*[\d,\s]*$")
_DATE_FORMAT = "%B-%d-%Y"
_FIRST_DAY = datetime(2024, 1, 1, 9, 0, tzinfo=UTC)
_DEFAULT_RELATIVE_PATH = Path("..", "shared", "datasets", "beam", "100K")


@dataclass(frozen=True, slots=True)
class BeamMessage:
    """One message: its id (unique in the conversation), role, text and time."""

    id: int
    role: str
    content: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class BeamQuestion:
    """One probing question: its type, text and evidence message ids (empty for ``abstention``)."""

    type: str
    question: str
    evidence: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class BeamConversation:
    """A conversation (``name`` = its directory, e.g. ``"3"``), its messages in order and its questions."""

    name: str
    messages: tuple[BeamMessage, ...]
    questions: tuple[BeamQuestion, ...]

    @property
    def last_at(self) -> datetime:
        """The time of the last message (the ``now`` of every question)."""
        return self.messages[-1].created_at


def _batch_day(batch: Mapping[str, Any], previous: datetime | None) -> datetime:
    anchors = [batch.get("time_anchor")] + [m.get("time_anchor") for t in batch["turns"] for m in t]
    for anchor in anchors:
        if isinstance(anchor, str) and anchor:
            return datetime.strptime(anchor, _DATE_FORMAT).replace(hour=9, tzinfo=UTC)
    return _FIRST_DAY if previous is None else previous + timedelta(days=1)


def _messages(chat: Sequence[Mapping[str, Any]]) -> tuple[BeamMessage, ...]:
    out: list[BeamMessage] = []
    day: datetime | None = None
    for batch in chat:
        day = _batch_day(batch, day)
        messages = [m for exchange in batch["turns"] for m in exchange]
        out += [
            BeamMessage(
                int(m["id"]), str(m["role"]), _MARKER.sub("", str(m["content"])), day + timedelta(minutes=k)
            )
            for k, m in enumerate(messages)
        ]
    return tuple(out)


def _evidence(value: object) -> list[int]:
    """Flatten ``source_chat_ids`` (a list of ints, or an object of such lists)."""
    if isinstance(value, Mapping):
        return [i for part in value.values() for i in _evidence(part)]
    if isinstance(value, list):
        return [int(i) for i in value if isinstance(i, int) and not isinstance(i, bool)]
    return []


def parse_beam_conversation(
    name: str, chat: Sequence[Mapping[str, Any]], probing: Mapping[str, Sequence[Mapping[str, Any]]]
) -> BeamConversation:
    """Build a :class:`BeamConversation` from the parsed ``chat.json`` and ``probing_questions.json``.

    Evidence ids are flattened, de-duplicated in order and restricted to ids present in the chat.
    """
    messages = _messages(chat)
    present = {m.id for m in messages}
    questions = tuple(
        BeamQuestion(
            qtype,
            str(q["question"]),
            tuple(dict.fromkeys(i for i in _evidence(q.get("source_chat_ids")) if i in present)),
        )
        for qtype, items in probing.items()
        for q in items
    )
    return BeamConversation(name, messages, questions)


def default_beam_path() -> Path | None:
    """``../shared/datasets/beam/100K`` relative to the working directory, if it exists (absolute)."""
    candidate = Path.cwd() / _DEFAULT_RELATIVE_PATH
    return candidate.resolve() if candidate.is_dir() else None


def load_beam(root: str | Path, conversations: Sequence[int] | None = None) -> list[BeamConversation]:
    """Read ``<root>/<n>/chat.json`` and ``probing_questions.json`` for each ``n``.

    Args:
        root: The directory holding one numbered directory per conversation.
        conversations: Which numbers to read; default every numbered directory, ascending.

    Raises:
        FileNotFoundError: a conversation's files are missing.
    """
    base = Path(root)
    numbers = (
        sorted(int(p.name) for p in base.iterdir() if p.is_dir() and p.name.isdigit())
        if conversations is None
        else list(conversations)
    )
    out = []
    for n in numbers:
        chat = json.loads((base / str(n) / "chat.json").read_text("utf-8"))
        probing = json.loads((base / str(n) / "probing_questions.json").read_text("utf-8"))
        out.append(parse_beam_conversation(str(n), chat, probing))
    return out


@dataclass(frozen=True, slots=True)
class BeamRow:
    """One question's scores under every configuration (``{label: (R@5, R@10)}``)."""

    conversation: str
    type: str
    scores: Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class BeamReport:
    """Everything one BEAM run measured.

    Attributes:
        configurations: Label -> configuration, the headline first.
        rows: One :class:`BeamRow` per question with evidence.
        conversations: Conversation names run.
        messages: Episodes remembered.
        abstentions: Questions without evidence (not scored).
        embedding_model: The embedder's model id.
        meta: Machine and run information.
    """

    configurations: Mapping[str, EvalConfiguration]
    rows: Sequence[BeamRow]
    conversations: Sequence[str]
    messages: int
    abstentions: int
    embedding_model: str
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def headline(self) -> str:
        """The first configuration's label."""
        return next(iter(self.configurations))

    def mean(self, name: str, k: int, qtype: str | None = None) -> float:
        """Mean R@k (``k`` 5 or 10) of configuration ``name``, over one type or all (NaN if none)."""
        at = 0 if k == 5 else 1
        values = [r.scores[name][at] for r in self.rows if qtype is None or r.type == qtype]
        return float(np.mean(values)) if values else float("nan")

    def types(self) -> list[str]:
        """The question types scored, in :data:`BEAM_QUESTION_TYPES` order."""
        seen = {r.type for r in self.rows}
        return [t for t in BEAM_QUESTION_TYPES if t in seen] + sorted(seen - set(BEAM_QUESTION_TYPES))

    def difference(self, name: str, k: int = 10) -> PairedDifference:
        """Headline minus ``name`` in R@k, with its per-conversation paired bootstrap interval."""
        at = 0 if k == 5 else 1
        return paired_bootstrap(
            [r.scores[self.headline][at] for r in self.rows],
            [r.scores[name][at] for r in self.rows],
            [r.conversation for r in self.rows],
        )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable dict: per configuration overall and per-type R@5/R@10, the paired CIs."""
        return {
            "benchmark": "BEAM 100K (Tavakoli et al. 2025), message-level retrieval",
            "conversations": list(self.conversations),
            "messages": self.messages,
            "questions": len(self.rows),
            "abstentions_not_scored": self.abstentions,
            "embedding_model": self.embedding_model,
            "limit": TURN_LIMIT,
            "configurations": [
                {
                    "name": name,
                    "description": c.description,
                    "retrieval": c.retrieval,
                    "recall_at_5": self.mean(name, 5),
                    "recall_at_10": self.mean(name, 10),
                    "by_type": {
                        t: {"recall_at_5": self.mean(name, 5, t), "recall_at_10": self.mean(name, 10, t)}
                        for t in self.types()
                    },
                }
                for name, c in self.configurations.items()
            ],
            "paired_differences": {
                f"{self.headline} - {name}": {f"R@{k}": asdict(self.difference(name, k)) for k in (5, 10)}
                for name in list(self.configurations)[1:]
            },
            "meta": self.meta,
        }


def _remember(memory: EpisodicMemory, conv: BeamConversation) -> None:
    items = [
        EpisodeInput(
            event_type="message",
            content=f"{m.role}: {m.content}"[:MAX_TEXT_CHARS],
            tags=[m.role],
            created_at=m.created_at,
            metadata={"message_id": m.id},
        )
        for m in conv.messages
    ]
    for start in range(0, len(items), 64):
        memory.remember_episodes(items[start : start + 64])


def _score(reader: EpisodicMemory, conv: BeamConversation, q: BeamQuestion) -> tuple[float, float]:
    hits = reader.recall_episodes(q.question, limit=TURN_LIMIT, now=conv.last_at)
    ranked = [str(h.episode.metadata["message_id"]) for h in hits]
    relevant = [str(i) for i in q.evidence]
    return recall_at_k(ranked, relevant, 5), recall_at_k(ranked, relevant, 10)


def run_beam(
    root: str | Path,
    *,
    embedder: Embedder,
    workdir: str | Path,
    configurations: Mapping[str, EvalConfiguration] = BEAM_CONFIGURATIONS,
    conversations: Sequence[int] | None = None,
    progress: Callable[[str, int, int], None] | None = None,
) -> BeamReport:
    """Remember every BEAM message and score every question with evidence under each configuration.

    Args:
        root: The BEAM ``100K`` directory.
        embedder: The embedder under test.
        workdir: Directory for the SQLite file (``beam-eval.db``, replaced if present).
        configurations: Label -> :class:`EvalConfiguration`; the first is the headline row.
        conversations: Conversation numbers to run; default all.
        progress: Called as ``progress(stage, done, total)``, stage ``"remember"`` (conversations) or
            ``"recall"`` (questions).

    Returns:
        The :class:`BeamReport`.

    Raises:
        ValueError: no configuration, or no question with evidence.
    """
    if not configurations:
        raise ValueError("at least one configuration is needed")
    data = load_beam(root, conversations)
    askable = [(conv, q) for conv in data for q in conv.questions if q.evidence]
    if not askable:
        raise ValueError("no BEAM question with evidence")
    configs = {name: c.memory_config() for name, c in configurations.items()}
    store = SQLiteStore(fresh_database(Path(workdir) / "beam-eval.db"))
    rows: list[BeamRow] = []
    try:
        readers: dict[tuple[str, str], EpisodicMemory] = {}
        for n, conv in enumerate(data, start=1):
            memory = EpisodicMemory(
                store,
                embedder,
                tenant_id=f"beam-{conv.name}",
                session_id=f"beam-{conv.name}",
                owns_store=False,
            )
            _remember(memory, conv)
            readers.update({(conv.name, name): memory.with_context(config=c) for name, c in configs.items()})
            if progress:
                progress("remember", n, len(data))
        for n, (conv, q) in enumerate(askable, start=1):
            scores = {name: _score(readers[conv.name, name], conv, q) for name in configs}
            rows.append(BeamRow(conv.name, q.type, scores))
            if progress:
                progress("recall", n, len(askable))
    finally:
        store.close()
    return BeamReport(
        configurations=dict(configurations),
        rows=rows,
        conversations=[c.name for c in data],
        messages=sum(len(c.messages) for c in data),
        abstentions=sum(1 for c in data for q in c.questions if not q.evidence),
        embedding_model=embedder.model_id,
        meta={
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "python": platform.python_version(),
            "numpy": np.__version__,
        },
    )


def _difference_line(name: str, d: PairedDifference, k: int) -> str:
    return (
        f"| {name} | R@{k} | {d.mean:+.3f} | [{d.low:+.3f}, {d.high:+.3f}] | {d.better} | {d.worse} | "
        f"{'yes' if d.excludes_zero else 'no'} |"
    )


def beam_report_to_markdown(report: BeamReport) -> str:
    """Render the report: overall and per-type R@5/R@10, then the paired differences with their CIs."""
    names = list(report.configurations)
    types = report.types()
    lines = [
        f"BEAM 100K message-level retrieval: {len(report.rows)} questions with evidence over "
        f"{report.messages:,} messages in {len(report.conversations)} conversations "
        f"({', '.join(report.conversations)}); `recall_episodes(question, limit={TURN_LIMIT})`; embedding "
        f"model `{report.embedding_model}`; {report.abstentions} abstention questions (no evidence) "
        "not scored.",
        "",
        "| configuration | R@5 | R@10 | " + " | ".join(f"R@10 {t}" for t in types) + " |",
        "| --- | ---: | ---: | " + " | ".join("---:" for _ in types) + " |",
    ]
    for name in names:
        lines.append(
            f"| {name} | {report.mean(name, 5):.3f} | {report.mean(name, 10):.3f} | "
            + " | ".join(f"{report.mean(name, 10, t):.3f}" for t in types)
            + " |"
        )
    counts = {t: sum(1 for r in report.rows if r.type == t) for t in types}
    lines += ["", "Questions per type: " + ", ".join(f"{t} {n}" for t, n in counts.items()) + ".", ""]
    if len(names) > 1:
        lines += [
            f"Paired differences, {report.headline} minus each baseline (per-conversation bootstrap, "
            "10,000 resamples, 95% CI):",
            "",
            "| minus | metric | mean | 95% CI | better on | worse on | CI excludes 0 |",
            "| --- | --- | ---: | --- | ---: | ---: | --- |",
        ]
        lines += [_difference_line(n, report.difference(n, k), k) for n in names[1:] for k in (10, 5)]
    legend = "; ".join(f"`{n}`: {c.description}" for n, c in report.configurations.items() if c.description)
    lines += ["", f"Configurations: {legend}." if legend else ""]
    return "\n".join(lines) + "\n"
