"""Store backends the contract suite runs against, and how to open each one.

A backend is a name plus a way to make a fresh, empty database and to reopen it (also
from another process, for concurrency tests). Adding a backend here runs the whole
contract suite against it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

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


SCHEMA_PARAM = "memlane_schema"
"""Query parameter that carries the Postgres schema in a test location (stripped before libpq sees it)."""


def open_store(kind: str, location: str) -> Store:
    """Open a store of ``kind`` at ``location`` (importable in a subprocess)."""
    if kind == "sqlite":
        return SQLiteStore(location)
    if kind == "postgres":
        from memlane.stores.postgres import PostgresStore

        url, schema = split_schema(location)
        return PostgresStore(url, schema=schema, max_size=4)
    raise ValueError(f"unknown backend {kind!r}")


def split_schema(location: str) -> tuple[str, str | None]:
    """Split ``postgresql://...?memlane_schema=NAME`` into the libpq URL and the schema."""
    parts = urlsplit(location)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((v for k, v in query if k == SCHEMA_PARAM), None)
    rest = urlencode([(k, v) for k, v in query if k != SCHEMA_PARAM])
    return urlunsplit(parts._replace(query=rest)), schema


def sqlite_db(tmp_path: Path) -> BackendDB:
    """A fresh SQLite file under ``tmp_path``."""
    return BackendDB("sqlite", str(tmp_path / "memlane-test.db"))


def postgres_db(url: str, schema: str) -> BackendDB:
    """A fresh schema ``schema`` on the server at ``url`` (the store creates it at open)."""
    parts = urlsplit(url)
    query = urlencode([*parse_qsl(parts.query, keep_blank_values=True), (SCHEMA_PARAM, schema)])
    return BackendDB("postgres", urlunsplit(parts._replace(query=query)))


BackendFactory = Callable[..., BackendDB]
