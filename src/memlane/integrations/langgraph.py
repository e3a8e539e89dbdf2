"""A LangGraph ``BaseStore`` backed by memlane: ``MemlaneStore``.

Install with ``pip install 'memlane[langgraph]'``. Use it wherever LangGraph takes a store::

    from memlane.integrations.langgraph import MemlaneStore

    store = MemlaneStore.open("memlane.db", tenant_label=1)    # ("memories", user_id, ...)
    graph = builder.compile(store=store)                         # nodes: runtime.store / get_store()
    store.put(("memories", "u1"), "seat", {"content": "User prefers window seats"})
    store.search(("memories", "u1"), query="where does the user sit?")   # ranked by memlane

How LangGraph's model maps onto memlane's (the **mapping**):

* **An item is an episode** of event type ``langgraph_item`` (``event_type=``). Its text (what
  is embedded and keyword-indexed) is the value's string leaves, or the fields named by the
  put's ``index`` / the store's ``fields`` (LangGraph's path syntax); its ``metadata`` keeps
  the namespace, the key, the whole value and the item's ``created_at``.
* **Namespaces → tenant, session and tags.** By default every item lives in the wrapped
  memory's tenant. ``tenant_label=i`` makes label ``i`` of the namespace the memlane tenant
  (``("memories", "{user_id}")`` with ``tenant_label=1``: one tenant per user, so memlane's
  tenant isolation, HTTP API keys and ``memlane`` CLI see the same partition);
  ``session_label=j`` records label ``j`` as the episode's session. The full namespace tuple
  is stored in the metadata, and every prefix of it as a hashed tag (``lg-ns:…``), so a
  prefix search is an exact, case-sensitive filter inside the store, not a scan.
* **put with an existing key supersedes** (memlane is append-only): the new version is
  inserted and the old one retired in one transaction, with ``valid_until``/``invalidated_at``
  set; ``get``/``search`` return the current version, :meth:`MemlaneStore.history` every
  version, and memlane's ``as_of``/``known_at`` recalls still see the past ones. ``created_at``
  is the first version's time, ``updated_at`` the current version's.
* **delete removes** the item and all its versions (``delete_episode``; nothing is kept).
* **search(query=...)** is memlane's ranked recall (hybrid dense + keyword, recency,
  importance, time expressions) over the indexed items; each result's ``score`` is the final
  score in [0, 1] and ``breakdown`` (on :class:`MemlaneSearchItem`) says why (the cosine of a
  dense hit is ``0.1 + 0.6 * breakdown.dense`` while ``0 < dense < 1``). Without a query: newest
  update first, like LangGraph's SQL stores. ``filter`` takes LangGraph's operators (exact
  value, nested dicts, dotted keys such as ``"user.access-level"``, ``$eq $ne $gt $gte $lt
  $lte``) and runs in SQL (:class:`~memlane.stores.base.MetadataCondition` on the stored value);
  only list operands are checked in Python, and a search with a query ranks up to
  :data:`MAX_SCAN` items to fill a filtered page.
* **put(..., index=False)**: the episode's text is :data:`UNINDEXED_TEXT`, so the value is
  never embedded nor keyword-indexed, and the item lacks :data:`INDEXED_TAG`, so a search with
  a query never returns it (``get``, listing and a search without a query do).
* **TTL** (``ttl=`` LangGraph's ``TTLConfig``, ``put(ttl=minutes)``): the metadata keeps
  ``ttl_minutes`` and ``expires_at``; reads with ``refresh_ttl`` restart it
  (:meth:`~memlane.stores.base.Store.set_metadata`), :meth:`MemlaneStore.sweep_ttl` deletes
  expired items and :meth:`MemlaneStore.start_ttl_sweeper` runs it in a thread.
* **list_namespaces** reads the current items' namespaces from the store's facet index
  (:meth:`~memlane.stores.base.Store.facet_values`: one index probe per namespace, whatever the
  number of items); with ``omit_expired`` or a retention period it is one ``SELECT DISTINCT`` over
  the unexpired items (:meth:`~memlane.stores.base.Store.metadata_values`).

Batches run their operations in order (a ``get`` after a ``put`` in the same batch sees it);
consecutive puts are one write (one embedder call, one transaction). Single puts from several
threads at once are written together (group commit: one embedder call and one transaction for
the waiting puts, each still its own version). ``abatch`` runs the batch on the memory's worker
pool (:class:`memlane.AsyncEpisodicMemory`), never on the event loop, and writes concurrent
single puts together too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import logging
import operator
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, cast

try:
    from langgraph.store.base import (
        BaseStore,
        GetOp,
        InvalidNamespaceError,
        Item,
        ListNamespacesOp,
        MatchCondition,
        Op,
        PutOp,
        Result,
        SearchItem,
        SearchOp,
        TTLConfig,
        ensure_embeddings,
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        "memlane.integrations.langgraph needs LangGraph: pip install 'memlane[langgraph]'"
    ) from exc

import numpy as np
from numpy.typing import NDArray

from memlane import (
    AsyncEpisodicMemory,
    EmbeddingError,
    Episode,
    EpisodeFilter,
    EpisodeInput,
    EpisodeNotFoundError,
    EpisodicMemory,
    MemoryConfig,
    RecallHit,
    ScoreBreakdown,
    StoreError,
    ValidationError,
)
from memlane.lifecycle.supersession import supersession
from memlane.stores import MetadataCondition, Supersession

__all__ = [
    "EVENT_TYPE",
    "INDEXED_TAG",
    "MAX_SCAN",
    "UNINDEXED_TEXT",
    "LangChainEmbedder",
    "MemlaneSearchItem",
    "MemlaneStore",
]

logger = logging.getLogger(__name__)

EVENT_TYPE = "langgraph_item"
"""Default event type of the episodes that hold LangGraph items."""

MAX_SCAN = 5000
"""Most items a filtered search with a query ranks (a filter LangGraph cannot express in SQL too)."""

INDEXED_TAG = "lg-indexed"
"""Tag of the items put with their text indexed (not ``index=False``): what a query searches."""

UNINDEXED_TEXT = "(LangGraph item stored with index=False)"
"""The episode text of an item put with ``index=False``: its value is never embedded nor keyword-indexed."""

_META = "langgraph"
_NAMESPACE = (_META, "namespace")
_CONTEXT_CACHE = 1024
_PUT_ATTEMPTS = 5
_SWEEP_BATCH = 500
_MAX_VALUES = 2**31 - 1
_MAX_TTL_MINUTES = 1e9
_NEVER = 253402300799.0  # 9999-12-31T23:59:59Z: the expires_at of an item without a TTL
_OPERATORS: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


class MemlaneSearchItem(SearchItem):
    """A LangGraph ``SearchItem`` that also carries memlane's :class:`~memlane.ScoreBreakdown`.

    ``score`` is ``breakdown.score`` (in [0, 1], higher is better) for a search with a
    query, ``None`` otherwise; ``breakdown`` has the relevance, recency and importance
    signals (and the dense/keyword parts) that produced it.
    """

    __slots__ = ("breakdown",)

    def __init__(
        self,
        namespace: tuple[str, ...],
        key: str,
        value: dict[str, Any],
        created_at: datetime,
        updated_at: datetime,
        score: float | None = None,
        breakdown: ScoreBreakdown | None = None,
    ) -> None:
        super().__init__(namespace, key, value, created_at, updated_at, score)
        self.breakdown = breakdown


class LangChainEmbedder:
    """A LangChain ``Embeddings`` (what LangGraph's ``index={"embed": ...}`` takes) as a memlane embedder.

    Args:
        embeddings: Any object with ``embed_documents(texts) -> list[list[float]]``.
        dims: The vectors' dimension (LangGraph's ``index["dims"]``), >= 1.
        model_id: Identifier stored with the vectors; default ``"langchain:<class name>@<dims>"``.

    Vectors are L2-normalised (memlane compares by cosine). A failure of ``embeddings`` or a
    vector of another shape is an :class:`~memlane.EmbeddingError`.
    """

    def __init__(self, embeddings: Any, dims: int, model_id: str | None = None) -> None:
        if isinstance(dims, bool) or not isinstance(dims, int) or dims < 1:
            raise ValueError(f"dims must be an integer >= 1, got {dims!r}")
        self.embeddings = embeddings
        self._dims = dims
        self._model_id = model_id or f"langchain:{type(embeddings).__name__}@{dims}"

    @property
    def model_id(self) -> str:
        """Identifier stored with every vector."""
        return self._model_id

    @property
    def dims(self) -> int:
        """Vector dimension."""
        return self._dims

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """``[len(texts), dims]`` unit float32 vectors from ``embeddings.embed_documents``.

        Raises:
            EmbeddingError: the embeddings raised, or returned the wrong shape or non-finite values.
        """
        if not texts:
            return np.zeros((0, self._dims), dtype=np.float32)
        try:
            rows = self.embeddings.embed_documents(list(texts))
        except Exception as exc:
            raise EmbeddingError(f"{self._model_id} failed: {exc}") from exc
        matrix = np.asarray(rows, dtype=np.float32)
        if matrix.shape != (len(texts), self._dims) or not np.isfinite(matrix).all():
            raise EmbeddingError(
                f"{self._model_id} returned {matrix.shape}, expected ({len(texts)}, {self._dims})"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return (matrix / np.where(norms > 0, norms, 1.0)).astype(np.float32)


def _digest(payload: object) -> str:
    return hashlib.sha256(json.dumps(payload, ensure_ascii=False).encode()).hexdigest()[:32]


def namespace_tag(prefix: Sequence[str]) -> str:
    """The tag every item under ``prefix`` carries (exact and case-sensitive: a hash)."""
    return f"lg-ns:{_digest(list(prefix))}"


def key_tag(namespace: Sequence[str], key: str) -> str:
    """The tag of every version of the item ``(namespace, key)``."""
    return f"lg-key:{_digest([list(namespace), key])}"


def _leaf_texts(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for child in value.values():
            yield from _leaf_texts(child)
    elif isinstance(value, list | tuple):
        for child in value:
            yield from _leaf_texts(child)


def _matches(actual: Any, expected: Any) -> bool:
    """LangGraph's filter semantics: exact values, nested dicts, ``$eq $ne $gt $gte $lt $lte``."""
    if isinstance(expected, Mapping):
        if any(isinstance(k, str) and k.startswith("$") for k in expected):
            return all(_compare(actual, op, operand) for op, operand in expected.items())
        return isinstance(actual, Mapping) and all(_matches(actual.get(k), v) for k, v in expected.items())
    if isinstance(expected, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(expected)
            and all(_matches(a, e) for a, e in zip(actual, expected, strict=True))
        )
    if isinstance(actual, bool) or isinstance(expected, bool):
        return isinstance(actual, bool) and isinstance(expected, bool) and actual == expected
    return bool(actual == expected)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _compare(actual: Any, op: str, operand: Any) -> bool:
    """One ``$`` operator, typed like the SQL conditions: numbers with numbers, strings with strings."""
    if op not in _OPERATORS:
        raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
    if op in ("$eq", "$ne"):
        return bool(_matches(actual, operand)) == (op == "$eq")
    comparable = (_is_number(actual) and _is_number(operand)) or (
        isinstance(actual, str) and isinstance(operand, str)
    )
    return comparable and bool(_OPERATORS[op](actual, operand))


def _path_matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    part = (
        namespace[: len(path)]
        if condition.match_type == "prefix"
        else namespace[len(namespace) - len(path) :]
    )
    return all(p in ("*", n) for p, n in zip(path, part, strict=True))


def _value_at(value: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


def _filter_matches(value: Mapping[str, Any], flt: Mapping[str, Any]) -> bool:
    """Whether an item's value passes a LangGraph filter (dotted keys reach nested fields)."""
    return all(_matches(_value_at(value, key.split(".")), expected) for key, expected in flt.items())


def _sql_conditions(path: tuple[str, ...], expected: Any) -> tuple[list[MetadataCondition], bool]:
    """The metadata conditions of one filter entry, and whether they decide it exactly.

    Scalars and ``$`` operators on scalars are exact; nested dicts recurse (a subset match);
    lists (exact equality) and keys SQL cannot address are left to the Python check.
    """
    if isinstance(expected, Mapping) and not any(isinstance(k, str) and k.startswith("$") for k in expected):
        conditions: list[MetadataCondition] = []
        exact = True
        for key, child in expected.items():
            found, child_exact = _sql_conditions((*path, str(key)), child)
            conditions += found
            exact = exact and child_exact and isinstance(key, str)
        # A nested dict needs an object at ``path``: a condition that a missing leaf passes (``ne``,
        # ``eq None``) is only a superset in SQL, the Python check decides.
        exact = exact and not any(c.op == "ne" or c.kind == "null" for c in conditions)
        return conditions, exact
    pairs = list(expected.items()) if isinstance(expected, Mapping) else [("$eq", expected)]
    conditions, exact = [], True
    for op, operand in pairs:
        if op not in _OPERATORS:
            raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")
        try:
            conditions.append(MetadataCondition(path, op[1:], operand))
        except ValidationError:
            exact = False  # a list or dict operand, or a key with a quote: checked in Python
    return conditions, exact


def _filter_conditions(flt: Mapping[str, Any] | None) -> tuple[tuple[MetadataCondition, ...], bool]:
    """A LangGraph filter as SQL metadata conditions on the stored value, and whether they are exact."""
    conditions: list[MetadataCondition] = []
    exact = True
    for key, expected in (flt or {}).items():
        found, entry_exact = _sql_conditions((_META, "value", *key.split(".")), expected)
        conditions += found
        exact = exact and entry_exact
    return tuple(conditions), exact


def _check_ttl_config(ttl: Mapping[str, Any] | None) -> TTLConfig | None:
    if ttl is None:
        return None
    unknown = set(ttl) - {"refresh_on_read", "omit_expired", "default_ttl", "sweep_interval_minutes"}
    if unknown:
        raise ValueError(f"unknown TTL settings {sorted(unknown)}")
    for name in ("default_ttl", "sweep_interval_minutes"):
        _check_minutes(ttl.get(name), name)
    return cast(TTLConfig, dict(ttl))


def _check_minutes(value: object, name: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < _MAX_TTL_MINUTES:
        raise ValueError(f"{name} must be a number of minutes > 0, got {value!r}")
    return float(value)


class _Ticket:
    """One caller's put waiting in :meth:`MemlaneStore._put_together`."""

    __slots__ = ("error", "lead", "op", "woken")

    def __init__(self, op: PutOp) -> None:
        self.op = op
        self.lead = False
        self.error: BaseException | None = None
        self.woken = threading.Event()


class MemlaneStore(BaseStore):
    """LangGraph's ``BaseStore`` over a memlane memory (see the module docstring for the mapping).

    Args:
        memory: The memory items are stored in: an :class:`memlane.EpisodicMemory` or an
            :class:`memlane.AsyncEpisodicMemory` (whose pool ``abatch`` then uses). Its
            store, embedder, clock and ranking configuration are used; the store reads in
            tenant scope and never auto-supersedes, whatever the memory's config says.
        tenant_label: Index of the namespace label that names the memlane tenant, or
            ``None`` (default) for the memory's own tenant. Puts need a namespace that long.
        session_label: Index of the label recorded as the episode's session, or ``None``
            (the memory's session).
        fields: Default paths of the value whose text is indexed (LangGraph's syntax:
            ``"text"``, ``"a.b"``, ``"items[*].text"``); ``None`` = every string in the value.
        event_type: Event type of the item episodes (default :data:`EVENT_TYPE`).
        owns_memory: Whether :meth:`close` closes ``memory`` (default ``False``).
        max_workers: Worker threads for ``abatch`` when ``memory`` is a sync memory.
        ttl: LangGraph's ``TTLConfig`` (``default_ttl`` and ``sweep_interval_minutes`` in
            minutes, ``refresh_on_read``, ``omit_expired``), or ``None``: no default TTL (a
            put's own ``ttl=`` still applies).

    Raises:
        ValueError: a negative ``tenant_label``/``session_label`` or a bad ``ttl`` setting.
        ValidationError: a bad ``event_type`` or ``max_workers``.
    """

    supports_ttl = True

    def __init__(
        self,
        memory: EpisodicMemory | AsyncEpisodicMemory,
        *,
        tenant_label: int | None = None,
        session_label: int | None = None,
        fields: Sequence[str] | None = None,
        event_type: str = EVENT_TYPE,
        owns_memory: bool = False,
        max_workers: int = 4,
        ttl: TTLConfig | Mapping[str, Any] | None = None,
    ) -> None:
        for name, label in (("tenant_label", tenant_label), ("session_label", session_label)):
            if label is not None and (isinstance(label, bool) or not isinstance(label, int) or label < 0):
                raise ValueError(f"{name} must be an integer >= 0 or None, got {label!r}")
        self.ttl_config = _check_ttl_config(ttl)
        if isinstance(memory, AsyncEpisodicMemory):
            self._async, sync, self._owns_pool = memory, memory.sync, owns_memory
        else:
            self._async = AsyncEpisodicMemory(memory, max_workers=max_workers, owns_memory=owns_memory)
            sync, self._owns_pool = memory, True
        self.memory = sync
        self.tenant_label = tenant_label
        self.session_label = session_label
        self.fields = None if fields is None else list(fields)
        self.event_type = event_type
        self._owns_memory = owns_memory
        config = replace(sync.config, scope="tenant", auto_supersede=False)
        self._base = sync.with_context(config=config)
        self._global = sync.with_context(config=replace(config, scope="global"))
        self._contexts: dict[tuple[str, str], EpisodicMemory] = {}
        self._lock = threading.Lock()
        self._key_locks = [threading.Lock() for _ in range(64)]
        self._sweeper: threading.Thread | None = None
        self._sweep_stop = threading.Event()
        self._group: list[_Ticket] = []
        self._group_lock = threading.Lock()
        self._group_writing = False
        self._pile: list[tuple[PutOp, asyncio.Future[None]]] = []
        self._flushing = False

    @classmethod
    def open(
        cls,
        path: str | Path = "memlane.db",
        *,
        tenant_id: str = "default",
        session_id: str = "default",
        config: MemoryConfig | None = None,
        index: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> MemlaneStore:
        """Open a SQLite file or PostgreSQL URL (:meth:`memlane.EpisodicMemory.open`) as a store that owns it.

        Args:
            path: As for :meth:`memlane.EpisodicMemory.open`.
            tenant_id: The memory's tenant (the tenant of every item unless ``tenant_label``).
            session_id: The memory's session.
            config: As for :meth:`memlane.EpisodicMemory.open`.
            index: LangGraph's ``IndexConfig``: ``{"dims": ..., "embed": ..., "fields": [...]}``
                embeds with ``embed`` (a LangChain ``Embeddings``, a function or a
                ``"provider:model"`` string, as LangGraph takes it) through
                :class:`LangChainEmbedder`, and ``fields`` become the default ``fields``;
                ``None`` = memlane's embedder (the bundled model unless ``embedder=``).
            options: ``embedder``/``clock`` go to the memory; the rest (``ttl``, ``fields``,
                ``tenant_label``, ...) to :class:`MemlaneStore`.

        Raises:
            StoreError, EmbeddingModelMismatchError, ConfigError: as for ``EpisodicMemory.open``.
            ValueError: ``index`` without ``dims``/``embed``, or a bad option.
        """
        memory_options = {k: options.pop(k) for k in ("embedder", "clock") if k in options}
        if index is not None:
            if "dims" not in index or "embed" not in index:
                raise ValueError("index needs 'dims' and 'embed' (LangGraph's IndexConfig)")
            embeddings = ensure_embeddings(index["embed"])
            memory_options["embedder"] = LangChainEmbedder(embeddings, index["dims"])
            options.setdefault("fields", index.get("fields"))
        memory = EpisodicMemory.open(
            path, tenant_id=tenant_id, session_id=session_id, config=config, **memory_options
        )
        try:
            return cls(memory, owns_memory=True, **options)
        except BaseException:
            memory.close()
            raise

    @property
    def index_config(self) -> dict[str, Any]:
        """LangGraph's ``index_config``: ``dims``, ``embed`` (embeddings or embedder), ``fields``."""
        embedder = self.memory.embedder
        embed = embedder.embeddings if isinstance(embedder, LangChainEmbedder) else embedder
        return {"dims": embedder.dims, "embed": embed, "fields": self.fields}

    # -- BaseStore ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return one result per op (see ``BaseStore.batch``).

        Consecutive puts run as one write (one embedder call and one transaction per tenant
        and session); a later put of the same key in the run wins, as in LangGraph. A batch of
        one put (``put``/``delete``) from several threads at once is written together with the
        others waiting (group commit, :meth:`_put_together`): it returns once its put is stored.

        Raises:
            InvalidNamespaceError: a bad namespace label (or an empty one to put into).
            MemlaneError: memlane refused or failed (e.g. ``ValidationError``, ``StoreError``).
        """
        pending = list(ops)
        for op in pending:
            validate_op_namespace(op)
        if len(pending) == 1 and isinstance(pending[0], PutOp):
            self._put_together(pending[0])
            return [None]
        results: list[Result] = []
        run: list[PutOp] = []
        for op in pending:
            if isinstance(op, PutOp):
                run.append(op)
                results.append(None)
                continue
            self._put_run(run)
            run = []
            results.append(self._read(op))
        self._put_run(run)
        return results

    def _put_together(self, op: PutOp) -> None:
        """Write ``op`` with the single puts other threads submit meanwhile (group commit).

        The first caller leads: it takes every put waiting (its own among them), writes them
        (:meth:`_write_pile`), wakes their callers and hands the lead to the first caller that
        arrived during the write. Each caller returns (or raises its own error) once its put is
        stored; the puts of a pile are written in arrival order, as if one after the other.
        """
        ticket = _Ticket(op)
        with self._group_lock:
            self._group.append(ticket)
            ticket.lead = not self._group_writing
            self._group_writing = True
        if not ticket.lead:
            ticket.woken.wait()
        if ticket.lead:
            self._lead_pile()
        if ticket.error is not None:
            raise ticket.error

    def _lead_pile(self) -> None:
        with self._group_lock:
            pile, self._group = self._group, []
        try:
            self._write_pile(pile)
        except BaseException as exc:  # interrupted: every caller of the pile hears of it
            for waiting in pile:
                waiting.error = waiting.error or exc
            raise
        finally:
            with self._group_lock:
                if self._group:
                    self._group[0].lead = True
                    self._group[0].woken.set()
                else:
                    self._group_writing = False
            for waiting in pile:
                if not waiting.lead:
                    waiting.woken.set()

    def _write_pile(self, pile: Sequence[_Ticket]) -> None:
        """The pile's puts in arrival order, as runs that each write once.

        A key put twice in a run becomes two versions (one transaction); a delete of a key the run
        already holds, or a put of a key it deleted, starts the next run (deletes go first in a run).
        """
        run: list[_Ticket] = []
        put: set[tuple[tuple[str, ...], str]] = set()
        deleted: set[tuple[tuple[str, ...], str]] = set()
        for ticket in pile:
            key = (tuple(ticket.op.namespace), ticket.op.key)
            deleting = ticket.op.value is None
            if key in deleted or (deleting and key in put):
                self._write_run(run)
                run, put, deleted = [], set(), set()
            run.append(ticket)
            (deleted if deleting else put).add(key)
        if run:
            self._write_run(run)

    def _write_run(self, run: Sequence[_Ticket]) -> None:
        """One write of ``run``; if it fails, put by put, so that each error reaches its own caller."""
        try:
            self._put_run([ticket.op for ticket in run], every_version=True)
            return
        except Exception as exc:
            if len(run) == 1:
                run[0].error = exc
                return
        for ticket in run:
            try:
                self._put_run([ticket.op], every_version=True)
            except Exception as exc:
                ticket.error = exc

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Like :meth:`batch`, run on the memory's worker pool (the event loop is never blocked).

        Concurrent single-put calls (``aput``/``adelete`` from many tasks) are written together:
        while one write runs, the puts that arrive wait and then go as one batch (group commit:
        one embedder call, one transaction). Each call returns once its own put is stored; a
        failing batch is retried put by put, so an error reaches only the call that caused it.
        """
        pending = list(ops)
        for op in pending:
            validate_op_namespace(op)
        if len(pending) != 1 or not isinstance(pending[0], PutOp):
            return await self._async.run(self.batch, pending)
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pile.append((pending[0], waiter))
        if not self._flushing:
            self._flushing = True
            asyncio.get_running_loop().create_task(self._flush_pile())
        await waiter
        return [None]

    async def _flush_pile(self) -> None:
        """Write the piled-up puts, batch after batch, until none are left."""
        try:
            while self._pile:
                pile, self._pile = self._pile, []
                try:
                    await self._async.run(self.batch, [op for op, _ in pile])
                    outcomes: list[BaseException | None] = [None] * len(pile)
                except Exception:
                    outcomes = [await self._put_alone(op) for op, _ in pile]
                for (_, waiter), outcome in zip(pile, outcomes, strict=True):
                    if waiter.done():
                        continue
                    if outcome is None:
                        waiter.set_result(None)
                    else:
                        waiter.set_exception(outcome)
        finally:
            self._flushing = False

    async def _put_alone(self, op: PutOp) -> BaseException | None:
        try:
            await self._async.run(self.batch, [op])
        except Exception as exc:
            return exc
        return None

    # -- TTL ---------------------------------------------------------------------------

    def sweep_ttl(self) -> int:
        """Delete every item whose TTL has run out (all its versions); return how many items.

        Expired: ``expires_at`` (the put's time, or the last refreshing read, plus the item's
        ``ttl`` minutes) is before the clock's now. One indexed SQL query per 500 expired
        episodes finds them (:class:`~memlane.stores.base.MetadataCondition`).
        """
        store, removed = self.memory.store, 0
        while True:
            now = self.memory.clock.now().timestamp()
            expired = MetadataCondition((_META, "expires_at"), "lt", now)
            flt = EpisodeFilter(
                tenant_id=self._sweep_tenant(), event_type=self.event_type, metadata=(expired,)
            )
            episodes = store.list_recent(flt, _SWEEP_BATCH)
            for episode in episodes:
                removed += int(store.delete(episode.id, episode.tenant_id) and self._is_current(episode))
            if len(episodes) < _SWEEP_BATCH:
                return removed

    def start_ttl_sweeper(self, sweep_interval_minutes: int | None = None) -> concurrent.futures.Future[None]:
        """Run :meth:`sweep_ttl` every ``sweep_interval_minutes`` (default the config's, else 5) in a thread.

        Returns:
            A future that is done when the sweeper stops (:meth:`stop_ttl_sweeper`, or cancel it).
            Without a TTL config it is done at once (nothing expires by default).
        """
        future: concurrent.futures.Future[None] = concurrent.futures.Future()
        future.add_done_callback(lambda f: self._sweep_stop.set() if f.cancelled() else None)
        if not self.ttl_config or (self._sweeper is not None and self._sweeper.is_alive()):
            if not self.ttl_config:
                future.set_result(None)
            return future
        minutes = _check_minutes(
            sweep_interval_minutes or self.ttl_config.get("sweep_interval_minutes") or 5,
            "sweep_interval_minutes",
        )
        self._sweep_stop.clear()
        self._sweeper = threading.Thread(
            target=self._sweep_loop, args=(float(minutes or 5) * 60, future), daemon=True, name="memlane-ttl"
        )
        self._sweeper.start()
        return future

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper thread; ``True`` once it has stopped (or was not running)."""
        sweeper = self._sweeper
        if sweeper is None or not sweeper.is_alive():
            return True
        self._sweep_stop.set()
        sweeper.join(timeout)
        if sweeper.is_alive():
            return False
        self._sweeper = None
        return True

    def _sweep_loop(self, interval: float, future: concurrent.futures.Future[None]) -> None:
        while not self._sweep_stop.wait(interval):
            try:
                swept = self.sweep_ttl()
            except Exception:  # a failed sweep is retried at the next interval
                logger.exception("MemlaneStore TTL sweep failed")
            else:
                if swept:
                    logger.info("MemlaneStore swept %d expired item(s)", swept)
        if not future.done():
            future.set_result(None)

    def _sweep_tenant(self) -> str | None:
        return None if self.tenant_label is not None else self._base.tenant_id

    # -- memlane additions -------------------------------------------------------------

    def history(self, namespace: tuple[str, ...], key: str) -> list[Item]:
        """Every version of an item, oldest first (the current one last; ``[]`` if unknown).

        Each version's ``updated_at`` is when it was put; superseded versions stay until
        the item is deleted.
        """
        memory = self._memory_for(namespace, write=False)
        versions = self._versions(memory, namespace, key)
        return [self._item(ep) for ep in sorted(versions, key=lambda ep: (ep.valid_from, ep.recorded_at))]

    def close(self) -> None:
        """Stop the TTL sweeper and close the memory if this store owns it (:meth:`open` does). Idempotent."""
        self.stop_ttl_sweeper()
        if self._owns_memory:
            self.memory.close()

    async def aclose(self) -> None:
        """Wait for ``abatch`` calls in flight, then close the memory if owned (and this store's pool)."""
        if self._owns_pool:
            await self._async.close()
        self.close()

    def __enter__(self) -> MemlaneStore:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemlaneStore({self.memory!r}, tenant_label={self.tenant_label!r})"

    # -- operations --------------------------------------------------------------------

    def _read(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            return self._get(op)
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._list_namespaces(op)
        raise ValueError(f"unknown operation type: {type(op).__name__}")

    def _get(self, op: GetOp) -> Item | None:
        namespace = tuple(op.namespace)
        memory = self._memory_for(namespace, write=False)
        current = [ep for ep in self._current(memory, namespace, op.key) if not self._omitted(ep, memory)]
        if not current:
            return None
        if op.refresh_ttl:
            self._refresh(memory, current[:1])
        return self._item(current[0])

    def _put_run(self, run: Sequence[PutOp], *, every_version: bool = False) -> None:
        """A run of consecutive puts: deletes one by one, puts grouped per memory.

        Of a batch's puts of one key the last wins (as in LangGraph); with ``every_version``
        (puts from different callers, :meth:`_put_together`) each becomes a version, in order.
        """
        ops = list(run) if every_version else list({(tuple(op.namespace), op.key): op for op in run}.values())
        groups: dict[int, tuple[EpisodicMemory, list[PutOp]]] = {}
        for op in ops:
            namespace, key = tuple(op.namespace), op.key
            if op.value is None:
                self._delete(namespace, key)
                continue
            if not namespace:
                raise InvalidNamespaceError("Namespace cannot be empty.")
            memory = self._memory_for(namespace, write=True)
            groups.setdefault(id(memory), (memory, []))[1].append(op)
        for memory, puts in groups.values():
            self._put_group(memory, puts)

    def _put_group(self, memory: EpisodicMemory, puts: Sequence[PutOp]) -> None:
        """Insert one new version per put, retiring the current ones, in one transaction.

        One writer per key in this process (striped locks, taken in order); a writer in another
        process that retires a version first makes the insert fail as a whole: re-read and retry.
        """
        stripes = sorted({self._stripe(tuple(op.namespace), op.key) for op in puts})
        with ExitStack() as held:
            for stripe in stripes:
                held.enter_context(self._key_locks[stripe])
            for attempt in range(_PUT_ATTEMPTS):
                try:
                    self._insert_versions(memory, puts)
                    return
                except EpisodeNotFoundError:
                    if attempt == _PUT_ATTEMPTS - 1:
                        raise

    def _insert_versions(self, memory: EpisodicMemory, puts: Sequence[PutOp]) -> None:
        ctx = memory.context
        now = ctx.clock.now()
        episodes: list[Episode] = []
        supersessions: list[Supersession] = []
        latest: dict[tuple[tuple[str, ...], str], list[Episode]] = {}  # a key put twice: a chain
        for op in puts:
            ident = (tuple(op.namespace), op.key)
            current = latest[ident] if ident in latest else self._current(memory, *ident)
            created = self._item(current[0]).created_at if current else now
            episode = ctx.build_episode(self._episode_input(op, ident[0], created, now), now)
            episodes.append(episode)
            supersessions += [supersession(old, episode, None) for old in current]
            latest[ident] = [episode]
        vectors = ctx.embed([ep.content for ep in episodes], "remember")
        if vectors is None:
            episodes = [replace(ep, embedding_model=None) for ep in episodes]
        ctx.store.insert(episodes, vectors, supersessions)

    def _episode_input(
        self, op: PutOp, namespace: tuple[str, ...], created: datetime, now: datetime
    ) -> EpisodeInput:
        value = dict(op.value or {})
        ttl = _check_minutes(op.ttl, "ttl")
        tags = [namespace_tag(namespace[:depth]) for depth in range(1, len(namespace) + 1)]
        tags.append(key_tag(namespace, op.key))
        if op.index is not False:
            tags.append(INDEXED_TAG)
        meta = {
            "namespace": list(namespace),
            "key": op.key,
            "value": value,
            "created_at": created.isoformat(),
            "ttl_minutes": ttl,
            "expires_at": _NEVER if ttl is None else now.timestamp() + ttl * 60,
        }
        text = UNINDEXED_TEXT if op.index is False else self._text(value, op.index)
        return EpisodeInput(self.event_type, text, tags, created_at=now, metadata={_META: meta})

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        """Delete every version, under the key's stripe lock (a put racing a delete could deadlock)."""
        memory = self._memory_for(namespace, write=False)
        with self._key_locks[self._stripe(namespace, key)]:
            for episode in self._versions(memory, namespace, key):
                memory.delete_episode(episode.id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit < 1 or op.offset < 0:
            return []
        memory = self._memory_for(prefix, write=False)
        conditions, exact = _filter_conditions(op.filter)
        flt = self._items_filter(memory, (namespace_tag(prefix),) if prefix else (), conditions)
        if op.query:
            found = self._ranked(memory, op, flt, prefix)
        else:
            found = self._newest(memory, op, flt, exact)
        if op.refresh_ttl:
            self._refresh(memory, [hit.episode for hit in found])
        return [self._search_item(hit) for hit in found]

    def _newest(
        self, memory: EpisodicMemory, op: SearchOp, flt: EpisodeFilter, exact: bool
    ) -> list[RecallHit]:
        """A search without a query: newest update first, filtered in SQL (and in Python when inexact)."""
        wanted = op.offset + op.limit
        n = wanted if exact else max(4 * wanted, 50)
        while True:
            episodes = memory.store.list_recent(flt, min(n, MAX_SCAN) if not exact else n)
            kept = self._kept(episodes, op.filter if not exact else None)
            if exact or len(kept) >= wanted or len(episodes) < n or n >= MAX_SCAN:
                return [RecallHit(episode=ep) for ep in kept[op.offset : wanted]]
            n *= 4

    def _ranked(
        self, memory: EpisodicMemory, op: SearchOp, flt: EpisodeFilter, prefix: tuple[str, ...]
    ) -> list[RecallHit]:
        """A search with a query: memlane's ranked recall over the indexed items, then the filter."""
        wanted = op.offset + op.limit
        if op.filter and memory.store.count(flt) == 0:
            return []  # nothing passes the filter: no ranking at all
        tags = [INDEXED_TAG, *([namespace_tag(prefix)] if prefix else [])]
        n = wanted if not op.filter else max(4 * wanted, 50)
        while True:
            hits = memory.recall_episodes(
                op.query, event_type=self.event_type, tags=tags, limit=min(n, MAX_SCAN)
            )
            kept_ids = {ep.id for ep in self._kept([h.episode for h in hits], op.filter, memory)}
            found = [hit for hit in hits if hit.episode.id in kept_ids]
            if len(found) >= wanted or len(hits) < min(n, MAX_SCAN) or n >= MAX_SCAN:
                return found[op.offset : wanted]
            n *= 4

    def _kept(
        self, episodes: Sequence[Episode], flt: Mapping[str, Any] | None, memory: EpisodicMemory | None = None
    ) -> list[Episode]:
        """Current item episodes, one per item, passing ``flt`` (if given) and not omitted as expired."""
        kept: list[Episode] = []
        seen: set[tuple[tuple[str, ...], str]] = set()
        for episode in episodes:
            meta = episode.metadata.get(_META)
            if not isinstance(meta, dict) or not self._is_current(episode):
                continue
            ident = (tuple(meta["namespace"]), meta["key"])
            if ident in seen or (flt and not _filter_matches(meta["value"], flt)):
                continue
            if memory is not None and self._omitted(episode, memory):
                continue
            seen.add(ident)
            kept.append(episode)
        return kept

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        memory = self._global if self.tenant_label is not None else self._base
        tags: list[str] = []
        for condition in conditions:
            path = tuple(condition.path)
            if condition.match_type != "prefix":
                continue
            fixed = path[: path.index("*")] if "*" in path else path
            if fixed:
                tags.append(namespace_tag(fixed))
            if self.tenant_label is not None and len(fixed) > self.tenant_label:
                memory = self._context(fixed[self.tenant_label], None)
        flt = self._items_filter(memory, tuple(tags), ())
        if flt.metadata or flt.retained_after is not None:  # omit_expired or retention: the exact scan
            values = memory.store.metadata_values(flt, _NAMESPACE, _MAX_VALUES)
        else:  # the namespaces of the current versions, from the store's facet index
            values = memory.store.facet_values(flt.tenant_id, self.event_type, _NAMESPACE)
        found: set[tuple[str, ...]] = set()
        for value in values:
            namespace = tuple(value)
            if all(_path_matches(c, namespace) for c in conditions):
                found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- helpers -----------------------------------------------------------------------

    def _items_filter(
        self, memory: EpisodicMemory, tags: tuple[str, ...], conditions: tuple[MetadataCondition, ...]
    ) -> EpisodeFilter:
        """The current items of ``memory``'s scope with ``tags``, passing ``conditions`` (and not expired)."""
        now = memory.clock.now()
        if self.ttl_config and self.ttl_config.get("omit_expired"):
            conditions = (*conditions, MetadataCondition((_META, "expires_at"), "gt", now.timestamp()))
        flt = memory.context.filter(event_type=self.event_type, tags=tags, now=now)
        return replace(flt, current_at=now, exclude_archived=True, metadata=conditions)

    def _omitted(self, episode: Episode, memory: EpisodicMemory) -> bool:
        """Expired and ``omit_expired`` is on (LangGraph's default is to return it until swept)."""
        if not self.ttl_config or not self.ttl_config.get("omit_expired"):
            return False
        expires = episode.metadata[_META].get("expires_at", _NEVER)
        return bool(expires <= memory.clock.now().timestamp())

    def _refresh(self, memory: EpisodicMemory, episodes: Sequence[Episode]) -> None:
        """Restart the TTL of the items read (those put with a ``ttl``): one UPDATE per distinct TTL."""
        by_ttl: dict[float, list[str]] = {}
        for episode in episodes:
            ttl = episode.metadata[_META].get("ttl_minutes")
            if ttl is not None:
                by_ttl.setdefault(float(ttl), []).append(episode.id)
        now = memory.clock.now().timestamp()
        for ttl, ids in by_ttl.items():
            try:
                memory.store.set_metadata(ids, (_META, "expires_at"), now + ttl * 60)
            except StoreError:  # bookkeeping: a failed refresh is logged and never fails the read
                logger.warning(
                    "MemlaneStore could not refresh the TTL of %d item(s)", len(ids), exc_info=True
                )

    def _stripe(self, namespace: tuple[str, ...], key: str) -> int:
        return int(key_tag(namespace, key)[-8:], 16) % len(self._key_locks)

    def _memory_for(self, namespace: tuple[str, ...], *, write: bool) -> EpisodicMemory:
        session = None
        if write and self.session_label is not None and len(namespace) > self.session_label:
            session = namespace[self.session_label]
        if self.tenant_label is None:
            return self._base if session is None else self._context(self._base.tenant_id, session)
        if len(namespace) > self.tenant_label and namespace[self.tenant_label] != "*":
            return self._context(namespace[self.tenant_label], session)
        if write:
            raise InvalidNamespaceError(
                f"namespace {namespace!r} has no label {self.tenant_label} to take the tenant from"
            )
        return self._global

    def _context(self, tenant_id: str, session_id: str | None) -> EpisodicMemory:
        key = (tenant_id, session_id or self._base.session_id)
        with self._lock:
            memory = self._contexts.get(key)
            if memory is None:
                if len(self._contexts) >= _CONTEXT_CACHE:
                    self._contexts.clear()
                memory = self._base.with_context(tenant_id=key[0], session_id=key[1])
                self._contexts[key] = memory
            return memory

    def _current(self, memory: EpisodicMemory, namespace: tuple[str, ...], key: str) -> list[Episode]:
        """The current version(s) of an item: an indexed tag lookup, newest first."""
        flt = self._items_filter(memory, (key_tag(namespace, key),), ())
        flt = replace(flt, metadata=())  # an expired item is still the one a put replaces
        episodes = memory.store.list_recent(flt, 16)
        return [ep for ep in episodes if self._is_item(ep, namespace, key) and self._is_current(ep)]

    def _versions(self, memory: EpisodicMemory, namespace: tuple[str, ...], key: str) -> list[Episode]:
        episodes = memory.iter_episodes(event_type=self.event_type, tags=[key_tag(namespace, key)])
        return [ep for ep in episodes if self._is_item(ep, namespace, key)]

    @staticmethod
    def _is_item(episode: Episode, namespace: tuple[str, ...], key: str) -> bool:
        meta = episode.metadata.get(_META)
        return (
            isinstance(meta, dict)
            and tuple(meta.get("namespace", ())) == namespace
            and meta.get("key") == key
        )

    @staticmethod
    def _is_current(episode: Episode) -> bool:
        return (
            episode.superseded_by is None and episode.invalidated_at is None and episode.archived_at is None
        )

    def _text(self, value: dict[str, Any], index: Literal[False] | list[str] | None) -> str:
        paths = index if isinstance(index, list) else self.fields
        if paths is None:
            texts: Iterable[str] = _leaf_texts(value)
        else:
            texts = (text for path in paths for text in get_text_at_path(value, path))
        text = "\n".join(t for t in texts if t.strip())
        return text or json.dumps(value, sort_keys=True, ensure_ascii=False)

    @staticmethod
    def _item(episode: Episode) -> Item:
        meta = episode.metadata[_META]
        return Item(
            value=meta["value"],
            key=meta["key"],
            namespace=tuple(meta["namespace"]),
            created_at=datetime.fromisoformat(meta["created_at"]),
            updated_at=episode.created_at,
        )

    def _search_item(self, hit: RecallHit) -> MemlaneSearchItem:
        item = self._item(hit.episode)
        return MemlaneSearchItem(
            item.namespace,
            item.key,
            item.value,
            item.created_at,
            item.updated_at,
            score=None if hit.breakdown is None else hit.breakdown.score,
            breakdown=hit.breakdown,
        )
