"""The walls of memlane's layout (README "How memlane is built"), checked by reading the imports.

Every ``import`` and ``from ... import`` in ``src/memlane`` counts, wherever it is: at module
level, inside functions (lazy imports) and under ``if TYPE_CHECKING:``. A package's
``__init__.py`` is a module of its own (``memlane.stores``); importing ``memlane.a.b`` is an
edge to ``memlane.a.b`` only (not to the parent packages Python also runs first), and
``from memlane.a import b`` is an edge to ``memlane.a.b`` when that is a module, else to
``memlane.a``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
MAX_LINES = 600

KNOWN_CYCLES: set[frozenset[str]] = set()
"""Import cycles tolerated for now (none)."""
KNOWN_LONG_MODULES: set[str] = set()
"""Modules over the line limit tolerated for now (none)."""

SHIMS = {
    "memlane.ranking",
    "memlane.keywords",
    "memlane.temporal",
    "memlane.retrieval",
    "memlane.compaction",
    "memlane.forgetting",
    "memlane.reembed",
    "memlane.config_file",
}
"""Deprecated aliases of moved modules (tests/unit/test_deprecated_paths.py); nothing inside imports them."""

STORE_MAY_IMPORT = ("memlane.models", "memlane.errors", "memlane.analysis")
"""Besides ``memlane.stores.*``: stores sit under everything but the value types and errors, and
the one text analysis (pure) that the write path and every query share, so both backends
index and match keywords identically."""

PURE_RECALL = (
    "memlane.recall.ranking",
    "memlane.recall.keywords",
    "memlane.recall.temporal",
    "memlane.recall.candidates",
    "memlane.recall.relevance",
)
"""Recall stages that compute on values only: no store, embedder, interface or I/O."""

PURE_MAY_IMPORT = {
    "memlane.errors",
    "memlane.models",
    "memlane.clock",
    "memlane.analysis",
    "memlane.operations.wire",
    *PURE_RECALL,
}
"""memlane.operations.wire: the value types' JSON encoder (imports nothing of memlane, does no I/O)."""
PURE_EXCEPTIONS = {
    ("memlane.recall.candidates", "memlane.stores.base"): (
        "KeywordCandidates/VectorCandidates, the value types a store hands over; no store is called"
    ),
}
IO_MODULES = {
    "sqlite3",
    "psycopg",
    "psycopg_pool",
    "pgvector",
    "pathlib",
    "os",
    "io",
    "shutil",
    "tempfile",
    "socket",
    "subprocess",
    "http",
    "urllib",
    "httpx",
    "requests",
    "onnxruntime",
    "tokenizers",
    "openai",
    "yaml",
}

INTERFACES = ("memlane.cli", "memlane.server", "memlane.tools")

PUBLIC_API: dict[str, str] = {
    "memlane": "the curated public API (memlane.__all__)",
    "memlane.errors": "the error tree",
    "memlane.models": "value types (Episode, RecallHit, Scope, ...)",
    "memlane.clock": "Clock, FrozenClock, SystemClock",
    "memlane.validation": "the one input policy (identifiers are checked the same way everywhere)",
    "memlane.config": "MemoryConfig and the environment helpers",
    "memlane.config.file": "the YAML configuration file (README: Configuration file)",
    "memlane.recall": "ranking weights, presets and retrieval modes",
    "memlane.lifecycle.reembed": "re-embedding jobs (README: Changing the embedding model)",
    "memlane.embeddings": "the Embedder protocol and embedders",
    "memlane.embeddings.local": "the default embedder (embeddings package docstring)",
    "memlane.embeddings.openai": "the OpenAI-compatible embedder (embeddings package docstring)",
    "memlane.embeddings.fake": "deterministic embedders for tests and fake runs (embeddings docstring)",
    "memlane.stores": "Store, StoreStats, SQLiteStore, PostgresStore",
    "memlane.stores.factory": "open_store / is_postgres_url: the one opener for every backend",
    "memlane.sessions": "session episodes",
    **{
        f"memlane.sessions.{name}": "named in the memlane.sessions docstring"
        for name in ("models", "messages", "windows", "tokens", "context", "importing", "memory")
    },
    "memlane.formation": "memory formation",
    "memlane.evaluation": "benchmark loaders and metrics",
    "memlane.evaluation.locomo": "named in the memlane.evaluation docstring",
    "memlane.evaluation.metrics": "named in the memlane.evaluation docstring",
    "memlane.tools": "agent tool schemas (README: Agent tools); the MCP server serves them",
    "memlane.api_keys": "API keys and their roles (README: HTTP API, Memory inspector)",
    "memlane.operations.arguments": "how tool-call arguments arrive (JSON text or a mapping)",
    "memlane.operations.fields": "how a request field is declared and what is derived from it (#19)",
    "memlane.operations.requests": "one typed request per operation (README: Input policy)",
    "memlane.operations.handlers": "the operations every interface runs (README: Operations and interfaces)",
    "memlane.operations.tool_specs": "the agent tools' schemas beyond remember/recall (README: Agent tools)",
    "memlane.operations.wire": "the one wire format of every interface (README: Operations and interfaces)",
}
"""What the interfaces (cli/, server/, tools.py) may import, besides their own room."""

INTERFACE_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("memlane.cli.eval", "memlane.evaluation.locomo_run"): (
        "`memlane eval` drives the LoCoMo runner, which memlane.evaluation does not re-export"
    ),
    ("memlane.cli.sessions", "memlane.evaluation.locomo_sessions"): (
        "`memlane sessions eval` drives the sessions LoCoMo runner, not re-exported by memlane.evaluation"
    ),
    ("memlane.cli.form", "memlane.formation.llm"): (
        "ResponseFormat (the --response-format choice) is not re-exported by memlane.formation"
    ),
}


@cache
def modules() -> dict[str, tuple[Path, bool]]:
    """Module name -> (file, is a package ``__init__``), for every module in src/memlane."""
    out = {}
    for path in sorted((SRC / "memlane").rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts = parts[:-1]
        out[".".join(parts)] = (path, is_package)
    return out


def _imports(name: str) -> Iterable[tuple[str, list[str]]]:
    """``(imported module, names)`` for every import statement of module ``name``."""
    path, is_package = modules()[name]
    package = name if is_package else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            yield module, [alias.name for alias in node.names]


@cache
def memlane_imports(name: str) -> frozenset[str]:
    """The memlane modules ``name`` imports (see the module docstring for the edge rules)."""
    known = modules()
    out = set()
    for module, names in _imports(name):
        if module != "memlane" and not module.startswith("memlane."):
            continue
        subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
        out.update(subs if subs and len(subs) == len(names) else [module, *subs])
    assert out <= set(known), f"{name} imports a missing module: {sorted(out - set(known))}"
    return frozenset(out - {name})


def external_imports(name: str) -> set[str]:
    """Top-level names of the non-memlane modules ``name`` imports."""
    return {module.split(".")[0] for module, _ in _imports(name) if module.split(".")[0] != "memlane"}


def reachable(start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in memlane_imports(todo.pop()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def cycles() -> list[frozenset[str]]:
    """Strongly connected components with more than one module (Tarjan), plus self-imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in memlane_imports(v):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for v in sorted(modules()):
        if v not in index:
            visit(v)
    return found


def line_count(name: str) -> int:
    return len(modules()[name][0].read_text(encoding="utf-8").splitlines())


def in_room(name: str, room: str) -> bool:
    return name == room or name.startswith(room + ".")


# -- the walls -------------------------------------------------------------------------------


def test_the_graph_is_read() -> None:
    assert len(modules()) > 50
    assert "memlane.memory" in memlane_imports("memlane")
    assert "memlane.sessions.memory" in memlane_imports("memlane.memory")
    assert "memlane.config.file" in memlane_imports("memlane.memory")  # a lazy import counts
    assert "memlane.config.file" in memlane_imports("memlane.tools")  # so does TYPE_CHECKING


def test_1_no_import_cycles() -> None:
    new = [sorted(c) for c in cycles() if c not in KNOWN_CYCLES]
    assert not new, f"import cycles: {new}"


def test_2_stores_import_only_models_errors_and_stores() -> None:
    bad = {
        (name, imported)
        for name in modules()
        if in_room(name, "memlane.stores")
        for imported in memlane_imports(name)
        if not in_room(imported, "memlane.stores") and imported not in STORE_MAY_IMPORT
    }
    assert not bad, f"stores import above themselves: {sorted(bad)}"


@pytest.mark.parametrize("name", PURE_RECALL)
def test_3_pure_recall_stages_import_no_store_embedder_interface_or_io(name: str) -> None:
    bad = {
        imported
        for imported in memlane_imports(name)
        if imported not in PURE_MAY_IMPORT and (name, imported) not in PURE_EXCEPTIONS
    }
    assert not bad, f"{name} imports {sorted(bad)}"
    for imported in reachable(name):  # and nothing they reach does either
        assert not any(in_room(imported, room) for room in ("memlane.embeddings", *INTERFACES)), imported
        assert imported in PURE_MAY_IMPORT or in_room(imported, "memlane.stores.base"), (name, imported)
    assert not external_imports(name) & IO_MODULES, f"{name} imports {external_imports(name) & IO_MODULES}"
    tree = ast.parse(modules()[name][0].read_text(encoding="utf-8"))
    calls = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    assert "open" not in calls, f"{name} opens files"


def test_4_the_facade_never_reaches_an_interface() -> None:
    bad = {m for m in reachable("memlane.memory") if any(in_room(m, room) for room in INTERFACES)}
    assert not bad, f"memlane.memory reaches {sorted(bad)}"


def test_5_interfaces_use_only_the_public_api() -> None:
    """Interfaces are one layer: they may use each other (the CLI starts the servers) and the public API."""
    bad = set()
    for name in modules():
        if not any(in_room(name, room) for room in INTERFACES):
            continue
        for imported in memlane_imports(name):
            if any(in_room(imported, room) for room in INTERFACES):
                continue
            if imported in PUBLIC_API or (name, imported) in INTERFACE_EXCEPTIONS:
                continue
            bad.add((name, imported))
    assert not bad, f"interfaces import internals: {sorted(bad)}"


def test_6_no_module_over_600_lines() -> None:
    long = {name: line_count(name) for name in modules() if line_count(name) > MAX_LINES}
    assert set(long) <= KNOWN_LONG_MODULES, f"modules over {MAX_LINES} lines: {long}"


def test_nothing_inside_imports_a_deprecated_alias() -> None:
    bad = {
        (name, imported)
        for name in modules()
        if name not in SHIMS
        for imported in memlane_imports(name) & SHIMS
    }
    assert not bad, f"imports of deprecated aliases: {sorted(bad)}"


def test_known_violations_still_exist() -> None:
    """A KNOWN entry that no longer applies must be deleted, so the lists only shrink."""
    present = set(cycles())
    assert present >= KNOWN_CYCLES, f"remove from KNOWN_CYCLES: {[sorted(c) for c in KNOWN_CYCLES - present]}"
    stale = {name for name in KNOWN_LONG_MODULES if name not in modules() or line_count(name) <= MAX_LINES}
    assert not stale, f"remove from KNOWN_LONG_MODULES: {sorted(stale)}"
    listed = {**PUBLIC_API, **{imported: "" for _, imported in INTERFACE_EXCEPTIONS}}
    assert set(listed) <= set(modules()), (
        f"listed modules that do not exist: {sorted(set(listed) - set(modules()))}"
    )
