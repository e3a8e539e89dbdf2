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
  importance, time expressions); each result's ``score`` is the final score in [0, 1] and
  ``breakdown`` (on :class:`MemlaneSearchItem`) says why. Without a query: newest update
  first, like LangGraph's SQL stores. ``filter`` takes LangGraph's operators (exact value,
  nested dicts, ``$eq $ne $gt $gte $lt $lte``) and is applied to the recalled items; a
  filtered search looks at up to :data:`MAX_SCAN` items of the prefix.
* **list_namespaces** reads the current items' namespaces (one pass over the item episodes).
* Not supported: TTLs (``supports_ttl`` is ``False``, like ``InMemoryStore``).

Batches run their operations in order (a ``get`` after a ``put`` in the same batch sees it).
``abatch`` runs the batch on the memory's worker pool (:class:`memlane.AsyncEpisodicMemory`),
never on the event loop.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Literal

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
        get_text_at_path,
        validate_op_namespace,
    )
except ImportError as exc:  # pragma: no cover - the optional extra is missing
    raise ImportError(
        "memlane.integrations.langgraph needs LangGraph: pip install 'memlane[langgraph]'"
    ) from exc

from memlane import (
    AsyncEpisodicMemory,
    Episode,
    EpisodeNotFoundError,
    EpisodicMemory,
    MemoryConfig,
    RecallHit,
    ScoreBreakdown,
)

__all__ = ["EVENT_TYPE", "MAX_SCAN", "MemlaneSearchItem", "MemlaneStore"]

EVENT_TYPE = "langgraph_item"
"""Default event type of the episodes that hold LangGraph items."""

MAX_SCAN = 5000
"""Most items of a namespace prefix a filtered search (or a search with a large offset) ranks."""

_META = "langgraph"
_CONTEXT_CACHE = 1024
_PUT_ATTEMPTS = 5


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
    return bool(actual == expected)


def _compare(actual: Any, op: str, operand: Any) -> bool:
    if op == "$eq":
        return bool(actual == operand)
    if op == "$ne":
        return bool(actual != operand)
    if op in ("$gt", "$gte", "$lt", "$lte"):
        try:
            a, b = float(actual), float(operand)
        except (TypeError, ValueError):
            return False
        return {"$gt": a > b, "$gte": a >= b, "$lt": a < b, "$lte": a <= b}[op]
    raise ValueError(f"unsupported filter operator {op!r}; use $eq, $ne, $gt, $gte, $lt or $lte")


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

    Raises:
        ValueError: a negative ``tenant_label``/``session_label``.
        ValidationError: a bad ``event_type`` or ``max_workers``.
    """

    supports_ttl = False

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
    ) -> None:
        for name, label in (("tenant_label", tenant_label), ("session_label", session_label)):
            if label is not None and (isinstance(label, bool) or not isinstance(label, int) or label < 0):
                raise ValueError(f"{name} must be an integer >= 0 or None, got {label!r}")
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

    @classmethod
    def open(
        cls,
        path: str | Path = "memlane.db",
        *,
        tenant_id: str = "default",
        session_id: str = "default",
        config: MemoryConfig | None = None,
        **options: Any,
    ) -> MemlaneStore:
        """Open a SQLite file or PostgreSQL URL (:meth:`memlane.EpisodicMemory.open`) as a store that owns it.

        Args:
            path: As for :meth:`memlane.EpisodicMemory.open`.
            tenant_id: The memory's tenant (the tenant of every item unless ``tenant_label``).
            session_id: The memory's session.
            config: As for :meth:`memlane.EpisodicMemory.open`.
            options: ``embedder``/``clock`` go to the memory; the rest to :class:`MemlaneStore`.

        Raises:
            StoreError, EmbeddingModelMismatchError, ConfigError: as for ``EpisodicMemory.open``.
        """
        memory_options = {k: options.pop(k) for k in ("embedder", "clock") if k in options}
        memory = EpisodicMemory.open(
            path, tenant_id=tenant_id, session_id=session_id, config=config, **memory_options
        )
        try:
            return cls(memory, owns_memory=True, **options)
        except BaseException:
            memory.close()
            raise

    # -- BaseStore ---------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order and return one result per op (see ``BaseStore.batch``).

        Raises:
            InvalidNamespaceError: a bad namespace label (or an empty one to put into).
            MemlaneError: memlane refused or failed (e.g. ``ValidationError``, ``StoreError``).
        """
        results: list[Result] = []
        for op in ops:
            validate_op_namespace(op)
            if isinstance(op, GetOp):
                results.append(self._get(op.namespace, op.key))
            elif isinstance(op, SearchOp):
                results.append(self._search(op))
            elif isinstance(op, PutOp):
                if op.value is None:
                    self._delete(op.namespace, op.key)
                else:
                    self._put(op)
                results.append(None)
            elif isinstance(op, ListNamespacesOp):
                results.append(self._list_namespaces(op))
            else:
                raise ValueError(f"unknown operation type: {type(op).__name__}")
        return results

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """Like :meth:`batch`, run on the memory's worker pool (the event loop is never blocked)."""
        return await self._async.run(self.batch, list(ops))

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
        """Close the memory if this store owns it (:meth:`open` does). Idempotent."""
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

    def _get(self, namespace: tuple[str, ...], key: str) -> Item | None:
        current = self._current(self._memory_for(namespace, write=False), namespace, key)
        return self._item(current[0]) if current else None

    def _put(self, op: PutOp) -> None:
        namespace, key = tuple(op.namespace), op.key
        if not namespace:
            raise InvalidNamespaceError("Namespace cannot be empty.")
        memory = self._memory_for(namespace, write=True)
        value = dict(op.value or {})
        text = self._text(value, op.index)
        tags = [namespace_tag(namespace[:depth]) for depth in range(1, len(namespace) + 1)]
        tags.append(key_tag(namespace, key))
        # One writer per key in this process (striped locks); a writer in another process that
        # retires the same version first makes the insert fail as a whole: re-read and retry.
        with self._key_locks[int(tags[-1][-8:], 16) % len(self._key_locks)]:
            for attempt in range(_PUT_ATTEMPTS):
                current = self._current(memory, namespace, key)
                now = memory.clock.now()
                created = self._item(current[0]).created_at if current else now
                meta = {
                    "namespace": list(namespace),
                    "key": key,
                    "value": value,
                    "created_at": created.isoformat(),
                }
                try:
                    memory.remember_episode(
                        self.event_type,
                        text,
                        tags,
                        created_at=now,
                        metadata={_META: meta},
                        supersedes=[ep.id for ep in current] or None,
                    )
                    return
                except EpisodeNotFoundError:
                    if attempt == _PUT_ATTEMPTS - 1:
                        raise

    def _delete(self, namespace: tuple[str, ...], key: str) -> None:
        memory = self._memory_for(namespace, write=False)
        for episode in self._versions(memory, namespace, key):
            memory.delete_episode(episode.id)

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        if op.limit < 1 or op.offset < 0:
            return []
        memory = self._memory_for(prefix, write=False)
        tags = [namespace_tag(prefix)] if prefix else []
        wanted = op.offset + op.limit
        query = op.query or None

        def fetch(n: int) -> list[RecallHit]:
            return memory.recall_episodes(query, event_type=self.event_type, tags=tags, limit=n)

        n = wanted if not op.filter else max(4 * wanted, 50)
        while True:
            hits = fetch(min(n, MAX_SCAN))
            found: list[RecallHit] = []
            seen: set[tuple[tuple[str, ...], str]] = set()
            for hit in hits:
                meta = hit.episode.metadata.get(_META)
                if not isinstance(meta, dict):
                    continue
                ident = (tuple(meta["namespace"]), meta["key"])
                if ident[0][: len(prefix)] != prefix or ident in seen:
                    continue
                seen.add(ident)
                if op.filter and not _matches(meta["value"], op.filter):
                    continue
                found.append(hit)
            if len(found) >= wanted or len(hits) < n or n >= MAX_SCAN:
                break
            n *= 4
        return [self._search_item(hit) for hit in found[op.offset : wanted]]

    def _list_namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        conditions = tuple(op.match_conditions or ())
        memory = self._global if self.tenant_label is not None else self._base
        if self.tenant_label is not None:
            for condition in conditions:
                path = tuple(condition.path)
                if condition.match_type == "prefix" and len(path) > self.tenant_label:
                    label = path[self.tenant_label]
                    if label != "*":
                        memory = self._context(label, None)
        found: set[tuple[str, ...]] = set()
        for episode in memory.iter_episodes(event_type=self.event_type):
            meta = episode.metadata.get(_META)
            if not isinstance(meta, dict) or not self._is_current(episode):
                continue
            namespace = tuple(meta["namespace"])
            if all(_path_matches(c, namespace) for c in conditions):
                found.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(found)[op.offset : op.offset + op.limit]

    # -- helpers -----------------------------------------------------------------------

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
        hits = memory.recall_episodes(event_type=self.event_type, tags=[key_tag(namespace, key)], limit=16)
        return [hit.episode for hit in hits if self._is_item(hit.episode, namespace, key)]

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
