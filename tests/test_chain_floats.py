"""A float in meta (a cost, a duration) is hashed as a normalised decimal, whichever way the chain
writes it (`chain._plain` lets json's own text through only where it is that decimal): the
same hash on both backends, whose JSONB spells numbers its own way."""

from __future__ import annotations

import math
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sessionstore import InvalidEvent, chain
from sessionstore.validation import check_metadata


def _decimal(value: float) -> str:
    if value == int(value) and abs(value) < 10 ** 15:
        return str(int(value))
    return format(Decimal(repr(value)).normalize(), "f")


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_a_float_in_meta_is_a_normalised_decimal(value: float) -> None:
    expected = _decimal(value)
    assert chain.canonical_json({"cost_usd": value, "n": [value]}) == f'{{"cost_usd":{expected},"n":[{expected}]}}'


def test_floats_json_spells_otherwise() -> None:
    for value, canonical in ((2.0, "2"), (1e-05, "0.00001"), (1e16, "10000000000000000"), (0.125, "0.125")):
        assert chain.canonical_json({"v": value}) == f'{{"v":{canonical}}}'


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_float_json_cannot_say_is_refused_in_meta_with_its_reason(value: float) -> None:
    """Not the large-float rule's message (an infinity has no integer to name: that raised
    OverflowError), but JSON's own refusal, typed."""
    with pytest.raises(InvalidEvent, match="not JSON-serialisable"):
        check_metadata({"usage": [{"cost_usd": value}]})
