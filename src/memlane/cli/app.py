"""The root ``memlane`` command group: global options, the shared state, logging and error handling.

Exit codes (every command):

* ``0`` — success.
* ``1`` — partial success (``ingest`` rejected some lines; the good ones were stored).
* ``2`` — nothing was done: bad usage or input (click's usage errors, and every
  :class:`memlane.errors.MemlaneError` such as a validation error, an embedding-model
  mismatch or a store failure). The error is one red line on stderr (a JSON object
  with ``--json``), never a traceback; ``--verbose`` also logs the traceback. A message
  about an input names it as the user typed it: the option (``--tenant``, ``--append``)
  or argument (``CONTENT``) rather than the library's parameter (``tenant_id``,
  ``append=True``); see :func:`cli_wording`.

``--json`` is accepted before or after the subcommand (``memlane --json recall`` and
``memlane recall --json``): :class:`MemlaneGroup` gives every command its own ``--json``.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from memlane import __version__
from memlane.cli.registry import HOMES, SUMMARIES, load_command
from memlane.errors import MemlaneError
from memlane.models import Scope

if TYPE_CHECKING:  # imported where used: ``memlane --help`` needs no pydantic, rich or engine
    from rich.console import Console

    from memlane import EpisodicMemory
    from memlane.clock import Clock
    from memlane.config import MemoryConfig
    from memlane.config.file import MemlaneConfig
    from memlane.embeddings import Embedder

__all__ = ["CliError", "CliState", "MemlaneGroup", "cli", "cli_wording", "pass_state"]

logger = logging.getLogger(__name__)

EMBEDDER_CHOICES = ("local", "hashing", "failing")
"""``local``: the bundled all-MiniLM-L6-v2 (default). For tests only: ``hashing``, the
deterministic fake embedder, and ``failing``, which raises if called (same model id as
``hashing``, so it opens the same files and proves a command never embeds)."""


class CliError(click.ClickException):
    """An expected failure: shown as one red line on stderr (JSON with ``--json``), exit code 2.

    Args:
        message: What went wrong, in one line.
        kind: Error class name reported in ``--json`` mode (default ``"CliError"``).
        json_output: Render the error as a JSON object instead of a red line.
    """

    exit_code = 2

    def __init__(self, message: str, *, kind: str = "CliError", json_output: bool = False) -> None:
        super().__init__(message)
        self.kind = kind
        self.json_output = json_output

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the error to stderr (or ``file``)."""
        if self.json_output:
            click.echo(json.dumps({"error": self.message, "type": self.kind}), err=True)
            return
        from rich.markup import escape

        from memlane.cli.console import VisibleConsole

        console = VisibleConsole(file=file, stderr=file is None, highlight=False, soft_wrap=True)
        console.print(f"[bold red]error:[/] [red]{escape(self.message)}[/]")


@dataclass
class CliState:
    """Everything the commands share; opens the :class:`EpisodicMemory` lazily and closes it.

    Attributes:
        db: SQLite file path (for a PostgreSQL store from ``--config``: its display location).
        tenant: Tenant id recorded on new episodes and used by ``session``/``tenant`` scope.
        session: Session id recorded on new episodes and used by ``session`` scope.
        scope: What recall/export/stats may see.
        json_output: Machine output: one JSON document per command on stdout.
        embedder_name: One of :data:`EMBEDDER_CHOICES`, or ``None`` for the configured embedder
            (``episodic_memory.embedding_model``; default the bundled local model).
        settings: The ``--config`` file (defaults without one); the options above already
            include its values, so commands read it only for its other sections.
        make_err: Makes the console :attr:`err` is (called once, on first use).
    """

    db: str
    tenant: str = "default"
    session: str = "default"
    scope: Scope = Scope.SESSION
    json_output: bool = False
    embedder_name: str | None = None
    settings: MemlaneConfig = field(default_factory=lambda: _default_settings())
    make_err: Callable[[], Console] = field(default=lambda: _console(stderr=True), repr=False)
    _out: Console | None = field(default=None, repr=False)
    _err: Console | None = field(default=None, repr=False)
    _memory: EpisodicMemory | None = field(default=None, repr=False)

    @property
    def out(self) -> Console:
        """Console for results (stdout), made on first use (a command's ``--help`` needs no rich)."""
        if self._out is None:
            self._out = _console()
        return self._out

    @property
    def err(self) -> Console:
        """Console for progress, warnings and errors (stderr), made on first use."""
        if self._err is None:
            self._err = self.make_err()
        return self._err

    def make_embedder(self) -> Embedder:
        """Build the embedder named by ``embedder_name`` (construction is cheap; models load lazily)."""
        if self.embedder_name is None:
            from memlane.assembly import build_embedder

            return build_embedder(self.settings.episodic)
        if self.embedder_name == "hashing":
            from memlane.embeddings.fake import HashingEmbedder

            return HashingEmbedder()
        if self.embedder_name == "failing":
            from memlane.embeddings.fake import FailingEmbedder

            return FailingEmbedder()
        from memlane.embeddings.local import LocalEmbedder

        return LocalEmbedder()

    def config(self, **overrides: Any) -> MemoryConfig:
        """The :class:`MemoryConfig` for this invocation (the config file's, scope from ``--scope``).

        Args:
            overrides: Fields to replace, e.g. ``retention_days=30``.
        """
        base: MemoryConfig = self.settings.memory_config
        return replace(base, scope=self.scope, **overrides)

    def open_memory(self, path: str, *, clock: Clock | None = None) -> EpisodicMemory:
        """Open a new memory over ``path`` with this invocation's embedder, tenant, session and scope.

        The caller owns (and must close) the result.

        Raises:
            MemlaneError: the file cannot be opened, or was written with another embedding model.
        """
        from memlane import EpisodicMemory

        logger.debug("opening %s with embedder %s", path, self.embedder_name)
        return EpisodicMemory.open(
            path,
            embedder=self.make_embedder(),
            config=self.config(),
            clock=clock,
            tenant_id=self.tenant,
            session_id=self.session,
        )

    def memory(self, *, must_exist: bool = False) -> EpisodicMemory:
        """Return the memory over ``--db`` (or the config's PostgreSQL store), opened on first use.

        Args:
            must_exist: Refuse to create a new database (for read-only commands), so a
                mistyped ``--db`` is an error rather than an empty result.

        Raises:
            CliError: ``must_exist`` and the file does not exist.
            MemlaneError: as for :meth:`open_memory`.
        """
        from memlane import EpisodicMemory

        if self._memory is None and self.settings.store.type != "sqlite":
            from memlane.assembly import build_store

            store = build_store(self.settings.store)
            try:
                self._memory = EpisodicMemory(
                    store,
                    self.make_embedder(),
                    config=self.config(),
                    tenant_id=self.tenant,
                    session_id=self.session,
                )
            except BaseException:
                store.close()
                raise
        if self._memory is None:
            from memlane.config.file import is_postgres_url

            if must_exist and not is_postgres_url(self.db) and not Path(self.db).expanduser().exists():
                raise CliError(
                    f"no database at {self.db} (create one with 'memlane remember' or 'memlane ingest', "
                    "or pass --db / set MEMLANE_DB)",
                    json_output=self.json_output,
                )
            self._memory = self.open_memory(self.db)
        return self._memory

    def close(self) -> None:
        """Close the memory if it was opened. Idempotent."""
        if self._memory is not None:
            self._memory.close()
            self._memory = None


def _console(*, stderr: bool = False) -> Console:
    from memlane.cli.console import VisibleConsole

    return VisibleConsole(stderr=stderr, highlight=False)


def _default_settings() -> MemlaneConfig:
    """No config file's settings (:mod:`memlane.config.file` is imported when a command runs)."""
    from memlane.config.file import MemlaneConfig

    return MemlaneConfig()


pass_state = click.make_pass_decorator(CliState)
"""Decorator passing the invocation's :class:`CliState` as a command's first argument."""

_CLI_HANDLER = "memlane_cli"
"""Attribute marking the handler the CLI installs on the ``memlane`` logger (replaced on every
invocation)."""


class _RichOnFirstRecord(logging.Handler):
    """A handler that builds rich's ``RichHandler`` on the first record it gets, then passes every
    record to it: a command that logs nothing (``--help``) imports no rich."""

    def __init__(self, console: Callable[[], Console]) -> None:
        super().__init__()
        self._console = console
        self._rich: logging.Handler | None = None

    def emit(self, record: logging.LogRecord) -> None:
        """Render ``record`` with the ``RichHandler`` (made now if this is the first record)."""
        if self._rich is None:
            from rich.logging import RichHandler

            self._rich = RichHandler(console=self._console(), show_path=False, rich_tracebacks=False)
        self._rich.handle(record)


def configure_logging(verbose: bool, console: Callable[[], Console]) -> None:
    """Send ``memlane.*`` log records to stderr: DEBUG with ``--verbose``, else WARNING and above.

    Only the ``memlane`` logger is touched (the library itself configures no handlers).

    Args:
        verbose: Log DEBUG records too.
        console: Returns the stderr console, called when the first record is logged.
    """
    package_logger = logging.getLogger("memlane")
    for handler in list(package_logger.handlers):
        if getattr(handler, _CLI_HANDLER, False):
            package_logger.removeHandler(handler)
    handler = _RichOnFirstRecord(console)
    setattr(handler, _CLI_HANDLER, True)
    package_logger.addHandler(handler)
    package_logger.setLevel(logging.DEBUG if verbose else logging.WARNING)


_LEAF_COMMAND = "memlane.command"
"""``ctx.meta`` key under which the ``--json`` option's callback records the command being run."""

LIBRARY_NAMES = {
    "tenant_id": "tenant",
    "session_id": "session",
    "token_budget": "budget",
    "never_retrieved_older_than_days": "older_than_days",
}
"""Library parameter names whose CLI option has another Python name (``tenant_id`` is ``--tenant``)."""

_LEADING_NAME = re.compile(r"^([a-z][a-z_]*)(?=( must| is | has |: | \())")
_KEYWORD_TRUE = re.compile(r"\b([a-z][a-z_]*)=True\b")


def _parameter_names(command: click.Command | None, root: click.Command | None) -> dict[str, str]:
    """Python name -> what the user typed (``--flag`` for options, ``ARG`` for arguments)."""
    names: dict[str, str] = {}
    for source in (root, command):  # the command's own parameters win over the root's
        for param in [] if source is None else source.params:
            if param.name is None:
                continue
            if isinstance(param, click.Option):
                longs = [opt for opt in param.opts if opt.startswith("--")]
                names[param.name] = (longs or param.opts)[0]
            elif isinstance(param, click.Argument):
                names[param.name] = param.human_readable_name
    for library, python in LIBRARY_NAMES.items():
        if python in names and library not in names:
            names[library] = names[python]
    return names


def cli_wording(message: str, ctx: click.Context | None, *, leading: bool = True) -> str:
    """Reword a library message so that it names the CLI input the user typed.

    Only two shapes are rewritten, so user data quoted in a message is never touched: a
    leading parameter name (``user_id must be a non-empty string`` -> ``--user must be a
    non-empty string``) and a keyword flag (``pass append=True`` -> ``pass --append``). A
    name is rewritten only if the running command (or the root group) has that parameter.

    Args:
        message: The library's message (e.g. ``str(ValidationError)``).
        ctx: Any context of the invocation (``None`` returns ``message`` unchanged).
        leading: Also rewrite a leading parameter name. Pass ``False`` for messages about a
            record of an input file, whose leading name is the record's field
            (``session_id must be ...``), not an option.

    Returns:
        The reworded message.
    """
    if ctx is None:
        return message
    root = ctx.find_root()
    names = _parameter_names(ctx.meta.get(_LEAF_COMMAND, ctx.command), root.command)

    def lead(match: re.Match[str]) -> str:
        return names.get(match.group(1), match.group(1))

    def keyword(match: re.Match[str]) -> str:
        flag = names.get(match.group(1))
        return flag if flag is not None and flag.startswith("--") else match.group(0)

    if leading:
        message = _LEADING_NAME.sub(lead, message, count=1)
    return _KEYWORD_TRUE.sub(keyword, message)


def _json_callback(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    """Record the running command (for :func:`cli_wording`); ``--json`` here turns on JSON output."""
    ctx.meta[_LEAF_COMMAND] = ctx.command
    if value:
        state = ctx.find_object(CliState)
        if state is not None:
            state.json_output = True
    return value


def _add_json_option(command: click.Command) -> None:
    """Give ``command`` (and, for a group, its subcommands) a ``--json`` flag of its own."""
    if not any(param.name == "json_output" for param in command.params):
        command.params.append(
            click.Option(
                ["--json", "json_output"],
                is_flag=True,
                expose_value=False,
                callback=_json_callback,
                help="Machine output (the same as 'memlane --json COMMAND').",
            )
        )
    if isinstance(command, click.Group):
        for sub in command.commands.values():
            _add_json_option(sub)


class MemlaneGroup(click.Group):
    """A click group that turns expected errors into one-line messages with exit code 2.

    Every command added to it (and every subcommand of an added group) gets a ``--json``
    flag, so ``--json`` works before or after the subcommand's name.

    Commands are lazy: the group lists the names of :data:`memlane.cli.registry.HOMES` (plus
    any added with :meth:`add_command`) and imports a command's module only when that command
    is run or asked for its help. ``memlane --help`` lists them from
    :data:`memlane.cli.registry.SUMMARIES` (generated from the commands' own help), so it
    imports none of them.
    """

    def add_command(self, cmd: click.Command, name: str | None = None) -> None:
        """Register ``cmd`` under ``name``, with its own ``--json`` flag."""
        _add_json_option(cmd)
        super().add_command(cmd, name)

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, sorted (none is imported)."""
        return sorted(set(self.commands) | set(HOMES))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command ``cmd_name``, imported on first use; ``None`` for an unknown name."""
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in HOMES:
            command = load_command(cmd_name)
            self.add_command(command, cmd_name)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The "Commands" section, from the summaries (commands already imported: their help)."""
        rows = [
            (name, self.commands.get(name) or click.Command(name, help=SUMMARIES.get(name)))
            for name in self.list_commands(ctx)
        ]
        rows = [(name, command) for name, command in rows if not command.hidden]
        if rows:
            limit = formatter.width - 6 - max(len(name) for name, _ in rows)
            with formatter.section("Commands"):
                formatter.write_dl([(name, command.get_short_help_str(limit)) for name, command in rows])

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; map :class:`MemlaneError` and ``OSError`` (I/O) to :class:`CliError`.

        Every error message goes through :func:`cli_wording`, so it names CLI options, not
        the library's parameters.
        """
        try:
            return super().invoke(ctx)
        except CliError as exc:
            worded = cli_wording(exc.message, ctx)
            if worded == exc.message:
                raise
            raise CliError(worded, kind=exc.kind, json_output=exc.json_output) from exc.__cause__
        except MemlaneError as exc:
            logger.debug("command failed", exc_info=True)
            raise CliError(
                cli_wording(str(exc), ctx), kind=type(exc).__name__, json_output=_json_mode(ctx)
            ) from exc
        except BrokenPipeError:
            raise  # stdout closed early (e.g. '| head'): click's main exits quietly
        except OSError as exc:
            logger.debug("command failed", exc_info=True)
            raise CliError(str(exc), kind=type(exc).__name__, json_output=_json_mode(ctx)) from exc


def _json_mode(ctx: click.Context) -> bool:
    state = ctx.find_object(CliState)
    return state is not None and state.json_output


@click.group(name="memlane", cls=MemlaneGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="YAML config file (memory:, episodic_memory:, server: sections). Default: $MEMLANE_CONFIG. "
    "The options below override its values.",
)
@click.option(
    "--db",
    type=click.Path(dir_okay=False),
    default=None,
    help=(
        "SQLite database file or postgresql:// URL. "
        "Default: the config's memory section, else $MEMLANE_DB, else ./memlane.db."
    ),
)
@click.option(
    "--tenant",
    default=None,
    help="Tenant id (1-200 chars) for writes and scope. Default: the config's episodic_memory.tenant_id, "
    "else 'default'.",
)
@click.option(
    "--session",
    default=None,
    help="Session id (1-200 chars) for writes and scope. Default: the config's "
    "episodic_memory.session_id, else 'default'.",
)
@click.option(
    "--scope",
    type=click.Choice([s.value for s in Scope]),
    default=None,
    help="What recall/export/stats see: this session, every session of the tenant, or everything. "
    "Default: the config's episodic_memory.scope, else session.",
)
@click.option(
    "--json",
    "json_output",
    is_flag=True,
    help="Machine output: one JSON document per command on stdout (a JSON array for lists).",
)
@click.option(
    "-v", "--verbose", is_flag=True, help="Log debug messages (and tracebacks of errors) to stderr."
)
@click.option(
    "--embedder",
    "embedder_name",
    type=click.Choice(EMBEDDER_CHOICES),
    default=None,
    hidden=True,
    help="For tests: 'hashing' (deterministic fake) or 'failing' (raises if called) instead of the model.",
)
@click.version_option(version=__version__, prog_name="memlane")
@click.pass_context
def cli(  # noqa: PLR0913  (a click command: one parameter per option)
    ctx: click.Context,
    config_path: str | None,
    db: str | None,
    tenant: str | None,
    session: str | None,
    scope: str | None,
    json_output: bool,
    verbose: bool,
    embedder_name: str | None,
) -> None:
    """memlane: episodic memory for AI agents, offline, in one SQLite file.

    Remember events, then recall them ranked by relevance first, recency and importance
    breaking near-ties (each in [0, 1]). Start with 'memlane demo'.

    Exit codes: 0 ok; 1 partial (ingest rejected some lines); 2 usage or input error,
    nothing done.
    """
    from memlane.config import config_path_from_env
    from memlane.config.file import StoreSettings, load_config

    err = cache(lambda: _console(stderr=True))  # the logs' console is the commands' (progress bars)
    configure_logging(verbose, err)
    config_path = config_path or config_path_from_env()
    settings = _default_settings() if config_path is None else load_config(config_path)
    if db is not None:
        settings = replace(settings, store=StoreSettings(type="sqlite", path=db))
    episodic = settings.episodic_or_default
    state = CliState(
        db=settings.store.sqlite_path() if settings.store.type == "sqlite" else f"postgres ({config_path})",
        tenant=tenant if tenant is not None else (episodic.tenant_id or "default"),
        session=session if session is not None else (episodic.session_id or "default"),
        scope=Scope(scope or episodic.memory.scope),
        json_output=json_output,
        embedder_name=embedder_name,
        settings=settings,
        make_err=err,
    )
    ctx.obj = state
    ctx.call_on_close(state.close)
