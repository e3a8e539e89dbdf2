"""Query text -> safe keyword terms for the stores' full-text indexes.

User text is never handed to a full-text query parser as it is: FTS5 and PostgreSQL
``tsquery`` both have a syntax (quotes, ``NEAR``, ``*``, ``AND``/``OR``/``NOT``, parentheses,
``column:`` filters, ``-``, ``&``, ``|``, ``!``, ``<->``) in which a stray character is an
error or changes the query's meaning. Instead the text is split here into plain terms —
maximal runs of Unicode letters and digits, case-folded — and each store quotes every term
on its own and ORs them (:mod:`memlane.stores.sqlite_fts`, :mod:`memlane.stores.postgres_fts`).
A term therefore only ever means "this word", whatever the user typed.

English stop words (:data:`STOPWORDS`) are dropped, because a disjunctive (OR) query would
otherwise match nearly every episode through "the" or "what"; if a query consists *only* of
stop words they are kept, so such a query still finds something.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

__all__ = ["MAX_TERMS", "MAX_TERM_CHARS", "STOPWORDS", "CommonTermFilter", "keyword_terms"]

MAX_TERMS = 32
"""At most this many distinct terms are kept from one query (the first ones, in order)."""

MAX_TERM_CHARS = 64
"""Longer runs of letters/digits are cut to this many characters (no real word is longer)."""

_TERM = re.compile(r"[^\W_]+")  # letters and digits of any script; '_' and punctuation split terms

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are aren as at be because been before being
    below between both but by can cannot could couldn did didn do does doesn doing don down during
    each few for from further had hadn has hasn have haven having he her here hers herself him
    himself his how i if in into is isn it its itself just let ll me more most mustn my myself no
    nor not now of off on once only or other ought our ours ourselves out over own re s same shan
    she should shouldn so some such t than that the their theirs them themselves then there these
    they this those through to too under until up ve very was wasn we were weren what when where
    which while who whom why will with won would wouldn you your yours yourself yourselves
    """.split()  # noqa: SIM905 - a word list reads better as text
)
"""Common English function words (after Lucene's and NLTK's lists), plus contraction fragments."""


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


class CommonTermFilter:
    """Drops query terms that occur in more than half of the indexed episodes (any backend).

    BM25's inverse document frequency ``log((N - n + 0.5) / (n + 0.5))`` (Robertson & Zaragoza
    2009) is <= 0 once a term is in more than half of the ``N`` rows (SQLite FTS5 clamps it to a
    tiny positive value; PostgreSQL's ``ts_rank_cd`` has no IDF at all, so there such a term
    only adds the same evidence to almost every row). Matching it makes the index score and join
    every row that contains it: measured 12 ms per recall at 10k episodes on SQLite and 250 ms at
    100k on PostgreSQL when every row matched. Dropping it keeps the cost proportional to the
    informative terms. Document frequencies are counted by the backend with a capped query and
    cached per term until the table has grown by 10 %; the decision is table-wide, like the
    index's own statistics. Thread-safe enough: a race only counts a term twice.
    """

    MIN_ROWS = 64
    """Below this many rows every term is kept (counting would cost more than it saves)."""

    def __init__(self) -> None:
        self._cache: dict[str, tuple[bool, int]] = {}

    def informative(self, terms: Sequence[str], rows: int, count: Callable[[str, int], int]) -> list[str]:
        """Return the ``terms`` in at most half of the table's ``rows``.

        Args:
            terms: Query terms (see :func:`keyword_terms`).
            rows: Approximate number of indexed rows (e.g. the largest row key).
            count: ``count(term, cap)`` -> documents containing ``term``, counting at most ``cap``.
        """
        if rows < self.MIN_ROWS:
            return list(terms)
        half = rows // 2
        kept: list[str] = []
        for term in terms:
            cached = self._cache.get(term)
            if cached is None or rows > cached[1] * 1.1:
                cached = (count(term, half + 1) > half, rows)
                self._cache[term] = cached
            if not cached[0]:
                kept.append(term)
        return kept
