"""A vector index saved beside its database, for a cold start without reading every vector row.

One file (``<db>.vectors``) holds a JSON header and the arrays of a
:class:`~memlane.stores.sqlite.vector_index.VectorIndex`: the float32 vectors, or int8 codes for a
quantized index (memory-mapped on open, never copied), and its small filter columns (read in
one ``read`` each). Layout::

    b"MLVECS01" | uint64 little-endian header length | header JSON | arrays, each 64-byte aligned

The header carries what the reader must match before trusting the file (``expect``: e.g. the
store's id, model, dimension and generation counter), the index's ``max_seq``, the code tables,
each array's dtype/shape/offset, the file size and a CRC-32 of the columns. The database stays the
source of truth: a missing, truncated, corrupt or non-matching file is ignored (``None``), and the
caller rebuilds from the database and writes a new one.

Writes are atomic: a unique temporary file in the same directory, ``fsync``, ``rename`` over the
old file (readers that mapped the old file keep their mapping), then ``fsync`` of the directory.
An exclusive non-blocking ``flock`` on ``<file>.lock`` (POSIX) keeps two processes from writing
the same file at once; the loser skips the write.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import struct
import tempfile
import zlib
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memlane.stores.sqlite.vector_index import VectorIndex

__all__ = ["MAGIC", "file_lock", "read_index", "write_atomic", "write_index"]

logger = logging.getLogger(__name__)

MAGIC = b"MLVECS01"
_ALIGN = 64


def _aligned(offset: int) -> int:
    return -(-offset // _ALIGN) * _ALIGN


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[bool]:
    """An exclusive non-blocking lock on ``path`` (created); yields whether it was acquired.

    Without ``fcntl`` (Windows) it yields ``True``: the atomic rename still keeps readers safe.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield True
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def write_atomic(path: Path, write: Any) -> None:
    """Create ``path`` atomically: ``write(file)`` into a temporary sibling, fsync, rename, fsync dir."""
    fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # not every platform can fsync a directory
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


def write_index(path: Path, index: VectorIndex, expect: Mapping[str, Any]) -> None:
    """Save ``index`` to ``path`` atomically with the header fields ``expect`` (JSON values).

    Raises:
        OSError: the file cannot be written (the old file, if any, is left as it was).
    """
    columns = {name: np.ascontiguousarray(a) for name, a in index.columns().items()}
    parts = index.vector_parts()
    n = len(index)
    crc = 0
    for a in columns.values():
        crc = zlib.crc32(a.tobytes(), crc)
    arrays: list[list[Any]] = []
    offset = 0  # relative to the data start, fixed below
    for name, a in columns.items():
        arrays.append([name, a.dtype.str, list(a.shape), offset])
        offset = _aligned(offset + a.nbytes)
    vector_dtype = np.dtype(np.int8 if index.quantized else "<f4")
    arrays.append(["vectors", vector_dtype.str, [n, index.dims], offset])
    data_size = offset + n * index.dims * vector_dtype.itemsize
    header: dict[str, Any] = {
        "expect": dict(expect),
        "max_seq": int(index.max_seq),
        "dims": index.dims,
        "rows": n,
        "codes": index.codes(),
        "columns_crc32": crc,
        "arrays": arrays,
    }
    header["file_size"] = header["data_start"] = 10**15  # widest values: the slot fits the real ones
    data_start = _aligned(len(MAGIC) + 8 + len(json.dumps(header, ensure_ascii=False).encode()))
    header["file_size"] = data_start + data_size
    header["data_start"] = data_start
    raw = json.dumps(header, ensure_ascii=False).encode()

    def write(fh: Any) -> None:
        fh.write(MAGIC + struct.pack("<Q", len(raw)) + raw)
        for (_, _, _, off), a in zip(arrays, columns.values(), strict=False):
            fh.seek(data_start + off)
            fh.write(a.tobytes())
        fh.seek(data_start + arrays[-1][3])
        for part in parts:
            for lo in range(0, len(part), 65_536):  # bounded temporary copies
                fh.write(np.ascontiguousarray(part[lo : lo + 65_536], dtype=vector_dtype).tobytes())
        fh.truncate(header["file_size"])

    write_atomic(path, write)


def read_index(path: Path, expect: Mapping[str, Any]) -> VectorIndex | None:
    """The index saved at ``path`` if its header matches ``expect`` and the file is whole, else ``None``.

    The vectors are a read-only memory map; the columns are read in one call each and checked
    against their CRC-32. Never raises for a bad file (logs at debug level and returns ``None``).
    """
    try:
        with open(path, "rb") as fh:
            head = fh.read(len(MAGIC) + 8)
            if len(head) < len(MAGIC) + 8 or head[: len(MAGIC)] != MAGIC:
                return None
            (length,) = struct.unpack("<Q", head[len(MAGIC) :])
            if length > 1 << 30:
                return None
            header = json.loads(fh.read(length))
            if header.get("expect") != dict(expect) or os.fstat(fh.fileno()).st_size != header["file_size"]:
                return None
            start = int(header["data_start"])
            columns: dict[str, NDArray[Any]] = {}
            crc = 0
            vectors: NDArray[Any] | None = None
            for name, dtype, shape, off in header["arrays"]:
                if name == "vectors":
                    if dtype not in ("<f4", "|i1"):
                        return None
                    vectors = (
                        np.memmap(path, dtype=dtype, mode="r", offset=start + off, shape=tuple(shape))
                        if shape[0]
                        else np.zeros((0, header["dims"]), dtype=np.dtype(dtype))
                    )
                    continue
                fh.seek(start + off)
                count = int(np.prod(shape))
                a = np.fromfile(fh, dtype=np.dtype(dtype), count=count)
                if len(a) != count:
                    return None
                crc = zlib.crc32(a.tobytes(), crc)
                columns[name] = a
            if vectors is None or crc != header["columns_crc32"]:
                return None
        return VectorIndex.from_arrays(
            int(header["dims"]), columns, vectors, header["codes"], int(header["max_seq"])
        )
    except (OSError, ValueError, KeyError, TypeError, struct.error) as exc:
        logger.debug("vector sidecar %s ignored: %s", path, exc)
        return None
