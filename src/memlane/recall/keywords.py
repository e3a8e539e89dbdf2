"""Query text -> safe keyword terms for the stores' full-text indexes.

User text is never handed to a full-text query parser as it is: FTS5 and PostgreSQL
``tsquery`` both have a syntax (quotes, ``NEAR``, ``*``, ``AND``/``OR``/``NOT``, parentheses,
``column:`` filters, ``-``, ``&``, ``|``, ``!``, ``<->``) in which a stray character is an
error or changes the query's meaning. Instead the text is split here into plain terms —
maximal runs of Unicode letters and digits, case-folded — and each store quotes every term
on its own and ORs them (:mod:`memlane.stores.sqlite.fts`, :mod:`memlane.stores.postgres.fts`).
A term therefore only ever means "this word", whatever the user typed.

English stop words (:data:`STOPWORDS`) are dropped, because a disjunctive (OR) query would
otherwise match nearly every episode through "the" or "what"; if a query consists *only* of
stop words they are kept, so such a query still finds something.
"""

from __future__ import annotations

import re

from memlane.analysis import STOPWORDS

__all__ = ["MAX_TERMS", "MAX_TERM_CHARS", "STOPWORDS", "keyword_terms"]

MAX_TERMS = 32
"""At most this many distinct terms are kept from one query (the first ones, in order)."""

MAX_TERM_CHARS = 64
"""Longer runs of letters/digits are cut to this many characters (no real word is longer)."""

_TERM = re.compile(r"[^\W_]+")  # letters and digits of any script; '_' and punctuation split terms


def keyword_terms(text: str, *, max_terms: int = MAX_TERMS) -> tuple[str, ...]:
    """Split ``text`` into distinct, case-folded keyword terms, stop words dropped.

    Args:
        text: Any user text (a recall query).
        max_terms: Keep at most this many distinct terms (>= 1), the first in text order.

    Returns:
        Terms made only of Unicode letters and digits (no quotes, operators, ``*``, ``:`` or
        whitespace), each at most :data:`MAX_TERM_CHARS` characters, in first-seen order.
        Empty when the text has no letter or digit. Stop words are removed unless nothing
        else is left.

    Raises:
        ValueError: ``max_terms`` < 1.
    """
    if max_terms < 1:
        raise ValueError(f"max_terms must be >= 1, got {max_terms}")
    seen: dict[str, None] = {}
    for match in _TERM.finditer(text.casefold()):
        seen.setdefault(match.group()[:MAX_TERM_CHARS], None)
    terms = list(seen)
    content = [t for t in terms if t not in STOPWORDS]
    return tuple((content or terms)[:max_terms])
