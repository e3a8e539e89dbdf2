"""``memlane.stores.postgres.base.key_array``: row keys as one ``int8[]`` literal parameter."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from memlane.stores.postgres.base import key_array, parse_key_array

INT8 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@given(st.lists(INT8, max_size=50))
def test_the_literal_holds_the_keys_in_order(keys: list[int]) -> None:
    literal = key_array(keys)
    assert literal.startswith("{") and literal.endswith("}")
    body = literal[1:-1]
    assert ([int(v) for v in body.split(",")] if body else []) == keys
    assert key_array(np.asarray(keys, dtype=np.int64)) == literal  # an int64 array gives the same text
    assert parse_key_array(literal).tolist() == keys  # and reads back


def test_an_empty_aggregate_reads_as_no_keys() -> None:
    assert parse_key_array(None).tolist() == []
    assert parse_key_array("{}").dtype == np.int64


def test_anything_but_an_integer_is_refused_before_it_reaches_the_literal() -> None:
    with pytest.raises(ValueError):
        key_array(["1}, {2"])
