"""Text analysis for keyword search, in one place: the write path and every query on every backend.

An episode's *keyword text* (:func:`keyword_text`: its content plus ``metadata["caption"]``
when that is a string, e.g. an image's alt text) is analysed once, at write time, into
*terms* (:func:`index_terms`); the stores keep them space-joined in a ``terms`` column with
their number in ``token_count`` and index that column with an analyzer that only splits at
spaces (SQLite FTS5 ``ascii`` tokenizer; PostgreSQL ``string_to_array(terms, ' ')`` under a
GIN index). A query is analysed by :func:`query_terms` with the same rules, so SQLite and
PostgreSQL match exactly the same rows, and no user text ever reaches a full-text query
parser.

The rules:

1. NFKC normalisation and Unicode case folding.
2. Split into maximal runs of letters, digits and combining marks (so ``don't`` ->
   ``don``, ``t``; ``docs/setup.md`` -> ``docs``, ``setup``, ``md``; ``C++`` -> ``c``;
   emoji, quotes, ``*`` and operators are separators), and split a run again where it
   crosses between a script written with spaces and one written without (Han, Hiragana,
   Katakana, Thai, Lao, Khmer, Myanmar): ``重跑deploy失败后回滚`` -> ``重跑``, ``deploy``,
   ``失败后回滚``.
3. Runs of a spaced script: cut to :data:`MAX_TERM_CHARS`, English stop words
   (:data:`STOPWORDS`) dropped, Latin diacritics removed (``café`` == ``cafe``), then the
   Snowball English stemmer (PyStemmer; Porter 2001, *Snowball: A language for stemming
   algorithms*): ``adoption``/``adopting``/``adopted`` -> ``adopt``.
4. Runs of a script without spaces: every character bigram (the CJK approach of Lucene's
   ``CJKBigramFilter``) and, in indexed text only, every single character, so a query of two
   or more characters matches by bigrams (``绿茶`` finds ``用户喜欢喝绿茶 每天早上一杯``) and a
   one-character query by its unigram.

The module is pure (no I/O) so that the stores and :mod:`memlane.recall` can both use it.
"""

from __future__ import annotations

import itertools
import re
import unicodedata
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

__all__ = [
    "CAPTION_KEY",
    "MAX_TERMS",
    "MAX_TERM_CHARS",
    "STOPWORDS",
    "analyze",
    "index_terms",
    "index_terms_batch",
    "keyword_text",
    "query_terms",
    "runs",
    "tag_words",
    "terms_column",
]

MAX_TERMS = 32
"""At most this many distinct terms are kept from one query (the first ones, in order)."""

MAX_TERM_CHARS = 64
"""Longer runs of letters/digits are cut to this many characters (no real word is longer)."""

CAPTION_KEY = "caption"
"""``metadata[CAPTION_KEY]`` (a string, e.g. an image's description) is searched with the content."""

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

_NO_SPACE_RANGES = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x2E80, 0x2FDF),  # CJK radicals
    (0x3005, 0x3007),  # ideographic iteration mark, closing mark, number zero
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0xFF66, 0xFF9F),  # half-width Katakana
    (0x20000, 0x3FFFF),  # CJK extensions B-H
)


def _stemmer() -> Callable[[list[str]], list[str]] | None:
    try:  # PyStemmer: the Snowball C implementation
        import Stemmer

        stem_words: Callable[[list[str]], list[str]] = Stemmer.Stemmer("english").stemWords
        return stem_words
    except ImportError:  # pragma: no cover - PyStemmer is a dependency
        return None


_STEM = _stemmer()


_ASCII_RUN = re.compile(r"[a-z0-9]+")
"""A run of word characters in ASCII text after case folding (no marks, no no-space scripts)."""


def _no_space(ch: str) -> bool:
    code = ord(ch)
    return code >= 0x0E00 and any(lo <= code <= hi for lo, hi in _NO_SPACE_RANGES)


def _word_char(ch: str) -> bool:
    return ch.isalnum() or unicodedata.category(ch)[0] == "M"


def runs(text: str) -> Iterator[tuple[bool, str]]:
    """Yield ``(no_space_script, run)`` for each maximal run of letters/digits/marks of one script class.

    Args:
        text: Any text; it is NFKC-normalised and case-folded first.

    Yields:
        ``(True, run)`` for a run of a script written without spaces (Han, Kana, Thai, ...),
        ``(False, run)`` otherwise; runs in text order, never empty. A combining mark that
        starts a run (no base character) is dropped.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    if folded.isascii():  # the common case, the same result as the loop below, ~10x faster
        for match in _ASCII_RUN.finditer(folded):
            yield False, match.group()
        return
    yield from _unicode_runs(folded)


def _unicode_runs(folded: str) -> Iterator[tuple[bool, str]]:
    """:func:`runs` of folded text with non-ASCII characters, one character at a time."""
    start, kind = -1, False
    for i, ch in enumerate(folded):
        if not _word_char(ch):
            if start >= 0:
                yield kind, folded[start:i]
            start = -1
        elif unicodedata.category(ch)[0] != "M":  # a mark belongs to its base's run; a leading one is dropped
            this = _no_space(ch)
            if start >= 0 and this != kind:
                yield kind, folded[start:i]
            if start < 0 or this != kind:
                start, kind = i, this
    if start >= 0:
        yield kind, folded[start:]


def _fold_latin(word: str) -> str:
    """Remove combining marks from a word whose base characters are all Latin (``café`` -> ``cafe``)."""
    if word.isascii():
        return word
    decomposed = unicodedata.normalize("NFKD", word)
    bases = [c for c in decomposed if unicodedata.category(c)[0] != "M"]
    if all(ord(c) < 0x250 for c in bases):
        return "".join(bases)
    return word


def _analyze(text: str, *, unigrams: bool) -> list[tuple[str, bool]]:
    """``(term, is_stop_word)`` pairs of ``text`` in text order (repeats kept)."""
    out: list[tuple[str, bool]] = []
    words: list[str] = []

    def flush() -> None:
        if words:
            stems = _STEM(words) if _STEM is not None else words
            out.extend((stem, word in STOPWORDS) for stem, word in zip(stems, words, strict=True))
            words.clear()

    for no_space, run in runs(text):
        if not no_space:
            words.append(_fold_latin(run[:MAX_TERM_CHARS])[:MAX_TERM_CHARS])
            continue
        flush()
        chars = list(run)
        if len(chars) == 1:
            out.append((chars[0], False))
            continue
        if unigrams:
            out.extend((c, False) for c in chars)
        out.extend((a + b, False) for a, b in itertools.pairwise(chars))
    flush()
    return out


def analyze(text: str, *, unigrams: bool = False, keep_stopwords: bool = False) -> list[str]:
    """Terms of ``text`` by the module's rules, in text order, repeats kept.

    Args:
        text: Any text.
        unigrams: Also emit every single character of no-space-script runs longer than one
            character (indexed text); a one-character run always gives its unigram.
        keep_stopwords: Keep English stop words (stemmed like any word).

    Returns:
        Terms made only of letters, digits and marks, each at most :data:`MAX_TERM_CHARS`
        characters.
    """
    return [t for t, stop in _analyze(text, unigrams=unigrams) if keep_stopwords or not stop]


def index_terms(text: str) -> tuple[list[str], int]:
    """The terms an episode's keyword text is indexed by, and its length for BM25.

    Stop words are indexed (so a query made only of them, like ``don't``, still finds its
    text) but not counted in the length, and a query drops them when it has other terms.

    Returns:
        ``(terms, token_count)``: every term (unigrams of no-space scripts included), and the
        number of those that are not stop words (the document length ``dl`` of BM25).
    """
    pairs = _analyze(text, unigrams=True)
    return [t for t, _ in pairs], sum(1 for _, stop in pairs if not stop)


_STEM_CACHE: dict[str, str] = {}
"""``run -> stem`` of the ASCII runs seen by :func:`index_terms_batch` (bounded)."""
_STEM_CACHE_MAX = 200_000


def _ascii_stems(runs_: set[str]) -> dict[str, str]:
    """``{run: stem}`` of ASCII runs: from the cache, the rest stemmed in one call."""
    cache = _STEM_CACHE
    found = {run: stem for run in runs_ if (stem := cache.get(run)) is not None}
    missing = [run for run in runs_ if run not in found]
    if missing:
        words = [run[:MAX_TERM_CHARS] for run in missing]
        stems = _STEM(words) if _STEM is not None else words
        if len(cache) + len(missing) > _STEM_CACHE_MAX:
            cache.clear()
        for run, stem in zip(missing, stems, strict=True):
            found[run] = cache[run] = stem
    return found


def index_terms_batch(texts: Sequence[str]) -> list[tuple[str, int]]:
    """:func:`index_terms` of many texts at once, as stored: ``(terms_column(terms), token_count)``.

    The same terms as :func:`index_terms` text by text (a test checks it). ASCII texts take a
    fast path: NFKC leaves ASCII unchanged and case folding is ``lower()``, so their runs are
    the regex matches of the lower-cased text (its space-separated words when it holds only
    letters, digits and spaces); each distinct run is stemmed once per process
    (a bounded cache) and the batch's new runs in one stemmer call. A stop word is at most
    :data:`MAX_TERM_CHARS` characters, so a run is one exactly when it is in :data:`STOPWORDS`.
    Other texts go through :func:`index_terms`.

    Args:
        texts: Keyword texts (:func:`keyword_text`).

    Returns:
        One ``(terms, token_count)`` per text, in order: the space-joined terms and the
        number of terms that are not stop words.
    """
    split: list[list[str] | None] = []
    distinct: set[str] = set()
    findall = _ASCII_RUN.findall
    for text in texts:
        if text.isascii():
            lowered = text.lower()
            # Only letters, digits and spaces: the runs are the space-separated words (C-speed split).
            ascii_runs: list[str] = (
                lowered.split() if lowered.replace(" ", "").isalnum() else findall(lowered)
            )
            distinct.update(ascii_runs)
            split.append(ascii_runs)
        else:
            split.append(None)
    stem_of = _ascii_stems(distinct).__getitem__
    is_stop = STOPWORDS.__contains__
    out: list[tuple[str, int]] = []
    for text, found in zip(texts, split, strict=True):
        if found is None:
            terms, count = index_terms(text)
            out.append((terms_column(terms), count))
        else:
            out.append((" ".join(filter(None, map(stem_of, found))), len(found) - sum(map(is_stop, found))))
    return out


def query_terms(text: str, *, max_terms: int = MAX_TERMS) -> tuple[str, ...]:
    """Distinct terms of a recall query, in first-seen order.

    Args:
        text: The query.
        max_terms: Keep at most this many (>= 1).

    Returns:
        Plain terms (letters, digits, marks only; no quotes, operators, ``*`` or spaces).
        English stop words are dropped unless the query has nothing else. Empty when the
        query has no letter or digit.

    Raises:
        ValueError: ``max_terms`` < 1.
    """
    if max_terms < 1:
        raise ValueError(f"max_terms must be >= 1, got {max_terms}")
    pairs = _analyze(text, unigrams=False)
    content = [t for t, stop in pairs if not stop]
    return tuple(dict.fromkeys(content or [t for t, _ in pairs]))[:max_terms]


def keyword_text(content: str, metadata: Mapping[str, Any] | None) -> str:
    """The text an episode is keyword-searched by: ``content`` plus ``metadata["caption"]`` if a string."""
    caption = None if metadata is None else metadata.get(CAPTION_KEY)
    if isinstance(caption, str) and caption.strip():
        return f"{content}\n{caption}"
    return content


def tag_words(tag: str) -> frozenset[str]:
    """The case-folded words of a tag, unstemmed, stop words kept (``"Caroline"`` -> ``{"caroline"}``)."""
    return frozenset(run for _, run in runs(tag))


def terms_column(terms: Sequence[str]) -> str:
    """Terms as stored in the ``terms`` column: joined by single spaces."""
    return " ".join(t for t in terms if t)
