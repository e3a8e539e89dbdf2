"""Approximate vector search and the vector sidecar of the SQLite store, against exact search.

The ANN threshold is made small (``ann_threshold``) so that a few hundred rows take the IVF path
once ``optimize()`` has built it (a recall never trains it: issue #24 item 3);
with at most 16 inverted lists every list is probed, so the top-N must equal exact search's top-N
under every filter, after deletes, supersession, archiving and writes from another store object.
PostgreSQL's HNSW path is covered by the episodes contract; here the SQLite-only machinery
(sidecar file, IVF index) is checked structurally (counters of rows read and ANN searches).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import pytest

from memlane.models import Episode
from memlane.stores.base import EpisodeFilter, Supersession, VectorCandidates
from memlane.stores.sqlite import SQLiteStore

DIMS = 16
ROWS = 400
TOP_N = 30
T0 = datetime(2026, 1, 1, tzinfo=UTC)

pytest.importorskip("faiss")


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(8, DIMS))
    x = centres[rng.integers(0, 8, n)] + 0.3 * rng.normal(size=(n, DIMS))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def _fill(store: SQLiteStore, n: int = ROWS, seed: int = 0, prefix: str = "e") -> list[str]:
    store.bind_embedding_model("test-model", DIMS)
    episodes = [
        Episode(
            id=f"{prefix}{i}",
            tenant_id="t1" if i % 5 else "t2",
            session_id=f"s{i % 7}",
            event_type="note" if i % 3 else "fact",
            content=f"episode {i}",
            tags=("red",) if i % 4 == 0 else (),
            importance=None,
            created_at=T0 + timedelta(hours=i),
            valid_from=T0 + timedelta(hours=i),
            recorded_at=T0 + timedelta(hours=i),
        )
        for i in range(n)
    ]
    store.insert(episodes, _vectors(n, seed))
    return [e.id for e in episodes]


def _top(c: VectorCandidates, n: int = TOP_N) -> list[int]:
    order = np.lexsort((c.keys, -np.asarray(c.cosine, dtype=np.float64)))
    return [int(k) for k in c.keys[order][:n]]


def _pair(tmp_path: Path) -> tuple[SQLiteStore, SQLiteStore]:
    db = str(tmp_path / "ann.db")
    return SQLiteStore(db, ann_threshold=50, sidecar_min_rows=1), SQLiteStore(db, ann_threshold=None)


FILTERS = [
    EpisodeFilter(),
    EpisodeFilter(tenant_id="t1"),
    EpisodeFilter(tenant_id="t1", event_type="note"),
    EpisodeFilter(tags=("red",)),
    EpisodeFilter(created_after=T0 + timedelta(hours=100), created_before=T0 + timedelta(hours=350)),
]


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: repr(f)[:60])
def test_ann_matches_exact_under_filters(tmp_path: Path, flt: EpisodeFilter) -> None:
    ann, exact = _pair(tmp_path)
    _fill(ann)
    ann.optimize()
    for q in _vectors(5, seed=9):
        got, want = ann.vector_candidates(flt, q, TOP_N), exact.vector_candidates(flt, q, TOP_N)
        assert len(want) <= TOP_N
        assert _top(got) == _top(want)
        np.testing.assert_allclose(np.sort(got.cosine)[-TOP_N:], np.sort(want.cosine)[-TOP_N:], rtol=1e-6)
        assert got.keys.tolist() == want.keys.tolist()  # the same pool, in the same order
    assert ann._vector_search.ann_searches > 0  # the IVF path served


def test_ann_after_delete_supersede_archive_and_other_writer(tmp_path: Path) -> None:
    ann, exact = _pair(tmp_path)
    ids = _fill(ann)
    q = _vectors(3, seed=4)
    ann.optimize()  # builds the IVF index
    ann.vector_candidates(EpisodeFilter(), q[0], TOP_N)
    built = ann._vector_search.ann_searches
    winners = [ids[k - 1] for k in _top(exact.vector_candidates(EpisodeFilter(), q[0], TOP_N), 5)]
    exact.delete(winners[0], None)
    exact.archive([winners[1]], T0 + timedelta(days=30))
    replacement = Episode(
        id="new",
        tenant_id="t1",
        session_id="s1",
        event_type="note",
        content="replacement",
        tags=(),
        importance=None,
        created_at=T0 + timedelta(days=40),
        valid_from=T0 + timedelta(days=40),
        recorded_at=T0 + timedelta(days=40),
    )
    exact.insert(
        [replacement],
        q[0][None, :],
        [
            Supersession(
                old_id=winners[2],
                new_id="new",
                valid_until=T0 + timedelta(days=40),
                invalidated_at=T0 + timedelta(days=40),
                reason="test",
            )
        ],
    )
    _fill(exact, n=100, seed=3, prefix="late")  # rows after the IVF index: the exact tail
    now = T0 + timedelta(days=50)
    for flt in (EpisodeFilter(), EpisodeFilter(exclude_archived=True, current_at=now)):
        got, want = ann.vector_candidates(flt, q[0], TOP_N), exact.vector_candidates(flt, q[0], TOP_N)
        assert _top(got) == _top(want)
    assert ann._vector_search.ann_searches > built
    keys = set(ann.vector_candidates(EpisodeFilter(exclude_archived=True, current_at=now), q[0], TOP_N).keys)
    gone = {k for k, e in ann.fetch(list(keys)).items() if e.id in winners[:3]}
    assert not gone
    assert not {e.id for e in ann.fetch(list(keys)).values()} & set(winners[:3])


def test_selective_filter_falls_back_to_exact(tmp_path: Path) -> None:
    ann, exact = _pair(tmp_path)
    _fill(ann)
    flt = EpisodeFilter(tenant_id="t1", session_id="s3")  # ~46 rows: below the threshold
    got = ann.vector_candidates(flt, _vectors(1, 5)[0], TOP_N)
    assert ann._vector_search.ann_searches == 0
    assert _top(got) == _top(exact.vector_candidates(flt, _vectors(1, 5)[0], TOP_N))


# -- sidecar ---------------------------------------------------------------------------


def _open(db: Path) -> SQLiteStore:
    return SQLiteStore(db, ann_threshold=None, sidecar_min_rows=1)


def test_cold_open_uses_sidecar(tmp_path: Path) -> None:
    db = tmp_path / "cold.db"
    first = _open(db)
    _fill(first)
    q = _vectors(1, 7)[0]
    want = _top(first.vector_candidates(EpisodeFilter(), q, TOP_N))
    assert first._vectors.rows_read == ROWS
    assert Path(str(db) + ".vectors").exists()
    first.close()
    second = _open(db)
    assert _top(second.vector_candidates(EpisodeFilter(), q, TOP_N)) == want
    assert second._vectors.rows_read == 0  # every vector came from the sidecar
    _fill(second, n=10, seed=2, prefix="more")
    second.vector_candidates(EpisodeFilter(), q, TOP_N)
    assert second._vectors.rows_read == 10  # only the tail after the sidecar's max_seq


def test_stale_sidecar_after_delete_is_not_trusted(tmp_path: Path) -> None:
    db = tmp_path / "stale.db"
    first = _open(db)
    ids = _fill(first)
    q = _vectors(1, 7)[0]
    first.vector_candidates(EpisodeFilter(), q, TOP_N)
    first.close()
    other = SQLiteStore(db, vector_sidecar=False)
    other.delete(ids[0], None)  # bumps delete_generation; the sidecar still holds row 1
    other.close()
    second = _open(db)
    got = second.vector_candidates(EpisodeFilter(), q, ROWS)
    assert 1 not in set(got.keys.tolist())
    assert second._vectors.rows_read == ROWS - 1  # rebuilt from SQLite


def test_corrupt_sidecar_is_ignored_and_rebuilt(tmp_path: Path) -> None:
    db = tmp_path / "corrupt.db"
    first = _open(db)
    _fill(first)
    q = _vectors(1, 7)[0]
    want = _top(first.vector_candidates(EpisodeFilter(), q, TOP_N))
    first.close()
    path = Path(str(db) + ".vectors")
    data = bytearray(path.read_bytes())
    data[200:260] = b"\xff" * 60  # header/columns damaged
    path.write_bytes(bytes(data))
    second = _open(db)
    assert _top(second.vector_candidates(EpisodeFilter(), q, TOP_N)) == want
    assert second._vectors.rows_read == ROWS
    second.close()
    third = _open(db)  # the rebuilt file is trusted again
    assert _top(third.vector_candidates(EpisodeFilter(), q, TOP_N)) == want
    assert third._vectors.rows_read == 0


def test_sidecar_off_and_memory_store(tmp_path: Path) -> None:
    db = tmp_path / "off.db"
    store = SQLiteStore(db, vector_sidecar=False, sidecar_min_rows=1)
    _fill(store)
    store.vector_candidates(EpisodeFilter(), _vectors(1, 1)[0], TOP_N)
    assert not Path(str(db) + ".vectors").exists()
    mem = SQLiteStore(":memory:", ann_threshold=50, sidecar_min_rows=1)
    _fill(mem)
    got = mem.vector_candidates(EpisodeFilter(), _vectors(1, 1)[0], TOP_N)
    assert _top(got) == _top(store.vector_candidates(EpisodeFilter(), _vectors(1, 1)[0], TOP_N))


# -- IVF lists: persistence, folding, quantized vectors ----------------------------------


def test_cold_open_loads_ivf_without_training(tmp_path: Path) -> None:
    db = tmp_path / "ivf.db"
    first = SQLiteStore(db, ann_threshold=50, sidecar_min_rows=1)
    ids = _fill(first)
    q = _vectors(2, 8)
    first.optimize()
    first.vector_candidates(EpisodeFilter(), q[0], TOP_N)
    assert first._vector_search.ann_trainings == 1
    assert Path(str(db) + ".ivf").exists()
    first.close()
    other = SQLiteStore(db, vector_sidecar=False)
    other.delete(ids[5], None)  # a row the saved lists hold, deleted by another process
    other.close()
    second = SQLiteStore(db, ann_threshold=50, sidecar_min_rows=1)
    exact = SQLiteStore(db, ann_threshold=None)
    for flt in FILTERS:
        for v in q:
            got, want = second.vector_candidates(flt, v, TOP_N), exact.vector_candidates(flt, v, TOP_N)
            assert _top(got) == _top(want)
            assert 6 not in set(got.keys.tolist())
    assert second._vector_search.ann_trainings == 0  # the saved <db>.ivf served
    assert second._vector_search.ann_searches > 0


def test_corrupt_ivf_is_ignored_and_retrained(tmp_path: Path) -> None:
    db = tmp_path / "bad.db"
    first = SQLiteStore(db, ann_threshold=50, sidecar_min_rows=1)
    _fill(first)
    first.optimize()
    q = _vectors(1, 8)[0]
    want = _top(first.vector_candidates(EpisodeFilter(), q, TOP_N))
    first.close()
    Path(str(db) + ".ivf").write_bytes(b"not an index")
    second = SQLiteStore(db, ann_threshold=50, sidecar_min_rows=1)
    assert _top(second.vector_candidates(EpisodeFilter(), q, TOP_N)) == want  # exact: the same hits
    assert _top(second.vector_candidates(EpisodeFilter(), q, TOP_N)) == want  # the bad file is not reread
    assert second._vector_search.ann_trainings == 0
    assert second._vector_search.ann_searches == 0
    assert second.optimize().ann_trained
    assert _top(second.vector_candidates(EpisodeFilter(), q, TOP_N)) == want
    assert second._vector_search.ann_searches == 1


def test_rows_from_another_writer_are_folded_into_the_lists(tmp_path: Path) -> None:
    ann, exact = _pair(tmp_path)
    _fill(ann)
    q = _vectors(3, 6)
    ann.optimize()
    _fill(exact, n=2100, seed=5, prefix="bulk")  # a tail above the fold size (2,048 rows)
    for flt in FILTERS:
        for v in q:
            assert _top(ann.vector_candidates(flt, v, TOP_N)) == _top(exact.vector_candidates(flt, v, TOP_N))
    ivf = ann._vector_search._ivf
    assert ivf is not None and len(ivf.seqs) == 2500  # folded, not retrained
    assert ann._vector_search.ann_trainings == 1


@pytest.mark.parametrize("flt", FILTERS, ids=lambda f: repr(f)[:60])
def test_quantized_vectors_give_exact_top_n_and_cosines(tmp_path: Path, flt: EpisodeFilter) -> None:
    db = str(tmp_path / "q.db")
    for threshold in (50, None):  # the ANN path and the exact path, both on int8 codes
        quant = SQLiteStore(db, ann_threshold=threshold, sidecar_min_rows=1, quantized_vectors=True)
        exact = SQLiteStore(db, ann_threshold=None, vector_sidecar=False)
        if threshold == 50:
            _fill(quant)
            quant.optimize()
        for v in _vectors(4, seed=12):
            got, want = quant.vector_candidates(flt, v, TOP_N), exact.vector_candidates(flt, v, TOP_N)
            assert _top(got) == _top(want)
            keys = {int(k): float(c) for k, c in zip(want.keys, want.cosine, strict=True)}
            for k, c in zip(got.keys, got.cosine, strict=True):
                assert abs(float(c) - keys[int(k)]) < 1e-5  # exact cosines, not int8 ones
        assert quant._vectors.index is not None and quant._vectors.index.quantized
        quant.close()
        exact.close()
    header = Path(db + ".vectors").read_bytes()[:4096]
    assert b'"vectors": "int8"' in header  # the sidecar holds the codes


# -- optimize: the indexes are built off the recall path -------------------------------


def test_a_recall_never_trains_and_optimize_builds_once(tmp_path: Path) -> None:
    ann, exact = _pair(tmp_path)
    _fill(ann)
    queries = _vectors(4, seed=21)
    before = [_top(ann.vector_candidates(flt, q, TOP_N)) for flt in FILTERS for q in queries]
    assert ann._vector_search.ann_trainings == 0  # above the threshold, yet searched exactly
    assert ann._vector_search.ann_searches == 0
    assert not Path(str(tmp_path / "ann.db") + ".ivf").exists()

    report = ann.optimize()
    assert report.ann_trained and report.vectors == ROWS and report.ann_rows == ROWS
    assert "ann.db.ivf" in report.saved and Path(str(tmp_path / "ann.db") + ".ivf").exists()
    after = [_top(ann.vector_candidates(flt, q, TOP_N)) for flt in FILTERS for q in queries]
    want = [_top(exact.vector_candidates(flt, q, TOP_N)) for flt in FILTERS for q in queries]
    assert before == after == want  # the exact path is the truth; the index changes no hit
    assert ann._vector_search.ann_searches > 0

    again = ann.optimize()
    assert not again.ann_trained and again.saved == () and again.ann_rows == ROWS


def test_optimize_lists_every_new_row_and_another_process_uses_them(tmp_path: Path) -> None:
    db = tmp_path / "grow.db"
    writer = SQLiteStore(db, ann_threshold=50, sidecar_min_rows=1)
    _fill(writer)
    writer.optimize()
    _fill(writer, n=10, seed=4, prefix="late")  # below the fold size: a recall would scan them
    report = writer.optimize()
    assert report.ann_rows == ROWS + 10 and not report.ann_trained
    writer.close()
    reader = SQLiteStore(db, ann_threshold=50, sidecar_min_rows=1)
    exact = SQLiteStore(db, ann_threshold=None)
    q = _vectors(1, 30)[0]
    assert _top(reader.vector_candidates(EpisodeFilter(), q, TOP_N)) == _top(
        exact.vector_candidates(EpisodeFilter(), q, TOP_N)
    )
    assert reader._vector_search.ann_trainings == 0 and reader._vector_search.ann_searches == 1
    assert reader._vectors.rows_read == 0  # the sidecar optimize wrote served every vector


def test_optimize_below_the_threshold_and_on_an_empty_store(tmp_path: Path) -> None:
    empty = SQLiteStore(tmp_path / "empty.db")
    assert empty.optimize().vectors == 0
    small = SQLiteStore(tmp_path / "small.db", sidecar_min_rows=1)
    _fill(small, n=40)
    report = small.optimize()
    assert (report.vectors, report.ann_rows, report.ann_trained) == (40, 0, False)
    assert report.saved == ("small.db.vectors",)
    assert not Path(str(tmp_path / "small.db") + ".ivf").exists()
