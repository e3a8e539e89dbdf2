"""Who is looking: API keys (and their roles) for the inspector, and browser login sessions.

How a browser authenticates (``memlane serve``):

1. ``GET /inspect/login`` shows a form; the person pastes an API key.
2. ``POST /inspect/login`` checks the key against ``server.api_keys`` (hashed, constant
   time). On success the server makes a random session token (256 bits), remembers
   ``token -> (tenant, role)`` in memory for :data:`SESSION_TTL`, and sets it as the cookie
   :data:`COOKIE_NAME` with ``HttpOnly`` (no script can read it), ``SameSite=Strict`` (never
   sent by another site's links or forms), ``Path=/inspect``, and ``Secure`` when the request
   came over HTTPS. The key itself is never stored in the browser, a URL or a log.
3. ``POST /inspect/logout`` forgets the token. Restarting the server logs everyone out.

Scripts can skip the cookie and send the key as on ``/v1`` (``Authorization: Bearer KEY``
or ``X-API-Key: KEY``). Login and logout refuse a cross-site ``Origin``.

``memlane inspect DB`` runs without keys: it binds 127.0.0.1 only, refuses any other
``Host`` header (DNS rebinding), and everyone who can reach it is a local admin.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from starlette.requests import Request

from memlane.config.api_keys import ApiKey

__all__ = [
    "COOKIE_NAME",
    "MAX_LOGINS_PER_KEY",
    "SESSION_TTL",
    "LoginSessions",
    "Principal",
    "principal_from_key",
    "same_origin",
]

COOKIE_NAME = "memlane_inspector"
"""Name of the login cookie (an opaque session token, never the API key)."""

SESSION_TTL = 12 * 3600
"""Seconds a login lasts (12 hours)."""

_MAX_SESSIONS = 10_000
MAX_LOGINS_PER_KEY = 16
"""Live logins one API key may hold; its own oldest goes beyond that, never another key's (#22 item 10)."""


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is looking.

    Attributes:
        tenant_id: The key's tenant, or ``None`` for the local admin of ``memlane inspect``.
        is_admin: Whether other tenants may be viewed.
        via_cookie: Whether the request authenticated with the login cookie (offer logout).
    """

    tenant_id: str | None
    is_admin: bool
    via_cookie: bool = False

    @property
    def label(self) -> str:
        """Human-readable, e.g. ``tenant acme · agent key``."""
        if self.tenant_id is None:
            return "local admin"
        return f"tenant {self.tenant_id} · {'admin' if self.is_admin else 'agent'} key"


def principal_from_key(key: ApiKey, *, via_cookie: bool = False) -> Principal:
    """The principal of a configured API key."""
    return Principal(key.tenant_id, key.is_admin, via_cookie)


class LoginSessions:
    """Browser logins: random token -> principal, in memory, expiring after ``ttl`` seconds.

    Thread-safe. At most :data:`MAX_LOGINS_PER_KEY` live logins per key (the key's oldest is
    dropped beyond that, so one key cannot log the others out) and 10,000 in all.

    Args:
        ttl: Lifetime of a login in seconds, > 0.
    """

    def __init__(self, ttl: float = SESSION_TTL) -> None:
        self.ttl = ttl
        self._tokens: OrderedDict[str, tuple[Principal, float]] = OrderedDict()
        self._by_owner: dict[bytes, OrderedDict[str, None]] = {}  # (one entry per configured key)
        self._lock = threading.Lock()

    def create(self, principal: Principal, owner: bytes = b"") -> str:
        """Remember ``principal`` under a new random token (43 URL-safe characters) and return it.

        Args:
            principal: Who logged in.
            owner: The key's digest: the per-key cap counts the logins of one owner.
        """
        token = secrets.token_urlsafe(32)
        with self._lock:
            self._tokens[token] = (principal, time.monotonic() + self.ttl)
            mine = self._by_owner.setdefault(owner, OrderedDict())
            mine[token] = None
            while len(mine) > MAX_LOGINS_PER_KEY:
                self._tokens.pop(mine.popitem(last=False)[0], None)
            while len(self._tokens) > _MAX_SESSIONS:  # only reachable with many keys
                self._tokens.popitem(last=False)
        return token

    def get(self, token: str) -> Principal | None:
        """The principal of a live token, or ``None`` (unknown or expired)."""
        with self._lock:
            entry = self._tokens.get(token)
            if entry is None:
                return None
            if entry[1] < time.monotonic():
                del self._tokens[token]
                return None
            return entry[0]

    def drop(self, token: str) -> None:
        """Forget a token (logout). Unknown tokens are ignored."""
        with self._lock:
            self._tokens.pop(token, None)


def same_origin(request: Request) -> bool:
    """Whether a state-changing request comes from this site.

    True when the ``Origin`` header is absent (non-browser clients, older browsers on
    same-origin form posts) or names this server's scheme, host and port.
    """
    origin = request.headers.get("origin")
    if origin is None:
        return True
    host = request.headers.get("host", "")
    return origin in (f"{request.url.scheme}://{host}", f"http://{host}", f"https://{host}")
