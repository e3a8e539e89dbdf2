"""How likely two statements about the same subject contradict each other: a confidence in [0, 1].

Embedding similarity alone cannot tell "User lives in Paris" / "User lives in Berlin"
(all-MiniLM-L6-v2 cosine 0.67: a contradiction) from "User lives in Paris" / "User works in
Paris" (0.90: compatible). What they *say* can: two statements contradict when they share
their subject and predicate and differ in the value. :func:`judge` aligns the two texts'
content words (lower-cased, crudely stemmed, function words and fillers such as "we",
"now", "always" dropped; :class:`difflib.SequenceMatcher`) and reads the difference:

* **negation**: one side negates what the other states ("likes spicy food" / "does not like
  spicy food", "never drinks alcohol" / "drinks alcohol") and the rest is (nearly) the same
  words: confidence ``0.7 + 0.3 * rest overlap``.
* **value substitution**: exactly one changed span, words on *both* sides (``replace``), at
  most three words each, at least one shared word before it (the subject or predicate), and
  no named value (number, capitalised name) shared *after* it. That last rule separates the
  predicate changing under a fixed value ("lives in Paris" / "works in Paris": compatible)
  from the value changing under a fixed predicate ("aisle seats" / "window seats":
  contradiction). Confidence ``0.6 + 0.25 * overlap + 0.15 * similarity`` where overlap is
  the shared share of the longer text's content words (saturating at 2/3) and similarity is
  ``(cosine - 0.3) / 0.5`` clipped to [0, 1].
* anything else scores low: one side only adds words ("likes tea" / "likes tea with milk":
  an elaboration, ``<= 0.35``), several changed spans (``<= 0.55``), nothing changed (a
  restatement, 0.05), or no shared content word (unrelated, 0).

The rules and constants were set by hand on the labelled pairs in
``benchmarks/data/contradictions.jsonl`` (written for this purpose; nothing is fitted to an
evaluation set): ``benchmarks/contradictions.py`` measures precision and recall at the
default threshold 0.8. English only; the lexical rules know no synonyms, antonyms ("dark" /
"light" count as a changed value because of their position, not their meaning) or
paraphrases, so a contradiction phrased with different words is missed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from difflib import SequenceMatcher

__all__ = ["Judgement", "judge"]

_WORD = re.compile(r"[^\W_]+(?:[.:][0-9]+)*(?:'[a-z]+)?", re.UNICODE)

_NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "nobody",
        "nothing",
        "none",
        "nor",
        "neither",
        "cannot",
        "longer",
        "stopped",
        "quit",
    }
)
"""Words that negate (``n't`` contractions are split into ``not`` first)."""

_FILLER_WORDS = """a an the this that these those and or but so of to in on at by for from with as into about
    over under per via i me my we us our you your he him his she her it its they them their
    is are was were be been being am do does did has have had having will would shall should can
    could may might must
    now currently still always usually often also really just very today these days anymore
    there here then than"""
_FILLERS = frozenset(_FILLER_WORDS.split())
"""Function words and time/frequency fillers that carry no value of their own."""


@dataclass(frozen=True, slots=True)
class Judgement:
    """What :func:`judge` concluded about two texts.

    Attributes:
        confidence: How likely they contradict, in [0, 1].
        kind: ``negation``, ``value``, ``elaboration``, ``mixed``, ``same`` or ``unrelated``.
        evidence: The changed content words, ``a``'s then ``b``'s, e.g. ``"paris -> berlin"``
            (spans joined by ``"; "``; empty when nothing changed).
    """

    confidence: float
    kind: str
    evidence: str


@dataclass(frozen=True, slots=True)
class _Token:
    stem: str
    word: str  # lower-cased, as written
    named: bool  # a number or a capitalised word not starting the text: a named value


def _stem(word: str) -> str:
    word = word.removesuffix("'s")
    for suffix, repl in (("ies", "y"), ("ied", "y"), ("ing", ""), ("ed", ""), ("es", ""), ("s", "")):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            return word[: -len(suffix)] + repl
    return word


def _tokens(text: str) -> tuple[list[_Token], int]:
    """Content tokens of ``text`` and its number of negations."""
    text = re.sub(r"n't\b", " not", text.replace("\u2019", "'"))
    out: list[_Token] = []
    negations = 0
    for position, match in enumerate(_WORD.finditer(text)):
        raw = match.group(0)
        word = raw.lower()
        if word in _NEGATIONS:
            negations += 1
            continue
        if word in _FILLERS:
            continue
        named = any(ch.isdigit() for ch in raw) or (position > 0 and raw[:1].isupper())
        out.append(_Token(_stem(word), word, named))
    return out, negations


def _similarity(cosine: float) -> float:
    return min(1.0, max(0.0, (cosine - 0.3) / 0.5))


def judge(a: str, b: str, cosine: float) -> Judgement:
    """How likely ``a`` and ``b`` (about the same subject) contradict: see the module docstring.

    Args:
        a: One statement (any length; meant for one-sentence facts).
        b: The other.
        cosine: Cosine similarity of their embeddings, in [-1, 1].

    Returns:
        A :class:`Judgement` with ``confidence`` in [0, 1].
    """
    ta, neg_a = _tokens(a)
    tb, neg_b = _tokens(b)
    sa, sb = [t.stem for t in ta], [t.stem for t in tb]
    opcodes = SequenceMatcher(None, sa, sb, autojunk=False).get_opcodes()
    ops = [op for op in opcodes if op[0] != "equal"]
    shared = sum(i2 - i1 for tag, i1, i2, _, _ in opcodes if tag == "equal")
    longest = max(len(sa), len(sb), 1)
    overlap = shared / longest
    changed = "; ".join(
        f"{' '.join(t.word for t in ta[i1:i2]) or '-'} -> {' '.join(t.word for t in tb[j1:j2]) or '-'}"
        for _, i1, i2, j1, j2 in ops
    )
    if shared == 0:
        return Judgement(0.0, "unrelated", changed)
    if (neg_a > 0) != (neg_b > 0):
        confidence = 0.7 + 0.3 * overlap if overlap >= 0.5 else 0.4 * overlap
        evidence = "negated" + (f"; {changed}" if changed else "")
        return Judgement(min(1.0, confidence), "negation", evidence)
    if not ops:
        return Judgement(0.05, "same", "")
    if len(ops) > 1:
        return Judgement(min(0.55, 0.4 * overlap + 0.2 * _similarity(cosine)), "mixed", changed)
    tag, i1, i2, j1, j2 = ops[0]
    if tag != "replace":
        return Judgement(min(0.35, 0.2 * overlap + 0.15 * _similarity(cosine)), "elaboration", changed)
    named_after = any(t.named for t in ta[i2:]) or any(t.named for t in tb[j2:])
    if i1 == 0 or overlap < 0.5 or i2 - i1 > 3 or j2 - j1 > 3 or named_after:
        return Judgement(min(0.55, 0.4 * overlap + 0.2 * _similarity(cosine)), "mixed", changed)
    confidence = 0.6 + 0.25 * min(1.0, overlap * 1.5) + 0.15 * _similarity(cosine)
    return Judgement(min(1.0, confidence), "value", changed)
