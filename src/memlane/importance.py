"""Importance at write time without a model: a 1-10 estimate from an episode's content.

``importance="auto"`` (an argument of ``remember_episode``, a field of
:class:`memlane.EpisodeInput`, or ``MemoryConfig(importance="auto")`` for every unrated
episode) stores :func:`estimate_importance` of the content instead of leaving it unrated. An
explicit number always wins; without ``"auto"`` an unrated episode stays unrated (ranked as 5).

What the estimate looks at, and nothing else (no I/O, no model, no randomness, no clock, so
the same text always gets the same score):

The words of the content, analysed by :mod:`memlane.analysis` (NFKC, case folding, Snowball
stems, so ``allergy``/``allergies``/``allergic`` and ``fail``/``failed``/``failing`` match
alike; stop words kept), are looked up in eight cue classes; each class that fires
contributes its level:

==============  =====  ==================================================================
class           level  cues (examples)
==============  =====  ==================================================================
health          9      allergy, diagnosed, diabetes, asthma, seizures, medication,
                       surgery, pregnant, wheelchair, deaf, penicillin, insulin, hospital,
                       pacemaker, "hard of hearing", "blood pressure"
identity        8      name, "is called", born, birthday, "lives in", native, vegan,
                       "works as", "new job", married, "passed away", "moved to Lisbon", "speaks Tamil",
                       "grew up", "originally from", "years old", "goes by", a religion,
                       "is a nurse" (an occupation after *is*/*as*)
failure         7      fail, error, crash, broke, bug, outage, roll back, revert,
                       corrupt, lost, stolen, fraud, breach, leak, declined, rejected,
                       bounced, cancelled, denied, locked, unpaid, owes, "ran out",
                       cracked, accidentally, wrong, unauthorized, hacked, overdrawn,
                       "is down", "late fee"
instruction     7      always, never, every, only, required, "don't", "from now on",
                       stop, should, or a clause opening with a command verb after
                       optional lead-ins (``Use black ...``, ``Please keep answers short``)
commitment      6      deadline, due, promised, agreed, scheduled, appointment, meeting,
                       remind, "need to", "have to", must, before, expires, renew,
                       submit, booked, will; 7 when the text also names a date or time
                       (weekday, month, ``15th``, ``3pm``, ``7:40``, tomorrow, "next
                       week", "by the end of the month", "within two weeks")
preference      6      prefer, rather, like, love, hate, dislike, favourite, enjoy, want,
                       fan, keen, "can't stand"
money           6      a currency sign or word ($, €, £, dollars, euros), pay, payment,
                       invoice, salary, rent, deposit, refund, bank, card, tax, insurance
family          6      daughter, son, kid, husband, wife, mother, father, partner, ...
==============  =====  ==================================================================

The score is the highest level that fired, +1 when two or more classes fired (a deadline
about money, an allergy of the user's daughter), +1 for each severity word (severe, critical,
urgent, security, password, production, customer, data, database, corrupt, fraud, silently;
at most +2), clamped to 1-10. Money next to a negation (``didn't``, ``not``, ``no``, ``never``)
also counts as a failure (a payment that did not arrive), and so does a negated "it works"
verb (``won't install``, ``doesn't start``, ``can't connect``). Otherwise negation does not
lower a score: "User has no food allergies" is as worth keeping as "User has a food allergy".
A word whose stem is a cue it does not mean (``lovely`` -> ``love``) is read as ``nice``.

Without any cue: 2 when at least two thirds of the words are small talk (greetings, thanks,
acknowledgements, "ok", "lol", "see you tomorrow", the weather), 3 for at most two other
words, 5 for a long
text (30 words or more), 4 otherwise. Text that is mostly in a script without an English
vocabulary here (non-Latin letters, Han/Kana/Thai, ...) or Latin-script text with no English
function word at all (four words or more) gets the neutral :data:`NEUTRAL_IMPORTANCE` (5):
the cues are English, and an unknown language must not be scored as small talk. Text with no
letters or digits (``"👍"``) is neutral too.

Agreement with hand-labelled statements (``tests/unit/importance_labels.jsonl``) is reported
in ``benchmarks/results/importance.md`` (``benchmarks/importance_agreement.py``): on the split
written before the last revision of these rules and scored once after it, 76 % of the estimates
lie in the labelled band and 87 % within one point. The lexicon is English and finite: a fact
whose words are not in it (``first language is Polish``, ``on dialysis``) gets 4.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import pairwise

from memlane.analysis import STOPWORDS, analyze, runs

__all__ = [
    "AUTO_IMPORTANCE",
    "NEUTRAL_IMPORTANCE",
    "ImportanceEstimate",
    "estimate_importance",
    "explain_importance",
]

AUTO_IMPORTANCE = "auto"
"""The ``importance`` (argument, :class:`memlane.EpisodeInput` field, config) that asks for an estimate."""

NEUTRAL_IMPORTANCE = 5.0
"""The estimate for text the cues cannot read (another language, no words): the unrated rank."""

_MAX_SEVERITY = 2
_LONG_WORDS = 30
_FEW_WORDS = 2
_MIN_WORDS_FOR_LANGUAGE = 4


@dataclass(frozen=True, slots=True)
class ImportanceEstimate:
    """An estimated importance and why.

    Attributes:
        score: The estimate, a whole number in [1.0, 10.0].
        signals: The cue classes that fired, in a fixed order (``"health"``, ``"identity"``,
            ``"failure"``, ``"instruction"``, ``"commitment"``, ``"preference"``, ``"money"``,
            ``"family"``, then ``"date"`` and one ``"severity"`` per severity word), or the
            reason for a score without cues: ``"small_talk"``, ``"short"``, ``"long"``,
            ``"plain"`` or ``"unreadable"`` (another language or no words).
    """

    score: float
    signals: tuple[str, ...]


def _stems(words: str) -> frozenset[str]:
    return frozenset(analyze(words, keep_stopwords=True))


def _pairs(*phrases: str) -> frozenset[tuple[str, str]]:
    out = set()
    for phrase in phrases:
        terms = analyze(phrase, keep_stopwords=True)
        out.add((terms[0], terms[1]))
    return frozenset(out)


_HEALTH = _stems(
    """allergy allergies allergic anaphylaxis epipen diagnosed diagnosis diabetes diabetic insulin asthma
    asthmatic inhaler epilepsy epileptic seizure seizures medication medications medicine prescription
    surgery surgeries pregnant pregnancy wheelchair deaf blind disability disabled cancer chemotherapy
    oncologist dementia alzheimer autism autistic adhd depression anxiety migraine migraines heart stroke
    warfarin penicillin hospital hospitalised hospitalized illness chronic disease injury injured
    intolerant intolerance celiac coeliac blood antidepressant antidepressants antibiotic antibiotics therapy
    therapist pacemaker implant prosthesis"""
)
_HEALTH_PAIRS = _pairs("of hearing", "hearing aid", "hearing loss", "blood pressure", "panic attacks")
_IDENTITY = _stems(
    """name named born birthday native natively nationality citizen vegan vegetarian halal kosher alcohol
    religion married marriage divorced widowed engaged died death funeral pronouns retired muslim christian
    jewish hindu buddhist sikh catholic atheist"""
)
_COPULAS = _stems("is am was as")
_OCCUPATIONS = _stems(
    """engineer developer architect nurse teacher lawyer designer pilot scientist researcher student
    programmer"""
)
_IDENTITY_PAIRS = _pairs(
    "is called",
    "am called",
    "live in",
    "lives in",
    "living in",
    "works as",
    "work as",
    "new job",
    "passed away",
    "goes by",
    "go by",
    "grew up",
    "years old",
    "single parent",
    "be called",
    "originally from",
)
_MOVED = _stems("moved moving moves relocated relocating")
_MOVED_LINKS = _stems("to from")
_SPEAKS = _stems("speak speaks")
_FAILURE = _stems(
    """fail fails failed failing failure error errors crash crashed crashes broke broken bug bugs outage
    outages rollback reverted revert corrupt corrupted corruption lost lose losing stolen theft fraud
    fraudulent fraudulently breach breached leak leaks leaked declined rejected bounced cancelled canceled
    denied locked unpaid overdue owe owes owed debt segfault exception timeout incident missed cracked
    shattered damaged flooded accidentally accident mistake mistakenly wrong unauthorized unauthorised hacked
    compromised phishing malware vulnerability overdrawn overdraft oomkilled"""
)
_FAILURE_PAIRS = _pairs(
    "roll back",
    "rolled back",
    "ran out",
    "run out",
    "went down",
    "segmentation fault",
    "keeps restarting",
    "without authorization",
    "late fee",
    "late payment",
    "is down",
    "are down",
    "was down",
)
_BREAKABLE = _stems(
    "work works install installs start starts load loads open opens connect compile boot sync arrive"
)
_INSTRUCTION = _stems("always never every should stop avoid required require only")
_INSTRUCTION_PAIRS = _pairs("don't", "do not", "now on")
_IMPERATIVES = _stems(
    """use add write format keep answer prefer avoid include put make run ask reply respond follow stick
    store push commit send check call remind remember renew document test show explain list sort suggest
    recommend"""
)
_LEAD_INS = _stems(
    "please kindly really also just actually btw ok okay so and then note fyi reminder today tonight now"
)
_CLAUSE = re.compile(r"[.:;!?\n]")
_COMMITMENT = _stems(
    """deadline due promise promised promises agreed agree committed commit scheduled schedule appointment
    meeting meet remind reminder remember must before expire expires expired expiry renew renewal submit
    submitted booked book closes deadline departs depart start starts plan plans planned will would shall
    demo review interview launch release dentist doctor ll"""
)
_COMMITMENT_PAIRS = _pairs("need to", "needs to", "have to", "has to", "going to", "sign by", "takes effect")
_PREFERENCE_PAIRS = _pairs("can't stand")
_PREFERENCE = _stems(
    """prefer prefers preferred rather like likes love loves hate hates dislike dislikes favourite favorite
    enjoy enjoys want wants wish fan keen"""
)
_MONEY = _stems(
    """dollar dollars euro euros pound pounds usd eur gbp pay paid payment payments invoice invoices salary
    rent deposit refund refunds bank card charged charge tax taxes insurance mortgage loan fee fees price
    subscription"""
)
_CURRENCY = re.compile(r"[$€£¥₹]\s?\d|\d\s?[$€£¥₹]")
_FAMILY = _stems(
    """daughter daughters son sons kid kids child children husband wife partner mother father mom mum dad
    sister brother parents grandmother grandfather baby"""
)
_SEVERITY = _stems(
    """severe critical urgent urgently emergency security password passwords production prod customer
    customers data database corrupt corrupted fraud fraudulent fraudulently silently breach admin credential
    credentials secret secrets"""
)
_DATE_WORDS = _stems(
    """monday tuesday wednesday thursday friday saturday sunday january february march april june july
    august september october november december tomorrow tonight"""
)
_DATE = re.compile(
    r"\b\d{1,2}(?:st|nd|rd|th)\b|\b\d{1,2}(?::\d{2})?\s?(?:am|pm)\b|\b\d{1,2}:\d{2}\b|(?-i:\bMay\b)"
    r"|\bnext (?:week|month|year)\b|\bend of the (?:day|week|month|quarter|year)\b"
    r"|\bwithin (?:a|an|one|two|three|\d+) (?:days?|weeks?|months?)\b",
    re.IGNORECASE,
)
_NEGATION = _stems("not no never nothing cannot")
_NEGATION_PAIRS = _pairs(
    "didn't",
    "don't",
    "doesn't",
    "hasn't",
    "wasn't",
    "isn't",
    "won't",
    "can't",
    "couldn't",
    "aren't",
    "weren't",
)
_SMALL_TALK = _stems(
    """hi hello hey heya hiya thanks thank thx ty cheers ok okay k sure cool nice great good fine awesome lol
    haha hah yeah yes yep yup nope bye goodbye later talk morning afternoon evening night welcome worries
    ask asking asked weekend tomorrow today see weather sunny rainy cold warm interesting funny hmm think
    let work works sound sounds got get say says said user appreciate much lot well right alright day
    have nice wow oh ah hmm please mate ha make makes sense"""
)

_LEVELS: tuple[tuple[str, int], ...] = (
    ("health", 9),
    ("identity", 8),
    ("failure", 7),
    ("instruction", 7),
    ("commitment", 6),
    ("preference", 6),
    ("money", 6),
    ("family", 6),
)


def estimate_importance(text: str) -> float:
    """The importance, 1-10, that :mod:`memlane.importance`'s rules give ``text``.

    Args:
        text: An episode's content (any language, any length).

    Returns:
        A whole number in [1.0, 10.0]; :data:`NEUTRAL_IMPORTANCE` for text the rules cannot read.
    """
    return explain_importance(text).score


_FALSE_FRIENDS = re.compile(r"\blovely\b", re.IGNORECASE)
"""Words whose stem is a cue they do not mean (``lovely`` stems to ``love``): read as ``nice``."""


def explain_importance(text: str) -> ImportanceEstimate:
    """:func:`estimate_importance` of ``text`` with the cue classes that produced it.

    Args:
        text: An episode's content.

    Returns:
        The :class:`ImportanceEstimate`.
    """
    if not _readable(text):
        return ImportanceEstimate(NEUTRAL_IMPORTANCE, ("unreadable",))
    text = _FALSE_FRIENDS.sub("nice", text)
    terms = analyze(text, keep_stopwords=True)
    fired = _classes(text, terms)
    if not fired:
        return _without_cues(text)
    levels = dict(_LEVELS)
    score = max(levels[name] for name in fired)
    date = "commitment" in fired and _has_date(text, terms)
    if date:
        score = max(score, levels["commitment"] + 1)
    if len(fired - {"preference"} if "instruction" in fired else fired) > 1:
        score += 1
    severity = min(_MAX_SEVERITY, sum(1 for term in terms if term in _SEVERITY))
    signals = tuple(name for name, _ in _LEVELS if name in fired)
    signals += ("date",) * date + ("severity",) * severity
    return ImportanceEstimate(float(min(10, max(1, score + severity))), signals)


def _readable(text: str) -> bool:
    """Mostly letters of a spaced script in ASCII: what the English cues can read."""
    chars = list(runs(text))
    if not chars:
        return False
    ascii_chars = sum(len(run) for no_space, run in chars if not no_space and run.isascii())
    return 2 * ascii_chars >= sum(len(run) for _, run in chars)


def _english(text: str) -> bool:
    """Fewer than four words, or at least one English function word among them."""
    words = [run for _, run in runs(text)]
    return len(words) < _MIN_WORDS_FOR_LANGUAGE or any(word in STOPWORDS for word in words)


def _classes(text: str, terms: list[str]) -> set[str]:
    """The names of the cue classes of ``text`` (``terms``: its analysed words, stop words kept)."""
    words = set(terms)
    pairs = set(pairwise(terms))
    fired = set()
    checks = (
        ("health", words & _HEALTH or pairs & _HEALTH_PAIRS),
        (
            "identity",
            words & _IDENTITY or pairs & _IDENTITY_PAIRS or _moved_or_speaks(terms) or _occupation(terms),
        ),
        ("failure", words & _FAILURE or pairs & _FAILURE_PAIRS),
        ("instruction", words & _INSTRUCTION or pairs & _INSTRUCTION_PAIRS or _imperative(text)),
        ("commitment", words & _COMMITMENT or pairs & _COMMITMENT_PAIRS),
        ("preference", words & _PREFERENCE or pairs & _PREFERENCE_PAIRS),
        ("money", words & _MONEY or _CURRENCY.search(text)),
        ("family", words & _FAMILY),
    )
    for name, hit in checks:
        if hit:
            fired.add(name)
    negated = words & _NEGATION or pairs & _NEGATION_PAIRS
    if negated and ("money" in fired or words & _BREAKABLE):
        fired.add("failure")
    return fired


def _imperative(text: str) -> bool:
    """A clause (at the start or after ``.:;!?`` or a line break) opens with a command verb.

    Lead-in words (``please``, ``really``, ``also``, ``note``, ...) before the verb are skipped.
    """
    for clause in _CLAUSE.split(text):
        terms = [term for term in analyze(clause, keep_stopwords=True) if term not in _LEAD_INS]
        if terms and terms[0] in _IMPERATIVES:
            return True
    return False


def _moved_or_speaks(terms: list[str]) -> bool:
    """``moved to Lisbon``, ``relocated from Toronto``, ``speaks Portuguese``: a place or a language.

    The word after ``moved to``/``moved from``/``speaks`` must be letters and not a stop word, so
    ``moved to the third floor``, ``moves to 9:30`` and ``speak to them`` do not count.
    """
    for i, term in enumerate(terms[:-1]):
        if term in _SPEAKS and _place(terms[i + 1]):
            return True
        if term in _MOVED and i + 2 < len(terms) and terms[i + 1] in _MOVED_LINKS and _place(terms[i + 2]):
            return True
    return False


def _place(term: str) -> bool:
    """A word that can name a place or a language: letters only, not a stop word (``9:30`` is not)."""
    return term.isalpha() and term not in STOPWORDS


def _occupation(terms: list[str]) -> bool:
    """An occupation after *is*, *am*, *was* or *as*: ``works as a nurse``, not ``parent-teacher meeting``."""
    seen_copula = False
    for term in terms:
        if term in _OCCUPATIONS and seen_copula:
            return True
        seen_copula = seen_copula or term in _COPULAS
    return False


def _has_date(text: str, terms: list[str]) -> bool:
    return bool(set(terms) & _DATE_WORDS) or bool(_DATE.search(text))


def _without_cues(text: str) -> ImportanceEstimate:
    """The score of readable text in which no cue class fired."""
    content = [term for term in analyze(text) if len(term) > 1 and term not in _LEAD_INS]
    if 3 * sum(1 for term in content if term in _SMALL_TALK) >= 2 * len(content):
        return ImportanceEstimate(2.0, ("small_talk",))
    if not _english(text):
        return ImportanceEstimate(NEUTRAL_IMPORTANCE, ("unreadable",))
    if len(content) <= _FEW_WORDS:
        return ImportanceEstimate(3.0, ("short",))
    if len(content) >= _LONG_WORDS:
        return ImportanceEstimate(5.0, ("long",))
    return ImportanceEstimate(4.0, ("plain",))
