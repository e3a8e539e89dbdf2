"""The memory inspector: a read-only web page over one memory (``/inspect``).

Served by ``memlane serve`` (log in with an API key; admin keys may view every tenant) and
by ``memlane inspect DB`` (local, 127.0.0.1 only, no key). Views: a timeline of episodes
with valid and recorded time, filters, a search showing each hit's score breakdown and why
it ranked there, an episode's supersede chain, sessions with their messages and tool calls,
and store statistics with a plot of episodes over time.

Pages are rendered on the server from memlane's public API (:mod:`.data`) with an escaping
HTML builder (:mod:`.html`) and inline SVG (:mod:`.charts`); no script, no CDN, one
stylesheet shipped in the package. Authentication: :mod:`.auth`. The application:
:mod:`.routes` (:func:`~memlane.server.inspector.routes.create_inspector_app`,
:func:`~memlane.server.inspector.routes.install_inspector`).

Nothing is imported here, so the pages may import their siblings through the package without an
import circle.
"""
