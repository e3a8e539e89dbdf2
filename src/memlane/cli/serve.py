"""Server commands: ``serve`` (HTTP API), ``mcp`` (MCP server) and ``api-key`` (make a key).

Both servers use the root options like every command: ``--config`` for the store, the
embedding model and the ``server:`` section, and ``--tenant/--session/--scope`` (for
``mcp``; the HTTP server takes the tenant from each request's API key). The hidden
``--embedder hashing`` root option swaps in the deterministic fake embedder for tests.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import logging
import secrets
import socket
import sys
from typing import Any

import click

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.output import echo_json, escape
from memlane.config.api_keys import ROLE_AGENT, ROLES, hash_api_key
from memlane.validation import check_identifier

__all__ = ["api_key", "mcp", "serve"]

logger = logging.getLogger(__name__)

_LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
API_KEY_PREFIX = "mlk_"
"""Prefix of keys made by ``memlane api-key`` (makes leaked keys easy to recognise and scan for)."""


def _require(extra: str, *modules: str) -> None:
    """Fail with a one-line hint to install ``memlane[extra]`` unless ``modules`` are installed.

    Only looked up (``importlib.util.find_spec``), not imported: the servers import them while
    the socket already answers (:mod:`memlane.server.front`).
    """
    for module in modules:
        if importlib.util.find_spec(module) is None:
            raise CliError(
                f"this command needs the '{extra}' extra: pip install 'memlane[{extra}]' (no {module})"
            )


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@click.command()
@click.option(
    "--host", default=None, help="Interface to bind. Default: the config's server.host, else 127.0.0.1."
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=None,
    help="TCP port (0 = any free port). Default: the config's server.port, else 8080.",
)
@click.option(
    "--log-level",
    type=click.Choice(_LOG_LEVELS),
    default="info",
    show_default=True,
    help="uvicorn's log level.",
)
@pass_state
def serve(state: CliState, host: str | None, port: int | None, log_level: str) -> None:
    """Serve the HTTP API (FastAPI + uvicorn) until interrupted.

    Endpoints under /v1 (remember, recall, list, export, get and delete by id) need an
    API key (Authorization: Bearer KEY, or X-API-Key: KEY) listed in the config's
    server.api_keys, which maps each key to its tenant; the tenant always comes from
    the key. GET /health needs none, and is answered as soon as the port listens, while the app
    and the store still load. The OpenAPI document is /openapi.json. Requires the 'server'
    extra and a --config file with server.api_keys (make keys with 'memlane api-key').
    """
    _require("server", "fastapi", "uvicorn")
    from memlane.server.front import health_answer

    settings = state.settings.server
    max_limit = state.settings.episodic_or_default.max_limit
    settings.check_servable(max_limit)  # before the port listens: never "running", then refusing all

    def load() -> Any:  # in a thread, while /health is already answered
        from memlane.server.http import create_app

        app = create_app(lambda: memory, settings, max_limit=max_limit)  # checks the settings first
        memory = state.memory()  # then opened here, not in the event loop by the app's lifespan
        return app

    bind = host or settings.host
    if not _is_loopback(bind):
        logger.warning("serving on %s: use TLS (a reverse proxy) when keys travel over a network", bind)
    port = settings.port if port is None else port
    sock = _bind(bind, port)  # listening before anything heavy is imported
    _run_front(load, health_answer, {"host": bind, "port": port, "log_level": log_level}, sockets=[sock])


def _run_front(
    load: Any,
    early: Any,
    options: dict[str, Any],
    *,
    sockets: list[socket.socket] | None = None,
    announce: str = "",
) -> None:
    """Serve :class:`memlane.server.front.LoadingFront` over ``load``'s app with uvicorn until stopped.

    Args:
        load: Builds the real ASGI app (in a thread, after the socket listens).
        early: What the front answers before the app is loaded.
        options: ``uvicorn.Config`` options (log level; host and port: their address is logged as
            uvicorn logs it, also with ``sockets``), besides the read timeouts.
        sockets: Already bound sockets to serve on (else uvicorn binds ``options``' host and port).
        announce: Printed on stderr once the server accepts connections (if not empty).

    Raises:
        Exception: what ``load`` (or the app's startup) raised; the server stops first.
    """
    import uvicorn

    from memlane.server.front import LoadingFront
    from memlane.server.timeouts import UVICORN_OPTIONS

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.should_exit:
                return
            if sockets is not None and "port" in options:  # uvicorn logs its address only if it binds
                self._log_started_message(sockets)  # "Uvicorn running on http://HOST:PORT ..."
            if announce:
                click.echo(announce, err=True)  # once it accepts connections

    servers: list[_Server] = []

    def stop(_: BaseException) -> None:
        servers[0].should_exit = True

    front = LoadingFront(load, early, on_failure=stop)
    servers.append(_Server(uvicorn.Config(front, lifespan="on", **options, **UVICORN_OPTIONS)))
    servers[0].run(sockets=sockets)
    if front.failure is not None:
        raise front.failure


@click.command()
@click.option(
    "--transport",
    type=click.Choice(["stdio", "streamable-http"]),
    default="stdio",
    show_default=True,
    help="stdio for clients that launch the server (Claude Desktop, Cursor); streamable-http to serve a URL.",
)
@click.option("--host", default="127.0.0.1", show_default=True, help="streamable-http: interface to bind.")
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=8765,
    show_default=True,
    help="streamable-http: TCP port.",
)
@click.option("--path", default="/mcp", show_default=True, help="streamable-http: endpoint path.")
@click.option(
    "--log-level",
    type=click.Choice(_LOG_LEVELS),
    default="warning",
    show_default=True,
    help="streamable-http: uvicorn's log level.",
)
@click.option(
    "--agent", "agent_id", default="default", show_default=True, help="Agent whose sessions the tools read."
)
@click.option(
    "--user", "user_id", default="default", show_default=True, help="User whose sessions the tools read."
)
@pass_state
def mcp(
    state: CliState,
    transport: str,
    host: str,
    port: int,
    path: str,
    log_level: str,
    agent_id: str,
    user_id: str,
) -> None:
    """Serve the memory tools over the Model Context Protocol until the client disconnects.

    Tools: memlane's whole tool set (episodes, sessions and the knowledge graph; tools/list
    names them), acting for --tenant/--session with --scope (or the config's
    episodic_memory tenant_id, session_id and scope) and, for sessions, --agent/--user;
    clients cannot change them.
    Over stdio, stdout carries only protocol messages; logs go to stderr. The streamable-http
    transport has no authentication: keep it on 127.0.0.1. Requires
    the 'mcp' extra.
    """
    early = None
    if transport == "stdio" and importlib.util.find_spec("mcp") is not None:
        # Answer ``initialize`` while the SDK (1-2 s) and the memory load (issue #24 item 7).
        from memlane.server.mcp_handshake import EarlyHandshake

        early = EarlyHandshake(sys.stdin.buffer, sys.stdout.buffer).start()
    max_limit = state.settings.episodic_or_default.max_limit
    logger.info(
        "MCP server for tenant %r, session %r (%s scope)", state.tenant, state.session, state.scope.value
    )
    if transport == "stdio":
        _require("mcp", "mcp")
        from memlane.server.mcp import run_stdio

        memory = state.memory()
        run_stdio(memory, max_limit=max_limit, agent_id=agent_id, user_id=user_id, early=early)
        return
    _require("mcp", "mcp")
    _require("server", "uvicorn")
    from memlane.server.front import mcp_early_answer

    def load() -> Any:  # in a thread, while initialize and server/discover are already answered
        from memlane.server.mcp import create_mcp_server, streamable_http_app

        server = create_mcp_server(state.memory(), max_limit=max_limit, agent_id=agent_id, user_id=user_id)
        return streamable_http_app(server, path=path, host=host)  # stateless: no session table

    if not _is_loopback(host):
        logger.warning("the MCP HTTP transport has no authentication and is bound to %s", host)
    sock = _bind(host, port)  # bound here, so the URL printed has the real port (also for --port 0)
    bound = "[" + host + "]" if ":" in host else host
    url = f"http://{bound}:{sock.getsockname()[1]}{path}"
    announce = f"MCP server (streamable-http) at {url}"
    _run_front(load, mcp_early_answer(path), {"log_level": log_level}, sockets=[sock], announce=announce)


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (IPv6 when ``host`` is an IPv6 address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP_NODELAY (asyncio)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise CliError(f"cannot listen on {host}:{port}: {exc}") from exc
    return sock


@click.command(name="api-key")
@click.argument("tenant_id")
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default=ROLE_AGENT,
    show_default=True,
    help="agent: acts as TENANT_ID only. admin: the same on /v1, and may inspect every tenant in /inspect.",
)
@pass_state
def api_key(state: CliState, tenant_id: str, role: str) -> None:
    """Make a new random API key for TENANT_ID and print it with its config entry.

    The key is printed once; only its sha256 form goes into the config file, under
    server.api_keys, so the file holds no usable secret. Give the key to the client,
    which sends it as 'Authorization: Bearer KEY' (or types it into the inspector's login).
    """
    import yaml

    tenant = check_identifier(tenant_id, "tenant_id")
    key = API_KEY_PREFIX + secrets.token_urlsafe(32)
    entry = hash_api_key(key)
    line = yaml.safe_dump({entry: tenant}, default_flow_style=False, allow_unicode=True).strip()
    if role != ROLE_AGENT:  # one line: "sha256:...: {tenant: acme, role: admin}"
        value = {"tenant": tenant, "role": role}
        flow = yaml.safe_dump(
            value, default_flow_style=True, allow_unicode=True, sort_keys=False, width=10**6
        )
        line = f"{entry}: {flow.strip()}"
    if state.json_output:
        echo_json({"tenant_id": tenant, "role": role, "api_key": key, "config_entry": entry})
        return
    state.out.print(
        f"API key for tenant {escape(repr(tenant))}, role {role} (shown once; give it to the client):"
    )
    state.out.print(f"  {key}", soft_wrap=True)
    state.out.print("Add this line under server.api_keys in the config file:")
    state.out.print(f"  {escape(line)}", soft_wrap=True)
