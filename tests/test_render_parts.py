"""A view rendered in parts (issue 30: a turn costs what changed). `render.closing` accepts a
boundary only where no repair crosses it, so the parts joined must be exactly the whole rendered
at once: messages, repairs, placeholders, what is sent of each item. Generated over the messy
shapes recorded history has — repeated tool ids, results before their calls or without one,
calls never answered, ids a provider rejects, empty and unsigned blocks, a summary first — and
every boundary of every generated run. And a session folded forward turn by turn keeps a small
open part, with the same views, estimates and calibrations as rebuilds."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sessionstore as ss
from sessionstore.projection import advance, input_from_events, project
from sessionstore.projection.render import Closed, closing, join, render_anthropic
from sessionstore.projection.view import ViewItem

PARTS = settings(max_examples=300, deadline=None, database=None, derandomize=True,
                 suppress_health_check=[HealthCheck.too_slow])
NOW = datetime(2026, 1, 1, tzinfo=timezone.utc)
IDS = ("a", "b", "c", "d", "bad|id")
SHAPES = ("user", "assistant", "blank", "unsigned", "call", "result", "error", "note", "user+result")


def event(version: int, kind: str, payload: dict[str, Any], meta: dict[str, Any] | None = None) -> ss.StoredEvent:
    return ss.StoredEvent(f"e{version}", "s", version, version, kind, payload, meta or {}, 7, NOW)


def item(version: int, shape: str, call: str) -> ViewItem:
    if shape in ("user", "assistant", "blank", "unsigned", "user+result"):
        role = "user" if shape.startswith("user") else "assistant"
        content: list[dict[str, Any]] = [{"type": "text", "text": f"say {version}"}]
        if shape == "blank":
            content = [{"type": "text", "text": "  "}]
        elif shape == "unsigned":
            content = [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": f"then {version} "}]
        elif shape == "user+result":
            content.append({"type": "tool_result", "tool_use_id": call, "content": "inline"})
        payload = {"role": role, "content": content}
        return ViewItem(version, "message", "tail", payload, 7, event(version, "message", payload))
    if shape == "call":
        payload = {"call_id": call, "name": "Read", "input": {"path": call}}
        return ViewItem(version, "tool_call", "tail", payload, 7, event(version, "tool_call", payload))
    if shape in ("result", "error"):
        payload = {"call_id": call, "output": f"out {version}", "is_error": shape == "error"}
        return ViewItem(version, "tool_result", "tail", payload, 7, event(version, "tool_result", payload))
    payload = {"type": "note", "data": f"n{version}", "in_context": True}
    return ViewItem(version, "custom", "tail", payload, 7, event(version, "custom", payload))


def summary(version: int) -> ViewItem:
    payload = {"text": "the summary"}
    return ViewItem(version, "summary", "summary", payload, 30, event(version, "compaction", {}))


runs = st.tuples(st.booleans(), st.lists(st.tuples(st.sampled_from(SHAPES), st.sampled_from(IDS)), min_size=1,
                                         max_size=30))


def same(parts: Any, whole: Any) -> None:
    assert parts.messages == whole.messages
    assert parts.diagnostics == whole.diagnostics
    assert (parts.acks, parts.synthetic) == (whole.acks, whole.synthetic)


@PARTS
@given(run=runs)
def test_parts_joined_are_the_whole(run: tuple[bool, list[tuple[str, str]]]) -> None:
    summarised, shapes = run
    items = ([summary(1)] if summarised else []) + [item(v, shape, call) for v, (shape, call) in
                                                      enumerate(shapes, 2)]
    whole = render_anthropic(items)
    for at in range(1, len(items)):
        split = closing(Closed(), items, at)
        if split is None:
            continue
        before, after = split
        joined = join(Closed().then(before, at), after)
        same(joined, whole)
        assert before.dropped | after.dropped == whole.dropped
        assert {**before.shares, **after.shares} == whole.shares
        for later in range(at + 1, len(items)):  # a third part, closed after the second
            second = closing(Closed().then(before, at), items[at:], later - at)
            if second is not None:
                same(join(Closed().then(before, at).then(second[0], later - at), second[1]), whole)


def test_a_boundary_is_refused_where_a_repair_crosses_it() -> None:
    calls = [item(2, "user", ""), item(3, "call", "a"), item(4, "assistant", ""), item(5, "result", "a")]
    assert closing(Closed(), calls, 2) is None  # the result after it moves back to the call before it
    orphan = [item(2, "user", ""), item(3, "result", "b"), item(4, "assistant", ""), item(5, "call", "b")]
    assert closing(Closed(), orphan, 2) is None  # the call after it takes back the result before it
    merged = [item(2, "user", ""), item(3, "assistant", ""), item(4, "user", ""), item(5, "blank", ""),
              item(6, "user", "")]
    assert closing(Closed(), merged, 3) is None  # the blank reply goes: the user messages around it merge
    assert closing(Closed(), merged, 2) is not None


def turn_events(first: int, n: int, usage: bool) -> list[ss.StoredEvent]:
    call = f"call{n}"
    meta = {"usage": {"input_tokens": 1_000 + 40 * n, "output_tokens": 10}, "model": "m"} if usage else {}
    return [event(first, "message", {"role": "user", "content": [{"type": "text", "text": f"ask {n}"}]}),
            event(first + 1, "message", {"role": "assistant", "content": [{"type": "text", "text": f"on it {n}"}]},
                  meta),
            event(first + 2, "tool_call", {"call_id": call, "name": "Read", "input": {"path": f"f{n}"}}, meta),
            event(first + 3, "tool_result", {"call_id": call, "output": f"read {n}", "is_error": False})]


def test_a_session_folded_turn_by_turn_keeps_a_small_open_part_and_the_same_estimates() -> None:
    events = [event(1, "system", {"text": "be brief"})]
    view = project(input_from_events("s", events))
    for n in range(60):
        new = turn_events(len(events) + 1, n, usage=n % 3 != 2)
        events += new
        view = advance(view, new)
        rebuilt = project(input_from_events("s", events))
        assert view == rebuilt
        assert view.calibrations == rebuilt.calibrations
        assert view.window_estimate() == rebuilt.window_estimate()
        assert view.scan() == rebuilt.scan()
    assert view._progress is not None and view._progress.part is not None
    assert len(view._progress.open_items) <= 4  # the last turn, not the session
    assert view.usage is not None and view.calibrations["m"].samples >= 30
