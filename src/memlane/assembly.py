"""Assembling the parts: the store and the embedder a location or a configuration names.

The one opener for every backend (a file path means SQLite, a ``postgresql://`` URL PostgreSQL)
and the builders of the parts a parsed configuration file (:mod:`memlane.config.file`) describes.
It sits above the settings and the parts, so the settings parse without importing a backend or
an embedder, and the backends never import each other or their common package's opener.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from memlane.config.file import EpisodicSettings, StoreSettings, is_postgres_url
from memlane.errors import ConfigError

if TYPE_CHECKING:  # the parts are imported when built, so reading settings imports no backend
    from memlane.embeddings.base import Embedder
    from memlane.stores.base import Store

__all__ = ["build_embedder", "build_store", "open_store"]


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


# -- building ----------------------------------------------------------------------------


def build_store(settings: StoreSettings) -> Store:
    """Open the store the ``memory:`` section describes.

    Args:
        settings: The parsed section.

    Returns:
        An open :class:`memlane.stores.base.Store` (the caller closes it).

    Raises:
        ConfigError: ``postgres`` without the ``postgres`` extra installed, or a host memory
            type (``redis``, ``sliding_window``, ``buffer``, ``custom``: episodic memory is a no-op,
            memlane has no store to open).
        StoreError: the database cannot be opened.
    """
    if settings.host_managed:
        raise ConfigError(
            f"memory.type: {settings.type!r} is the host agent's own memory, so memlane's episodic memory "
            "is a no-op with this file (tools_for() returns no tools); set memory.type: sqlite or postgres "
            "to store episodes"
        )
    if settings.type == "postgres":
        if settings.dsn is None:
            raise ConfigError("store.dsn: required for a postgres store")
        return open_store(settings.dsn, schema=settings.schema)
    return open_store(settings.sqlite_path())


def build_embedder(settings: EpisodicSettings | None) -> Embedder:
    """Build the embedder the ``episodic_memory:`` section names (defaults when ``None``).

    Construction is cheap for every provider: models load, and clients connect, on first use.

    Raises:
        ConfigError: the model/dimension combination is not valid for the provider.
    """
    settings = settings or EpisodicSettings()
    if settings.embedding_provider == "openai":
        from memlane.embeddings.openai import OpenAIEmbedder

        try:
            return OpenAIEmbedder(
                settings.embedding_model, dims=settings.embedding_dims, base_url=settings.embedding_base_url
            )
        except ValueError as exc:
            raise ConfigError(f"episodic_memory.embedding_dims: {exc}") from None
    if settings.embedding_provider == "hashing":
        from memlane.embeddings.fake import HashingEmbedder

        return HashingEmbedder(dims=settings.embedding_dims or 64)
    from memlane.embeddings.local import LocalEmbedder

    return LocalEmbedder()
