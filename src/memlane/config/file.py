"""The YAML configuration file: parsing and validation (:mod:`memlane.assembly` builds its parts).

One file configures every interface (the library's :meth:`memlane.EpisodicMemory.from_config`,
every CLI command through ``--config``, the tool schemas, the MCP and HTTP servers)::

    memory:                    # where episodes live (optional; default: SQLite ./memlane.db)
      type: sqlite             # sqlite | postgres (redis | sliding_window | buffer | custom: no-op)
      path: ./memlane.db       # sqlite: file, relative to this config file's directory
      # dsn: postgresql://user@host/db    # postgres (psycopg also reads PGPASSWORD etc.)
      # schema: memlane                   # postgres: optional schema name
    episodic_memory:           # present => the remember_episode / recall_episodes tools exist
      embedding_model: all-MiniLM-L6-v2   # default: rag.embedding_model, else all-MiniLM-L6-v2
      scope: session           # session | tenant | global
      default_limit: 5
      retention_days: null
      retrieval: hybrid        # hybrid | dense | keyword
      fusion: convex           # convex | noisy_or | rrf (hybrid only)
      min_relevance: 0.0       # drop ranked hits below this relevance
      context_min_relevance: 0.3  # context block / inject / search_sessions: drop own match below this
      temporal: true           # "last May" in a query boosts episodes from that window
      embedding_fallback: true # embedder down -> store without vector / recall by keywords
      contradiction_threshold: 0.8  # confidence from which find_contradictions proposes an episode
      auto_supersede: false    # true: remember_episode retires contradicted episodes itself
      forgetting: false        # true: recency = 0.5 ** (age_days / half_life of the importance band)
      forgetting_policy:       # importance band (lowest rating) -> half-life in days; null = never
        bands: {9: null, 7: 30, 4: 7, 1: 1}
        unrated: 7
      forget_action: archive   # archive | delete (what forget() does to faded episodes)
      forget_threshold: 0.05   # forget() removes episodes whose strength fell below this
      track_retrievals: true   # ranked recalls count retrieve_count / last_retrieved_at (compaction)
      graph_boost: null        # 0-1: lift episodes linked to the query's entities (null: profile's, off)
      agent_discount: null     # 0-1: relevance an assistant-tagged turn loses (null: profile's, 0.3)
      importance: null         # auto: estimate 1-10 for episodes written without a rating
    server:                    # memlane serve (HTTP)
      api_keys:
        "sha256:<64 hex digits>": acme

Rules:

* Unknown keys inside memlane's sections are errors (with a did-you-mean hint); unknown
  *top-level* keys are ignored, so the sections can live inside an agent's own config file.
  A top-level key that looks like a misspelt ``episodic_memory`` (``episodic_memroy:``) is an
  error with a did-you-mean hint (otherwise the agent would silently get no tools); one that
  looks like ``memory`` or ``server`` only logs a warning (host files use such names).
* The host agent's own ``memory:`` keys (:data:`HOST_MEMORY_KEYS`: ``max_messages``,
  ``shared_scope``, ``run_log_retention_days``) are accepted and ignored: they configure the
  host's short-term memory, not memlane's store.
* ``memory.type`` one of :data:`HOST_MEMORY_TYPES` (``redis``, ``sliding_window``, ``buffer``,
  ``custom``: the host keeps its own memory) makes episodic memory a **no-op**:
  :attr:`MemlaneConfig.episodic` is ``None`` even with an ``episodic_memory:`` section (which
  is still validated), so :func:`memlane.tools.tools_for` returns ``[]`` (no tools are
  registered and a model has nothing to call); opening a store from such a file
  (:meth:`memlane.EpisodicMemory.from_config`, every CLI command, ``memlane serve`` and
  ``memlane mcp``) raises :class:`~memlane.errors.ConfigError` naming ``memory.type``, so
  nothing is stored or read by accident.
* ``episodic_memory.embedding_model`` defaults to ``rag.embedding_model`` when the file has a
  ``rag:`` section naming one (the host's retrieval model), else to ``all-MiniLM-L6-v2``.
* Every error is a :class:`memlane.errors.ConfigError` whose message starts with the dotted
  key, e.g. ``episodic_memory.scope: must be one of ['session', 'tenant', 'global'], got 'team'``.
* ``episodic_memory:`` with no value (YAML null) counts as present with every default;
  ``episodic_memory: false`` counts as absent.
* Embedding model names: ``all-MiniLM-L6-v2`` (the default, bundled, offline:
  :class:`memlane.LocalEmbedder`); any name starting with ``text-embedding-`` or prefixed
  ``openai:`` selects :class:`memlane.OpenAIEmbedder` (``openai`` extra). ``embedding_provider``
  (``local`` | ``openai`` | ``hashing``) overrides the inference; ``hashing`` is the
  deterministic fake embedder and is meant for tests only.
* API keys map key -> tenant, or key -> ``{tenant: acme, role: admin}`` (roles ``agent``, the
  default, and ``admin``, which may also inspect other tenants: :mod:`memlane.config.api_keys`).
  Write them hashed (``sha256:<hex>``, see ``memlane api-key``); a plaintext key (at least
  16 characters) is accepted but logged as a warning. A key is never echoed in an error message.
"""

from __future__ import annotations

import difflib
import logging
import math
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from memlane.config import MemoryConfig, database_from_env
from memlane.config.api_keys import ApiKey, find_api_key, hash_api_key, parse_api_keys
from memlane.errors import ConfigError, MemlaneError
from memlane.validation import check_identifier

__all__ = [
    "DEFAULT_MAX_LIMIT",
    "DEFAULT_MAX_REQUEST_BYTES",
    "HOST_MEMORY_KEYS",
    "HOST_MEMORY_TYPES",
    "LOCAL_MODEL_NAMES",
    "OPENAI_MODEL_DIMS",
    "ApiKey",
    "EpisodicSettings",
    "MemlaneConfig",
    "ServerSettings",
    "StoreSettings",
    "hash_api_key",
    "is_postgres_url",
    "load_config",
    "openai_dims",
]

logger = logging.getLogger(__name__)

DEFAULT_MAX_LIMIT = 50
"""Largest ``limit`` a tool call, MCP call or HTTP request may ask for (``episodic_memory.max_limit``)."""

DEFAULT_MAX_REQUEST_BYTES = 1_048_576
"""Largest HTTP request body accepted by ``memlane serve``, in bytes (1 MiB; ``server.max_request_bytes``)."""

LOCAL_MODEL_NAMES = frozenset(
    {"all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2-onnx-int8"}
)
"""Names accepted for the bundled local model (:class:`memlane.LocalEmbedder`)."""

OPENAI_MODEL_DIMS: Mapping[str, int] = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
"""OpenAI embedding models whose output dimension is known (:class:`memlane.OpenAIEmbedder`)."""


def openai_dims(model: str, dims: int | None) -> int:
    """The output dimension of an OpenAI-compatible embedding ``model``.

    Args:
        model: Model name, without the ``openai:`` prefix.
        dims: The dimension asked for (>= 1), or ``None`` for the model's known one.

    Returns:
        ``dims``, else the model's dimension from :data:`OPENAI_MODEL_DIMS`.

    Raises:
        ValueError: ``dims`` is ``None`` and the model is not in :data:`OPENAI_MODEL_DIMS`.
    """
    if dims is not None:
        return dims
    if model not in OPENAI_MODEL_DIMS:
        raise ValueError(f"dims is required for embedding model {model!r}")
    return OPENAI_MODEL_DIMS[model]


_PROVIDERS = ("local", "openai", "hashing")
_POSTGRES_SCHEMES = ("postgresql://", "postgres://")
HOST_MEMORY_TYPES = ("redis", "sliding_window", "buffer", "custom")
"""``memory.type`` values of a host agent's own memory: with one, episodic memory is a no-op."""
HOST_MEMORY_KEYS = ("max_messages", "shared_scope", "run_log_retention_days")
"""The host agent's own ``memory:`` keys: accepted and ignored."""
_STORE_TYPES = ("sqlite", "postgres", *HOST_MEMORY_TYPES)

# -- the parsed configuration ------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StoreSettings:
    """The ``memory:`` section: which store backend and where.

    Attributes:
        type: ``"sqlite"`` (default), ``"postgres"``, or one of :data:`HOST_MEMORY_TYPES` (the
            host keeps its own memory: memlane stores nothing, see :attr:`host_managed`).
        path: SQLite file (absolute, resolved against the config file's directory), or
            ``None`` for ``$MEMLANE_DB`` / ``./memlane.db``.
        dsn: PostgreSQL connection string (``postgres`` only).
        schema: PostgreSQL schema name, or ``None`` for the connection's current schema.
    """

    type: str = "sqlite"
    path: str | None = None
    dsn: str | None = None
    schema: str | None = None

    def sqlite_path(self) -> str:
        """The SQLite file to open: ``path``, else ``$MEMLANE_DB``, else ``./memlane.db``."""
        return self.path or database_from_env()

    @property
    def host_managed(self) -> bool:
        """``True`` when ``type`` is a host memory type: episodic memory is a no-op."""
        return self.type in HOST_MEMORY_TYPES


@dataclass(frozen=True, slots=True)
class EpisodicSettings:
    """The ``episodic_memory:`` section: embedding model, recall semantics and tool limits.

    Attributes:
        embedding_model: Model name as written (e.g. ``all-MiniLM-L6-v2``, ``text-embedding-3-small``).
        embedding_provider: ``local``, ``openai`` or ``hashing`` (tests only), given or inferred.
        embedding_dims: Vector dimension for the ``openai`` (optional for known models) and
            ``hashing`` (default 64) providers; ``None`` otherwise.
        embedding_base_url: Endpoint of an OpenAI-compatible server, or ``None`` for the SDK default.
        memory: The :class:`memlane.MemoryConfig` (scope, default_limit, retention_days,
            prune_probability, decay_per_day, weights, retrieval, fusion, min_relevance,
            context_min_relevance, temporal, embedding_fallback, contradiction_threshold,
            auto_supersede, forgetting, forgetting_policy, forget_action, forget_threshold).
        max_limit: Largest ``limit`` an agent-facing interface accepts, >= ``memory.default_limit``.
        tenant_id: Default tenant for the CLI and the MCP server, or ``None`` (``"default"``).
            The HTTP server ignores it: there the tenant comes from the API key.
        session_id: Default session for the CLI and the MCP server, or ``None`` (``"default"``).
    """

    embedding_model: str = "all-MiniLM-L6-v2"
    embedding_provider: str = "local"
    embedding_dims: int | None = None
    embedding_base_url: str | None = None
    memory: MemoryConfig = field(default_factory=MemoryConfig)
    max_limit: int = DEFAULT_MAX_LIMIT
    tenant_id: str | None = None
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class ServerSettings:
    """The ``server:`` section (HTTP server, ``memlane serve``).

    Attributes:
        host: Interface to bind (default ``127.0.0.1``).
        port: TCP port, 0-65535 (default 8080; 0 = any free port).
        api_keys: The accepted keys and their tenants.
        max_request_bytes: Largest request body, in bytes (default 1 MiB); larger -> 413.
    """

    host: str = "127.0.0.1"
    port: int = 8080
    api_keys: tuple[ApiKey, ...] = ()
    max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES

    def tenant_for_key(self, presented: str) -> str | None:
        """Return the tenant of ``presented``, or ``None`` if it is not a configured key.

        The presented key is hashed and compared with every configured digest in constant
        time (:func:`hmac.compare_digest`, no early exit), so timing reveals nothing about
        which prefix matched.
        """
        key = find_api_key(self.api_keys, presented)
        return None if key is None else key.tenant_id

    def api_key_for(self, presented: str) -> ApiKey | None:
        """The configured key (tenant and role) of ``presented``, or ``None``; as :meth:`tenant_for_key`."""
        return find_api_key(self.api_keys, presented)

    def check_servable(self, max_limit: int) -> None:
        """Refuse settings no HTTP server can serve (:func:`memlane.server.http.create_app` calls it).

        ``memlane serve`` calls it before binding its port, so a server that could only refuse
        every request never prints that it is running.

        Args:
            max_limit: Largest ``limit`` a request may ask for.

        Raises:
            ConfigError: no API keys are configured (every request would be refused), or
                ``max_limit`` < 1.
        """
        if not self.api_keys:
            raise ConfigError(
                "server.api_keys: no API keys configured; add 'sha256:<hex>: <tenant>' entries "
                "(memlane api-key TENANT prints one)"
            )
        if max_limit < 1:
            raise ConfigError(f"max_limit must be >= 1, got {max_limit}")


@dataclass(frozen=True, slots=True)
class MemlaneConfig:
    """A validated configuration file.

    Attributes:
        store: The ``memory:`` section (defaults when absent).
        episodic: The ``episodic_memory:`` section, or ``None`` when absent or when
            ``memory.type`` is a host memory type (then no tools are registered by
            :func:`memlane.tools.tools_for`).
        server: The ``server:`` section (defaults when absent).
        source: The file it was read from, or ``None`` for a mapping.
    """

    store: StoreSettings = field(default_factory=StoreSettings)
    episodic: EpisodicSettings | None = None
    server: ServerSettings = field(default_factory=ServerSettings)
    source: Path | None = None

    @property
    def episodic_or_default(self) -> EpisodicSettings:
        """``episodic``, or the defaults when the section is absent."""
        return self.episodic if self.episodic is not None else EpisodicSettings()

    @property
    def memory_config(self) -> MemoryConfig:
        """The :class:`MemoryConfig` of the ``episodic_memory:`` section (defaults when absent)."""
        return self.episodic_or_default.memory


def is_postgres_url(location: str | os.PathLike[str]) -> bool:
    """``True`` if ``location`` is a ``postgresql://`` or ``postgres://`` URL (a path is never one)."""
    return isinstance(location, str) and location.lower().startswith(_POSTGRES_SCHEMES)


# -- loading -----------------------------------------------------------------------------


def load_config(source: str | os.PathLike[str] | Mapping[str, Any] | MemlaneConfig) -> MemlaneConfig:
    """Read and validate a configuration.

    Args:
        source: A YAML file path, an already-parsed mapping (same shape as the file), or a
            :class:`MemlaneConfig` (returned unchanged). Relative SQLite paths are resolved
            against the file's directory (for a mapping: the working directory).

    Returns:
        The validated :class:`MemlaneConfig`.

    Raises:
        ConfigError: the file cannot be read or is not valid YAML, or any value is invalid;
            the message names the key (``section.key: ...``).
    """
    if isinstance(source, MemlaneConfig):
        return source
    if isinstance(source, Mapping):
        return _parse(source, base_dir=Path.cwd(), source=None)
    if not isinstance(source, str | os.PathLike):
        raise ConfigError(f"config must be a file path or a mapping, got {type(source).__name__}")
    path = Path(source).expanduser()
    import yaml  # PyYAML, a core dependency; imported here to keep `import memlane` light

    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file {path} not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    try:
        data = yaml.load(text, Loader=_loader_without_aliases(yaml))  # (a SafeLoader)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{path}: invalid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: the top level must be a mapping of sections, got {_type_name(data)}")
    resolved = path.resolve()
    return _parse(data, base_dir=resolved.parent, source=resolved)


def _loader_without_aliases(yaml: Any) -> Any:
    """PyYAML's ``SafeLoader`` that refuses aliases (``*name``): a 400-byte alias bomb would
    otherwise expand to billions of items when the config is walked or an error prints it
    (#22 item 14). A config has no need of them."""

    class _NoAliases(yaml.SafeLoader):  # type: ignore[misc]
        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                mark = self.peek_event().start_mark
                raise yaml.composer.ComposerError(
                    None, None, "YAML aliases (*name) are not accepted in a memlane config", mark
                )
            return super().compose_node(parent, index)

    return _NoAliases


def _parse(data: Mapping[Any, Any], *, base_dir: Path, source: Path | None) -> MemlaneConfig:
    _check_sections(data)
    store = _parse_store(_Section("memory", data.get("memory"), _STORE_KEYS), base_dir)
    episodic = None
    if "episodic_memory" in data and data["episodic_memory"] is not False:
        section = _Section("episodic_memory", data["episodic_memory"], _EPISODIC_KEYS)
        episodic = _parse_episodic(section, None if store.host_managed else _rag_model(data))
        if store.host_managed:
            logger.info(
                "memory.type %s: the host keeps its own memory; episodic memory is a no-op", store.type
            )
            episodic = None
    return MemlaneConfig(
        store=store,
        episodic=episodic,
        server=_parse_server(_Section("server", data.get("server"), _SERVER_KEYS)),
        source=source,
    )


# -- sections ----------------------------------------------------------------------------

_SECTIONS = ("memory", "episodic_memory", "server")
_STORE_KEYS = ("type", "path", "dsn", "schema", *HOST_MEMORY_KEYS)
_MEMORY_KEYS: tuple[str, ...] = tuple(f.name for f in fields(MemoryConfig))
"""``episodic_memory:`` keys that are :class:`memlane.MemoryConfig` fields, passed through as they are."""

_EPISODIC_KEYS = (
    "embedding_model",
    "embedding_provider",
    "embedding_dims",
    "embedding_base_url",
    "max_limit",
    "tenant_id",
    "session_id",
    *_MEMORY_KEYS,
)
_SERVER_KEYS = ("host", "port", "api_keys", "max_request_bytes")


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _check_sections(data: Mapping[Any, Any]) -> None:
    """Refuse a near-miss of ``episodic_memory``; warn about near-misses of ``memory``/``server``.

    Other unknown top-level keys are the host's own sections and are ignored.
    """
    for key in data:
        if not isinstance(key, str) or key in _SECTIONS:
            continue
        absent = [name for name in _SECTIONS if name not in data]
        close = difflib.get_close_matches(key, absent, n=1, cutoff=0.8)
        if not close:
            continue
        message = f"{key}: unknown top-level section (did you mean {close[0]!r}?)"
        if close[0] == "episodic_memory":
            raise ConfigError(f"{message}; without episodic_memory: the agent gets no memory tools")
        logger.warning("%s; it is ignored", message)


def _rag_model(data: Mapping[Any, Any]) -> str | None:
    """``rag.embedding_model`` of the host's ``rag:`` section, if the file has one."""
    rag = data.get("rag")
    model = rag.get("embedding_model") if isinstance(rag, Mapping) else None
    return model.strip() if isinstance(model, str) and model.strip() else None


class _Section:
    """One mapping section with typed getters whose errors name ``section.key``."""

    def __init__(self, name: str, data: object, known: Collection[str]) -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ConfigError(f"{name}: must be a mapping of keys to values, got {_type_name(data)}")
        for key in data:
            if not isinstance(key, str) or key not in known:
                hint = ""
                if isinstance(key, str):
                    close = difflib.get_close_matches(key, list(known), n=1)
                    hint = f" (did you mean {close[0]!r}?)" if close else ""
                raise ConfigError(f"{name}.{key}: unknown key{hint}; known keys: {', '.join(sorted(known))}")
        self.name = name
        self.data: Mapping[str, Any] = data

    def key(self, key: str) -> str:
        return f"{self.name}.{key}"

    def error(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.key(key)}: {message}")

    def has(self, key: str) -> bool:
        return self.data.get(key) is not None

    def string(self, key: str, default: str | None, *, choices: Collection[str] | None = None) -> str | None:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, str) or not value.strip():
            raise self.error(key, f"must be a non-empty string, got {value!r}")
        value = value.strip()
        if choices is not None and value not in choices:
            raise self.error(key, f"must be one of {list(choices)}, got {value!r}")
        return value

    def integer(
        self, key: str, default: int | None, *, minimum: int, maximum: int | None = None
    ) -> int | None:
        value = self.data.get(key)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(key, f"must be an integer, got {value!r}")
        if value < minimum or (maximum is not None and value > maximum):
            upper = "" if maximum is None else f" and <= {maximum}"
            raise self.error(key, f"must be >= {minimum}{upper}, got {value!r}")
        return value

    def number(self, key: str) -> float | None:
        value = self.data.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise self.error(key, f"must be a finite number, got {value!r}")
        return float(value)


def _parse_store(sec: _Section, base_dir: Path) -> StoreSettings:
    kind = sec.string("type", "sqlite", choices=_STORE_TYPES)
    assert kind is not None
    if kind in HOST_MEMORY_TYPES:
        return StoreSettings(type=kind)
    path = sec.string("path", None)
    dsn = sec.string("dsn", None)
    schema = sec.string("schema", None)
    if kind == "sqlite":
        for key in ("dsn", "schema"):
            if sec.has(key):
                raise sec.error(key, "only valid with memory.type: postgres")
        if path is not None and path != ":memory:":
            candidate = Path(path).expanduser()
            path = str(candidate if candidate.is_absolute() else (base_dir / candidate).resolve())
        return StoreSettings(type="sqlite", path=path)
    if path is not None:
        raise sec.error("path", "only valid with memory.type: sqlite (use memory.dsn for postgres)")
    if dsn is None:
        raise sec.error(
            "dsn", "required with memory.type: postgres, e.g. postgresql://user@localhost/memlane"
        )
    if not is_postgres_url(dsn):
        raise sec.error("dsn", f"must be a postgresql:// URL, got {dsn.split('@')[-1]!r}")
    return StoreSettings(type="postgres", dsn=dsn, schema=schema)


def _infer_provider(model: str) -> str | None:
    if model in LOCAL_MODEL_NAMES:
        return "local"
    if model.startswith("openai:") or model.startswith("text-embedding-"):
        return "openai"
    return None


def _parse_provider(sec: _Section, default_model: str | None) -> tuple[str, str]:
    """``(model, provider)`` of the section: the provider given or inferred from the model name.

    ``default_model`` (``rag.embedding_model``) stands in for an absent ``embedding_model``.
    """
    model = sec.string("embedding_model", default_model or "all-MiniLM-L6-v2")
    assert model is not None
    origin = " (the default taken from rag.embedding_model)" if not sec.has("embedding_model") else ""
    provider = sec.string("embedding_provider", None, choices=_PROVIDERS) or _infer_provider(model)
    if provider is None:
        raise sec.error(
            "embedding_model",
            f"unknown model {model!r}{origin}: use all-MiniLM-L6-v2 (bundled, offline), an OpenAI model "
            "such as text-embedding-3-small, or set embedding_provider: openai for another "
            "OpenAI-compatible model",
        )
    if provider == "local" and model not in LOCAL_MODEL_NAMES:
        raise sec.error(
            "embedding_model",
            f"the local provider only runs the bundled all-MiniLM-L6-v2, got {model!r}{origin}",
        )
    if provider == "openai":
        model = model.removeprefix("openai:")
    return model, provider


def _parse_embedding(sec: _Section, default_model: str | None) -> tuple[str, str, int | None, str | None]:
    """``(model, provider, dims, base_url)`` of the section, checked against each other."""
    model, provider = _parse_provider(sec, default_model)
    dims = sec.integer("embedding_dims", None, minimum=1)
    if dims is not None and provider == "local":
        raise sec.error("embedding_dims", "not configurable for the local model (always 384)")
    base_url = sec.string("embedding_base_url", None)
    if base_url is not None and provider != "openai":
        raise sec.error("embedding_base_url", "only valid with the openai provider")
    if provider == "openai":
        try:
            openai_dims(model, dims)
        except ValueError as exc:
            raise sec.error("embedding_dims", str(exc)) from None
    if provider == "hashing" and dims is not None and dims < 8:
        raise sec.error("embedding_dims", f"must be >= 8 for the hashing embedder, got {dims}")
    return model, provider, dims, base_url


def _parse_memory(sec: _Section) -> MemoryConfig:
    """The section's :class:`MemoryConfig` fields; an invalid one is reported under its own key."""
    memory_kwargs = {key: sec.data[key] for key in _MEMORY_KEYS if sec.data.get(key) is not None}
    for key, value in memory_kwargs.items():
        try:
            MemoryConfig(**{key: value})
        except ConfigError as exc:
            message = str(exc).removeprefix(f"{key}:").removeprefix(f"{key} ").strip()
            raise sec.error(key, message) from None
    return MemoryConfig(**memory_kwargs)


def _parse_identifier(sec: _Section, key: str) -> str | None:
    value = sec.data.get(key)
    try:
        return None if value is None else check_identifier(value, key)
    except MemlaneError as exc:
        raise sec.error(key, str(exc)) from None


def _parse_episodic(sec: _Section, default_model: str | None = None) -> EpisodicSettings:
    model, provider, dims, base_url = _parse_embedding(sec, default_model)
    memory = _parse_memory(sec)
    max_limit = sec.integer("max_limit", max(DEFAULT_MAX_LIMIT, memory.default_limit), minimum=1)
    assert max_limit is not None
    if max_limit < memory.default_limit:
        raise sec.error("max_limit", f"must be >= default_limit ({memory.default_limit}), got {max_limit}")
    return EpisodicSettings(
        embedding_model=model,
        embedding_provider=provider,
        embedding_dims=dims,
        embedding_base_url=base_url,
        memory=memory,
        max_limit=max_limit,
        tenant_id=_parse_identifier(sec, "tenant_id"),
        session_id=_parse_identifier(sec, "session_id"),
    )


def _parse_server(sec: _Section) -> ServerSettings:
    host = sec.string("host", "127.0.0.1")
    port = sec.integer("port", 8080, minimum=0, maximum=65535)
    max_bytes = sec.integer("max_request_bytes", DEFAULT_MAX_REQUEST_BYTES, minimum=1024)
    assert host is not None and port is not None and max_bytes is not None
    return ServerSettings(
        host=host,
        port=port,
        api_keys=parse_api_keys(sec.data.get("api_keys"), lambda m: sec.error("api_keys", m)),
        max_request_bytes=max_bytes,
    )
