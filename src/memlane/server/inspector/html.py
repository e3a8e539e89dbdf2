"""A tiny HTML builder that escapes by default: every page of the inspector is made with it.

Text and attribute values are escaped unless they are :class:`Html` (markup this module, or
:mod:`memlane.server.inspector.charts`, built). There is no way to pass a caller's string
through unescaped, so stored content (episodes, tags, metadata, messages, ids) can never
become markup.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from urllib.parse import quote, urlencode

from memlane.validation import show_bidi_controls

__all__ = ["Html", "el", "esc", "join", "url"]

_VOID = frozenset({"br", "hr", "img", "input", "link", "meta", "col"})


class Html(str):
    """A string that is already safe markup (only built by this module's functions)."""

    __slots__ = ()


def esc(value: object) -> Html:
    """Escape ``value`` as HTML text (``&<>"'``); :class:`Html` passes through unchanged.

    Bidi embedding/override/isolate controls are shown as ``<U+202E>``
    (:func:`memlane.validation.show_bidi_controls`), so stored text cannot reorder a label.
    """
    if isinstance(value, Html):
        return value
    return Html(html.escape(show_bidi_controls(str(value)), quote=True))


def _children(children: Iterable[object]) -> Iterable[Html]:
    for child in children:
        if child is None or child is False:
            continue
        if isinstance(child, str):
            yield esc(child)
        elif isinstance(child, Iterable):
            yield from _children(child)
        else:
            yield esc(child)


def join(parts: Iterable[object], sep: str = "") -> Html:
    """Concatenate ``parts`` (escaping any that are not :class:`Html`), separated by escaped ``sep``."""
    return Html(esc(sep).join(_children(parts)))


def el(tag: str, *children: object, **attrs: object) -> Html:
    """One element: ``el("a", "text", href="/x", class_="c")`` -> ``<a href="/x" class="c">text</a>``.

    Args:
        tag: Element name (a literal in the inspector's code, never user input).
        children: Text (escaped), :class:`Html`, iterables of them; ``None``/``False`` skipped.
        attrs: Attribute values (escaped). A trailing ``_`` is dropped (``class_``) and other
            ``_`` become ``-`` (``aria_label``); ``True`` writes a bare attribute,
            ``None``/``False`` leave it out.
    """
    parts = [tag]
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(key if value is True else f'{key}="{esc(value)}"')
    opening = "<" + " ".join(parts) + ">"
    if tag in _VOID:
        return Html(opening)
    return Html(opening + "".join(_children(children)) + f"</{tag}>")


def url(path: str, params: Mapping[str, object | None] | None = None, *segments: str) -> str:
    """``path`` + percent-encoded ``segments`` + a query string of the non-empty ``params``.

    The result is a plain string: pass it as an attribute value (it is escaped there).
    """
    out = path.rstrip("/") if segments else path
    for segment in segments:
        out += "/" + quote(segment, safe="")
    query = {k: str(v) for k, v in (params or {}).items() if v not in (None, "")}
    return out + ("?" + urlencode(query) if query else "")
