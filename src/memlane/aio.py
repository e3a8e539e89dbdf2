"""``AsyncEpisodicMemory``: the async twin of :class:`memlane.EpisodicMemory`.

Quick use::

    from memlane import AsyncEpisodicMemory

    async with AsyncEpisodicMemory.open("memlane.db", tenant_id="acme") as memory:
        await memory.remember_episode("preference", "User prefers window seats")
        hits = await memory.recall_episodes("where does the user like to sit?")
        block = await memory.sessions.build_context("seat?", agent_id="a", user_id="u", token_budget=300)

Why this shape (one wrapper class, the same method names, awaited) rather than
``a``-prefixed twins on the sync class (``await memory.arecall_episodes(...)``):

* **One implementation.** Every method of :class:`AsyncEpisodicMemory` (and of
  :class:`AsyncSessionMemory`, reached as ``memory.sessions``) is a one-line declaration,
  ``recall_episodes = _delegate(EpisodicMemory.recall_episodes)``, that runs the sync method
  on a worker thread. Validation, scoping, ranking and the SQL stay in the sync code; the
  signature, docstring and return type are taken from it (mypy sees the exact parameters),
  so the two APIs cannot drift apart.
* **A bounded pool owned by the instance.** Calls run on a
  :class:`concurrent.futures.ThreadPoolExecutor` with ``max_workers`` threads (default
  ``min(4, CPUs)``),
  not on asyncio's shared default executor: a burst of a thousand tasks queues at the pool
  instead of opening a thousand database connections, and other libraries' ``to_thread``
  work is not starved. The event loop thread only schedules; it never runs a store or
  embedder call, so it is blocked for no longer than it takes to hand a call to the pool.
* **No second driver.** Neither backend has a native async driver we would trust to give
  the same results: SQLite has none, and an ``AsyncConnectionPool`` for PostgreSQL would
  mean a second copy of every query. Both stores are thread-safe as they are: SQLite gives
  each thread its own connection (WAL, busy timeout); PostgreSQL borrows a pooled
  connection per call, so keep ``max_workers`` <= the pool's ``max_size`` (extra workers
  would only wait for a connection). The bundled ONNX embedder runs concurrently too.
* **The same object underneath.** ``memory.sync`` is the wrapped :class:`EpisodicMemory`:
  code that must stay synchronous (a CLI command, a migration) can share it, and results
  are identical to the sync API's (a parity test checks episodes, order and breakdowns).

Cancellation: cancelling a task that awaits a call stops the wait, not the call already
running on a worker thread (Python threads cannot be interrupted); a write that started
completes. :meth:`AsyncEpisodicMemory.close` waits for calls in flight before it closes
the store.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import itertools
import os
from collections.abc import AsyncIterator, Callable, Coroutine, Generator, Mapping, Sequence
from functools import cached_property
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from memlane.errors import StoreClosedError, ValidationError
from memlane.memory import EpisodicMemory
from memlane.sessions import SessionMemory
from memlane.sessions.context import DEFAULT_TOKEN_BUDGET

if TYPE_CHECKING:
    from pathlib import Path

    from memlane.clock import Clock
    from memlane.config import MemoryConfig
    from memlane.config.file import MemlaneConfig
    from memlane.embeddings.base import Embedder
    from memlane.models import Episode
    from memlane.sessions.messages import Message
    from memlane.stores.base import Store

__all__ = ["DEFAULT_MAX_WORKERS", "AsyncEpisodicMemory", "AsyncSessionMemory"]

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

DEFAULT_MAX_WORKERS = min(4, os.cpu_count() or 1)
"""Worker threads of an :class:`AsyncEpisodicMemory`'s pool unless ``max_workers`` is given.

``min(4, CPUs)``: more workers than cores add throughput only while calls wait on I/O, and
make the event loop wait longer for the GIL (``benchmarks/async_loop.py`` measures both).
"""


class _Pool:
    """A bounded thread pool that runs sync calls for coroutines and can be drained and closed."""

    def __init__(self, max_workers: int) -> None:
        if isinstance(max_workers, bool) or not isinstance(max_workers, int) or max_workers < 1:
            raise ValidationError(f"max_workers must be an integer >= 1, got {max_workers!r}")
        self.max_workers = max_workers
        self.closed = False
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=max_workers, thread_name_prefix="memlane-aio"
        )
        self._pending: set[concurrent.futures.Future[Any]] = set()

    def submit(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> asyncio.Future[R]:
        """Start ``fn(*args, **kwargs)`` on a worker thread (in a copy of this context)."""
        if self.closed:
            raise StoreClosedError("this AsyncEpisodicMemory is closed")
        context = contextvars.copy_context()

        def job() -> R:
            return context.run(fn, *args, **kwargs)

        future = self._executor.submit(job)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return asyncio.wrap_future(future)

    async def run(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run ``fn(*args, **kwargs)`` on a worker thread and return its result."""
        return await self.submit(fn, *args, **kwargs)

    async def close(self, last: Callable[[], object] | None = None) -> None:
        """Refuse new calls, wait for those in flight, run ``last`` on the pool, then stop it."""
        if self.closed:
            return
        self.closed = True
        pending = list(self._pending)
        if pending:
            await asyncio.wait([asyncio.wrap_future(f) for f in pending])
        try:
            if last is not None:
                await asyncio.wrap_future(self._executor.submit(last))
        finally:
            self._executor.shutdown(wait=False)


class _AsyncTwin(Generic[T]):
    """Base of the async twins: the sync object they wrap and the pool their calls run on."""

    sync: T
    _pool: _Pool

    async def run(self, fn: Callable[P, R], /, *args: P.args, **kwargs: P.kwargs) -> R:
        """Run any sync callable on this memory's worker pool and await its result.

        For several sync calls that belong together (e.g. ``lambda: [m.recall_episodes(q)
        for q in queries]`` with ``m = memory.sync``), so they take one trip to the pool.

        Raises:
            StoreClosedError: the memory is closed. Otherwise whatever ``fn`` raises.
        """
        return await self._pool.run(fn, *args, **kwargs)


class _delegate(Generic[T, P, R]):  # noqa: N801 - used like a decorator/function
    """Declare an async twin of one sync method: same parameters and docstring, awaited.

    ``name = _delegate(SyncClass.name)`` in an :class:`_AsyncTwin` subclass; calling
    ``twin.name(...)`` returns a coroutine that runs ``twin.sync.name(...)`` on the pool.
    """

    def __init__(self, method: Callable[Concatenate[T, P], R]) -> None:
        self._method = method
        self.__doc__ = method.__doc__
        self.__name__ = method.__name__
        self.__wrapped__ = method

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _delegate[T, P, R]: ...

    @overload
    def __get__(self, obj: _AsyncTwin[T], owner: type[Any]) -> Callable[P, Coroutine[Any, Any, R]]: ...

    def __get__(
        self, obj: _AsyncTwin[T] | None, owner: type[Any]
    ) -> _delegate[T, P, R] | Callable[P, Coroutine[Any, Any, R]]:
        if obj is None:
            return self
        method, target, pool = self._method, obj.sync, obj._pool

        async def call(*args: P.args, **kwargs: P.kwargs) -> R:
            return await pool.run(method, target, *args, **kwargs)

        call.__name__ = method.__name__
        call.__qualname__ = f"{owner.__name__}.{method.__name__}"
        call.__doc__ = method.__doc__
        return call


class AsyncSessionMemory(_AsyncTwin[SessionMemory]):
    """Async twin of :class:`memlane.SessionMemory`; reach it as ``AsyncEpisodicMemory.sessions``.

    Every method takes the same arguments as the sync one, returns the same value and
    raises the same errors, awaited; calls run on the owning memory's worker pool.

    Args:
        sessions: The sync session memory to wrap (``memory.sync.sessions``).
        pool: The owning :class:`AsyncEpisodicMemory`'s pool.
    """

    def __init__(self, sessions: SessionMemory, pool: _Pool) -> None:
        self.sync = sessions
        self._pool = pool

    @property
    def tenant_id(self) -> str:
        """The tenant every session is stored and read under."""
        return self.sync.tenant_id

    store_session = _delegate(SessionMemory.store_session)
    get_session = _delegate(SessionMemory.get_session)
    recall_recent = _delegate(SessionMemory.recall_recent)
    search_sessions = _delegate(SessionMemory.search_sessions)
    delete_session = _delegate(SessionMemory.delete_session)
    prune = _delegate(SessionMemory.prune)
    build_context_block = _delegate(SessionMemory.build_context_block)

    # These two take ``**options``, which a generic wrapper cannot type (``self`` could be
    # one of them): thin typed delegations instead.

    async def build_context(
        self,
        query: str,
        *,
        agent_id: str,
        user_id: str,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        **options: Any,
    ) -> str:
        """Async :meth:`SessionMemory.build_context`: the ``[Past Conversation Context]`` block as text.

        Same arguments, result and errors as the sync method.
        """
        return await self._pool.run(
            functools.partial(
                self.sync.build_context, query, agent_id=agent_id, user_id=user_id, token_budget=token_budget
            ),
            **options,
        )

    async def inject_context(
        self,
        messages: Sequence[Mapping[str, Any] | Message],
        *,
        agent_id: str,
        user_id: str,
        token_budget: int = DEFAULT_TOKEN_BUDGET,
        **options: Any,
    ) -> list[dict[str, Any]]:
        """Async :meth:`SessionMemory.inject_context`: a new message list with the context block.

        Same arguments, result and errors as the sync method.
        """
        return await self._pool.run(
            functools.partial(
                self.sync.inject_context,
                messages,
                agent_id=agent_id,
                user_id=user_id,
                token_budget=token_budget,
            ),
            **options,
        )

    def __repr__(self) -> str:
        return f"AsyncSessionMemory({self.sync!r})"


class _Opening:
    """What :meth:`AsyncEpisodicMemory.open` returns: await it, or use it with ``async with``."""

    def __init__(self, make: Callable[[], Coroutine[Any, Any, AsyncEpisodicMemory]]) -> None:
        self._make = make
        self._memory: AsyncEpisodicMemory | None = None

    def __await__(self) -> Generator[Any, None, AsyncEpisodicMemory]:
        return self._make().__await__()

    async def __aenter__(self) -> AsyncEpisodicMemory:
        self._memory = await self._make()
        return self._memory

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._memory is not None:
            await self._memory.close()


class AsyncEpisodicMemory(_AsyncTwin[EpisodicMemory]):
    """Async twin of :class:`memlane.EpisodicMemory` (see the module docstring for the design).

    Every method has the sync method's name, arguments, return value and errors, and is
    awaited; the call runs on this memory's bounded worker pool, never on the event loop.
    ``iter_episodes`` is an async iterator; ``sessions`` is an :class:`AsyncSessionMemory`.

    Args:
        memory: The sync memory to wrap (its store, embedder, clock, tenant, session, config).
        max_workers: Worker threads, >= 1 (default :data:`DEFAULT_MAX_WORKERS`). For
            PostgreSQL keep it <= the connection pool's ``max_size``.
        owns_memory: Whether :meth:`close` closes ``memory`` (default ``True``).

    Raises:
        ValidationError: ``max_workers`` is not an integer >= 1.
    """

    def __init__(
        self, memory: EpisodicMemory, *, max_workers: int = DEFAULT_MAX_WORKERS, owns_memory: bool = True
    ) -> None:
        self.sync = memory
        self._pool = _Pool(max_workers)
        self._owns_memory = owns_memory
        self._owns_pool = True

    @classmethod
    def _sharing(cls, memory: EpisodicMemory, pool: _Pool) -> AsyncEpisodicMemory:
        twin = cls.__new__(cls)
        twin.sync, twin._pool, twin._owns_memory, twin._owns_pool = memory, pool, False, False
        return twin

    @classmethod
    def open(
        cls,
        path: str | Path = "memlane.db",
        *,
        embedder: Embedder | None = None,
        config: MemoryConfig | None = None,
        clock: Clock | None = None,
        tenant_id: str = "default",
        session_id: str = "default",
        max_workers: int = DEFAULT_MAX_WORKERS,
    ) -> _Opening:
        """Open a SQLite file or PostgreSQL URL like :meth:`EpisodicMemory.open`, off the event loop.

        Use ``memory = await AsyncEpisodicMemory.open(...)`` (then ``await memory.close()``)
        or ``async with AsyncEpisodicMemory.open(...) as memory:``. Opening (migrations, the
        embedding-model check) runs on the new memory's pool.

        Args:
            path: As for :meth:`EpisodicMemory.open`.
            embedder: As for :meth:`EpisodicMemory.open`.
            config: As for :meth:`EpisodicMemory.open`.
            clock: As for :meth:`EpisodicMemory.open`.
            tenant_id: As for :meth:`EpisodicMemory.open`.
            session_id: As for :meth:`EpisodicMemory.open`.
            max_workers: See :class:`AsyncEpisodicMemory`.

        Raises:
            StoreError, EmbeddingModelMismatchError, ConfigError: as for :meth:`EpisodicMemory.open`.
            ValidationError: a bad ``max_workers``.
        """

        def make() -> EpisodicMemory:
            return EpisodicMemory.open(
                path,
                embedder=embedder,
                config=config,
                clock=clock,
                tenant_id=tenant_id,
                session_id=session_id,
            )

        return _Opening(functools.partial(cls._opened, make, max_workers))

    @classmethod
    def from_config(
        cls,
        source: str | os.PathLike[str] | Mapping[str, Any] | MemlaneConfig,
        *,
        tenant_id: str | None = None,
        session_id: str | None = None,
        embedder: Embedder | None = None,
        clock: Clock | None = None,
        max_workers: int = DEFAULT_MAX_WORKERS,
    ) -> _Opening:
        """Open what a YAML configuration describes, like :meth:`EpisodicMemory.from_config`.

        Await the result or use it with ``async with`` (see :meth:`open`).

        Raises:
            ConfigError, StoreError, EmbeddingModelMismatchError: as for
            :meth:`EpisodicMemory.from_config`. ValidationError: a bad ``max_workers``.
        """

        def make() -> EpisodicMemory:
            return EpisodicMemory.from_config(
                source, tenant_id=tenant_id, session_id=session_id, embedder=embedder, clock=clock
            )

        return _Opening(functools.partial(cls._opened, make, max_workers))

    @classmethod
    async def _opened(cls, make: Callable[[], EpisodicMemory], max_workers: int) -> AsyncEpisodicMemory:
        pool = _Pool(max_workers)
        try:
            memory = await pool.run(make)
        except BaseException:
            await pool.close()
            raise
        twin = cls._sharing(memory, pool)
        twin._owns_memory = twin._owns_pool = True
        return twin

    # -- attributes of the wrapped memory ----------------------------------------------

    @property
    def tenant_id(self) -> str:
        """Tenant recorded on every episode (see :class:`EpisodicMemory`)."""
        return self.sync.tenant_id

    @property
    def session_id(self) -> str:
        """Session recorded on every episode (see :class:`EpisodicMemory`)."""
        return self.sync.session_id

    @property
    def config(self) -> MemoryConfig:
        """The wrapped memory's :class:`MemoryConfig`."""
        return self.sync.config

    @property
    def store(self) -> Store:
        """The wrapped memory's store (its methods are sync: call them through :meth:`run`)."""
        return self.sync.store

    @property
    def max_workers(self) -> int:
        """Worker threads of the pool this memory's calls run on."""
        return self._pool.max_workers

    @cached_property
    def sessions(self) -> AsyncSessionMemory:
        """Session episodes, async (see :class:`AsyncSessionMemory` and :attr:`EpisodicMemory.sessions`).

        Raises:
            StoreError: the store does not support session episodes.
        """
        return AsyncSessionMemory(self.sync.sessions, self._pool)

    def with_context(
        self,
        *,
        tenant_id: str | None = None,
        session_id: str | None = None,
        config: MemoryConfig | None = None,
    ) -> AsyncEpisodicMemory:
        """A memory for another tenant/session/config over the same store, embedder and pool.

        See :meth:`EpisodicMemory.with_context`. The returned memory owns neither the store
        nor the pool: closing it changes nothing; closing this one closes both.

        Raises:
            ValidationError: blank or over-long ``tenant_id``/``session_id``.
        """
        memory = self.sync.with_context(tenant_id=tenant_id, session_id=session_id, config=config)
        return AsyncEpisodicMemory._sharing(memory, self._pool)

    # -- the sync API, awaited ---------------------------------------------------------

    remember_episode = _delegate(EpisodicMemory.remember_episode)
    remember_episodes = _delegate(EpisodicMemory.remember_episodes)
    supersede = _delegate(EpisodicMemory.supersede)
    find_contradictions = _delegate(EpisodicMemory.find_contradictions)
    history = _delegate(EpisodicMemory.history)
    recall_episodes = _delegate(EpisodicMemory.recall_episodes)
    get_episode = _delegate(EpisodicMemory.get_episode)
    count = _delegate(EpisodicMemory.count)
    stats = _delegate(EpisodicMemory.stats)
    delete_episode = _delegate(EpisodicMemory.delete_episode)
    prune = _delegate(EpisodicMemory.prune)
    forget = _delegate(EpisodicMemory.forget)
    compact = _delegate(EpisodicMemory.compact)
    end_session = _delegate(EpisodicMemory.end_session)
    optimize = _delegate(EpisodicMemory.optimize)
    remember_fact = _delegate(EpisodicMemory.remember_fact)
    query_facts = _delegate(EpisodicMemory.query_facts)
    entity_timeline = _delegate(EpisodicMemory.entity_timeline)
    neighbours = _delegate(EpisodicMemory.neighbours)
    find_paths = _delegate(EpisodicMemory.find_paths)
    merge_entities = _delegate(EpisodicMemory.merge_entities)
    episodes_about = _delegate(EpisodicMemory.episodes_about)
    graph_stats = _delegate(EpisodicMemory.graph_stats)
    recall_context = _delegate(EpisodicMemory.recall_context)
    import_facts = _delegate(EpisodicMemory.import_facts)

    async def iter_episodes(
        self,
        event_type: str | None = None,
        tags: Sequence[str] | str | None = None,
        *,
        batch_size: int = 500,
    ) -> AsyncIterator[Episode]:
        """Yield every episode in scope, oldest first, like :meth:`EpisodicMemory.iter_episodes`.

        The sync iterator is advanced on the pool ``batch_size`` episodes at a time (the
        stores read in keyset-paginated batches, so no cursor spans two calls).

        Args:
            event_type: As for :meth:`EpisodicMemory.iter_episodes`.
            tags: As for :meth:`EpisodicMemory.iter_episodes`.
            batch_size: Episodes fetched per trip to the pool, >= 1 (default 500).

        Raises:
            ValidationError: bad filter or ``batch_size``. StoreError: the store failed.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError(f"batch_size must be an integer >= 1, got {batch_size!r}")
        iterator = await self._pool.run(self.sync.iter_episodes, event_type, tags)
        while True:
            chunk = await self._pool.run(lambda: list(itertools.islice(iterator, batch_size)))
            for episode in chunk:
                yield episode
            if len(chunk) < batch_size:
                return

    # -- lifecycle ---------------------------------------------------------------------

    async def close(self) -> None:
        """Wait for calls in flight, then close the memory (if owned) and stop the pool. Idempotent.

        A memory from :meth:`with_context` owns neither: closing it does nothing.
        """
        if not self._owns_pool:
            return
        await self._pool.close(self.sync.close if self._owns_memory else None)

    aclose = close
    """Alias of :meth:`close`, for :func:`contextlib.aclosing`."""

    async def __aenter__(self) -> AsyncEpisodicMemory:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"AsyncEpisodicMemory({self.sync!r}, max_workers={self._pool.max_workers})"
