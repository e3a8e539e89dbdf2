"""memlane's exception tree, documented in one place.

Every exception memlane raises on purpose derives from :class:`MemlaneError`.
Subclasses also inherit the builtin they refine, so callers that do not know
memlane can still write ``except ValueError`` or ``except LookupError``::

    MemlaneError
    ├── ValidationError (ValueError)         bad argument from the caller; nothing was written
    ├── ConfigError (ValueError)             bad configuration value or file
    ├── StoreError (RuntimeError)            the storage backend failed (driver errors are translated here)
    │   ├── SchemaVersionError               the database was written by a newer memlane
    │   ├── DuplicateEpisodeError (KeyError) an episode id that already exists (the store is append-only)
    │   └── StoreClosedError                 the store was used after ``close()``
    └── EmbeddingError (RuntimeError)        the embedder failed or cannot run
        ├── EmbedderUnavailableError         model file missing, optional package or API key absent
        └── EmbeddingModelMismatchError (ValueError)
                                             the store's vectors were made by another model or dimension

Driver exceptions (``sqlite3.*``, ``psycopg.*``) never escape a store: each store
translates them at its boundary and chains the original as ``__cause__``.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DuplicateEpisodeError",
    "EmbedderUnavailableError",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "MemlaneError",
    "SchemaVersionError",
    "StoreClosedError",
    "StoreError",
    "ValidationError",
]


class MemlaneError(Exception):
    """Root of every error memlane raises on purpose."""


class ValidationError(MemlaneError, ValueError):
    """A caller-supplied argument is invalid; nothing was stored or changed."""


class ConfigError(MemlaneError, ValueError):
    """A configuration value or file is invalid; the message names the key."""


class StoreError(MemlaneError, RuntimeError):
    """The storage backend failed; the driver's exception is chained as ``__cause__``."""


class SchemaVersionError(StoreError):
    """The database schema is newer than this memlane understands (upgrade memlane)."""


class DuplicateEpisodeError(StoreError, KeyError):
    """An episode with this id already exists; episodes are append-only and never overwritten."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class StoreClosedError(StoreError):
    """The store (or the memory that owns it) was used after ``close()``."""


class EmbeddingError(MemlaneError, RuntimeError):
    """The embedder failed to produce vectors."""


class EmbedderUnavailableError(EmbeddingError):
    """The embedder cannot run here: model file missing, optional package or API key absent.

    The message says what to install or set.
    """


class EmbeddingModelMismatchError(EmbeddingError, ValueError):
    """The store's vectors were made by a different embedding model or dimension.

    Mixing vectors from two models gives meaningless similarities, so memlane refuses
    instead of returning silent garbage. Open the store with the model it records,
    or re-embed it.
    """
