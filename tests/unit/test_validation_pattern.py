"""The declared "visible text" pattern says exactly what :func:`memlane.validation.is_blank` refuses."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from memlane.validation import _FILLERS, _INVISIBLE_CATEGORIES, _INVISIBLE_RANGES, VISIBLE_PATTERN, is_blank


def test_the_invisible_ranges_are_what_is_blank_counts_as_invisible() -> None:
    invisible = {
        code
        for code in range(0x110000)
        if not 0xD800 <= code <= 0xDFFF
        and (
            chr(code).isspace()
            or chr(code) in _FILLERS
            or unicodedata.category(chr(code)) in _INVISIBLE_CATEGORIES
        )
    }
    assert invisible == {code for low, high in _INVISIBLE_RANGES for code in range(low, high + 1)}


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"]), max_size=6))
def test_the_pattern_matches_exactly_the_text_that_is_not_blank(text: str) -> None:
    assert (re.search(VISIBLE_PATTERN, text) is not None) is (not is_blank(text))
