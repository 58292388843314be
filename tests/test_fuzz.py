"""Fuzzing the public API with hypothesis, on SQLite and PostgreSQL (issue 9, item 6).

Random kinds, payloads (unicode, NUL, lone surrogates, deep nesting, huge strings, values
JSON cannot carry, wrong types), ids, versions and expected versions. Every call either
stores what it was given and reads it back identical, or raises a typed error (a
`SessionStoreError`) and writes nothing: the row counts of both tables stay what they were.

One store per test (not per example), so that the file stays cheap.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from datetime import timedelta, timezone
from typing import Any, TypeVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

import sessionstore as ss
from sessionstore import NewEvent, SessionStore, SessionStoreError

from .chains import chain_break

T = TypeVar("T")
# derandomize: the same examples on every run, so that CI is repeatable; a finding is then a
# test of its own here (the xfails below), and a wider search is `--hypothesis-seed=…` locally.
FUZZ = settings(max_examples=60, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.large_base_example])
HUGE = "ä" * 500_000 + "\x00" + "\ud800"  # 1 MB of UTF-8, a NUL and a lone surrogate at the end

# --------------------------------------------------------------------------- strategies

# Every code point, surrogates included (hypothesis leaves them out unless asked).
characters = st.characters(min_codepoint=0, max_codepoint=0x10FFFF, categories=None, exclude_categories=())
nasty = st.sampled_from(["", "\x00", "\ud800", "\udfff", "a\ud83d", "\ud83d\ude00", "😀", "\u202e", "'; DROP TABLE x;--",
                         "%", "_", "\\", '"', "\u0000\u0001\u001f", "\ufeff", "\uffff", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"])
texts = st.one_of(st.text(characters, max_size=30), nasty)


class Deep:
    """A value nested `depth` levels deep, built only when used (hypothesis prints it as itself:
    printing the value would overflow the printer's stack)."""

    def __init__(self, depth: int, leaf: Any) -> None:
        self.depth, self.leaf = depth, leaf

    def build(self) -> Any:
        value = self.leaf
        for i in range(self.depth):
            value = [value] if i % 2 else {"k": value}
        return value

    def __repr__(self) -> str:
        return f"Deep({self.depth}, {self.leaf!r})"


def real(value: Any) -> Any:
    """`value` with every `Deep` in it built."""
    if isinstance(value, Deep):
        return value.build()
    if isinstance(value, list):
        return [real(v) for v in value]
    if isinstance(value, tuple):
        return tuple(real(v) for v in value)
    if isinstance(value, dict):
        return {k: real(v) for k, v in value.items()}
    return value


def realised(events: list[NewEvent]) -> list[NewEvent]:
    return [NewEvent(e.kind, real(e.payload), real(e.meta), e.event_id, e.created_at) for e in events]


scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.integers(min_value=-2**80, max_value=2**80),
                    st.floats(allow_nan=True, allow_infinity=True), texts, st.binary(max_size=3))
# String keys only: a non-string key is stored stringified (test_non_string_keys_are_refused, below).
keys = st.one_of(st.text(characters, max_size=8), nasty)
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                       st.dictionaries(keys, inner, max_size=3),
                                                       st.tuples(inner), st.frozensets(st.integers(), max_size=2)),
                      max_leaves=8)
objects = st.dictionaries(keys, values, max_size=4)
ids = st.one_of(st.uuids().map(lambda u: u.hex), texts, st.text(characters, min_size=120, max_size=300),
                st.integers(), st.none(), st.just(b"bytes"))
times = st.one_of(st.none(), st.datetimes(timezones=st.just(timezone.utc)), st.datetimes(),
                  st.datetimes(timezones=st.just(timezone(timedelta(hours=5, minutes=30)))), st.just("2025-01-01"))
versions = st.one_of(st.none(), st.integers(-2, 12), st.integers(), st.sampled_from(["1", 1.0, 1.5, True, False,
                                                                                      math.nan, [1], 2**63]))
kinds = st.one_of(st.sampled_from(ss.KINDS), st.sampled_from(ss.KINDS).map(str.upper), texts, st.integers(), st.none())


@st.composite
def well_formed(draw: st.DrawFn) -> list[NewEvent]:
    """Events built by the constructors, with fuzzed text, data and meta in them."""
    text, meta, eid, when = draw(texts), draw(objects), draw(ids | st.none()), draw(times)
    extra = {"meta": meta, "event_id": eid, "created_at": when}
    choice = draw(st.integers(0, 5))
    if choice == 0:
        return [ss.user(text, **extra)]  # type: ignore[arg-type]
    if choice == 1:
        return [ss.system(text, **extra)]  # type: ignore[arg-type]
    if choice == 2:
        return [ss.scratchpad(text, **extra)]  # type: ignore[arg-type]
    if choice == 3:
        return [ss.custom(text, draw(values), in_context=draw(st.booleans()), **extra)]  # type: ignore[arg-type]
    call_id = draw(texts)
    call = ss.tool_call(call_id, draw(texts), draw(objects), **extra)  # type: ignore[arg-type]
    return [call, ss.tool_result(call_id, text, is_error=draw(st.booleans()))]


@st.composite
def raw(draw: st.DrawFn) -> list[NewEvent]:
    """A NewEvent of any shape: any kind, any payload and meta (often the wrong type), any id."""
    payload = draw(st.one_of(objects, values))
    return [NewEvent(kind=draw(kinds), payload=payload, meta=draw(st.one_of(objects, values)),  # type: ignore[arg-type]
                     event_id=draw(ids), created_at=draw(times))]


batches = st.lists(st.one_of(well_formed(), raw()), min_size=1, max_size=3).map(lambda parts: sum(parts, []))


# --------------------------------------------------------------------------- the property


def counts(store: SessionStore) -> tuple[int, int]:
    with store.engine.connect() as conn:
        return (conn.execute(text("SELECT count(*) FROM sessions")).scalar_one(),
                conn.execute(text("SELECT count(*) FROM events")).scalar_one())


def as_json(value: Any) -> Any:
    """What JSON gives back for a value it carries exactly (tuples are arrays)."""
    if isinstance(value, (list, tuple)):
        return [as_json(v) for v in value]
    if isinstance(value, dict):
        return {k: as_json(v) for k, v in value.items()}
    return value


def stores_or_refuses(store: SessionStore, call: Callable[[], T]) -> T | None:
    """Run `call`: its result, or None after a typed error that left both tables as they were."""
    before = counts(store)
    try:
        return call()
    except SessionStoreError:
        assert counts(store) == before, "a refused call wrote something"
        return None


def test_append_stores_exactly_or_refuses(store: SessionStore) -> None:
    @FUZZ
    @given(batch=batches, expected=versions, strict=st.booleans(), prefix=st.booleans())
    def check(batch: list[NewEvent], expected: Any, strict: bool, prefix: bool) -> None:
        sid = store.create_session()
        if prefix:
            store.append(sid, ss.user("before"))
        history = store.transcript(sid)
        batch = realised(batch)
        result = stores_or_refuses(store, lambda: store.append(sid, batch, expected_version=expected, strict=strict))
        after = store.transcript(sid)
        if result is None:
            assert after == history
            return
        assert after[:len(history)] == history
        stored = after[len(history):]
        assert result.version == len(after) == store.version(sid)
        assert [(e.event_id, e.kind) for e in stored] == [(e.event_id, e.kind) for e in batch]
        for given_event, event in zip(batch, stored):
            assert event.payload == as_json(given_event.payload)
            assert event.meta == as_json(given_event.meta)
            if given_event.created_at is not None:
                assert event.created_at == given_event.created_at
        assert [e.version for e in after] == list(range(1, len(after) + 1))
        assert chain_break(store, sid) is None  # TODO: store.verify(sid) once it lands (branch audit)

    check()


def test_sessions_forks_and_reads_refuse_cleanly(store: SessionStore) -> None:
    """create_session, fork and the reads, with fuzzed ids, metadata and versions."""
    base = store.create_session(events=[ss.user("one"), ss.user("two"), ss.user("three")])

    @FUZZ
    @given(sid=ids, metadata=st.one_of(objects, values), at=versions, upto=versions,
           wanted=st.one_of(st.none(), st.lists(kinds.filter(lambda k: not (isinstance(k, str) and "\x00" in k)),
                                                max_size=2)),  # NUL: test_kinds_filter_with_nul
           new_id=ids, position=versions,
           limit=st.none() | st.integers(0, 5))
    def check(sid: Any, metadata: Any, at: Any, upto: Any, wanted: Any, new_id: Any, position: Any,
              limit: int | None) -> None:
        metadata = real(metadata)
        created = stores_or_refuses(store, lambda: store.create_session(sid, metadata))
        if created is not None:
            info = store.session(created)
            expected = {} if metadata is None else as_json(metadata)  # no metadata is an empty object
            assert (info.id, info.metadata, info.head) == (sid or created, expected, 0)
            assert created in store.find_sessions(created)
        fork = stores_or_refuses(store, lambda: store.fork(base, at=at, new_session_id=new_id))
        if fork is not None:
            assert [e.event_id for e in store.events(fork)] == [e.event_id for e in store.events(base)][:at]
        stores_or_refuses(store, lambda: list(store.events(base, after=at, upto=upto, kinds=wanted)))
        if not (isinstance(sid, str) and re.search("[\x00\ud800-\udfff]", sid)):  # see test_lookup_by_unencodable_id
            stores_or_refuses(store, lambda: list(store.events(sid, after=0)))
            stores_or_refuses(store, lambda: store.version(sid))
        stores_or_refuses(store, lambda: store.context(base, at=at))
        stores_or_refuses(store, lambda: list(store.read_all(after_position=position, limit=limit)))

    check()


# --------------------------------------------------------------------------- extremes, and what is left


def test_huge_and_deep_values_round_trip_or_refuse(store: SessionStore) -> None:
    """Too big for hypothesis to shrink and print: a 1 MB string with a NUL and a lone surrogate,
    values nested 400 deep (stored and read back) and 5,000 deep (refused, typed)."""
    sid = store.create_session()
    for value in (HUGE, Deep(400, "leaf").build(), Deep(400, HUGE[-3:]).build()):
        result = store.append(sid, ss.custom("t", value))
        (event,) = store.events(sid, after=result.version - 1)
        assert event.payload["data"] == value
    assert chain_break(store, sid) is None
    head = store.version(sid)
    assert stores_or_refuses(store, lambda: store.append(sid, ss.custom("t", Deep(5000, 1).build()))) is None
    assert stores_or_refuses(store, lambda: store.append(sid, ss.user("m", meta={"d": Deep(5000, 1).build()}))) is None
    assert store.version(sid) == head


def test_non_string_keys_are_refused(store: SessionStore) -> None:
    """Found by fuzzing: json.dumps stringifies an int, float, bool or None key, so {1: 'a'} was
    stored and read back as {'1': 'a'}. Refused now, wherever the key is, naming where."""
    sid = store.create_session(events=[ss.user("kept")])
    for event, field in [(ss.custom("t", {1: "a"}), "payload.data"),
                         (ss.custom("t", {"a": [{"b": {None: 1}}]}), "payload.data.a[0].b"),
                         (ss.tool_call("c1", "f", {"x": {2.5: "y"}}), "payload.input.x"),
                         # an int, a float and a bool key, not only as the first key of its object
                         (ss.custom("t", {"a": 1, -3: "x"}), "payload.data"),
                         (ss.custom("t", {"a": [1, {"b": 2, 1e-05: 0}]}), "payload.data.a[1]"),
                         (ss.custom("t", {"a": {"b": {False: 0}}}), "payload.data.a.b"),
                         (ss.user("hi", meta={"m": {True: 1}}), "meta.m")]:
        with pytest.raises(ss.InvalidEvent) as refused:
            store.append(sid, [ss.user("first of the batch"), event])
        assert refused.value.field == field and refused.value.index == 1, str(refused.value)
        assert "not a string" in str(refused.value)
    with pytest.raises(ss.InvalidEvent, match="metadata"):
        store.create_session(metadata={"tags": {7: "x"}})
    assert [e.payload for e in store.transcript(sid)] == [{"role": "user", "content": [{"type": "text", "text": "kept"}]}]
    # string keys of every spelling are stored exactly (a str subclass reads back as its text)
    store.append(sid, ss.custom("t", {"": 1, "1": [{"\u00e9": None}]}, meta={"k": {"v": [1, {"w": 2}]}}))
    last = store.transcript(sid)[-1]
    assert last.payload["data"] == {"": 1, "1": [{"\u00e9": None}]} and last.meta == {"k": {"v": [1, {"w": 2}]}}


def test_lookup_by_unencodable_id(store: SessionStore) -> None:
    """Found by fuzzing: an id no session can have is not found (not the driver's encoding error)."""
    for sid in ("\ud800", "a\x00b", ""):
        with pytest.raises(ss.SessionNotFound):
            store.version(sid)
        with pytest.raises(ss.SessionNotFound):
            list(store.events(sid))
    with pytest.raises(ss.InvalidEvent):
        store.version(10 ** 30)  # type: ignore[arg-type]


def test_large_floats_in_meta_round_trip_or_are_refused(store: SessionStore) -> None:
    """Found by fuzzing: PostgreSQL's JSONB holds a float as a decimal, so 1.5710909091851883e+33
    in meta read back there as the integer it rounds to. Such a float is refused in meta and
    session metadata on both backends (naming where); the payload keeps it exactly; smaller and
    negative-exponent floats round-trip as floats everywhere."""
    sid = store.create_session(events=[ss.user("kept")])
    for meta, field in [({"idx": [1.5710909091851883e+33]}, "meta.idx"), ({"a": {"b": -1e16}}, "meta.a.b")]:
        with pytest.raises(ss.InvalidEvent, match="read back as the integer") as refused:
            store.append(sid, ss.custom("t", {}, meta=meta))
        assert refused.value.field == field
    with pytest.raises(ss.InvalidEvent, match="metadata"):
        store.create_session(metadata={"n": 2e20})
    assert len(store.transcript(sid)) == 1
    kept = {"idx": [9.999999999999998e+15, 1e-07, 2.5, "1e+20"]}
    store.append(sid, ss.custom("t", {"big": 1.5710909091851883e+33}, meta=kept))
    event = store.transcript(sid)[-1]
    assert event.meta == kept and all(isinstance(x, float) for x in event.meta["idx"][:3])
    assert event.payload["data"] == {"big": 1.5710909091851883e+33} and isinstance(event.payload["data"]["big"], float)


def test_kinds_filter_with_nul(store: SessionStore, request: pytest.FixtureRequest) -> None:
    """Found by fuzzing: a NUL in a kinds filter reached psycopg (DataError); no kind holds one."""
    sid = store.create_session(events=[ss.user("one")])
    assert stores_or_refuses(store, lambda: list(store.events(sid, kinds=["\x00"]))) in ([], None)
