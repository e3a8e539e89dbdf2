"""Unit tests of the LoCoMo loader: parsing, evidence cleaning and dataset discovery.

The tests build small synthetic LoCoMo-shaped dicts; no LoCoMo data is copied
into the repository (CC BY-NC 4.0). One test reads the real file when a local
copy exists and is skipped otherwise.
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.evaluation import locomo
from memlane.evaluation.locomo import (
    LOCOMO_CATEGORIES,
    EvidenceCleaning,
    LocomoFormatError,
    LocomoTurn,
    clean_evidence,
    default_locomo_path,
    load_locomo,
    normalise_dia_id,
    parse_locomo,
    parse_session_datetime,
)

D1 = "1:56 pm on 8 May, 2023"
D2 = "10:37 am on 27 June, 2023"
D3 = "12:09 am on 13 September, 2023"


def _turn(speaker: str, dia_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"speaker": speaker, "dia_id": dia_id, "text": text, **extra}


def make_sample(**overrides: Any) -> dict[str, Any]:
    """A two-session conversation (with a dangling date for a session 3 that does not exist)."""
    sample: dict[str, Any] = {
        "sample_id": "conv-x",
        "conversation": {
            "speaker_a": "Ann",
            "speaker_b": "Bob",
            "session_1_date_time": D1,
            "session_1": [
                _turn("Ann", "D1:1", "Hi Bob!"),
                _turn(
                    "Bob", "D1:2", "Look at my new bike.", blip_caption="a photo of a red bike", img_url=["x"]
                ),
                _turn("Ann", "D1:3", "Nice."),
            ],
            "session_2_date_time": D2,
            "session_2": [
                _turn("Bob", "D2:1", "I rode 50 km today."),
                _turn("Ann", "D2:2", "Wow, where to?"),
            ],
            "session_3_date_time": D3,
        },
        "qa": [
            {"question": "What did Bob buy?", "answer": "a bike", "evidence": ["D1:2"], "category": 4},
            {"question": "When did Bob ride?", "answer": 2023, "evidence": ["D2:1; D1:2"], "category": 2},
            {
                "question": "Did Ann buy a bike?",
                "adversarial_answer": "yes",
                "evidence": ["D1:2"],
                "category": 5,
            },
            {"question": "Would Bob enjoy a race?", "answer": "likely", "evidence": [], "category": 3},
        ],
    }
    sample.update(overrides)
    return sample


# --- timestamps -----------------------------------------------------------------------------------


def test_parse_session_datetime_examples() -> None:
    assert parse_session_datetime(D1) == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)
    assert parse_session_datetime(D2) == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)
    assert parse_session_datetime(D3) == datetime(2023, 9, 13, 0, 9, tzinfo=UTC)  # 12 am is midnight
    assert parse_session_datetime("12:30 pm on 1 January, 2024") == datetime(2024, 1, 1, 12, 30, tzinfo=UTC)
    assert parse_session_datetime("  9:05 PM on 31 December, 2022 ") == datetime(
        2022, 12, 31, 21, 5, tzinfo=UTC
    )
    parsed = parse_session_datetime(D1)
    assert parsed.tzinfo is UTC
    assert parsed.utcoffset() is not None


@pytest.mark.parametrize(
    "text",
    ["", "8 May, 2023", "1:56 pm 8 May, 2023", "13:56 pm on 8 May, 2023", "1:56 pm on 31 June, 2023", "noon"],
)
def test_parse_session_datetime_rejects_bad_text(text: str) -> None:
    with pytest.raises(LocomoFormatError, match="session timestamp"):
        parse_session_datetime(text)


def test_format_error_is_a_value_error() -> None:
    assert issubclass(LocomoFormatError, ValueError)
    with pytest.raises(ValueError):
        parse_session_datetime(20230508)  # type: ignore[arg-type]


# --- conversations and turns ----------------------------------------------------------------------


def test_sessions_turns_and_dates() -> None:
    (conv,), _ = parse_locomo([make_sample()])
    assert conv.sample_id == "conv-x"
    assert conv.speakers == ("Ann", "Bob")
    assert [t.dia_id for t in conv.turns] == ["D1:1", "D1:2", "D1:3", "D2:1", "D2:2"]
    assert [t.session_index for t in conv.turns] == [1, 1, 1, 2, 2]
    assert [t.turn_number for t in conv.turns] == [1, 2, 3, 1, 2]
    # The dangling session_3 date is ignored: only sessions with a key are sessions.
    assert conv.session_dates == {1: parse_session_datetime(D1), 2: parse_session_datetime(D2)}
    assert conv.last_session_at == datetime(2023, 6, 27, 10, 37, tzinfo=UTC)
    assert all(t.created_at == conv.session_dates[t.session_index] for t in conv.turns)
    assert conv.turns_by_id()["D2:2"].text == "Wow, where to?"


def test_sessions_stop_at_the_first_missing_key() -> None:
    sample = make_sample()
    sample["conversation"]["session_4_date_time"] = D3
    sample["conversation"]["session_4"] = [_turn("Ann", "D4:1", "Unreachable")]
    (conv,), _ = parse_locomo([sample])
    assert max(conv.session_dates) == 2
    assert "D4:1" not in conv.turns_by_id()


def test_turn_content_with_and_without_photo() -> None:
    (conv,), _ = parse_locomo([make_sample()])
    by_id = conv.turns_by_id()
    assert by_id["D1:1"].content == "Ann: Hi Bob!"
    assert by_id["D1:1"].blip_caption is None
    assert by_id["D1:2"].text == "Look at my new bike."  # the caption never leaks into text
    assert by_id["D1:2"].content == "Bob: Look at my new bike."
    assert by_id["D1:2"].blip_caption == "a photo of a red bike"
    at = datetime(2023, 1, 1, tzinfo=UTC)
    assert LocomoTurn("D1:1", 1, "A", "hi", at, blip_caption="").content == "A: hi"


def test_blank_caption_counts_as_no_photo() -> None:
    sample = make_sample()
    sample["conversation"]["session_1"][0]["blip_caption"] = "   "
    (conv,), _ = parse_locomo([sample])
    assert conv.turns[0].blip_caption is None
    assert conv.turns[0].content == "Ann: Hi Bob!"


def test_questions_answers_and_categories() -> None:
    (conv,), cleaning = parse_locomo([make_sample()])
    q_buy, q_when, q_adv, q_none = conv.questions
    assert (q_buy.question, q_buy.category, q_buy.evidence, q_buy.answer) == (
        "What did Bob buy?",
        4,
        ("D1:2",),
        "a bike",
    )
    assert q_buy.adversarial_answer is None
    assert q_when.answer == "2023"  # integer answers become text
    assert q_when.evidence == ("D2:1", "D1:2")  # split, data order kept
    assert q_adv.answer is None
    assert q_adv.adversarial_answer == "yes"
    assert q_adv.has_evidence
    assert q_none.evidence == ()
    assert not q_none.has_evidence  # kept, but flagged
    assert cleaning.questions == 4
    assert cleaning.questions_without_evidence == 1
    assert LOCOMO_CATEGORIES[1] == "multi-hop"
    assert LOCOMO_CATEGORIES[4] == "single-hop"


def test_question_with_both_answers_keeps_both() -> None:
    sample = make_sample()
    sample["qa"] = [
        {
            "question": "Is it red?",
            "answer": "No",
            "adversarial_answer": "Yes",
            "evidence": ["D1:2"],
            "category": 5,
        }
    ]
    (conv,), _ = parse_locomo([sample])
    assert (conv.questions[0].answer, conv.questions[0].adversarial_answer) == ("No", "Yes")


# --- evidence cleaning ----------------------------------------------------------------------------

VALID = frozenset({"D1:1", "D1:2", "D1:3", "D2:1", "D2:2", "D30:5", "D11:26"})


@pytest.mark.parametrize(
    ("piece", "expected"),
    [
        ("D1:2", "D1:2"),
        ("D30:05", "D30:5"),
        ("D:11:26", "D11:26"),
        ("D007:010", "D7:10"),
        ("D", None),
        ("D1", None),
        ("1:2", None),
        ("d1:2", None),
        ("D1:2:3", None),
        ("D1:x", None),
        ("D1;2", None),
    ],
)
def test_normalise_dia_id(piece: str, expected: str | None) -> None:
    assert normalise_dia_id(piece) == expected


def test_clean_evidence_handles_every_messy_form() -> None:
    raw: list[object] = [
        "D1:1; D2:2",  # multi-id with "; "
        "D2:1 D1:2 D1:3",  # multi-id with spaces
        "D:11:26",  # extra colon -> D11:26
        "D30:05",  # zero padding -> D30:5
        "D",  # malformed
        "D10:19",  # well-formed, no such turn
        "D1:1",  # duplicate of the first id
        "D2:2,D2:2",  # multi-id with comma, both duplicates
        "",  # empty entry: malformed
    ]
    evidence, counts = clean_evidence(raw, VALID)
    assert evidence == ("D1:1", "D2:2", "D2:1", "D1:2", "D1:3", "D11:26", "D30:5")
    assert counts == EvidenceCleaning(
        raw_entries=9,
        ids_seen=13,
        kept=7,
        multi_id_entries=3,
        split_ids=7,
        normalised=2,
        dropped_malformed=2,
        dropped_missing=1,
        dropped_duplicate=3,
        questions=1,
        questions_without_evidence=0,
    )
    assert counts.ids_seen == counts.kept + counts.dropped
    assert counts.dropped == 6


def test_clean_evidence_normalised_but_missing_is_counted_as_missing() -> None:
    evidence, counts = clean_evidence(["D:9:09", 17], VALID)
    assert evidence == ()
    assert (counts.normalised, counts.dropped_missing, counts.dropped_malformed) == (1, 1, 1)
    assert counts.questions_without_evidence == 1


def test_evidence_cleaning_counts_add_up_over_conversations() -> None:
    sample = make_sample()
    sample["qa"][0]["evidence"] = ["D1:2 D9:9", "D"]
    _, cleaning = parse_locomo([sample, make_sample(sample_id="conv-y")])
    assert cleaning == EvidenceCleaning(
        raw_entries=7,  # 2 + 1 + 1 + 0 in conv-x, 1 + 1 + 1 + 0 in conv-y
        ids_seen=10,
        kept=8,
        multi_id_entries=3,  # "D1:2 D9:9", and "D2:1; D1:2" in each conversation
        split_ids=6,
        normalised=0,
        dropped_malformed=1,
        dropped_missing=1,
        dropped_duplicate=0,
        questions=8,
        questions_without_evidence=2,
    )


def test_evidence_cleaning_addition() -> None:
    a = EvidenceCleaning(raw_entries=1, ids_seen=2, kept=1, dropped_missing=1, questions=1)
    b = EvidenceCleaning(raw_entries=3, ids_seen=3, kept=2, dropped_duplicate=1, questions=2, normalised=1)
    total = a + b
    assert total == EvidenceCleaning(
        raw_entries=4, ids_seen=5, kept=3, dropped_missing=1, dropped_duplicate=1, questions=3, normalised=1
    )
    assert EvidenceCleaning() + a == a


_ID_PIECES = st.one_of(
    st.sampled_from(sorted(VALID)),
    st.sampled_from(["D", "D9:9", "D:1:1", "D01:02", "x", "D1:", ":1"]),
    st.from_regex(r"\AD[0-9]{1,2}:[0-9]{1,2}\Z"),
)
_ENTRIES = st.lists(_ID_PIECES, min_size=0, max_size=4).map(lambda ps: "; ".join(ps))


@given(st.lists(_ENTRIES, max_size=8))
def test_clean_evidence_invariants(raw: list[str]) -> None:
    evidence, counts = clean_evidence(raw, VALID)
    assert counts.ids_seen == counts.kept + counts.dropped
    assert counts.kept == len(evidence)
    assert len(set(evidence)) == len(evidence)
    assert set(evidence) <= VALID
    assert counts.raw_entries == len(raw)
    assert counts.split_ids >= 2 * counts.multi_id_entries
    # Order is first-seen order of the normalised valid ids.
    expected: list[str] = []
    for entry in raw:
        for piece in entry.replace(";", " ").split():
            norm = normalise_dia_id(piece)
            if norm in VALID and norm not in expected:
                expected.append(norm)
    assert list(evidence) == expected


# --- format errors --------------------------------------------------------------------------------


def _with_conversation(**changes: Any) -> dict[str, Any]:
    sample = make_sample()
    sample["conversation"].update(changes)
    return sample


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"sample_id": "x"}, "must be a list"),
        (["not a sample"], "expected an object"),
        ([{"conversation": {}}], "sample_id"),
        ([make_sample(conversation=None)], "expected an object"),
        ([_with_conversation(speaker_a=None)], "speaker_a"),
        ([_with_conversation(session_1="oops")], "session_1"),
        ([_with_conversation(session_1_date_time="yesterday")], "session 1"),
        ([_with_conversation(session_2=[_turn("Bob", "D3:1", "wrong session")])], "D2:<turn>"),
        ([_with_conversation(session_2=[_turn("Bob", "D2", "no turn number")])], "D2:<turn>"),
        ([_with_conversation(session_2=[_turn("Carl", "D2:1", "who?")])], "neither"),
        ([_with_conversation(session_2=[_turn("Bob", "D2:1", "a"), _turn("Bob", "D2:1", "b")])], "duplicate"),
        ([_with_conversation(session_2=[{"speaker": "Bob", "dia_id": "D2:1"}])], "'text'"),
        ([make_sample(qa={"question": "?"})], "'qa' must be a list"),
        ([make_sample(qa=[{"question": "?", "answer": "a", "evidence": [], "category": 6}])], "category"),
        ([make_sample(qa=[{"question": "?", "answer": "a", "evidence": [], "category": True}])], "category"),
        ([make_sample(qa=[{"question": "?", "answer": "a", "evidence": "D1:1", "category": 1}])], "evidence"),
        ([make_sample(qa=[{"answer": "a", "evidence": [], "category": 1}])], "'question'"),
        ([make_sample(qa=[{"question": "?", "answer": ["a"], "evidence": [], "category": 1}])], "'answer'"),
    ],
)
def test_malformed_data_raises_with_location(data: object, message: str) -> None:
    with pytest.raises(LocomoFormatError, match=message):
        parse_locomo(data)


def test_conversation_without_sessions_is_rejected() -> None:
    sample = make_sample()
    sample["conversation"] = {"speaker_a": "Ann", "speaker_b": "Bob", "session_1_date_time": D1}
    with pytest.raises(LocomoFormatError, match="no 'session_1'"):
        parse_locomo([sample])


# --- files ----------------------------------------------------------------------------------------


def test_load_locomo_reads_a_file(tmp_path: Path) -> None:
    path = tmp_path / "locomo10.json"
    data = [make_sample(), make_sample(sample_id="conv-y")]
    path.write_text(json.dumps(data), encoding="utf-8")
    conversations, cleaning = load_locomo(path)
    assert (conversations, cleaning) == parse_locomo(data)
    assert [c.sample_id for c in conversations] == ["conv-x", "conv-y"]
    conversations_from_str, _ = load_locomo(str(path))
    assert conversations_from_str == conversations


def test_load_locomo_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_locomo(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("[{", encoding="utf-8")
    with pytest.raises(LocomoFormatError, match="not valid JSON"):
        load_locomo(bad)


def _dataset_at(root: Path) -> Path:
    path = root / "shared" / "datasets" / "locomo" / "locomo10.json"
    path.parent.mkdir(parents=True)
    path.write_text("[]", encoding="utf-8")
    return path


def test_default_locomo_path_relative_to_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    expected = _dataset_at(tmp_path)
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    monkeypatch.setattr(locomo, "__file__", str(tmp_path / "site" / "memlane" / "evaluation" / "locomo.py"))
    assert default_locomo_path() == expected.resolve()


def test_default_locomo_path_relative_to_repository_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _dataset_at(tmp_path)
    repo = tmp_path / "repo"
    module_dir = repo / "src" / "memlane" / "evaluation"
    module_dir.mkdir(parents=True)
    (repo / "pyproject.toml").write_text("", encoding="utf-8")
    elsewhere = tmp_path / "a" / "b"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    monkeypatch.setattr(locomo, "__file__", str(module_dir / "locomo.py"))
    assert default_locomo_path() == expected.resolve()


def test_default_locomo_path_absent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a" / "b").mkdir(parents=True)
    monkeypatch.chdir(tmp_path / "a" / "b")
    monkeypatch.setattr(locomo, "__file__", str(tmp_path / "a" / "memlane" / "evaluation" / "locomo.py"))
    assert default_locomo_path() is None


# --- the real file --------------------------------------------------------------------------------


def test_real_locomo_file() -> None:
    path = default_locomo_path()
    if path is None:
        pytest.skip("locomo10.json not found (expected at ../shared/datasets/locomo/)")
    conversations, cleaning = load_locomo(path)

    assert len(conversations) == 10
    assert len({c.sample_id for c in conversations}) == 10
    questions = [q for c in conversations for q in c.questions]
    assert len(questions) == 1986
    assert Counter(q.category for q in questions) == {1: 282, 2: 321, 3: 96, 4: 841, 5: 446}
    assert sum(len(c.turns) for c in conversations) == 5882
    assert sum(len(c.session_dates) for c in conversations) == 272
    assert sum(1 for c in conversations for t in c.turns if t.blip_caption) == 1226

    # conv-26 lists dates up to session 35 but has 19 sessions.
    conv26 = next(c for c in conversations if c.sample_id == "conv-26")
    assert sorted(conv26.session_dates) == list(range(1, 20))
    assert conv26.last_session_at == datetime(2023, 10, 22, 9, 55, tzinfo=UTC)

    # Cleaning stats add up and match the known quirks of the published file.
    assert cleaning.questions == 1986
    assert cleaning.ids_seen == cleaning.kept + cleaning.dropped
    assert cleaning.kept == sum(len(q.evidence) for q in questions)
    assert cleaning.raw_entries == 2815
    assert cleaning.ids_seen == 2824
    assert cleaning.multi_id_entries == 4  # "D8:6; D9:17" and three space-separated lists in conv-49
    assert cleaning.split_ids == 13
    assert cleaning.normalised == 2  # "D:11:26" and "D30:05"
    assert cleaning.dropped_malformed == 1  # bare "D" in conv-42
    assert cleaning.dropped_missing == 2  # D10:19 in conv-42, D4:36 in conv-47
    assert cleaning.dropped_duplicate == 1
    assert cleaning.kept == 2820
    assert cleaning.questions_without_evidence == 4
    without = [q for q in questions if not q.has_evidence]
    assert len(without) == 4
    assert {q.category for q in without} == {3}

    for conv in conversations:
        ids = conv.turns_by_id()
        for q in conv.questions:
            assert set(q.evidence) <= ids.keys()
            assert len(set(q.evidence)) == len(q.evidence)
            if q.category == 5:
                assert q.adversarial_answer is not None
            else:
                assert q.answer is not None
    assert sum(1 for q in questions if q.category == 5 and q.answer is not None) == 2
    conv43 = next(c for c in conversations if c.sample_id == "conv-43")
    assert any("D11:26" in q.evidence for q in conv43.questions)
