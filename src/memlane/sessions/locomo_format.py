"""The LoCoMo file format: parse and clean ``locomo10.json`` (conversations and their questions).

LoCoMo ("Evaluating Very Long-Term Conversational Memory of LLM Agents",
Maharana et al., ACL 2024, arXiv:2402.17753) ships as one JSON file,
``locomo10.json``: a list of 10 samples, each a two-person conversation of
19-32 sessions plus questions whose ``evidence`` names the turns (``dia_id``
such as ``"D3:7"``) that hold the answer. The data is licensed CC BY-NC 4.0 and
is never bundled with memlane; :func:`memlane.evaluation.locomo.default_locomo_path` finds a local copy.

This module only parses: it has no dependency on the rest of memlane. It lives beside the session
importer (:mod:`memlane.sessions.importing` reads LoCoMo files as sessions), so product code never
imports the benchmark harness; :mod:`memlane.evaluation.locomo` re-exports it for the benchmarks.

Timestamps
    Session timestamps are free text (``"1:56 pm on 8 May, 2023"``) without a
    time zone; they are read as UTC. Every turn of a session gets the session's
    timestamp as ``created_at``: the data has no per-turn times, so turns of one
    session tie on time and their order is the order of
    :attr:`LocomoConversation.turns` (and :attr:`LocomoTurn.turn_number`).

Evidence cleaning (see :func:`clean_evidence`)
    The raw ``evidence`` lists are messy. Each raw entry is split on ``;``,
    ``,`` and whitespace (``"D8:6; D9:17"``, ``"D9:1 D4:4 D4:6"``). Each piece
    is then normalised: ``"D:11:26"`` becomes ``"D11:26"`` and zero-padded
    numbers lose their padding (``"D30:05"`` becomes ``"D30:5"``). Pieces that
    still do not match ``D<session>:<turn>`` (the bare ``"D"`` in conv-42) are
    dropped as malformed; ids of turns that do not exist in the conversation
    (``D10:19`` in conv-42, ``D4:36`` in conv-47) are dropped as missing;
    repeats are dropped, keeping first-seen order. Every decision is counted
    in :class:`EvidenceCleaning`. Questions left with no evidence are kept,
    with :attr:`LocomoQuestion.has_evidence` false (4 category-3 questions in
    the real file, which have empty evidence to begin with).

Categories (from the LoCoMo repository's evaluation code; see
:data:`LOCOMO_CATEGORIES`): 1 multi-hop, 2 temporal, 3 open-domain,
4 single-hop, 5 adversarial. Category-5 questions carry ``adversarial_answer``
(a plausible wrong answer; the right reply is "not mentioned") and usually no
``answer``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

__all__ = [
    "LOCOMO_CATEGORIES",
    "EvidenceCleaning",
    "LocomoConversation",
    "LocomoFormatError",
    "LocomoQuestion",
    "LocomoTurn",
    "clean_evidence",
    "load_locomo",
    "normalise_dia_id",
    "parse_locomo",
    "parse_session_datetime",
]

LOCOMO_CATEGORIES: Mapping[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""Question category number -> type name, per the LoCoMo repository's evaluation code."""

SESSION_DATETIME_FORMAT = "%I:%M %p on %d %B, %Y"
"""``strptime`` format of LoCoMo session timestamps, e.g. ``"10:37 am on 27 June, 2023"``."""

_DIA_ID = re.compile(r"^D(\d+):(\d+)$")
_DIA_ID_EXTRA_COLON = re.compile(r"^D:(\d+):(\d+)$")  # "D:11:26" in conv-43
_EVIDENCE_SEPARATORS = re.compile(r"[;,\s]+")


class LocomoFormatError(ValueError):
    """The LoCoMo data does not have the expected shape; the message says where."""


@dataclass(frozen=True)
class LocomoTurn:
    """One utterance of a conversation.

    Attributes:
        dia_id: Turn id ``"D<session>:<turn>"``, e.g. ``"D3:7"``; evidence refers to it.
        session_index: 1-based session number (the ``<session>`` part of ``dia_id``).
        speaker: Name of the speaker, one of the conversation's two speakers.
        text: What was said, verbatim from the data.
        created_at: Timestamp of the session (UTC, timezone-aware); shared by all turns of a session.
        blip_caption: BLIP caption of the photo shared with this turn, or ``None``.
    """

    dia_id: str
    session_index: int
    speaker: str
    text: str
    created_at: datetime
    blip_caption: str | None = None

    @property
    def turn_number(self) -> int:
        """1-based position of the turn within its session (the ``<turn>`` part of ``dia_id``)."""
        return int(self.dia_id.rsplit(":", 1)[1])

    @property
    def content(self) -> str:
        """Text to store as a memory: ``"<speaker>: <text>"`` (the benchmark's episode format).

        A shared photo's caption is not part of it: the BLIP captions are machine-generated,
        and measured on conversations 0-2 with the bundled model, appending them lowered
        dense R@10 from 0.509 to 0.499. The runner keeps the caption in the episode's metadata.
        """
        return f"{self.speaker}: {self.text}"


@dataclass(frozen=True)
class LocomoQuestion:
    """One benchmark question about a conversation.

    Attributes:
        question: The question text.
        category: 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial
            (see :data:`LOCOMO_CATEGORIES`).
        evidence: Cleaned, deduplicated ids of the turns that hold the answer, in data order;
            every id exists in the conversation. May be empty.
        answer: Gold answer as text (integers in the data, e.g. years, become strings);
            ``None`` for category-5 questions, except two that carry both answers.
        adversarial_answer: Category 5 only: the plausible wrong answer; otherwise ``None``.
    """

    question: str
    category: int
    evidence: tuple[str, ...]
    answer: str | None
    adversarial_answer: str | None = None

    @property
    def has_evidence(self) -> bool:
        """Whether at least one evidence turn survived cleaning (retrieval can only be scored then).

        Not to be confused with answerability: category-5 questions have
        evidence but their correct reply is "not mentioned".
        """
        return bool(self.evidence)


@dataclass(frozen=True)
class LocomoConversation:
    """One LoCoMo sample: a long two-person conversation and its questions.

    Attributes:
        sample_id: The sample's id, e.g. ``"conv-26"``.
        speakers: ``(speaker_a, speaker_b)``.
        turns: All turns, session by session, in chronological order.
        questions: The questions, in data order.
        last_session_at: Timestamp of the last session that has turns (UTC).
        session_dates: Session number -> timestamp (UTC), for the sessions present only
            (some samples list dates for sessions that do not exist; those are ignored).
    """

    sample_id: str
    speakers: tuple[str, str]
    turns: tuple[LocomoTurn, ...]
    questions: tuple[LocomoQuestion, ...]
    last_session_at: datetime
    session_dates: dict[int, datetime] = field(hash=False)

    def turns_by_id(self) -> dict[str, LocomoTurn]:
        """Map ``dia_id`` -> turn (a new dict on each call)."""
        return {turn.dia_id: turn for turn in self.turns}


@dataclass(frozen=True)
class EvidenceCleaning:
    """Counts of what evidence cleaning did (sums over all questions seen).

    ``ids_seen == kept + dropped_malformed + dropped_missing + dropped_duplicate``
    always holds.

    Attributes:
        raw_entries: Evidence list entries as found in the data (strings, possibly multi-id).
        ids_seen: Candidate ids after splitting multi-id entries (an entry that yields no
            piece at all, e.g. ``""`` or a non-string, counts as one malformed id).
        kept: Ids kept in :attr:`LocomoQuestion.evidence`.
        multi_id_entries: Raw entries that held more than one id (``"D8:6; D9:17"``).
        split_ids: Ids that came out of those multi-id entries.
        normalised: Ids rewritten to canonical form (``"D:11:26"`` -> ``"D11:26"``,
            ``"D30:05"`` -> ``"D30:5"``); counted here and in whichever outcome followed.
        dropped_malformed: Ids dropped because they are not ``D<session>:<turn>`` (``"D"``).
        dropped_missing: Well-formed ids dropped because no such turn exists in the conversation.
        dropped_duplicate: Ids dropped because they repeat an id already kept for the question.
        questions: Questions processed.
        questions_without_evidence: Questions with no evidence left after cleaning.
    """

    raw_entries: int = 0
    ids_seen: int = 0
    kept: int = 0
    multi_id_entries: int = 0
    split_ids: int = 0
    normalised: int = 0
    dropped_malformed: int = 0
    dropped_missing: int = 0
    dropped_duplicate: int = 0
    questions: int = 0
    questions_without_evidence: int = 0

    def __add__(self, other: EvidenceCleaning) -> EvidenceCleaning:
        """Field-wise sum, to combine the counts of several questions or conversations."""
        if not isinstance(other, EvidenceCleaning):
            return NotImplemented
        return EvidenceCleaning(
            raw_entries=self.raw_entries + other.raw_entries,
            ids_seen=self.ids_seen + other.ids_seen,
            kept=self.kept + other.kept,
            multi_id_entries=self.multi_id_entries + other.multi_id_entries,
            split_ids=self.split_ids + other.split_ids,
            normalised=self.normalised + other.normalised,
            dropped_malformed=self.dropped_malformed + other.dropped_malformed,
            dropped_missing=self.dropped_missing + other.dropped_missing,
            dropped_duplicate=self.dropped_duplicate + other.dropped_duplicate,
            questions=self.questions + other.questions,
            questions_without_evidence=self.questions_without_evidence + other.questions_without_evidence,
        )

    @property
    def dropped(self) -> int:
        """All dropped ids: malformed + missing + duplicate."""
        return self.dropped_malformed + self.dropped_missing + self.dropped_duplicate


def parse_session_datetime(text: str) -> datetime:
    """Parse a LoCoMo session timestamp such as ``"1:56 pm on 8 May, 2023"``.

    Args:
        text: The ``session_<n>_date_time`` value; surrounding whitespace is ignored,
            ``am``/``pm`` may be in either case. Month names are English (the C locale
            that Python uses unless the application calls ``locale.setlocale``).

    Returns:
        A timezone-aware datetime in UTC (the data has no zone; UTC is assumed).

    Raises:
        LocomoFormatError: ``text`` is not a string of the form
            ``"<h>:<mm> <am|pm> on <day> <Month>, <year>"``.
    """
    if not isinstance(text, str):
        raise LocomoFormatError(f"session timestamp must be a string, got {type(text).__name__}")
    try:
        parsed = datetime.strptime(text.strip(), SESSION_DATETIME_FORMAT)
    except ValueError as exc:
        raise LocomoFormatError(
            f"bad LoCoMo session timestamp {text!r}: expected e.g. '1:56 pm on 8 May, 2023'"
        ) from exc
    return parsed.replace(tzinfo=UTC)


def normalise_dia_id(piece: str) -> str | None:
    """Return the canonical form ``"D<session>:<turn>"`` of one evidence id, or ``None``.

    Accepts ``"D3:7"``, zero-padded numbers (``"D30:05"`` -> ``"D30:5"``) and the
    extra-colon form ``"D:11:26"`` -> ``"D11:26"``. Anything else (``"D"``, ``"3:7"``,
    ``"d3:7"``) is malformed and gives ``None``. Splitting multi-id strings is
    :func:`clean_evidence`'s job, not this function's.
    """
    match = _DIA_ID.match(piece) or _DIA_ID_EXTRA_COLON.match(piece)
    if match is None:
        return None
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def clean_evidence(
    raw: Iterable[object], valid_ids: Iterable[str]
) -> tuple[tuple[str, ...], EvidenceCleaning]:
    """Split, normalise, validate and deduplicate one question's evidence list.

    Args:
        raw: The question's raw ``evidence`` entries, e.g. ``["D8:6; D9:17", "D:11:26"]``.
        valid_ids: The ``dia_id`` of every turn of the conversation.

    Returns:
        ``(evidence, counts)``: the kept ids in first-seen order, and what was done
        (``counts.questions`` is 1).
    """
    valid = valid_ids if isinstance(valid_ids, (set, frozenset)) else set(valid_ids)
    kept: list[str] = []
    seen: set[str] = set()
    raw_entries = ids_seen = multi_id_entries = split_ids = normalised = 0
    dropped_malformed = dropped_missing = dropped_duplicate = 0
    for entry in raw:
        raw_entries += 1
        pieces = [p for p in _EVIDENCE_SEPARATORS.split(entry) if p] if isinstance(entry, str) else []
        if not pieces:
            ids_seen += 1
            dropped_malformed += 1
            continue
        if len(pieces) > 1:
            multi_id_entries += 1
            split_ids += len(pieces)
        for piece in pieces:
            ids_seen += 1
            dia_id = normalise_dia_id(piece)
            if dia_id is None:
                dropped_malformed += 1
                continue
            if dia_id != piece:
                normalised += 1
            if dia_id not in valid:
                dropped_missing += 1
            elif dia_id in seen:
                dropped_duplicate += 1
            else:
                seen.add(dia_id)
                kept.append(dia_id)
    counts = EvidenceCleaning(
        raw_entries=raw_entries,
        ids_seen=ids_seen,
        kept=len(kept),
        multi_id_entries=multi_id_entries,
        split_ids=split_ids,
        normalised=normalised,
        dropped_malformed=dropped_malformed,
        dropped_missing=dropped_missing,
        dropped_duplicate=dropped_duplicate,
        questions=1,
        questions_without_evidence=0 if kept else 1,
    )
    return tuple(kept), counts


def _require_str(obj: Mapping[str, object], key: str, where: str) -> str:
    value = obj.get(key)
    if not isinstance(value, str):
        got = "missing" if key not in obj else type(value).__name__
        raise LocomoFormatError(f"{where}: {key!r} must be a string ({got})")
    return value


def _require_mapping(value: object, where: str) -> Mapping[str, object]:
    if not isinstance(value, Mapping):
        raise LocomoFormatError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _parse_turn(
    raw: object, session_index: int, at: datetime, speakers: tuple[str, str], where: str
) -> LocomoTurn:
    turn = _require_mapping(raw, where)
    dia_id = _require_str(turn, "dia_id", where)
    match = _DIA_ID.match(dia_id)
    if match is None or int(match.group(1)) != session_index:
        raise LocomoFormatError(f"{where}: dia_id {dia_id!r} is not of the form 'D{session_index}:<turn>'")
    speaker = _require_str(turn, "speaker", where)
    if speaker not in speakers:
        raise LocomoFormatError(f"{where}: speaker {speaker!r} is neither of {speakers!r}")
    caption = turn.get("blip_caption")
    if caption is not None and not isinstance(caption, str):
        raise LocomoFormatError(f"{where}: 'blip_caption' must be a string")
    if caption is not None:
        caption = caption.strip() or None
    return LocomoTurn(
        dia_id=dia_id,
        session_index=session_index,
        speaker=speaker,
        text=_require_str(turn, "text", where),
        created_at=at,
        blip_caption=caption,
    )


def _optional_answer(qa: Mapping[str, object], key: str, where: str) -> str | None:
    value = qa.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise LocomoFormatError(f"{where}: {key!r} must be a string or a number")
    return str(value)


def _parse_question(
    raw: object, valid_ids: frozenset[str], where: str
) -> tuple[LocomoQuestion, EvidenceCleaning]:
    qa = _require_mapping(raw, where)
    category = qa.get("category")
    if isinstance(category, bool) or not isinstance(category, int) or category not in LOCOMO_CATEGORIES:
        raise LocomoFormatError(f"{where}: 'category' must be an integer 1-5, got {category!r}")
    raw_evidence = qa.get("evidence", [])
    if not isinstance(raw_evidence, Sequence) or isinstance(raw_evidence, str):
        raise LocomoFormatError(f"{where}: 'evidence' must be a list")
    evidence, counts = clean_evidence(raw_evidence, valid_ids)
    question = LocomoQuestion(
        question=_require_str(qa, "question", where),
        category=category,
        evidence=evidence,
        answer=_optional_answer(qa, "answer", where),
        adversarial_answer=_optional_answer(qa, "adversarial_answer", where),
    )
    return question, counts


def _parse_conversation(raw: object, position: int) -> tuple[LocomoConversation, EvidenceCleaning]:
    sample = _require_mapping(raw, f"sample #{position}")
    sample_id = _require_str(sample, "sample_id", f"sample #{position}")
    where = f"sample {sample_id!r}"
    conv = _require_mapping(sample.get("conversation"), f"{where} 'conversation'")
    speakers = (_require_str(conv, "speaker_a", where), _require_str(conv, "speaker_b", where))

    turns: list[LocomoTurn] = []
    session_dates: dict[int, datetime] = {}
    n = 1
    while f"session_{n}" in conv:
        session = conv[f"session_{n}"]
        if not isinstance(session, list):
            raise LocomoFormatError(f"{where}: 'session_{n}' must be a list of turns")
        date_text = _require_str(conv, f"session_{n}_date_time", where)
        try:
            at = parse_session_datetime(date_text)
        except LocomoFormatError as exc:
            raise LocomoFormatError(f"{where} session {n}: {exc}") from exc
        session_dates[n] = at
        for i, turn in enumerate(session):
            turns.append(_parse_turn(turn, n, at, speakers, f"{where} session_{n}[{i}]"))
        n += 1
    if not session_dates:
        raise LocomoFormatError(f"{where}: no 'session_1' in 'conversation'")

    ids = [t.dia_id for t in turns]
    valid_ids = frozenset(ids)
    if len(valid_ids) != len(ids):
        raise LocomoFormatError(f"{where}: duplicate dia_id among turns")

    raw_questions = sample.get("qa", [])
    if not isinstance(raw_questions, list):
        raise LocomoFormatError(f"{where}: 'qa' must be a list")
    questions: list[LocomoQuestion] = []
    counts = EvidenceCleaning()
    for i, qa in enumerate(raw_questions):
        question, question_counts = _parse_question(qa, valid_ids, f"{where} qa[{i}]")
        questions.append(question)
        counts += question_counts

    conversation = LocomoConversation(
        sample_id=sample_id,
        speakers=speakers,
        turns=tuple(turns),
        questions=tuple(questions),
        last_session_at=session_dates[max(session_dates)],
        session_dates=session_dates,
    )
    return conversation, counts


def parse_locomo(data: object) -> tuple[list[LocomoConversation], EvidenceCleaning]:
    """Parse already-decoded LoCoMo JSON (the top-level list of samples).

    Args:
        data: The value of ``json.load`` on ``locomo10.json``, or a list of samples of the
            same shape (``sample_id``, ``conversation`` with ``speaker_a``/``speaker_b`` and
            ``session_<n>``/``session_<n>_date_time``, and ``qa``).

    Returns:
        ``(conversations, cleaning)``: one conversation per sample in data order, and the
        evidence-cleaning counts summed over all questions.

    Raises:
        LocomoFormatError: A required key is missing or has the wrong type, a timestamp does
            not parse, a turn's ``dia_id`` does not match its session, a speaker is unknown,
            or a ``dia_id`` repeats within a conversation.
    """
    if not isinstance(data, list):
        raise LocomoFormatError(f"LoCoMo data must be a list of samples, got {type(data).__name__}")
    conversations: list[LocomoConversation] = []
    total = EvidenceCleaning()
    for position, sample in enumerate(data):
        conversation, counts = _parse_conversation(sample, position)
        conversations.append(conversation)
        total += counts
    return conversations, total


def load_locomo(path: str | os.PathLike[str]) -> tuple[list[LocomoConversation], EvidenceCleaning]:
    """Read and parse ``locomo10.json``; see :func:`parse_locomo` and the module docstring.

    Args:
        path: Path of the JSON file (UTF-8).

    Returns:
        ``(conversations, cleaning)``; for the published file, 10 conversations with
        1,986 questions.

    Raises:
        FileNotFoundError: ``path`` does not exist.
        LocomoFormatError: The file is not valid JSON or not LoCoMo-shaped.
    """
    with open(path, encoding="utf-8") as fh:
        try:
            data = json.load(fh)
        except json.JSONDecodeError as exc:
            raise LocomoFormatError(f"{os.fspath(path)!s} is not valid JSON: {exc}") from exc
    return parse_locomo(data)
