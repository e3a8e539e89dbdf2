"""Back-off for failed API keys: a client that keeps guessing is refused for a while (#22 item 10).

Every API key a client presents and memlane does not know (``/v1`` with a key header, the
inspector's key header and its login form) counts as one failure of that client's address.
After :data:`DEFAULT_FAILED_KEY_LIMIT` failures within :data:`FAILURE_WINDOW_S` seconds, every
attempt from that address that presents a key (a right one too, so guessing cannot go on
behind it) is answered 429 with ``Retry-After`` until the window ends: a guesser gets ~100 tries
a minute instead of hundreds a second. Requests that present no key are not counted.

The table is bounded (:data:`MAX_CLIENTS` addresses, the oldest dropped), in memory, per process.
It lives with the inspector's authentication; the ``/v1`` API (:mod:`memlane.server.deps`) shares
the same object, so a guesser cannot switch between the two.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from starlette.requests import Request

__all__ = ["DEFAULT_FAILED_KEY_LIMIT", "FAILURE_WINDOW_S", "MAX_CLIENTS", "KeyFailures", "client_address"]

DEFAULT_FAILED_KEY_LIMIT = 100
"""Failed keys one address may present per window before it must wait."""
FAILURE_WINDOW_S = 60.0
"""The window, in seconds: counts start over when it ends."""
MAX_CLIENTS = 10_000
"""Addresses remembered at once."""


def client_address(request: Request) -> str:
    """The peer's address (what failed keys are counted by)."""
    return request.client.host if request.client is not None else ""


class KeyFailures:
    """Failed key attempts per client address, in fixed windows (thread-safe).

    Args:
        limit: Failures per window before the address is refused (>= 1).
        window_s: Window length in seconds (> 0).
        clock: Seconds from a monotonic source (inject one in tests).
    """

    def __init__(
        self,
        limit: int = DEFAULT_FAILED_KEY_LIMIT,
        window_s: float = FAILURE_WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limit = limit
        self.window_s = window_s
        self._clock = clock
        self._counts: OrderedDict[str, tuple[float, int]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, client: str) -> int:
        """Whole seconds ``client`` must wait before presenting a key again (0: it may now)."""
        now = self._clock()
        with self._lock:
            entry = self._counts.get(client)
            if entry is None or now >= entry[0] + self.window_s:
                return 0
            return max(1, math.ceil(entry[0] + self.window_s - now)) if entry[1] >= self.limit else 0

    def refusal(self, client: str) -> tuple[int, str] | None:
        """``(retry_after_s, message)`` if ``client`` must wait before presenting a key, else ``None``."""
        wait = self.retry_after(client)
        if not wait:
            return None
        return wait, f"too many unknown API keys from this address; retry in {wait} s"

    def failed(self, client: str) -> None:
        """Count one failed key of ``client``."""
        now = self._clock()
        with self._lock:
            start, count = self._counts.pop(client, (now, 0))
            if now >= start + self.window_s:
                start, count = now, 0
            self._counts[client] = (start, count + 1)
            while len(self._counts) > MAX_CLIENTS:
                self._counts.popitem(last=False)
