"""Store backends the contract suite runs against, and how to open each one.

A backend is a name plus a way to make a fresh, empty database and to reopen it (also
from another process, for concurrency tests). Adding a backend here runs the whole
contract suite against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memlane.stores.base import Store
from memlane.stores.sqlite import SQLiteStore


@dataclass(frozen=True)
class BackendDB:
    """One fresh database of a backend.

    Attributes:
        kind: Backend name (``"sqlite"``, ``"postgres"``).
        location: What :func:`open_store` needs to open it (a file path or a URL).
    """

    kind: str
    location: str

    def open(self) -> Store:
        """Open a new store object on this database."""
        return open_store(self.kind, self.location)


def open_store(kind: str, location: str) -> Store:
    """Open a store of ``kind`` at ``location`` (importable in a subprocess)."""
    if kind == "sqlite":
        return SQLiteStore(location)
    raise ValueError(f"unknown backend {kind!r}")


def sqlite_db(tmp_path: Path) -> BackendDB:
    """A fresh SQLite file under ``tmp_path``."""
    return BackendDB("sqlite", str(tmp_path / "memlane-test.db"))


BackendFactory = Callable[..., BackendDB]
