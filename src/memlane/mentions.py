"""Entity names: the canonical key of a name, and offline mention extraction (pure, no I/O).

A leaf module (it imports nothing of memlane): the knowledge graph links episodes with it on write
(:mod:`memlane.graph`) and recall finds the entities a query names with the same rules
(:mod:`memlane.recall.entities`).

:func:`entity_key` is the one normalisation every name goes through before it is looked up or
stored (so ``"Acme Corp"``, ``" acme  corp "`` and ``"ACME CORP"`` are one entity).

:func:`extract_mentions` finds entity mentions in an episode without any model, so episodes can
be found by entity offline ("vector store with named entity metadata"): the episode's tags, a
speaker (``"Alice: ..."`` at the start, or ``metadata["speaker"]``), quoted names, e-mail-like
and id-like tokens (``customer_123``, ``INV-2024-001``) and runs of capitalised words that are
not a sentence-opening function word (a possessive ``'s`` dropped: "Caroline's" names Caroline).
What it cannot do: resolve pronouns ("she"), tell two people with one name apart, find lower-case names
("acme"), or know that "Bob" and "Robert" are one person (merge them with ``merge_entities``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_ENTITY_CHARS", "Mention", "entity_key", "extract_mentions", "extract_mentions_batch"]

MAX_ENTITY_CHARS = 200
"""Longest entity name (the identifier bound)."""

_SPACES = re.compile(r"\s+")
_EDGE = re.compile(r"^[\W_]+|[\W_]+$")
_EMAIL = re.compile(r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b")
_ID_LIKE = re.compile(
    r"(?<![\w@.])(?=[A-Za-z_-]*\d)(?=\w*[A-Za-z])[A-Za-z0-9]+(?:[_-][A-Za-z0-9]+)+(?![\w@])"
)
_QUOTED = re.compile(r"[\"“”]([^\"“”\n]{2,60})[\"“”]")
_SPEAKER = re.compile(r"^\s*([A-Z][\w'-]{0,40}(?: [A-Z][\w'-]{0,40})?):\s")
_WORD = r"[A-Z][A-Za-z'&]*(?:-[A-Za-z]+)*(?![\w-])"
_CAPITALISED = re.compile(rf"\b{_WORD}(?:[ \t]+(?:(?:of|de|van|von|the|and|&)[ \t]+)?{_WORD})*")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+|\n\s*)$")
_POSSESSIVE = re.compile("['\u2019]s$")
"""A possessive ending: "Caroline's kids" names Caroline."""

_FUNCTION_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "i",
        "i'm",
        "i've",
        "i'd",
        "i'll",
        "we",
        "you",
        "he",
        "she",
        "it",
        "they",
        "my",
        "our",
        "your",
        "his",
        "her",
        "its",
        "their",
        "this",
        "that",
        "these",
        "those",
        "there",
        "here",
        "what",
        "when",
        "where",
        "who",
        "why",
        "how",
        "which",
        "yes",
        "no",
        "ok",
        "okay",
        "hi",
        "hello",
        "hey",
        "thanks",
        "thank",
        "please",
        "so",
        "and",
        "but",
        "or",
        "if",
        "then",
        "also",
        "just",
        "actually",
        "now",
        "today",
        "yesterday",
        "tomorrow",
        "maybe",
        "well",
        "oh",
        "great",
        "good",
        "sure",
        "sorry",
        "let",
        "lets",
        "let's",
        "do",
        "does",
        "did",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "am",
        "can",
        "could",
        "would",
        "should",
        "will",
        "may",
        "might",
        "must",
        "have",
        "has",
        "had",
        "not",
        "never",
        "always",
        "sometimes",
        "after",
        "before",
        "since",
        "until",
        "while",
        "as",
        "at",
        "in",
        "on",
        "of",
        "for",
        "to",
        "from",
        "by",
        "with",
        "about",
        "into",
        "over",
        "under",
        "again",
        "all",
        "any",
        "some",
        "every",
        "each",
        "most",
        "many",
        "much",
        "more",
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]
)


def entity_key(name: str) -> str:
    """The canonical key of an entity name: case-folded, spaces collapsed, edge punctuation and
    a leading ``"the "`` dropped, commas removed (``"The Acme, Corp."`` -> ``"acme corp"``); a name
    of punctuation only keeps it (``"<"`` -> ``"<"``), so a visible name always has a key."""
    text = _SPACES.sub(" ", name.replace(",", " ")).strip().casefold()
    text = _EDGE.sub("", text)
    if text.startswith("the ") and len(text) > 4:
        text = text[4:]
    if not text:  # only punctuation: the name itself, case-folded and trimmed
        text = _SPACES.sub(" ", name).strip().casefold()
    return text[:MAX_ENTITY_CHARS]


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity mention found in a text.

    Attributes:
        name: As written (``"Acme Corp"``). entity_type: ``"tag"``, ``"speaker"``, ``"email"``,
            ``"id"``, ``"quoted"`` or ``"name"``. key: Its :func:`entity_key`.
    """

    name: str
    entity_type: str
    key: str = ""


def _names(content: str) -> Iterable[str]:
    """Runs of capitalised words; a lone word opening a sentence only if it is capitalised elsewhere too."""
    runs = []
    for match in _CAPITALISED.finditer(content):
        opening = match.start() == 0 or bool(_SENTENCE_START.search(content[: match.start()]))
        runs.append((match.group(0).split(), opening))
    elsewhere = {w for words, opening in runs for w in (words[1:] if opening else words)}
    for words, opening in runs:
        stripped = False
        if opening:
            while words and words[0].casefold().strip(".'") in _FUNCTION_WORDS:
                words, stripped = words[1:], True
            if len(words) == 1 and not stripped and words[0] not in elsewhere:
                continue
        while words and words[-1].casefold() in {"of", "de", "van", "von", "the", "and", "&"}:
            words = words[:-1]
        name = _POSSESSIVE.sub("", " ".join(words)).rstrip(".'-")
        if name and name.casefold() not in _FUNCTION_WORDS and len(name) > 1:
            yield name


def extract_mentions(
    content: str, tags: Iterable[str] = (), metadata: Mapping[str, Any] | None = None, *, limit: int = 32
) -> list[Mention]:
    """Entity mentions of one episode, without a model (see the module docstring).

    Args:
        content: The episode's text.
        tags: Its normalised tags (each one is an entity of type ``"tag"``).
        metadata: Its metadata; a string ``metadata["speaker"]`` is a speaker.
        limit: Most mentions returned (>= 1), first found first.

    Returns:
        Distinct mentions by :func:`entity_key`, in the order: tags, speakers, e-mails, ids,
        quoted names, capitalised names.
    """
    return _extract(content, tags, metadata, limit, {})


def extract_mentions_batch(
    items: Iterable[tuple[str, Iterable[str], Mapping[str, Any] | None]], *, limit: int = 32
) -> list[list[Mention]]:
    """:func:`extract_mentions` of each ``(content, tags, metadata)``, the same lists, in order.

    A batch (the episodes of one ``remember_episodes`` call) shares one memo of the mentions it
    has built (name and type -> :class:`Mention`, its :func:`entity_key` computed once), so the
    tags and names repeated across a batch are keyed once; mentions are immutable, so sharing them
    changes nothing.

    Args:
        items: ``(content, tags, metadata)`` per episode, as :func:`extract_mentions` takes them.
        limit: As for :func:`extract_mentions`.

    Returns:
        One list of mentions per item.
    """
    memo: dict[tuple[str, str], Mention] = {}
    return [_extract(content, tags, metadata, limit, memo) for content, tags, metadata in items]


def _extract(
    content: str,
    tags: Iterable[str],
    metadata: Mapping[str, Any] | None,
    limit: int,
    memo: dict[tuple[str, str], Mention],
) -> list[Mention]:
    """:func:`extract_mentions` with a memo of built mentions (``(name, type)`` -> mention).

    A pattern runs only on a text holding the character it needs (``:`` for a speaker, ``@`` for an
    e-mail, ``_`` or ``-`` for an id, a quote for a quoted name, an ASCII capital for a name):
    without it the pattern finds nothing and a substitution by it returns the text unchanged, so
    skipping it gives the same mentions (``tests/unit/test_mentions_batch.py`` checks each rule).
    """
    found: dict[str, Mention] = {}

    def add(name: str, kind: str) -> None:
        mention = memo.get((name, kind))
        if mention is None:
            mention = memo[(name, kind)] = Mention(name.strip(), kind, entity_key(name))
        key = mention.key
        if key and key not in found and len(found) < limit:
            found[key] = mention

    for tag in tags:
        add(tag, "tag")
    speaker = (metadata or {}).get("speaker")
    if isinstance(speaker, str):
        add(speaker, "speaker")
    _scan(content, add)
    return list(found.values())


def _scan(content: str, add: Callable[[str, str], None]) -> None:
    """``add(name, type)`` each mention of ``content`` in :func:`extract_mentions`'s order after the
    metadata speaker: a speaker head, e-mails, ids, quoted names, capitalised names (see :func:`_extract`)."""
    head = _SPEAKER.match(content) if ":" in content else None
    if head:
        add(head.group(1), "speaker")
        content = content[head.end() :]
    emails = content
    if "@" in content:
        for match in _EMAIL.finditer(content):
            add(match.group(0), "email")
        emails = _EMAIL.sub(" ", content)
    if "_" in emails or "-" in emails:
        for match in _ID_LIKE.finditer(emails):
            add(match.group(0), "id")
    rest = emails
    if '"' in emails or "\u201c" in emails or "\u201d" in emails:
        for match in _QUOTED.finditer(emails):
            add(match.group(1), "quoted")
        rest = _QUOTED.sub(" ", emails)
    if rest.lower() != rest:  # an ASCII capital (which _CAPITALISED needs) lower-cases to another character
        for name in _names(rest):
            add(name, "name")
