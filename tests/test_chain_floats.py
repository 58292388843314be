"""A float in meta (a cost, a duration) is hashed as a normalised decimal, whichever way the chain
writes it (`chain._plain` lets json's own text through only where it is that decimal): the
same hash on both backends, whose JSONB spells numbers its own way."""

from __future__ import annotations

import json
import math
from decimal import Decimal

import pytest
from hypothesis import given, settings
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


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 20, 10 ** 20) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(), lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=8)


@settings(max_examples=30)
@given(st.dictionaries(st.text(max_size=6), _JSON_VALUES, max_size=6))
def test_the_canonical_text_made_from_the_stored_text_is_the_walk_s(meta: dict[str, object]) -> None:
    """An append hashes the meta's stored text rewritten (`chain.canonical_text`), `verify` the meta
    read back walked (`canonical_json`): one hash, whatever the strings spell (``"2.0"``, ``1e-05``)."""
    text = chain.SORTED_JSON.encode(meta)
    assert chain.canonical_text(text) == chain.canonical_json(meta) == chain.canonical_json(json.loads(text))


def test_the_canonical_text_rewrites_floats_and_nothing_in_strings() -> None:
    meta = {"cost": 5e-06, "note": 'x 1e-05 "2.0" 3.0', "n": [2.0, 1e16, 1.5, -0.0, 123456789012345.67]}
    assert chain.canonical_text(chain.SORTED_JSON.encode(meta)) == (
        '{"cost":0.000005,"n":[2,10000000000000000,1.5,0,123456789012345.67],"note":"x 1e-05 \\"2.0\\" 3.0"}')


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan])
def test_a_float_json_cannot_say_is_refused_in_meta_with_its_reason(value: float) -> None:
    """Not the large-float rule's message (an infinity has no integer to name: that raised
    OverflowError), but JSON's own refusal, typed."""
    with pytest.raises(InvalidEvent, match="not JSON-serialisable"):
        check_metadata({"usage": [{"cost_usd": value}]})
