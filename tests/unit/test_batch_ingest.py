"""The batched write path computes exactly what the row-by-row functions compute.

``index_terms_batch`` against ``index_terms``, ``RowCodec.episode_rows`` against
``RowCodec.episode_row``, the batched id generator against the UUIDv7 layout, and
``build_episodes`` against ``build_episode`` (same episodes, same errors).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg.types.json import Json

from memlane.analysis import index_terms, index_terms_batch, keyword_text, terms_column
from memlane.episode_input import EpisodeInput, build_episode, build_episodes, new_episode_ids
from memlane.errors import DuplicateEpisodeError, ValidationError
from memlane.evaluation.locomo import default_locomo_path, load_locomo
from memlane.models import Episode
from memlane.stores.postgres.base import CODEC as PG_CODEC
from memlane.stores.postgres.base import VectorParam, reject_nul_episodes
from memlane.stores.sqlite import SQLiteStore
from memlane.stores.sqlite.base import CODEC, encode_vectors, to_us

TEXTS = [
    "Don't run the pre-edit hook on C++ files (see docs/setup.md)",
    "用户喜欢喝绿茶，每天早上一杯",  # noqa: RUF001 - full-width comma kept
    "重跑deploy失败后回滚",
    "Café CAFÉ naïve résumé",
    "The running runners ran; ADOPTION adopting adopted",
    "x" * 70 + " " + "y" * 64 + " " + "the",
    "",
    "   ...   ",
    "the and of",
    "Ｆｕｌｌｗｉｄｔｈ ＡＢＣ ① ﬁ",  # noqa: RUF001 - NFKC folds full-width letters
    "ß straße STRASSE",
    "episode 12 about topic 7",
]


def _expected(text: str) -> tuple[str, int]:
    terms, count = index_terms(text)
    return terms_column(terms), count


def test_index_terms_batch_matches_index_terms_on_tricky_texts() -> None:
    assert index_terms_batch(TEXTS) == [_expected(t) for t in TEXTS]
    assert index_terms_batch(TEXTS) == [_expected(t) for t in TEXTS]  # second time from the cache


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=80), max_size=8))
def test_index_terms_batch_matches_index_terms_on_any_text(texts: list[str]) -> None:
    assert index_terms_batch(texts) == [_expected(t) for t in texts]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.text(alphabet="aZ09 x Q", max_size=60) | st.text(alphabet="aZ9 \t\n.-_'", max_size=60), max_size=8
    )
)
def test_index_terms_batch_matches_index_terms_on_words_and_spaces(texts: list[str]) -> None:
    # Mostly texts of only letters, digits and spaces: the split path of index_terms_batch.
    assert index_terms_batch(texts) == [_expected(t) for t in texts]
    assert index_terms_batch(["Running  the ADOPTED 42", "  ", "a b", "x\ty"]) == [
        _expected(t) for t in ["Running  the ADOPTED 42", "  ", "a b", "x\ty"]
    ]


def test_index_terms_batch_matches_index_terms_on_locomo() -> None:
    # Every LoCoMo turn (5,882, read in place) and its image caption as keyword texts, in one batch.
    path = default_locomo_path()
    if path is None:
        pytest.skip("locomo10.json not found (expected at ../shared/datasets/locomo/)")
    conversations, _ = load_locomo(path)
    texts = [
        keyword_text(t.text, {"caption": t.blip_caption} if t.blip_caption else None)
        for c in conversations
        for t in c.turns
    ]
    assert len(texts) == 5882
    assert index_terms_batch(texts) == [_expected(t) for t in texts]


def test_new_episode_ids_are_uuid7_unique_and_ordered() -> None:
    ids = new_episode_ids(2000)
    assert len(set(ids)) == 2000
    assert ids == sorted(ids)
    for eid in ids[:50]:
        assert len(eid) == 32 and int(eid, 16) >= 0
        assert eid[12] == "7"
        assert eid[16] in "89ab"
    later = new_episode_ids(1)[0]
    assert later[:12] >= ids[-1][:12]
    assert new_episode_ids(0) == []


def _episodes() -> list[Episode]:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    other = timezone(timedelta(hours=5, minutes=30))
    items = [
        EpisodeInput("note", TEXTS[0], tags=["A", "b"], importance=3),
        EpisodeInput("note", TEXTS[1], tags=("a", "b"), metadata={"caption": "a golden retriever"}),
        EpisodeInput(
            " fact ",
            TEXTS[3],
            created_at=datetime(2025, 1, 1, tzinfo=other),
            valid_from=datetime(2024, 1, 1, tzinfo=UTC),
            valid_until=datetime(2027, 1, 1, tzinfo=UTC),
            metadata={"z": 1, "a": ["é", None, 1.5, {"k": True}]},
            session_scoped=True,
        ),
        EpisodeInput(
            "imported",
            TEXTS[4],
            id="explicit-id",
            tenant_id="t2",
            session_id="s2",
            recorded_at=datetime(2025, 6, 1, tzinfo=UTC),
            invalidated_at=datetime(2025, 7, 1, tzinfo=UTC),
            superseded_by="other",
            supersede_reason="because",
            archived_at=datetime(2025, 8, 1, tzinfo=UTC),
            retrieve_count=4,
            last_retrieved_at=datetime(2025, 9, 1, tzinfo=UTC),
        ),
        EpisodeInput("note", TEXTS[11], tags="Solo Tag", importance=None),
    ]
    return build_episodes(items, now, tenant_id="t", session_id="s", embedding_model="m")


def test_episode_rows_match_episode_row() -> None:
    episodes = _episodes()
    vectors = np.random.default_rng(1).standard_normal((len(episodes), 4)).astype(np.float32)
    blobs = encode_vectors(vectors)
    assert CODEC.episode_rows(episodes, blobs) == [
        CODEC.episode_row(ep, blob) for ep, blob in zip(episodes, blobs, strict=True)
    ]
    assert CODEC.episode_rows(episodes, None) == [CODEC.episode_row(ep, None) for ep in episodes]


def _pg_row(row: tuple[object, ...]) -> tuple[object, ...]:
    # psycopg wrappers as comparable values: the JSON text sent, the vector's floats.
    return tuple(
        ("json", v.dumps(v.obj))
        if isinstance(v, Json)
        else ("vector", list(v.values))
        if isinstance(v, VectorParam)
        else v
        for v in row
    )


def test_postgres_episode_rows_match_episode_row() -> None:
    episodes = _episodes()
    vectors = np.random.default_rng(1).standard_normal((len(episodes), 4)).astype(np.float32)
    params = [VectorParam(v) for v in vectors]
    batch = [_pg_row(r) for r in PG_CODEC.episode_rows(episodes, params)]
    assert batch == [_pg_row(PG_CODEC.episode_row(ep, p)) for ep, p in zip(episodes, params, strict=True)]
    assert batch[2][8] == ("json", '{"a": ["é", null, 1.5, {"k": true}], "z": 1}')


def test_reject_nul_episodes_names_the_first_episode_with_a_nul() -> None:
    episodes = _episodes()
    reject_nul_episodes(episodes)  # no NUL: nothing raised
    for field, value in [("content", "a\x00b"), ("tags", ("ok", "t\x00g")), ("supersede_reason", "r\x00")]:
        bad = [episodes[0], replace(episodes[1], **{field: value}), replace(episodes[2], content="c\x00")]
        with pytest.raises(ValidationError, match=f"episode {episodes[1].id!r}: PostgreSQL text cannot"):
            reject_nul_episodes(bad)


def test_build_episodes_matches_build_episode() -> None:
    episodes = _episodes()
    assert [ep.id for ep in episodes][3] == "explicit-id"
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    assert episodes[2].event_type == "fact"
    assert episodes[0].tags == ("a", "b") and episodes[4].tags == ("solo tag",)
    assert episodes[2].created_at == datetime(2024, 12, 31, 18, 30, tzinfo=UTC)
    for ep in episodes:
        item = EpisodeInput(
            ep.event_type,
            ep.content,
            tags=ep.tags,
            importance=ep.importance,
            created_at=ep.created_at,
            metadata=ep.metadata,
            id=ep.id,
            tenant_id=ep.tenant_id,
            session_id=ep.session_id,
            valid_from=ep.valid_from,
            valid_until=ep.valid_until,
            recorded_at=ep.recorded_at,
            invalidated_at=ep.invalidated_at,
            superseded_by=ep.superseded_by,
            supersede_reason=ep.supersede_reason,
            archived_at=ep.archived_at,
            session_scoped=ep.session_scoped,
            retrieve_count=ep.retrieve_count,
            last_retrieved_at=ep.last_retrieved_at,
        )
        again = build_episode(item, now, tenant_id="t", session_id="s", embedding_model="m")
        assert again == ep


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (EpisodeInput("note", "   "), "content"),
        (EpisodeInput("", "x"), "event_type"),
        (EpisodeInput("note", "x", tags=["ok", 3]), r"tags\[1\]"),  # type: ignore[list-item]
        (EpisodeInput("note", "x", tags=[["nested"]]), r"tags\[0\]"),  # type: ignore[list-item]
        (EpisodeInput("note", "x", metadata={"a": float("nan")}), "metadata.a"),
        (EpisodeInput("note", "x", metadata={"a": "\x00"}), "metadata.a"),
        (EpisodeInput("note", "x", metadata={1: "a"}), "keys must be strings"),  # type: ignore[dict-item]
        (EpisodeInput("note", "x", metadata={"a": {1, 2}}), "metadata.a"),  # type: ignore[dict-item]
        (EpisodeInput("note", "x", metadata={"a\udc00": 1}), "surrogate"),
        (EpisodeInput("note", "x", created_at=datetime(2026, 1, 1)), "created_at"),
    ],
)
def test_build_episodes_refuses_what_build_episode_refuses(bad: EpisodeInput, message: str) -> None:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    with pytest.raises(ValidationError, match=message) as single:
        build_episode(bad, now, tenant_id="t", session_id="s", embedding_model="m")
    with pytest.raises(ValidationError) as batched:
        build_episodes(
            [EpisodeInput("note", "fine"), bad], now, tenant_id="t", session_id="s", embedding_model="m"
        )
    assert str(batched.value) == f"episode #1: {single.value}"
    with pytest.raises(ValidationError) as alone:
        build_episodes([bad], now, tenant_id="t", session_id="s", embedding_model="m")
    assert str(alone.value) == str(single.value)


def test_to_us_is_exact_for_any_timezone() -> None:
    other = timezone(timedelta(hours=-9, minutes=-45))
    at = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=other)
    delta = at.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC)
    assert to_us(at) == (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    assert to_us(datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC)) == -1


def test_sqlite_insert_keeps_batch_order_keyword_rows_and_tag_rows(tmp_path: Path) -> None:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    items = [
        EpisodeInput("note", f"episode {i} about topic {i % 7}", tags=[f"t{i % 3}"]) for i in range(1037)
    ]
    episodes = build_episodes(items, now, tenant_id="t", session_id="s", embedding_model="m")
    vectors = np.random.default_rng(2).standard_normal((len(episodes), 8)).astype(np.float32)
    store = SQLiteStore(tmp_path / "m.db")
    try:
        store.bind_embedding_model("m", 8)
        store.insert(episodes, vectors)  # 1037 rows: statements of 512, 512, 8, 4 and 1 rows
        conn = store.connection()
        ids = [r[0] for r in conn.execute("SELECT id FROM episodes ORDER BY seq")]
        assert ids == [ep.id for ep in episodes]
        assert conn.execute("SELECT count(*) FROM episode_tags").fetchone()[0] == 1037
        assert (
            conn.execute("SELECT count(*) FROM episodes_fts WHERE episodes_fts MATCH 'topic'").fetchone()[0]
            == 1037
        )
        got = store.vectors([episodes[0].id, episodes[-1].id])
        assert np.array_equal(got[episodes[-1].id], vectors[-1])
        assert store.get(episodes[600].id) == episodes[600]
    finally:
        store.close()


def test_sqlite_insert_refuses_a_batch_with_a_repeated_id(tmp_path: Path) -> None:
    now = datetime(2026, 3, 1, 12, tzinfo=UTC)
    items = [EpisodeInput("note", f"e {i}", id=f"id-{i % 600}") for i in range(700)]
    episodes = build_episodes(items, now, tenant_id="t", session_id="s", embedding_model="m")
    store = SQLiteStore(tmp_path / "m.db")
    try:
        with pytest.raises(DuplicateEpisodeError):
            store.insert(episodes, None)
        assert store.connection().execute("SELECT count(*) FROM episodes").fetchone()[0] == 0
        assert store.connection().execute("SELECT count(*) FROM episodes_fts_terms").fetchone()[0] == 0
    finally:
        store.close()
