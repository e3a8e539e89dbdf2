"""The walls of memlane's layout (README "How memlane is built"), checked by reading the imports.

Every ``import`` and ``from ... import`` in ``src/memlane`` counts, wherever it is: at module
level, inside functions (lazy imports) and under ``if TYPE_CHECKING:``. A package's
``__init__.py`` is a module of its own (``memlane.stores``), so its re-exports are edges like any
other. Importing ``memlane.a.b`` is an edge to ``memlane.a.b``; ``from memlane.a import b`` is an
edge to ``memlane.a.b`` when that is a module, else to ``memlane.a``; and a module that imports
its *own* package (``from memlane.a import b`` inside ``memlane/a/``) also has an edge to that
package's ``__init__``, which runs first and may import the module back.

A *folder* is a package directory below the root (``memlane.stores``, ``memlane.stores.sqlite``:
one folder each); a loose module of the root (``memlane.memory``) is a unit of its own. An
edge ``memlane.a.x -> memlane.b.y`` is the folder edge ``memlane.a -> memlane.b``.

Modules are cut by concept, not by a line count: the size limits are on functions (ruff's
C901/PLR0912/PLR0913/PLR0915, configured in pyproject.toml).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping, Set
from functools import cache
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

# -- the layers ------------------------------------------------------------------------------

LEAVES, SETTINGS, PARTS, ENGINE, EVALUATION, INTERFACES = range(6)
LAYER_NAMES = ("leaves", "settings", "parts", "engine", "evaluation", "interfaces")

LAYERS: dict[str, int] = {
    # value types, errors, time, the input policy, text analysis: they import only each other
    "memlane.errors": LEAVES,
    "memlane.models": LEAVES,
    "memlane.clock": LEAVES,
    "memlane.validation": LEAVES,
    "memlane.analysis": LEAVES,
    "memlane.bm25": LEAVES,
    "memlane.mentions": LEAVES,  # entity names in a text (the graph links on write, recall reads a query)
    "memlane.importance": LEAVES,  # importance="auto": pure rules over the text analysis
    "memlane.wire": LEAVES,  # the value types' JSON form; the engine's reports use it
    "memlane.lazy": LEAVES,  # a package's names imported on first use (cheap `import memlane`)
    # what a memory is configured with: MemoryConfig, the ranking profile, the YAML file
    "memlane.config": SETTINGS,
    # the replaceable parts and their assembly from settings
    "memlane.embeddings": PARTS,
    "memlane.stores": PARTS,
    "memlane.assembly": PARTS,
    # the memory itself
    "memlane": ENGINE,  # the public API: memlane/__init__.py only (the root is not a folder)
    "memlane.context": ENGINE,
    "memlane.memory": ENGINE,
    "memlane.aio": ENGINE,
    "memlane.episode_input": ENGINE,
    "memlane.recall": ENGINE,
    "memlane.lifecycle": ENGINE,
    "memlane.sessions": ENGINE,
    "memlane.formation": ENGINE,
    "memlane.graph": ENGINE,  # the knowledge graph: entities, bi-temporal facts, structural contradictions
    # the benchmark harness, on the engine; `memlane eval` drives it
    "memlane.evaluation": EVALUATION,
    # the ways in: requests and schemas, tools, servers, CLI, other frameworks' adapters
    "memlane.operations": INTERFACES,
    "memlane.tools": INTERFACES,
    "memlane.server": INTERFACES,
    "memlane.cli": INTERFACES,
    "memlane.__main__": INTERFACES,
    "memlane.integrations": INTERFACES,
}
"""Layer of each module, by the module or its nearest listed folder; a module imports only its
own layer and the ones below (a lower number)."""

# -- what the walls allow --------------------------------------------------------------------

PURE_RECALL = (
    "memlane.recall.ranking",
    "memlane.recall.temporal",
    "memlane.recall.candidates",
    "memlane.recall.relevance",
)
"""Recall stages that compute on values only: no store, embedder, interface or I/O."""

PURE_MAY_REACH = {
    "memlane.stores.base": "KeywordCandidates/VectorCandidates, the value types a store hands over",
    "memlane.stores.retrievals": "imported by stores.base for a type; a pure recall never calls it",
}
"""Modules of a room a pure stage may not otherwise reach (parts, interfaces), with why."""

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

PUBLIC_API: dict[str, str] = {
    "memlane": "the curated public API (memlane.__all__)",
    "memlane.errors": "the error tree",
    "memlane.models": "value types (Episode, RecallHit, Scope, ...)",
    "memlane.clock": "Clock, FrozenClock, SystemClock",
    "memlane.validation": "the one input policy (identifiers are checked the same way everywhere)",
    "memlane.wire": "the one wire format of every interface (README: Operations and interfaces)",
    "memlane.config": "MemoryConfig and the environment helpers",
    "memlane.config.file": "the YAML configuration file (README: Configuration file)",
    "memlane.config.api_keys": "API keys and their roles (README: HTTP API, Memory inspector)",
    "memlane.importance": 'importance="auto": the estimator and its name (README: Python API)',
    "memlane.assembly": "open_store / build_store / build_embedder: the parts a location or config names",
    "memlane.recall": "ranking weights, presets and retrieval modes",
    "memlane.lifecycle.reembed": "re-embedding jobs (README: Changing the embedding model)",
    "memlane.embeddings": "the Embedder protocol and embedders",
    "memlane.embeddings.local": "the default embedder (embeddings package docstring)",
    "memlane.embeddings.openai": "the OpenAI-compatible embedder (embeddings package docstring)",
    "memlane.embeddings.fake": "deterministic embedders for tests and fake runs (embeddings docstring)",
    "memlane.stores": "Store, StoreStats, EpisodeFilter",
    "memlane.sessions": "session episodes",
    **{
        f"memlane.sessions.{name}": "named in the memlane.sessions docstring"
        for name in ("models", "messages", "windows", "tokens", "context", "importing", "memory")
    },
    "memlane.formation": "memory formation",
    "memlane.graph": "the knowledge graph: facts, entities, predicates (README: Knowledge graph)",
    "memlane.graph.predicates": "the predicate registry and the fact methods (README: Knowledge graph)",
    "memlane.evaluation": "benchmark loaders and metrics",
    "memlane.evaluation.locomo": "named in the memlane.evaluation docstring",
    "memlane.evaluation.metrics": "named in the memlane.evaluation docstring",
}
"""What an interface may import below its own layer."""

INTERFACE_EXCEPTIONS: dict[tuple[str, str], str] = {
    ("memlane.cli.eval", "memlane.evaluation.locomo_run"): (
        "`memlane eval` drives the LoCoMo runner, which memlane.evaluation does not re-export"
    ),
    ("memlane.cli.sessions", "memlane.evaluation.locomo_sessions"): (
        "`memlane sessions eval` drives the sessions LoCoMo runner, not re-exported by memlane.evaluation"
    ),
    ("memlane.cli.eval", "memlane.evaluation.configurations"): (
        "the --configuration choices, read without the runners (memlane --help loads no engine)"
    ),
    ("memlane.cli.form", "memlane.formation.llm"): (
        "ResponseFormat (the --response-format choice) is not re-exported by memlane.formation"
    ),
    ("memlane.operations.requests", "memlane.lazy"): (
        "the requests are re-exported one room at a time, on first use (issue #24 item 7: starts)"
    ),
    ("memlane.integrations.langgraph", "memlane.lifecycle.supersession"): (
        "MemlaneStore writes a batch of puts as one Store.insert that retires each replaced version: "
        "supersession() is the one rule for a retirement's fields (EpisodeInput has no supersedes)"
    ),
}

# -- reading the imports ---------------------------------------------------------------------


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


def own_package(name: str) -> str:
    """The package whose directory holds module ``name`` (a package: itself)."""
    return name if modules()[name][1] else name.rpartition(".")[0]


def _imports(name: str) -> Iterable[tuple[str, list[str]]]:
    """``(imported module, names)`` for every import statement of module ``name``."""
    path = modules()[name][0]
    package = own_package(name)
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
    """The memlane modules ``name`` imports (module docstring: the edge rules)."""
    known = modules()
    out = set()
    for module, names in _imports(name):
        if module != "memlane" and not module.startswith("memlane."):
            continue
        subs = [f"{module}.{n}" for n in names if f"{module}.{n}" in known]
        out.update(subs if subs and len(subs) == len(names) else [module, *subs])
        if module == own_package(name) != "memlane" and module != name:
            out.add(module)  # `from memlane.a import b` inside memlane/a/ runs memlane/a/__init__.py
    assert out <= set(known), f"{name} imports a missing module: {sorted(out - set(known))}"
    return frozenset(out - {name})


def external_imports(name: str) -> set[str]:
    """Top-level names of the non-memlane modules ``name`` imports."""
    return {module.split(".")[0] for module, _ in _imports(name) if module.split(".")[0] != "memlane"}


def reachable(start: str) -> set[str]:
    """Every memlane module ``start`` imports, directly or through others."""
    seen: set[str] = set()
    todo = [start]
    while todo:
        for nxt in memlane_imports(todo.pop()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def folder(name: str) -> str:
    """The folder of module ``name`` (module docstring); a loose root module is its own unit."""
    package = own_package(name)
    return name if package == "memlane" else package


def folder_edges() -> dict[str, set[str]]:
    """Folder -> the folders it imports (itself excluded)."""
    out: dict[str, set[str]] = {folder(name): set() for name in modules()}
    for name in modules():
        out[folder(name)].update(folder(imported) for imported in memlane_imports(name))
    for source, targets in out.items():
        targets.discard(source)
    return out


def strongly_connected(graph: Mapping[str, Set[str]]) -> list[set[str]]:
    """Components of ``graph`` with more than one node (Tarjan): the import circles."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
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
                found.append(component)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(name: str) -> int | None:
    """The layer of module ``name``: its own entry in :data:`LAYERS`, else its nearest folder's."""
    parts = name.split(".")
    for end in range(len(parts), 1, -1):
        key = ".".join(parts[:end])
        if key in LAYERS:
            return LAYERS[key]
    return LAYERS["memlane"] if name == "memlane" else None


def in_room(name: str, room: str) -> bool:
    return name == room or name.startswith(room + ".")


def edges_where(importer: Iterable[str]) -> set[tuple[str, str]]:
    return {(name, imported) for name in importer for imported in memlane_imports(name)}


# -- the walls -------------------------------------------------------------------------------


def test_the_graph_is_read() -> None:
    """The walls are only as good as the import reader: it sees lazy and TYPE_CHECKING imports."""
    assert len(modules()) > 50
    assert "memlane.memory" in memlane_imports("memlane")
    assert "memlane.sessions.memory" in memlane_imports("memlane.memory")
    assert "memlane.assembly" in memlane_imports("memlane.memory")  # a lazy import counts
    assert "memlane.config.file" in memlane_imports("memlane.tools")  # so does TYPE_CHECKING
    assert "memlane.stores.base" in memlane_imports("memlane.stores")  # and a package's re-exports


def test_no_import_cycle_between_modules() -> None:
    """A circle makes import order matter and leaves no module that can be understood first."""
    graph = {name: memlane_imports(name) for name in modules()}
    circles = [sorted(c) for c in strongly_connected(graph)]
    assert not circles, f"import cycles between modules: {circles}"


def test_no_import_cycle_between_folders() -> None:
    """Folders are the rooms of the layout; if two import each other, neither is below the other."""
    graph = folder_edges()
    circles = []
    for component in strongly_connected(graph):
        edges = sorted(
            (name, imported)
            for name in modules()
            if folder(name) in component
            for imported in memlane_imports(name)
            if folder(imported) in component and folder(imported) != folder(name)
        )
        circles.append((sorted(component), edges))
    assert not circles, f"import cycles between folders (with the module edges): {circles}"


def test_every_module_has_a_layer() -> None:
    """A new module or folder must be placed in the layer table before the layer wall can judge it."""
    missing = sorted(name for name in modules() if layer(name) is None)
    assert not missing, f"add these to LAYERS: {missing}"


def test_modules_import_only_their_own_or_lower_layers() -> None:
    """Leaves -> settings -> parts -> engine -> evaluation -> interfaces: dependencies point down."""
    bad = sorted(
        f"{name} ({LAYER_NAMES[layer(name) or 0]}) -> {imported} ({LAYER_NAMES[layer(imported) or 0]})"
        for name, imported in edges_where(modules())
        if (layer(imported) or 0) > (layer(name) or 0)
    )
    assert not bad, "imports of a higher layer:\n" + "\n".join(bad)


def test_stores_import_only_leaves_and_stores() -> None:
    """Stores sit under everything but the value types, errors and text analysis, so every backend
    can be tested alone and none can call back into recall, settings or the facade."""
    bad = sorted(
        (name, imported)
        for name, imported in edges_where(n for n in modules() if in_room(n, "memlane.stores"))
        if not in_room(imported, "memlane.stores") and layer(imported) != LEAVES
    )
    assert not bad, f"stores import above themselves: {bad}"


@pytest.mark.parametrize("name", PURE_RECALL)
def test_pure_recall_stages_do_no_io(name: str) -> None:
    """Ranking and the other pure stages compute on values, so they are tested without a store,
    an embedder or a file, and give every backend the same order. Checked for everything they
    reach: no part (but the candidate value types), no interface, no I/O module, no ``open()``."""
    for reached in {name} | reachable(name):
        assert layer(reached) not in (PARTS, INTERFACES) or reached in PURE_MAY_REACH, (name, reached)
        io = external_imports(reached) & IO_MODULES
        assert not io, f"{name} reaches {reached}, which imports {sorted(io)}"
        tree = ast.parse(modules()[reached][0].read_text(encoding="utf-8"))
        calls = {
            n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
        }
        assert "open" not in calls, f"{name} reaches {reached}, which opens files"


def test_the_facade_reaches_no_interface() -> None:
    """The public API (``memlane``, the facade, async, sessions) works without any interface, so
    an interface is always a thin layer over it and never the other way round."""
    bad = sorted(m for m in reachable("memlane") if layer(m) in (EVALUATION, INTERFACES))
    assert not bad, f"the public API reaches {bad}"


def test_interfaces_use_only_the_public_api() -> None:
    """Interfaces (tools, CLI, HTTP, MCP, integrations) are one layer: they may use each other (the
    CLI starts the servers) and below it only the documented public modules, so every interface
    sees the same behaviour and internals can move freely."""
    bad = sorted(
        (name, imported)
        for name, imported in edges_where(n for n in modules() if layer(n) == INTERFACES)
        if layer(imported) != INTERFACES
        and imported not in PUBLIC_API
        and (name, imported) not in INTERFACE_EXCEPTIONS
    )
    assert not bad, f"interfaces import internals: {bad}"


def test_the_tables_name_what_exists() -> None:
    """A stale entry hides the next real violation: every module the tables list exists."""
    known = set(modules())
    listed = set(LAYERS) | set(PUBLIC_API) | set(PURE_RECALL) | set(PURE_MAY_REACH)
    listed |= {m for edge in INTERFACE_EXCEPTIONS for m in edge}
    assert listed <= known, f"listed modules that do not exist: {sorted(listed - known)}"


def test_the_readme_shows_the_tree_as_built() -> None:
    """The README's "How memlane is built" tree is the map contributors read first: it names every
    loose root module and every folder, so a new one is placed there (and in a layer) too."""
    readme = (SRC.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## How memlane is built", 1)[1]
    tree = section.split("```", 2)[1]
    names = {f"{name.rpartition('.')[2]}.py" for name in modules() if own_package(name) == "memlane" != name}
    names |= {f"{name.rpartition('.')[2]}/" for name, (_, is_package) in modules().items() if is_package}
    missing = sorted(n for n in names - {"memlane/"} if n not in tree)
    assert not missing, f"the README tree does not name: {missing}"
