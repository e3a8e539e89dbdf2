"""The in-memory keyword postings score exactly as memlane's BM25 over every match of a scope."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memlane.bm25 import DEFAULT_BM25, score_matches
from memlane.stores import keyword_postings
from memlane.stores.keyword_postings import KeywordPostings, PostingRows, best_first

WORDS = [f"w{i}" for i in range(60)]


def _rows(rng: random.Random, first: int, count: int) -> list[tuple[int, str, str, str, int]]:
    out, seq = [], first
    for _ in range(count):
        seq += rng.randint(1, 3)
        tokens = [rng.choice(WORDS[: rng.randint(3, 60)]) for _ in range(rng.randint(0, 12))]
        out.append((seq, rng.choice("ab"), rng.choice("xyz"), " ".join(tokens), len(tokens)))
    return out


def _add(index: KeywordPostings, rows: list[tuple[int, str, str, str, int]]) -> None:
    n = len(rows)
    seqs, tenants, sessions, terms, lengths = (list(c) for c in zip(*rows, strict=True))
    index.append(PostingRows(seqs, tenants, sessions, terms, lengths, [0] * n, [None] * n, ["[]"] * n))


def test_postings_match_score_matches_through_appends_and_deletes() -> None:
    rng = random.Random(1)
    index, rows = KeywordPostings(), []
    for batch in range(30):  # small and large batches: tail segments, folds, and deletions
        new = _rows(rng, rows[-1][0] if rows else 0, rng.choice((5, 300, 1500)))
        rows += new
        _add(index, new)
        if batch % 7 == 6:
            rows = [r for r in rows if rng.random() > 0.2]
            index.retain(np.array([r[0] for r in rows], dtype=np.int64))
        assert index.seqs.tolist() == [r[0] for r in rows]
        for scope in [(None, None), ("a", None), ("b", "y")]:
            inside = [r for r in rows if scope[0] in (None, r[1]) and scope[1] in (None, r[2])]
            n, avgdl = len(inside), sum(r[4] for r in inside) / max(len(inside), 1)
            query = rng.sample(WORDS, 4)
            found = index.scope_postings(query, scope)
            df = {t: sum(t in r[3].split() for r in inside) for t in query}
            assert {t: len(p) for t, p in found.items()} == df
            df = {t: d for t, d in df.items() if d}
            if not df:
                continue
            expected = score_matches([(r[0], r[3], r[4], 0, None) for r in inside], df, n, avgdl, 10**9)
            positions, scores = index.score(found, df, n, avgdl, DEFAULT_BM25)
            keys = index.seqs[positions]
            for top in (1, 25, len(keys)):
                got = [(int(keys[i]), float(scores[i])) for i in best_first(keys, scores, top)]
                assert got == [(k, s) for k, s, _, _ in expected[:top]]


def test_neighbours_are_the_nearest_rows_of_the_same_session() -> None:
    rng = random.Random(2)
    index = KeywordPostings()
    rows = _rows(rng, 0, 400)
    _add(index, rows[:250])
    _add(index, rows[250:])
    keys = np.array([r[0] for r in rows[::9]] + [10**9], dtype=np.int64)
    positions, adjacent = index.neighbours(keys, 2)
    assert index.seqs[positions].tolist() == keys[:-1].tolist()  # the unknown key is left out
    for key, near in zip(keys[:-1].tolist(), adjacent.tolist(), strict=True):
        same = [r[0] for r in rows if r[1:3] == next(x for x in rows if x[0] == key)[1:3]]
        at = same.index(key)
        want = [same[at + d] if 0 <= at + d < len(same) else -1 for d in (-2, -1, 1, 2)]
        assert near == want


def test_a_scope_holding_every_row_scores_as_the_plain_path() -> None:
    """The whole-scope fast path (no per-posting scope test) gives the plain path's rows and floats,
    search after search (the score scratch is reset), and stops applying once another scope has rows."""
    rng = random.Random(3)
    index = KeywordPostings()
    rows = [(seq, "a", "x", text, n) for seq, _, _, text, n in _rows(rng, 0, 900)]
    _add(index, rows[:600])
    _add(index, rows[600:])  # a tail segment: two parts per term
    for _ in range(20):
        query = rng.sample(WORDS, 5)
        n, avgdl = len(rows), sum(r[4] for r in rows) / len(rows)
        expected = None
        for scope in [("a", None), ("a", "x"), (None, None)]:
            found = index.scope_postings(query, scope)
            df = {t: len(p) for t, p in found.items() if len(p)}
            positions, scores = index.score(found, df, n, avgdl, DEFAULT_BM25)
            got = (index.seqs[positions].tolist(), scores.tolist())
            plain = score_matches([(r[0], r[3], r[4], 0, None) for r in rows], df, n, avgdl, 10**9)
            assert sorted(zip(*got, strict=True), key=lambda x: (-x[1], x[0])) == [
                (k, s) for k, s, _, _ in plain
            ]
            assert expected in (None, got)
            expected = got
    _add(index, [(10**6, "b", "x", "w1 w2", 2)])  # another tenant: the scope test applies again
    assert index.scope_postings(["w1"], ("b", None))["w1"].rows.tolist() == [len(rows)]
    assert len(index.scope_postings(["w1"], ("a", None))["w1"]) == sum("w1" in r[3].split() for r in rows)


def test_every_row_norm_and_per_term_norms_give_the_same_floats(monkeypatch: pytest.MonkeyPatch) -> None:
    """The two ways :meth:`KeywordPostings.score` gets the length norms agree float for float."""
    rng = random.Random(4)
    index = KeywordPostings()
    rows = _rows(rng, 0, 700)
    _add(index, rows)
    for _ in range(30):
        query = rng.sample(WORDS, rng.randint(1, 6))
        scope = rng.choice([(None, None), ("a", None), ("b", "y")])
        found = index.scope_postings(query, scope)
        df = {t: len(p) for t, p in found.items() if len(p)}
        n, avgdl = rng.randint(700, 900), rng.uniform(3.0, 8.0)
        got = []
        for every in (True, False, True):
            monkeypatch.setattr(KeywordPostings, "_worth_every_norm", lambda *_, e=every: e)
            positions, scores = index.score(found, df, n, avgdl, DEFAULT_BM25)
            got.append((positions.tolist(), scores.tolist()))
        assert got[0] == got[1] == got[2]


_CORPUS = st.lists(
    st.tuples(
        st.sampled_from("ab"),
        st.sampled_from("xy"),
        # a few common words (equal scores: ties; scratch cleared whole) and rarer ones (cleared by row)
        st.lists(st.sampled_from(WORDS[:8]) | st.sampled_from(WORDS[8:48]), max_size=6),
        st.integers(0, 3),  # token_count beyond the terms
        st.booleans(),  # deleted later
    ),
    min_size=40,  # enough rows for a rare word's matches to be under 1/16 of them
    max_size=200,
)


@settings(max_examples=50, deadline=None)
@given(
    corpus=_CORPUS,
    cut=st.integers(0, 200),
    query=st.lists(st.sampled_from(WORDS[:48]), min_size=1, max_size=5, unique=True),
    scope=st.sampled_from([(None, None), ("a", None), ("b", "y")]),
    top=st.integers(1, 40),
)
def test_top_rows_equal_the_plain_path_over_random_corpora(
    corpus: list[tuple[str, str, list[str], int, bool]],
    cut: int,
    query: list[str],
    scope: tuple[str | None, str | None],
    top: int,
) -> None:
    """Over random corpora (two appends: main and tail segments), deletions, scopes and queries, the
    best ``top`` rows of the postings (keys, floats, tie order) are :func:`score_matches`'."""
    rows = [(i * 2 + 1, t, s, " ".join(w), len(w) + extra) for i, (t, s, w, extra, _) in enumerate(corpus)]
    index = KeywordPostings()
    for part in (rows[:cut], rows[cut:]):
        if part:
            _add(index, part)
    kept = [r for r, c in zip(rows, corpus, strict=True) if not c[4]]
    index.retain(np.array([r[0] for r in kept], dtype=np.int64))
    inside = [r for r in kept if scope[0] in (None, r[1]) and scope[1] in (None, r[2])]
    if not inside:
        return
    n, avgdl = len(inside), sum(r[4] for r in inside) / len(inside)
    found = index.scope_postings(query, scope)
    df = {t: len(p) for t, p in found.items() if len(p)}
    if not df:
        return
    expected = score_matches([(r[0], r[3], r[4], 0, None) for r in inside], df, n, avgdl, top)
    positions, scores = index.score(found, df, n, avgdl, DEFAULT_BM25)
    keys = index.seqs[positions]
    got = [(int(keys[i]), float(scores[i])) for i in best_first(keys, scores, top)]
    assert got == [(k, s) for k, s, _, _ in expected]
    last = dict(list(df.items())[-1:])  # the scratch was cleared: a narrower query sees none of the above
    positions, scores = index.score(found, last, n, avgdl, DEFAULT_BM25)
    expected = score_matches([(r[0], r[3], r[4], 0, None) for r in inside], last, n, avgdl, len(inside))
    assert [(int(k), float(s)) for k, s in zip(index.seqs[positions], scores, strict=True)] == sorted(
        (k, s) for k, s, _, _ in expected
    )


@settings(max_examples=40, deadline=None)
@given(
    corpus=_CORPUS,
    steps=st.lists(
        st.tuples(
            st.sampled_from(["query", "query", "query", "append", "delete"]),
            st.lists(st.sampled_from(WORDS[:48]), min_size=1, max_size=5, unique=True),
            st.sampled_from([(None, None), ("a", None), ("b", "y")]),
        ),
        min_size=1,
        max_size=25,
    ),
    budget=st.integers(1, 4),
)
def test_kept_contributions_give_the_floats_of_a_fresh_computation(
    corpus: list[tuple[str, str, list[str], int, bool]],
    steps: list[tuple[str, list[str], tuple[str | None, str | None]]],
    budget: int,
) -> None:
    """With ``scope=`` (contributions kept between searches, every term kept, a small budget) the
    scores of every search equal those computed afresh and :func:`score_matches`', through
    appends and deletions that change the rows, ``N`` and ``avgdl`` between searches."""
    rows = [(i * 2 + 1, t, s, " ".join(w), len(w) + extra) for i, (t, s, w, extra, _) in enumerate(corpus)]
    deleted = {r[0] for r, c in zip(rows, corpus, strict=True) if c[4]}
    index, held = KeywordPostings(), rows[: len(rows) // 2]
    _add(index, held)
    pending = rows[len(rows) // 2 :]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(keyword_postings, "GAIN_MIN_ROWS", 1)
        patch.setattr(keyword_postings, "GAIN_BUDGET", budget)
        for action, query, scope in steps:
            if action == "append" and pending:
                _add(index, pending[:30])
                held, pending = held + pending[:30], pending[30:]
            elif action == "delete":
                held = [r for r in held if r[0] not in deleted]
                index.retain(np.array([r[0] for r in held], dtype=np.int64))
            inside = [r for r in held if scope[0] in (None, r[1]) and scope[1] in (None, r[2])]
            found = index.scope_postings(query, scope)
            df = {t: len(p) for t, p in found.items() if len(p)}
            if not df:
                continue
            n, avgdl = len(inside), sum(r[4] for r in inside) / len(inside)
            # the second search reads what the first kept; other statistics must not read it
            for n_rows, avg in ((n, avgdl), (n, avgdl), (n + 3, avgdl), (n, avgdl + 0.5)):
                kept = index.score(found, df, n_rows, avg, DEFAULT_BM25, scope=scope)
                fresh = index.score(found, df, n_rows, avg, DEFAULT_BM25)
                assert kept[0].tolist() == fresh[0].tolist() and kept[1].tolist() == fresh[1].tolist()
            kept = index.score(found, df, n, avgdl, DEFAULT_BM25, scope=scope)
            expected = score_matches([(r[0], r[3], r[4], 0, None) for r in inside], df, n, avgdl, len(inside))
            got = sorted(zip(index.seqs[kept[0]].tolist(), kept[1].tolist(), strict=True))
            assert got == sorted((k, s) for k, s, _, _ in expected)


def test_scope_size_counts_the_rows_and_tokens_of_each_scope_through_appends_and_deletes() -> None:
    rng = random.Random(3)
    index, rows = KeywordPostings(), []
    for batch in range(8):
        new = _rows(rng, rows[-1][0] if rows else 0, rng.choice((5, 200)))
        rows += new
        _add(index, new)
        if batch % 3 == 2:
            rows = [r for r in rows if rng.random() > 0.3]
            index.retain(np.array([r[0] for r in rows], dtype=np.int64))
        for scope in [
            (None, None),
            ("a", None),
            ("b", None),
            ("c", None),
            ("a", "x"),
            ("b", "z"),
            ("a", "w"),
        ]:
            held = [r for r in rows if scope[0] in (None, r[1]) and scope[1] in (None, r[2])]
            assert index.scope_size(scope) == (len(held), float(sum(r[4] for r in held)))


def test_best_passing_is_the_best_of_the_rows_passing_the_filter() -> None:
    rng = np.random.default_rng(5)
    seqs = np.arange(1, 2001, dtype=np.int64) * 3
    rows = np.sort(rng.choice(len(seqs), size=900, replace=False)).astype(np.int64)
    scores = rng.integers(1, 40, size=len(rows)).astype(np.float64)  # many ties
    for share in (0.0, 0.01, 0.5, 1.0):
        passes = set(seqs[rng.random(len(seqs)) < share].tolist())
        checked: list[int] = []

        def check(keys: np.ndarray, passes: set[int] = passes, checked: list[int] = checked) -> np.ndarray:
            checked.append(len(keys))
            return np.array([int(k) in passes for k in keys], dtype=bool)

        for top_n in (1, 10, 50):
            got = keyword_postings.best_passing(seqs, rows, scores, check, top_n)
            ok = np.array([int(seqs[r]) in passes for r in rows], dtype=bool)
            expected = np.flatnonzero(ok)[best_first(rows[ok], scores[ok], top_n)]
            assert got.tolist() == expected.tolist()
        assert share < 1.0 or checked == [1 + 32, 10 + 32, 50 + 32]  # all pass: one chunk each
