"""The shortcuts of the append path (issue 39) give what the long way gave: the payload's JSON from
the encoder kept per thread, the time SQLite stores made from the chain's text, the meta checks
skipped only for an empty meta."""

from __future__ import annotations

import sqlite3
import threading
from datetime import datetime, timedelta, timezone

import pytest
from sqlalchemy.dialects import postgresql, sqlite

from sessionstore import chain
from sessionstore import events as ev
from sessionstore.errors import InvalidEvent
from sessionstore.storage.statements import Statements
from sessionstore.validation import _ENCODER, encode_json

MOMENTS = [
    datetime(2026, 12, 8, 0, 47, 0, 369457, tzinfo=timezone.utc),
    datetime(2020, 1, 1, tzinfo=timezone.utc),  # no fraction: sqlite3 writes none
    datetime(5, 1, 2, 3, 4, 5, tzinfo=timezone(timedelta(hours=5))),  # a year below 1000, another zone
    datetime(2020, 1, 1, 0, 0, 0, 5, tzinfo=timezone(timedelta(microseconds=5))),  # a zone that cancels the fraction
]


@pytest.mark.parametrize("moment", MOMENTS)
def test_the_time_bound_on_sqlite_is_what_sqlite3_stores_of_bind_time(moment: datetime) -> None:
    st = Statements(sqlite.dialect())
    text = chain.utc_text(moment)
    assert text == moment.astimezone(timezone.utc).replace(tzinfo=None).isoformat(timespec="microseconds")
    db = sqlite3.connect(":memory:")
    stored = db.execute("SELECT ?", (st.bind_time(moment),)).fetchone()[0]
    assert st.bind_utc(moment, text) == stored
    pg = Statements(postgresql.dialect())
    assert pg.bind_utc(moment, text) == pg.bind_time(moment)


def test_the_kept_encoder_recovers_from_refusals() -> None:
    circular: list[object] = []
    circular.append(circular)
    shared = [1, 2]
    for bad, error in ((circular, "Circular"), ({"n": float("nan")}, "not JSON compliant"), ({"s": {1}}, "set")):
        with pytest.raises((ValueError, TypeError), match=error):
            encode_json({"v": bad})
        # a refusal leaves no mark behind: the same list twice (not a cycle) is still fine after it
        assert encode_json({"a": shared, "b": shared, "c": "\ud800é"}) == '{"a":[1,2],"b":[1,2],"c":"\\ud800\\u00e9"}'
    seen: list[str] = []
    thread = threading.Thread(target=lambda: seen.append(encode_json({"t": [shared, shared]})))
    thread.start()
    thread.join()
    assert seen == [_ENCODER.encode({"t": [shared, shared]})]


def test_a_meta_is_checked_unless_empty() -> None:
    with pytest.raises(InvalidEvent) as err:
        ev.encode_event(ev.NewEvent("custom", {"type": "x"}, meta={1: "a"}))
    assert err.value.field == "meta"
    encoded = ev.checked(ev.NewEvent("custom", {"type": "x"}))
    with pytest.raises(InvalidEvent) as err:  # the same for a payload encoded already (`events.checked`)
        ev.encode_event(ev.NewEvent(encoded.kind, encoded.payload, {"k": {2: "b"}}, encoded.event_id))
    assert err.value.field == "meta.k"
    payload, meta = ev.encode_event(ev.user("hi"))
    assert meta == "{}"
    assert chain.content_hash(payload, {}, meta) == chain.content_hash(payload, {})
