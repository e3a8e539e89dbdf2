"""The console every command prints through (imported when a command prints, not for ``--help``)."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from memlane.validation import show_bidi_controls

__all__ = ["VisibleConsole"]


class VisibleConsole(Console):
    """A rich console that shows bidi controls visibly (``<U+202E>``) in everything it prints.

    Stored text (content, ids, tags) reaches the terminal only through it, so a session id
    ``user-\u202enimda\u202c`` cannot display as ``user-admin`` (#22 item 12).
    """

    def _render_buffer(self, buffer: Any) -> str:
        return show_bidi_controls(super()._render_buffer(buffer))
