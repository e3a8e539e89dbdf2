"""One opener for every backend: a file path means SQLite, a ``postgresql://`` URL PostgreSQL."""

from __future__ import annotations

from pathlib import Path

from memlane.errors import ConfigError
from memlane.stores.base import Store

__all__ = ["is_postgres_url", "open_store"]

_POSTGRES_SCHEMES = ("postgresql://", "postgres://")


def is_postgres_url(location: str | Path) -> bool:
    """``True`` if ``location`` is a ``postgresql://`` or ``postgres://`` URL."""
    return isinstance(location, str) and location.lower().startswith(_POSTGRES_SCHEMES)


def open_store(location: str | Path, *, schema: str | None = None) -> Store:
    """Open the store at ``location``.

    Args:
        location: A SQLite file path (created if missing) or a ``postgresql://…`` URL.
        schema: PostgreSQL schema name (PostgreSQL only; default: the connection's current schema).

    Returns:
        An open :class:`~memlane.stores.sqlite.SQLiteStore` or
        :class:`~memlane.stores.postgres.PostgresStore`; the caller closes it.

    Raises:
        ConfigError: a PostgreSQL URL without the ``postgres`` extra installed, or ``schema``
            given for a SQLite path.
        StoreError: the database cannot be opened.
    """
    if is_postgres_url(location):
        try:
            from memlane.stores.postgres import PostgresStore
        except ImportError as exc:
            raise ConfigError(
                f"{str(location).split('://')[0]}:// needs the PostgreSQL backend: "
                f"pip install 'memlane[postgres]' ({exc})"
            ) from exc
        return PostgresStore(str(location), schema=schema)
    if schema is not None:
        raise ConfigError("schema is only meaningful for PostgreSQL URLs")
    from memlane.stores.sqlite import SQLiteStore

    return SQLiteStore(location)
