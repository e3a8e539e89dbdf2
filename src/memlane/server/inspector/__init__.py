"""The memory inspector: a read-only web page over one memory (``/inspect``).

Served by ``memlane serve`` (log in with an API key; admin keys may view every tenant) and
by ``memlane inspect DB`` (local, 127.0.0.1 only, no key). Views: a timeline of episodes
with valid and recorded time, filters, a search showing each hit's score breakdown and why
it ranked there, an episode's supersede chain, sessions with their messages and tool calls,
and store statistics with a plot of episodes over time.

Pages are rendered on the server from memlane's public API (:mod:`.data`) with an escaping
HTML builder (:mod:`.html`) and inline SVG (:mod:`.charts`); no script, no CDN, one
stylesheet shipped in the package. Authentication: :mod:`.auth`.
"""

from __future__ import annotations

from memlane.server.inspector.layout import PREFIX
from memlane.server.inspector.routes import InspectorState, create_inspector_app, install_inspector

__all__ = ["PREFIX", "InspectorState", "create_inspector_app", "install_inspector"]
