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
from rich.markup import escape

from memlane.cli.app import CliError, CliState, pass_state
from memlane.cli.output import echo_json
from memlane.config.api_keys import ROLE_AGENT, ROLES, hash_api_key
from memlane.validation import check_identifier

__all__ = ["api_key", "mcp", "serve"]

logger = logging.getLogger(__name__)

_LOG_LEVELS = ("critical", "error", "warning", "info", "debug")
API_KEY_PREFIX = "mlk_"
"""Prefix of keys made by ``memlane api-key`` (makes leaked keys easy to recognise and scan for)."""


def _require(extra: str, *modules: str) -> None:
    """Import ``modules`` or fail with a one-line hint to install ``memlane[extra]``."""
    import importlib

    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise CliError(
                f"this command needs the '{extra}' extra: pip install 'memlane[{extra}]' ({exc})"
            ) from exc


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
    the key. GET /health needs none; the OpenAPI document is /openapi.json. Requires the 'server'
    extra and a --config file with server.api_keys (make keys with 'memlane api-key').
    """
    _require("server", "fastapi", "uvicorn")
    import uvicorn

    from memlane.server.http import create_app
    from memlane.server.timeouts import UVICORN_OPTIONS

    settings = state.settings.server
    app = create_app(state.memory, settings, max_limit=state.settings.episodic_or_default.max_limit)
    bind = host or settings.host
    if not _is_loopback(bind):
        logger.warning("serving on %s: use TLS (a reverse proxy) when keys travel over a network", bind)
    port = settings.port if port is None else port
    uvicorn.run(app, host=bind, port=port, log_level=log_level, **UVICORN_OPTIONS)  # read timeouts


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

    Tools: remember_episode, recall_episodes, get_context, search_sessions,
    supersede_episode, episode_history and find_contradictions, acting for
    --tenant/--session with --scope (or the config's episodic_memory.tenant_id/session_id/
    scope) and, for sessions, --agent/--user; clients cannot change them.
    Over stdio, stdout carries only protocol messages; logs go to stderr. The streamable-http
    transport has no authentication: keep it on 127.0.0.1. Requires
    the 'mcp' extra.
    """
    early = None
    if transport == "stdio" and importlib.util.find_spec("mcp") is not None:
        # Answer ``initialize`` while the SDK (1-2 s) and the memory load (issue #24 item 7).
        from memlane.server.mcp_handshake import EarlyHandshake

        early = EarlyHandshake(sys.stdin.buffer, sys.stdout.buffer).start()
    _require("mcp", "mcp")
    from memlane.server.mcp import create_mcp_server, run_stdio, streamable_http_app

    memory = state.memory()
    max_limit = state.settings.episodic_or_default.max_limit
    logger.info(
        "MCP server for tenant %r, session %r (%s scope)", state.tenant, state.session, state.scope.value
    )
    if transport == "stdio":
        run_stdio(memory, max_limit=max_limit, agent_id=agent_id, user_id=user_id, early=early)
        return
    server = create_mcp_server(memory, max_limit=max_limit, agent_id=agent_id, user_id=user_id)
    _require("server", "uvicorn")
    import uvicorn

    if not _is_loopback(host):
        logger.warning("the MCP HTTP transport has no authentication and is bound to %s", host)
    from memlane.server.timeouts import UVICORN_OPTIONS

    app: Any = streamable_http_app(server, path=path, host=host)  # stateless: no session table
    sock = _bind(host, port)  # bound here, so the URL printed has the real port (also for --port 0)
    bound = "[" + host + "]" if ":" in host else host
    url = f"http://{bound}:{sock.getsockname()[1]}{path}"

    class _Server(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            click.echo(f"MCP server (streamable-http) at {url}", err=True)  # once it accepts connections

    config = uvicorn.Config(app, log_level=log_level, **UVICORN_OPTIONS)  # read timeouts
    _Server(config).run(sockets=[sock])


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
