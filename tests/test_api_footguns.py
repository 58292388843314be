"""What a new user types first and gets wrong: each mistake is a typed error naming the argument,
and nothing is written; results print short (issue 18, item 5)."""

from __future__ import annotations

import asyncio

import pytest

import sessionstore as ss
from sessionstore import CompactionPolicy, SessionStore


def _long_session(store: SessionStore) -> str:
    sid = store.create_session()
    for n in range(30):
        store.append(sid, [ss.user(f"step {n}: " + "explain the parser " * 40),
                           ss.tool_call(f"c{n}", "Read", {"path": f"src/m{n}.py"}),
                           ss.tool_result(f"c{n}", "def f():\n    return 1\n" * 200),
                           ss.assistant("done " * 100)])
    return sid


def test_transcript_tokens_of_a_string_is_a_typed_error(store: SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, [ss.user("hello")])
    with pytest.raises(ss.InvalidArgument, match="session_ids.*transcript_tokens\\(\\[sid\\]\\)") as caught:
        store.transcript_tokens(sid)
    assert caught.value.argument == "session_ids"
    assert store.transcript_tokens([sid])[sid] > 0

    async def aio() -> None:
        astore = ss.AsyncSessionStore(store.url)
        try:
            with pytest.raises(ss.InvalidArgument):
                await astore.transcript_tokens(sid)
        finally:
            await astore.close()

    asyncio.run(aio())


def test_event_builders_name_the_wrong_argument() -> None:
    with pytest.raises(ss.InvalidEvent, match="input.*dict of arguments") as call:
        ss.tool_call("c1", "Bash", "ls -la")  # type: ignore[arg-type]
    assert call.value.field == "input"
    with pytest.raises(ss.InvalidEvent, match="content.*string or a list of content blocks") as user:
        ss.user(None)  # type: ignore[arg-type]
    assert user.value.field == "content"
    with pytest.raises(ss.InvalidEvent, match=r"content\[0\].*content block must be a dict"):
        ss.user(["plain text in a list"])  # type: ignore[list-item]
    with pytest.raises(ss.InvalidEvent, match="output"):
        ss.tool_result("c1", 42)  # type: ignore[arg-type]


def test_append_of_a_dict_says_what_was_expected(store: SessionStore) -> None:
    sid = store.create_session()
    with pytest.raises(ss.InvalidEvent, match="expected events.*got dict.*sessionstore.user"):
        store.append(sid, {"role": "user", "content": "hi"})  # type: ignore[arg-type]
    with pytest.raises(ss.InvalidEvent, match="expected events.*got str"):
        store.append(sid, "hi")  # type: ignore[arg-type]
    assert store.version(sid) == 0  # nothing written


def test_policy_fields_must_be_numbers() -> None:
    with pytest.raises(ss.ConfigurationError, match="context_window must be an integer, got '32k'"):
        CompactionPolicy(context_window="32k")  # type: ignore[arg-type]
    with pytest.raises(ss.ConfigurationError, match="early_exit_ratio must be a number"):
        CompactionPolicy(early_exit_ratio="0.5")  # type: ignore[arg-type]
    assert CompactionPolicy(keep_tool_results=None, summary_max_tokens=4000).summary_max_tokens == 4000


def test_results_print_short(store: SessionStore) -> None:
    sid = _long_session(store)
    appended = store.append(sid, [ss.user(f"more {n}") for n in range(500)])
    result = store.compact(sid, CompactionPolicy.for_window(20_000), ss.OfflineSummarizer())
    assert result is not None and result.compaction is not None
    view = store.context(sid)
    hits = store.search("parser")
    assert len(str(view.messages)) > 20_000  # the objects are big; what they print is not
    for value in (appended, result, view, store.stats(sid), hits[0]):
        text = repr(value)
        assert len(text) < 400 and sid in text, text
    assert "events=500" in repr(appended) and f"tokens {result.tokens_before:,}→" in repr(result)
