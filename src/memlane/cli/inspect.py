"""``memlane inspect [DB]``: open the memory inspector on a local database (127.0.0.1 only, no key).

The inspector is a read-only web page (:mod:`memlane.server.inspector`): a timeline of
episodes, filters, search with score breakdowns, supersede history, sessions and stats.
Locally everyone who can reach the port is an admin (every tenant is visible), so it
binds the loopback interface only and refuses other ``Host`` headers.
"""

from __future__ import annotations

import logging
import socket
import sys
import webbrowser
from pathlib import Path
from typing import TYPE_CHECKING

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.serve import _require

if TYPE_CHECKING:
    from memlane import EpisodicMemory

__all__ = ["inspect_command"]

logger = logging.getLogger(__name__)

DEFAULT_PORT = 8090
"""Port of ``memlane inspect`` unless ``--port`` says otherwise (0 = any free port)."""


@click.command(name="inspect")
@click.argument("db", required=False, type=click.Path(dir_okay=False))
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=DEFAULT_PORT,
    show_default=True,
    help="TCP port on 127.0.0.1 (0 = any free port).",
)
@click.option("--open", "open_browser", is_flag=True, help="Also open the page in the default web browser.")
@click.option(
    "--log-level",
    type=click.Choice(["critical", "error", "warning", "info", "debug"]),
    default="warning",
    show_default=True,
    help="uvicorn's log level.",
)
@pass_state
def inspect_command(state: CliState, db: str | None, port: int, open_browser: bool, log_level: str) -> None:
    """Open the memory inspector for DB (default: --db / the config / $MEMLANE_DB) until interrupted.

    Serves a read-only web page on 127.0.0.1 only and prints its URL: a timeline of
    episodes (valid and recorded time), filters, search with each hit's score breakdown,
    an episode's supersede history, sessions with their messages and tool calls, and
    store statistics. No API key is needed: whoever can reach 127.0.0.1 on this machine
    sees every tenant. For a shared server use 'memlane serve' (log in at /inspect with an
    API key). Requires the 'server' extra.
    """
    _require("server", "fastapi", "uvicorn")
    import uvicorn

    from memlane.server.inspector.layout import PREFIX
    from memlane.server.inspector.routes import create_inspector_app

    if db is not None and "://" not in db and not Path(db).expanduser().exists():
        raise CliError(f"no database at {db}", json_output=state.json_output)

    def open_memory() -> EpisodicMemory:
        return state.open_memory(db) if db is not None else state.memory(must_exist=True)

    memory = open_memory()  # fail here, with a one-line error, rather than inside uvicorn
    app = create_inspector_app(lambda: memory, max_limit=state.settings.episodic_or_default.max_limit)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(128)  # connections made before uvicorn starts wait in the backlog, never refused
    except OSError as exc:
        sock.close()
        memory.close()
        raise CliError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror} (try --port 0)") from exc
    address = f"http://127.0.0.1:{sock.getsockname()[1]}{PREFIX}"
    where = db if db is not None else state.db
    click.echo(f"memlane inspector for {where}: {address}  (local admin, no key; Ctrl+C to stop)")
    sys.stdout.flush()  # the URL must reach a pipe before the server blocks
    if open_browser:
        webbrowser.open(address)
    server = uvicorn.Server(uvicorn.Config(app, log_level=log_level, lifespan="on"))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
