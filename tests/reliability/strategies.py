"""Hypothesis strategies for hostile input: any Unicode (lone surrogates and NUL included),
invisible text, huge strings, odd numbers and nested JSON."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

NASTY_CHARS = [
    "\x00",
    "\ud800",
    "\udc00",
    "\udfff",
    "\ud83d",
    "\u200b",
    "\u200d",
    "\u2060",
    "\ufeff",
    "\x1b",
    "\u3164",
]
NASTY_STRINGS = [
    "",
    " ",
    "\t\n",
    "a\x00b",
    "ok \udc00",
    "\ud83d\ude00",  # a surrogate *pair* as two code points: still lone surrogates in a str
    "\U0001f389 party",
    "\u200b\u200c\u200d",
    "'; DROP TABLE episodes; --",
    'NEAR("a" "b")',
    "\\u0000",
    "%s %(x)s {}",
    "x" * 100_001,
    "y" * 200,
    "z" * 201,
]

CHAR = st.one_of(st.characters(), st.sampled_from(NASTY_CHARS))
TEXT = st.one_of(
    st.text(CHAR, max_size=40),
    st.sampled_from(NASTY_STRINGS),
    st.text(CHAR, min_size=1, max_size=3).map(lambda s: s * 20_000),  # 20k-60k characters
)
SHORT_TEXT = st.one_of(st.text(CHAR, max_size=12), st.sampled_from(NASTY_STRINGS[:12]))
NUMBER = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([0, -0.0, 5e-324, 1e308, -1e308, 2**63, 2**64, 10**400, -(10**400), 1, 10, 11]),
)
SCALAR = st.one_of(st.none(), st.booleans(), NUMBER, TEXT)
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), NUMBER, SHORT_TEXT),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(SHORT_TEXT, children, max_size=3)
    ),
    max_leaves=8,
)


def deep(levels: int) -> dict[str, Any]:
    """``{"k": {"k": ...}}`` nested ``levels`` deep."""
    node: dict[str, Any] = {}
    top = node
    for _ in range(levels):
        node["k"] = {}
        node = node["k"]
    return top


METADATA = st.one_of(
    st.none(), st.dictionaries(SHORT_TEXT, JSON, max_size=4), st.sampled_from([deep(40), deep(5)])
)
TAGS = st.one_of(st.none(), SHORT_TEXT, st.lists(SHORT_TEXT, max_size=4), JSON)
IMPORTANCE = st.one_of(st.none(), NUMBER, st.booleans(), SHORT_TEXT)
LIMIT = st.one_of(st.none(), NUMBER, st.booleans(), SHORT_TEXT)
EVENT_TYPE = st.one_of(SHORT_TEXT, st.sampled_from(["note", "preference", " fact "]))
CONTENT = st.one_of(TEXT, st.sampled_from(["User prefers aisle seats", "deploy failed on staging"]))

REMEMBER_KEYS = ["event_type", "content", "tags", "importance"]
RECALL_KEYS = ["query", "event_type", "tags", "limit", "preset"]
OTHER_KEYS = ["tenant_id", "session_id", "metadata", "created_at", "weights", "min_relevance", "\udc00", ""]
ARGUMENTS = st.dictionaries(
    st.sampled_from(REMEMBER_KEYS + RECALL_KEYS + OTHER_KEYS), st.one_of(SCALAR, JSON), max_size=5
)
"""Tool or request arguments: known and unknown names, any JSON-ish values."""


def remember_arguments() -> st.SearchStrategy[dict[str, Any]]:
    """Mostly well-shaped remember calls with hostile values, sometimes with extra arguments."""
    return (
        st.fixed_dictionaries(
            {"event_type": EVENT_TYPE, "content": CONTENT},
            optional={"tags": TAGS, "importance": IMPORTANCE},
        )
        | ARGUMENTS
    )
