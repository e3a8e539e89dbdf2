"""PostgreSQL keyword search from in-memory postings (memlane.stores.postgres.postings) on a real server.

* Equality: a store answering from its postings and one scoring in the server
  (``keyword_index=False``) return the same keys, order and scores for random writes, deletes,
  filters and scopes (both read the same schema; the postings store catches up by snapshot diffs),
  and the same neighbours (keys, adjacent keys, sessions, tags) as the neighbour statement for
  random interleaved writes with tags, deletes, radii and key samples.
* Concurrent writers, two connections: a transaction that took lower row keys and commits after
  a later one, a delete still in progress, a pruned deletion log and rewritten rows: every search
  equals a fresh store's (postings rebuilt from scratch in the same state), every neighbours
  answer the statement's.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memlane import EpisodeInput, EpisodicMemory
from memlane.embeddings.fake import HashingEmbedder
from memlane.stores.base import EpisodeFilter, KeywordCandidates, Neighbours
from tests.conftest import T0
from tests.pg_server import SKIP_ENV

if os.environ.get(SKIP_ENV) == "1":
    pytest.skip(f"PostgreSQL tests skipped explicitly ({SKIP_ENV}=1)", allow_module_level=True)

import psycopg
from psycopg import sql

from memlane.stores.postgres import PostgresStore

WORDS = ("amber", "basalt", "cobalt", "dolomite", "emerald", "feldspar", "garnet", "hematite", "jasper")
SCOPES = (("t1", "s1"), ("t1", "s2"), ("t2", "s1"))


def _hits(found: KeywordCandidates) -> list[tuple[int, float, float, float]]:
    """Keys, scores, creation times and importance (NaN as -1), in order."""
    return [
        (int(k), float(s), float(c), -1.0 if i != i else float(i))
        for k, s, c, i in zip(
            found.keys, found.score, found.created_at_seconds, found.importance, strict=True
        )
    ]


@pytest.fixture(scope="module")
def pair(pg_url: str) -> Iterator[tuple[PostgresStore, PostgresStore]]:
    """A postings store and a server-side store on one schema (kept across the property's examples)."""
    schema = f"test_kp_{uuid.uuid4().hex[:12]}"
    stores = (PostgresStore(pg_url, schema=schema), PostgresStore(pg_url, schema=schema, keyword_index=False))
    yield stores
    for store in stores:
        store.close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


_texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
_batch = st.lists(
    st.tuples(_texts, st.sampled_from(SCOPES), st.sampled_from(["note", "fact"]), st.integers(0, 10)),
    min_size=0,
    max_size=12,
)
_query = st.tuples(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=3, unique=True),
    st.sampled_from([None, *SCOPES, ("t1", None), ("t2", None)]),
    st.sampled_from([None, "note"]),
    st.integers(1, 8),
)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(_batch, min_size=1, max_size=3),
    deletes=st.integers(0, 4),
    queries=st.lists(_query, min_size=1, max_size=5),
)
def test_postings_answer_as_the_server_side_path(
    pair: tuple[PostgresStore, PostgresStore],
    batches: list[list[tuple[str, tuple[str, str], str, int]]],
    deletes: int,
    queries: list[tuple[list[str], tuple[str, str | None] | None, str | None, int]],
) -> None:
    postings, server = pair
    for batch in batches:
        for (tenant, session), group in _by_scope(batch).items():
            memory = EpisodicMemory(server, HashingEmbedder(), tenant_id=tenant, session_id=session)
            memory.remember_episodes(
                [
                    EpisodeInput(
                        event_type,
                        text,
                        importance=float(imp) if imp else None,
                        created_at=T0 - timedelta(minutes=imp),
                    )
                    for text, _, event_type, imp in group
                ]
            )
        _check_queries(postings, server, queries)  # the postings catch up between batches
    for episode in server.list_recent(EpisodeFilter(), deletes):
        server.delete(episode.id, episode.tenant_id)
    _check_queries(postings, server, queries)


def _by_scope(
    batch: list[tuple[str, tuple[str, str], str, int]],
) -> dict[tuple[str, str], list[tuple[str, tuple[str, str], str, int]]]:
    groups: dict[tuple[str, str], list[tuple[str, tuple[str, str], str, int]]] = {}
    for item in batch:
        groups.setdefault(item[1], []).append(item)
    return groups


def _check_queries(
    postings: PostgresStore,
    server: PostgresStore,
    queries: list[tuple[list[str], tuple[str, str | None] | None, str | None, int]],
) -> None:
    for terms, scope, event_type, top_n in queries:
        tenant, session = scope if scope is not None else (None, None)
        flt = EpisodeFilter(tenant_id=tenant, session_id=session, event_type=event_type)
        assert _hits(postings.keyword_candidates(flt, terms, top_n)) == _hits(
            server.keyword_candidates(flt, terms, top_n)
        )


def _neighbours(found: Neighbours) -> list[tuple[Any, ...]]:
    """Each row's key, session, tags, the tags' words and adjacent keys, in order."""
    return [
        (key, session, tags, [sorted(found.words(t)) for t in tags], adjacent)
        for key, session, tags, adjacent in zip(
            found.keys.tolist(), found.session_ids, found.tags, found.adjacent.tolist(), strict=True
        )
    ]


def _stored_keys(store: PostgresStore) -> list[int]:
    """Every row key of the store's schema, ascending (read beside the store)."""
    with store._transaction("keys") as cur:
        return [int(r[0]) for r in cur.execute(sql.SQL("SELECT seq FROM {} ORDER BY seq").format(store._t))]


def _same_neighbours(store: PostgresStore, statement: PostgresStore, keys: list[int], radius: int) -> None:
    found = _neighbours(store.neighbours(_ALL, keys, radius))
    assert found == _neighbours(statement.neighbours(_ALL, keys, radius))
    assert len(found) == len(set(keys) & set(_stored_keys(statement)))


TAG_LISTS = ([], ["red"], ["red", "blue"], ["naïve tag"], ['quote"d'])
_turns = st.lists(st.tuples(st.sampled_from(SCOPES), st.sampled_from(TAG_LISTS), st.booleans()), max_size=10)


@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    batches=st.lists(_turns, min_size=1, max_size=4),
    deletes=st.lists(st.integers(0, 10**6), max_size=4),
    picks=st.lists(st.integers(0, 10**6), min_size=1, max_size=40),
    radius=st.integers(1, 3),
)
def test_postings_neighbours_equal_the_statement(
    pair: tuple[PostgresStore, PostgresStore],
    batches: list[list[tuple[tuple[str, str], list[str], bool]]],
    deletes: list[int],
    picks: list[int],
    radius: int,
) -> None:
    """Turns of random scopes (one at a time, or a run with the next) by the other store, then deletes."""
    postings, statement = pair

    def check() -> None:
        keys = _stored_keys(statement)
        sample = [keys[p % len(keys)] for p in picks] if keys else []
        for chosen in (sample, keys, [*sample[:3], 10**12]):
            _same_neighbours(postings, statement, chosen, radius)

    for batch in batches:
        pending: list[EpisodeInput] = []
        for i, ((tenant, session), tags, run_on) in enumerate(batch):
            pending.append(EpisodeInput("turn", f"{WORDS[i % len(WORDS)]} turn", tags=tags))
            if not run_on or i == len(batch) - 1:
                memory = EpisodicMemory(statement, HashingEmbedder(), tenant_id=tenant, session_id=session)
                memory.remember_episodes(pending)
                pending = []
        check()  # the postings catch up after the other store's commits
    episodes = statement.list_recent(_ALL, 10_000)
    for pick in deletes:
        if episodes:
            gone = episodes.pop(pick % len(episodes))
            statement.delete(gone.id, gone.tenant_id)
    check()


# -- concurrent writers on two connections ------------------------------------------------------

_ALL = EpisodeFilter()


def _insert_copy(conn: psycopg.Connection[Any], schema: str, source_id: str, new_id: str, terms: str) -> None:
    """Insert a copy of ``source_id`` as ``new_id`` holding ``terms``, in ``conn``'s transaction."""
    columns = [
        str(r[0])
        for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_schema = %s "
            "AND table_name = 'memlane_episodes' "
            "AND column_name NOT IN ('seq', 'xid', 'id', 'terms', 'token_count') "
            "AND is_generated = 'NEVER' ORDER BY ordinal_position",
            (schema,),
        ).fetchall()
    ]
    names = sql.SQL(", ").join(sql.Identifier(c) for c in columns)
    conn.execute(
        sql.SQL(
            "INSERT INTO {t} (id, terms, token_count, {names}) "
            "SELECT %s, %s, %s, {names} FROM {t} WHERE id = %s"
        ).format(t=sql.Identifier(schema, "memlane_episodes"), names=names),
        (new_id, terms, len(terms.split()), source_id),
    )


def _delete(conn: psycopg.Connection[Any], schema: str, episode_id: str) -> None:
    conn.execute(
        sql.SQL("DELETE FROM {t} WHERE id = %s").format(t=sql.Identifier(schema, "memlane_episodes")),
        (episode_id,),
    )


def _agrees_with_a_fresh_store(store: PostgresStore, url: str, schema: str, terms: list[str]) -> list[int]:
    """The store's hits for ``terms`` (all rows), asserted equal to a just-built store's; their keys.

    Also its neighbours of every stored key, asserted equal to the neighbour statement's.
    """
    fresh = PostgresStore(url, schema=schema)
    statement = PostgresStore(url, schema=schema, keyword_index=False)
    try:
        expected = _hits(fresh.keyword_candidates(_ALL, terms, 50))
        _same_neighbours(store, statement, [*_stored_keys(statement), 10**12], 2)  # refreshes first
        found = _hits(store.keyword_candidates(_ALL, terms, 50))
    finally:
        fresh.close()
        statement.close()
    assert found == expected
    return [k for k, *_ in found]


def test_a_writer_with_lower_keys_committing_last_is_caught_up(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t", session_id="s")
    seed = memory.remember_episodes([EpisodeInput("note", f"{w} rock") for w in WORDS])
    assert len(_agrees_with_a_fresh_store(store, pg_url, pg_schema, ["rock"])) == len(WORDS)
    with psycopg.connect(pg_url) as a, psycopg.connect(pg_url) as b:
        _insert_copy(a, pg_schema, seed[0].id, "early", "zircon rock")  # takes the lower key
        _insert_copy(b, pg_schema, seed[0].id, "late", "quartz rock")
        _delete(a, pg_schema, seed[1].id)  # in progress: still found
        b.commit()
        assert len(_agrees_with_a_fresh_store(store, pg_url, pg_schema, ["quartz"])) == 1
        assert _agrees_with_a_fresh_store(store, pg_url, pg_schema, ["zircon"]) == []
        assert len(_agrees_with_a_fresh_store(store, pg_url, pg_schema, ["rock"])) == len(WORDS) + 1
        a.commit()
    assert len(_agrees_with_a_fresh_store(store, pg_url, pg_schema, ["zircon"])) == 1
    keys = _agrees_with_a_fresh_store(store, pg_url, pg_schema, ["rock", "zircon"])
    assert len(keys) == len(WORDS) + 1  # zircon and quartz in, seed[1] out
    assert _agrees_with_a_fresh_store(store, pg_url, pg_schema, [WORDS[1]]) == []
    store.close()


def test_a_pruned_deletion_log_makes_a_process_behind_it_reread_the_keys(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t", session_id="s")
    seed = memory.remember_episodes([EpisodeInput("note", f"{w} rock") for w in WORDS])
    _agrees_with_a_fresh_store(store, pg_url, pg_schema, ["rock"])  # the postings are built
    log = sql.Identifier(pg_schema, "memlane_deletions")
    with psycopg.connect(pg_url, autocommit=True) as conn:
        _delete(conn, pg_schema, seed[0].id)
        conn.execute(sql.SQL("UPDATE {} SET logged_at = logged_at - interval '1 day'").format(log))
        _delete(conn, pg_schema, seed[1].id)  # gets the prune lock: drops the first entry
        left = conn.execute(
            sql.SQL("SELECT seq IS NULL, pruned_below IS NULL FROM {} ORDER BY xid").format(log)
        )
        assert sorted(left.fetchall()) == [(False, True), (True, False)]  # the second delete and the mark
    keys = _agrees_with_a_fresh_store(store, pg_url, pg_schema, ["rock"])
    assert len(keys) == len(WORDS) - 2
    store.close()


def test_rewriting_an_indexed_column_is_caught_up(pg_url: str, pg_schema: str) -> None:
    store = PostgresStore(pg_url, schema=pg_schema)
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t", session_id="s")
    seed = memory.remember_episodes([EpisodeInput("note", f"{w} rock") for w in WORDS])
    _agrees_with_a_fresh_store(store, pg_url, pg_schema, ["rock"])
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(
            sql.SQL("UPDATE {} SET terms = 'onyx', token_count = 1 WHERE id = %s").format(
                sql.Identifier(pg_schema, "memlane_episodes")
            ),
            (seed[0].id,),
        )
        conn.execute(  # a row moved to another session, with other tags: its neighbours change
            sql.SQL("UPDATE {} SET session_id = 'moved', tags = ARRAY['blue'] WHERE id = %s").format(
                sql.Identifier(pg_schema, "memlane_episodes")
            ),
            (seed[4].id,),
        )
    assert len(_agrees_with_a_fresh_store(store, pg_url, pg_schema, ["onyx"])) == 1
    assert len(_agrees_with_a_fresh_store(store, pg_url, pg_schema, ["rock"])) == len(WORDS) - 1
    store.close()


# -- a selective filter: its passing keys read once ---------------------------------------------


def _remember_1200(store: PostgresStore) -> None:
    """1,200 turns of t1/s1: a word each (amber every 9th), half notes, a 0.4 % tag ``rare``."""
    memory = EpisodicMemory(store, HashingEmbedder(), tenant_id="t1", session_id="s1", owns_store=False)
    memory.remember_episodes(
        [
            EpisodeInput(
                "note" if i % 2 else "fact",
                f"{WORDS[i % len(WORDS)]} {'cobalt ' * (i % 5)}".strip(),
                tags=["rare"] if i % 270 == 0 else ["common"],
                created_at=T0 - timedelta(minutes=i),
            )
            for i in range(1200)
        ]
    )


def test_a_selective_filter_is_read_once_with_the_same_hits(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """4 % of 134 matches pass a tag: the postings path reads the tag's keys once, same hits."""
    import memlane.stores.postgres.postings as postings_module

    reads: list[tuple[str, ...]] = []
    original = postings_module._FilterCheck._read

    def counted(self: Any, *extra: str, keys: Any = None) -> Any:
        reads.append(extra)
        return original(self, *extra, keys=keys)

    monkeypatch.setattr(postings_module._FilterCheck, "_read", counted)
    postings = PostgresStore(pg_url, schema=pg_schema)
    server = PostgresStore(pg_url, schema=pg_schema, keyword_index=False)
    try:
        _remember_1200(server)
        for flt, selective in (
            (EpisodeFilter(tenant_id="t1", session_id="s1", tags=("rare",)), True),
            (EpisodeFilter(tenant_id="t1", session_id="s1", event_type="note"), False),
        ):
            reads.clear()
            for top_n in (1, 10, 50):
                got = postings.keyword_candidates(flt, ["amber"], top_n)
                assert _hits(got) == _hits(server.keyword_candidates(flt, ["amber"], top_n))
                assert len(got.keys) == min(top_n, 5 if selective else 67)  # amber: i % 9 == 0
            whole_reads = [extra for extra in reads if not extra]
            # at most once per search (none when the first rows checked were enough), never when not selective
            assert (1 <= len(whole_reads) <= 3) is selective
    finally:
        postings.close()
        server.close()


# -- optimistic reads: no transaction while nothing committed ---------------------------------


def _seeded(pg_url: str, pg_schema: str) -> PostgresStore:
    """A postings store over 1,200 rows (a 0.4 % tag among them), its postings built."""
    store = PostgresStore(pg_url, schema=pg_schema)
    _remember_1200(store)
    store.keyword_candidates(EpisodeFilter(), ["amber"], 1)  # builds the postings
    return store


_FILTERS = (
    EpisodeFilter(),
    EpisodeFilter(tenant_id="t1", session_id="s1", tags=("rare",)),  # selective: several statements
    EpisodeFilter(tenant_id="t1", event_type="note", exclude_archived=True, current_at=T0),
    EpisodeFilter(tenant_id="t2"),  # nothing in scope: no statement
)


def _both_paths(store: PostgresStore, flt: EpisodeFilter, terms: list[str], top_n: int) -> tuple[Any, Any]:
    """``(optimistic answer or None, plain answer)`` of one search over the same postings."""
    from memlane.stores.postgres.postings import optimistic_keyword_search, postings_keyword_search

    index = store._keyword_index
    assert index is not None
    request = (flt, terms, top_n)
    with store._read("test") as cur:
        fast = optimistic_keyword_search(cur, index, request)
    with store._transaction("test") as cur:
        plain = postings_keyword_search(cur, index, request)
    return fast, plain


def test_an_optimistic_search_answers_as_the_plain_path(pg_url: str, pg_schema: str) -> None:
    store = _seeded(pg_url, pg_schema)
    try:
        for flt in _FILTERS:
            for terms in (["amber"], ["cobalt", "garnet"], ["zircon"]):
                for top_n in (1, 10, 500):
                    fast, plain = _both_paths(store, flt, terms, top_n)
                    assert fast is not None
                    assert _hits(fast) == _hits(plain)
    finally:
        store.close()


def test_a_commit_since_the_snapshot_sends_searches_the_plain_way(
    pg_url: str, pg_schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A commit anywhere before (or during) an optimistic search: ``None``, and the store catches up."""
    import memlane.stores.postgres.postings as postings_module
    from memlane.stores.postgres.postings import current_snapshot

    store = _seeded(pg_url, pg_schema)
    source = store.list_recent(EpisodeFilter(), 1)[0].id
    try:
        for n, flt in enumerate(_FILTERS):
            with psycopg.connect(pg_url, autocommit=True) as conn:
                _insert_copy(conn, pg_schema, source, f"new{n}", "amber zircon")
            fast, _ = _both_paths(store, flt, ["amber"], 10)  # the plain path catches up after it
            assert fast is None
            fast, plain = _both_paths(store, flt, ["amber"], 10)  # nothing committed since
            assert fast is not None and _hits(fast) == _hits(plain)
        keys = _stored_keys(store)
        with psycopg.connect(pg_url, autocommit=True) as conn:
            _insert_copy(conn, pg_schema, source, "between", "amber zircon")
        index = store._keyword_index
        assert index is not None
        with store._read("test") as cur:
            assert current_snapshot(cur) != index.snapshot  # the neighbours catch up too
        statement = PostgresStore(pg_url, schema=pg_schema, keyword_index=False)
        try:
            _same_neighbours(store, statement, keys, 2)
        finally:
            statement.close()

        original = postings_module._FilterCheck._read
        inserted: list[str] = []

        def commit_after_the_first(self: Any, *extra: str, keys: Any = None) -> Any:
            found = original(self, *extra, keys=keys)
            if not inserted:  # a writer commits between the search's statements
                inserted.append(f"mid{len(inserted)}")
                with psycopg.connect(pg_url, autocommit=True) as conn:
                    _insert_copy(conn, pg_schema, source, inserted[-1], "amber zircon")
            return found

        monkeypatch.setattr(postings_module._FilterCheck, "_read", commit_after_the_first)
        fast, _ = _both_paths(store, _FILTERS[1], ["amber"], 50)
        assert inserted and fast is None
        monkeypatch.undo()
        assert len(_agrees_with_a_fresh_store(store, pg_url, pg_schema, ["zircon"])) == len(_FILTERS) + 2
    finally:
        store.close()


def test_threads_search_while_another_process_writes(pg_url: str, pg_schema: str) -> None:
    """Searches in 6 threads over 2 pooled connections while rows of another tenant commit: each
    answer equals the one before any write (the lock covers only the refresh and the scoring)."""
    import threading

    seeded = _seeded(pg_url, pg_schema)
    seeded.close()
    store = PostgresStore(pg_url, schema=pg_schema, min_size=1, max_size=2)
    requests = [
        (flt, terms, top_n)
        for flt in (_FILTERS[1], _FILTERS[2], EpisodeFilter(tenant_id="t1"))
        for terms in (["amber"], ["cobalt", "garnet"])
        for top_n in (5, 200)
    ]
    expected = [_hits(store.keyword_candidates(*r)) for r in requests]
    keys = _stored_keys(store)[:300]
    near = _neighbours(store.neighbours(_ALL, keys, 2))
    source = store.list_recent(EpisodeFilter(), 1)[0].id
    errors: list[BaseException] = []
    done = threading.Event()
    written: list[int] = []

    def search() -> None:
        try:
            for _ in range(8):
                for request, hits in zip(requests, expected, strict=True):
                    assert _hits(store.keyword_candidates(*request)) == hits
                assert _neighbours(store.neighbours(_ALL, keys, 2)) == near
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    def write() -> None:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            n = 0
            while not done.is_set():
                with conn.transaction():  # the copy is another tenant's row when it commits
                    _insert_copy(conn, pg_schema, source, f"other{n}", "zzz")
                    conn.execute(
                        sql.SQL("UPDATE {} SET tenant_id = 'tw', session_id = 'sw' WHERE id = %s").format(
                            sql.Identifier(pg_schema, "memlane_episodes")
                        ),
                        (f"other{n}",),
                    )
                n += 1
            written.append(n)

    writer = threading.Thread(target=write)
    threads = [threading.Thread(target=search) for _ in range(6)]
    writer.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    done.set()
    writer.join()
    store.close()
    assert errors == []
    assert written[0] > 0
