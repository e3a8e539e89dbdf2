"""The write path's mention extraction: the batch and the skipped patterns change no mention."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memlane import mentions
from memlane.mentions import extract_mentions, extract_mentions_batch

_ALPHABET = st.sampled_from([*"aZb Q:@._-\"\u201c\u201d'\n1x.!?&Ae", "Acme", "Bob", "of", "the ", "I "])
_TEXTS = st.lists(_ALPHABET, max_size=40).map("".join)
_TAGS = st.lists(st.sampled_from(["project-1", "followup", "The Acme", "  ", "x"]), max_size=3)


@settings(max_examples=300, deadline=None)
@given(_TEXTS)
def test_a_pattern_skipped_for_a_missing_character_finds_nothing(text: str) -> None:
    # The guards of mentions._extract: without the character, the pattern cannot match.
    if ":" not in text:
        assert mentions._SPEAKER.match(text) is None
    if "@" not in text:
        assert mentions._EMAIL.search(text) is None
    if "_" not in text and "-" not in text:
        assert mentions._ID_LIKE.search(text) is None
    if not any(q in text for q in '"\u201c\u201d'):
        assert mentions._QUOTED.search(text) is None
    if text.lower() == text:
        assert mentions._CAPITALISED.search(text) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_TEXTS, _TAGS, st.sampled_from([None, {}, {"speaker": "Carol"}, {"speaker": 3}]))))
def test_batch_is_each_single_extraction(
    items: list[tuple[str, list[str], dict[str, object] | None]],
) -> None:
    assert extract_mentions_batch(items) == [extract_mentions(c, t, m) for c, t, m in items]
    assert extract_mentions_batch(items, limit=2) == [extract_mentions(c, t, m, limit=2) for c, t, m in items]


def test_every_kind_is_still_found() -> None:
    text = 'Alice: mail bob@example.com about INV-2024-001, "Blue Moon" and Acme Corp with Acme Corp'
    found = [(m.name, m.entity_type, m.key) for m in extract_mentions(text, ("project-1",))]
    assert found == [
        ("project-1", "tag", "project-1"),
        ("Alice", "speaker", "alice"),
        ("bob@example.com", "email", "bob@example.com"),
        ("INV-2024-001", "id", "inv-2024-001"),
        ("Blue Moon", "quoted", "blue moon"),
        ("Acme Corp", "name", "acme corp"),
    ]
    assert extract_mentions("all lower case words topic 7", ("followup",)) == [
        mentions.Mention("followup", "tag", "followup")
    ]
