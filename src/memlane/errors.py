"""memlane's exception tree, documented in one place.

Every exception memlane raises on purpose derives from :class:`MemlaneError`.
Subclasses also inherit the builtin they refine, so callers that do not know
memlane can still write ``except ValueError`` or ``except LookupError``::

    MemlaneError
    ├── ValidationError (ValueError)         bad argument from the caller; nothing was written
    ├── ConfigError (ValueError)             bad configuration value or file
    ├── EpisodeNotFoundError (LookupError)   an episode id unknown in this scope, or already superseded
    ├── FactNotFoundError (LookupError)      a fact or entity unknown in this tenant, or retired/merged
    ├── StoreError (RuntimeError)            the storage backend failed (driver errors are translated here)
    │   ├── SchemaVersionError               the database was written by a newer memlane
    │   ├── DuplicateEpisodeError (KeyError) an episode id that already exists (the store is append-only)
    │   │   └── DuplicateSessionError        a session id stored again without ``append=True``
    │   └── StoreClosedError                 the store was used after ``close()``
    ├── EmbeddingError (RuntimeError)        the embedder failed or cannot run
    │   ├── EmbedderUnavailableError         model file missing, optional package or API key absent
    │   └── EmbeddingModelMismatchError (ValueError)
    │                                        the store's vectors were made by another model or dimension
    ├── FormationError (RuntimeError)        LLM formation failed (the chat request failed); raw text kept
    │   └── MalformedOutputError             the model's output was still malformed after one retry
    └── OutputRejectedError (ValueError)     one model reply was rejected (formation's retry signal; from
                                             memlane.formation.llm's checks, never from formation itself)

Driver exceptions (``sqlite3.*``, ``psycopg.*``) never escape a store: each store
translates them at its boundary and chains the original as ``__cause__``.
"""

from __future__ import annotations

__all__ = [
    "ConfigError",
    "DuplicateEpisodeError",
    "DuplicateSessionError",
    "EmbedderUnavailableError",
    "EmbeddingError",
    "EmbeddingModelMismatchError",
    "EpisodeNotFoundError",
    "FactNotFoundError",
    "FormationError",
    "MalformedOutputError",
    "MemlaneError",
    "OutputRejectedError",
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


class EpisodeNotFoundError(MemlaneError, LookupError):
    """No episode with this id in the memory's scope (or it is already superseded); nothing was written.

    Another tenant's id is reported exactly like an unknown one, so ids cannot be probed.
    """

    def __str__(self) -> str:  # LookupError subclasses would not repr() it, but keep it plain
        return str(self.args[0]) if self.args else ""


class FactNotFoundError(MemlaneError, LookupError):
    """No fact or entity with this id in the tenant (or the fact is already retired, the entity merged).

    Nothing was written; another tenant's id is reported exactly like an unknown one.
    """

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class StoreError(MemlaneError, RuntimeError):
    """The storage backend failed; the driver's exception is chained as ``__cause__``."""


class SchemaVersionError(StoreError):
    """The database schema is newer than this memlane understands (upgrade memlane)."""


class DuplicateEpisodeError(StoreError, KeyError):
    """An episode with this id already exists; episodes are append-only and never overwritten."""

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0]) if self.args else ""


class DuplicateSessionError(DuplicateEpisodeError):
    """A session with this id already exists for the tenant; pass ``append=True`` to add turns to it."""


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


class FormationError(MemlaneError, RuntimeError):
    """LLM formation (:mod:`memlane.formation`) failed; nothing was stored.

    Raised as such when the chat request itself fails (the SDK's exception is chained
    as ``__cause__``; the ``openai`` package or an API key is missing), and as
    :class:`MalformedOutputError` when the model's output is unusable. Model output is
    never silently dropped: every attempt's raw text is kept here.

    Attributes:
        raw_texts: The model's raw reply text of each attempt, in order (empty when the
            request failed before any reply arrived).
    """

    def __init__(self, message: str, *, raw_texts: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.raw_texts = tuple(raw_texts)

    @property
    def raw_text(self) -> str | None:
        """The last attempt's raw reply text, or ``None`` if no reply arrived."""
        return self.raw_texts[-1] if self.raw_texts else None


class MalformedOutputError(FormationError):
    """The model's output was still malformed after one retry.

    Malformed means: not JSON, not matching the requested JSON schema or memlane's
    rules for an episode (e.g. blank content), cut off by ``max_tokens``
    (``finish_reason == "length"``), empty, or a refusal. ``raw_texts`` holds both
    attempts' replies; the message gives the reason for each.
    """


class OutputRejectedError(MemlaneError, ValueError):
    """One model reply was rejected: not JSON, not matching its schema, or breaking memlane's rules.

    Formation's internal retry signal: :func:`memlane.formation.llm.complete_json` catches
    it, retries once, and then raises :class:`MalformedOutputError`. Callers see it only
    from the check functions they call directly (``check_json_schema``,
    ``parse_json_text``); custom ``parse`` functions raise it to reject a reply.
    """
