"""What a new user gets wrong in their first hour gets a typed error naming it, and results print short."""

from __future__ import annotations

import pytest

import sessionstore as ss
from sessionstore import SessionStore


def test_constructors_name_what_is_wrong() -> None:
    with pytest.raises(ss.InvalidEvent, match=r"payload.input: .*got str — e.g. \{'command': 'ls -la'\}"):
        ss.tool_call("c1", "Bash", "ls -la")  # type: ignore[arg-type]
    with pytest.raises(ss.InvalidEvent, match="payload.content: .*got None"):
        ss.user(None)  # type: ignore[arg-type]
    with pytest.raises(ss.InvalidEvent, match="payload.output: .*got int"):
        ss.tool_result("c1", 3)  # type: ignore[arg-type]
    with pytest.raises(ss.ConfigurationError, match="context_window must be a whole number of tokens, got '32k'"):
        ss.CompactionPolicy(context_window="32k")  # type: ignore[arg-type]


def test_store_calls_name_what_is_wrong(store: SessionStore) -> None:
    sid = store.create_session()
    with pytest.raises(ss.InvalidEvent, match="got dict .a message as a dict"):
        store.append(sid, {"role": "user", "content": "hi"})  # type: ignore[arg-type]
    store.append(sid, ss.user("hello there"))
    assert store.transcript_tokens(sid) == store.transcript_tokens([sid])  # one id alone, not its characters
    assert set(store.transcript_tokens(sid)) == {sid}
    with pytest.raises(ss.InvalidEvent, match="got int"):
        store.transcript_tokens([sid, 3])  # type: ignore[list-item]
    assert store.version(sid) == 1  # nothing written by the refused calls


def test_results_print_short(store: SessionStore) -> None:
    sid = store.create_session()
    for n in range(30):
        store.append(sid, [ss.user(f"question {n} " + "about the parser " * 60), ss.assistant("answer " * 400)])
    result = store.compact(sid, ss.CompactionPolicy.for_window(16_000))
    assert result is not None
    assert len(repr(result)) < 200 and f"{result.tokens_before:,}→{result.tokens_after:,}" in repr(result)
    view = store.context(sid)
    assert len(repr(view)) < 200 and "message(s)" in repr(view)
