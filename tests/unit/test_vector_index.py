"""The in-memory vector index: fixed-size blocks (no copies on append), int8 codes, saved form."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memlane.stores.sqlite.sidecar import read_index, write_index
from memlane.stores.sqlite.vector_index import CHUNK_ROWS, IndexRows, VectorIndex, quantize

DIMS = 8


def _rows(start: int, k: int, rng: np.random.Generator) -> tuple[IndexRows, np.ndarray]:
    x = rng.normal(size=(k, DIMS)).astype(np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    seqs = list(range(start, start + k))
    return IndexRows(seqs, ["t"] * k, ["s"] * k, ["note"] * k, seqs, [np.nan] * k, x), x


def test_appends_never_move_earlier_vectors() -> None:
    rng = np.random.default_rng(0)
    index = VectorIndex(DIMS)
    parts = []
    rows, x = _rows(1, 10, rng)
    index.append(rows)
    parts.append(x)
    first_block = index.vector_parts()[0]
    for k in (CHUNK_ROWS - 5, 3, CHUNK_ROWS + 7):
        rows, x = _rows(len(index) + 1, k, rng)
        index.append(rows)
        parts.append(x)
        assert np.shares_memory(index.vector_parts()[0], first_block)  # the first block was not copied
    every = np.concatenate(parts)
    assert sum(len(p) for p in index.vector_parts()) == len(every) == len(index)
    q = every[3]
    np.testing.assert_allclose(index.cosine(q), every @ q, rtol=1e-6, atol=1e-6)
    picked = np.sort(rng.choice(len(every), 500, replace=False))
    np.testing.assert_allclose(index.cosine(q, picked), every[picked] @ q, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(index.gather(picked), every[picked])


def test_quantized_index_round_trips_through_the_sidecar(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    index = VectorIndex(DIMS, quantized=True)
    rows, x = _rows(1, 3000, rng)
    index.append(rows)
    codes, scales = quantize(x)
    np.testing.assert_allclose(codes * scales[:, None], x, atol=float(scales.max()))
    assert index.vector_parts()[0].dtype == np.int8
    path = tmp_path / "q.vectors"
    write_index(path, index, {"k": 1})
    loaded = read_index(path, {"k": 1})
    assert loaded is not None and loaded.quantized and len(loaded) == 3000
    q = x[0]
    np.testing.assert_allclose(loaded.cosine(q), index.cosine(q), rtol=1e-6)
    assert np.abs(loaded.cosine(q) - x @ q).max() < 0.05  # approximate: the caller re-ranks
    assert read_index(path, {"k": 2}) is None


def test_the_cosines_of_chosen_rows_are_those_of_the_whole_scan(tmp_path: Path) -> None:
    """``cosine(q, rows)`` (the filtered and ANN path: a gather, then the product) gives bit for bit
    the floats of ``cosine(q)[rows]``, over a memory-mapped first block and appended blocks, float32
    and int8 (the exact and approximate indexes)."""
    rng = np.random.default_rng(5)
    for quantized in (False, True):
        index = VectorIndex(DIMS, quantized=quantized)
        index.append(_rows(1, 700, rng)[0])
        path = tmp_path / f"{quantized}.vectors"
        write_index(path, index, {"k": 1})
        loaded = read_index(path, {"k": 1})  # the saved vectors are its first block, memory-mapped
        assert loaded is not None and isinstance(loaded.vector_parts()[0], np.memmap)
        loaded.append(_rows(701, CHUNK_ROWS + 300, rng)[0])
        assert len(loaded.vector_parts()) >= 2
        for _ in range(5):
            q = rng.normal(size=DIMS).astype(np.float32)
            q /= np.linalg.norm(q)
            every = loaded.cosine(q)
            for k in (1, 37, 600, len(loaded) // 2):
                picked = np.sort(rng.choice(len(loaded), k, replace=False))
                assert loaded.cosine(q, picked).tolist() == every[picked].tolist(), (quantized, k)
