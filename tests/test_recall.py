"""The recall tool over a real store (SQLite and PostgreSQL): search, read whole and paged, scope, errors."""

from __future__ import annotations

import asyncio
import json

import pytest

import sessionstore as ss
from sessionstore import (AsyncSessionStore, SessionStore, ahandle_recall, assistant, handle_recall, recall_tool,
                          tool_call, tool_result, user)
from sessionstore.budget import TOOL_RESULT_TOKENS, body


def _session(store: SessionStore, output: str) -> str:
    sid = store.create_session()
    store.append(sid, [user("look at the schema migration"),
                       assistant("reading", tool_calls=[tool_call("c1", "Bash", {"command": "cat schema.sql"})]),
                       tool_result("c1", output),
                       assistant("We settled on a partitioned zebrafish table.")])
    return sid


def test_definitions_in_three_shapes() -> None:
    anthropic, chat, responses = (recall_tool(s) for s in ("anthropic", "openai_chat", "openai_responses"))
    assert anthropic["name"] == chat["function"]["name"] == responses["name"] == "recall"
    assert anthropic["input_schema"] == chat["function"]["parameters"] == responses["parameters"]
    assert anthropic["input_schema"]["properties"]["action"]["enum"] == ["search", "read"]
    with pytest.raises(ValueError):
        recall_tool("gemini")


def test_search_and_read_back_whole(store: SessionStore) -> None:
    output = "CREATE TABLE zebrafish (id int);\n" + "x" * 500
    sid = _session(store, output)
    found = handle_recall(store, sid, {"action": "search", "query": "zebrafish"})
    assert f"session {sid} v5 message" in found and "v4 tool_result Bash" in found
    read = handle_recall(store, sid, {"action": "read", "version": 4})
    assert read == f"[v4 tool_result]\n{output}"
    both = handle_recall(store, sid, {"action": "read", "version": 3, "to": 4})
    assert both.startswith("[v3 tool_call (Bash)]") and both.endswith(output)


def test_a_megabyte_output_comes_back_in_pages(store: SessionStore) -> None:
    output = "".join(f"line {i:07d}\n" for i in range(80_000))  # ≈ 1 MB, 480,000 tokens
    sid = _session(store, output)
    answers = {n: handle_recall(store, sid, {"action": "read", "version": 4, "page": n}) for n in (1, 2, 49)}
    for n, answer in answers.items():  # each page within the budget, by the store's own counter, and full
        assert TOOL_RESULT_TOKENS * (0.9 if n < 49 else 0) < store.token_counter.count(answer) <= TOOL_RESULT_TOKENS
    assert answers[1].endswith('; next page: recall {"action": "read", "version": 4, "page": 2}]')
    assert answers[49].endswith("\n[page 49 of 49, the last]")
    first, second, last = (body(answers[n]) for n in (1, 2, 49))
    assert first[1] and second[1] and not last[1]
    assert output.startswith((first[0] + second[0]).split("\n", 1)[1]) and output.endswith(last[0])
    assert handle_recall(store, sid, {"action": "read", "version": 4, "page": 50}) == \
        "Recall failed: page 50 does not exist: the result has 49 page(s)"


def test_every_page_joined_is_the_output_exactly(store: SessionStore) -> None:
    """Pages of a small budget, read one after the other as their footers say: the stored text,
    character for character — long lines, a line with no end, and text of many tokens a character."""
    output = "short\n" + "x" * 9_000 + "\n" + "ü😀" * 700 + "\n\n" + "naïve café " * 300 + "no newline at the end"
    sid = _session(store, output)
    text, number, request = "", 0, {"action": "read", "version": 4, "page": 1}
    while True:
        answer = handle_recall(store, sid, request, max_tokens=400)
        number += 1
        assert store.token_counter.count(answer) <= 400
        part, more = body(answer)
        text += part
        if not more:
            break
        request = json.loads(answer.rsplit("next page: recall ", 1)[1][:-1])  # the call the footer names
    assert number > 5 and text == f"[v4 tool_result]\n{output}"
    with pytest.raises(ss.ConfigurationError):
        handle_recall(store, sid, request, max_tokens=100)


def test_scope_is_the_session_and_its_inherited_history(store: SessionStore) -> None:
    sid = _session(store, "parent output")
    other = _session(store, "secret of another session")
    child_id = store.fork(sid, at=4)
    assert handle_recall(store, child_id, {"action": "read", "version": 4}).endswith("parent output")
    assert "secret of another" not in handle_recall(store, sid, {"action": "search", "query": "secret"})
    for scope in ("session", "lineage"):
        reach = handle_recall(store, sid, {"action": "read", "version": 4, "session": other}, scope=scope)
        assert reach == f"Recall failed: session {other} is outside this recall's scope"
    # the fork and its parent are one lineage: each reaches the other's own events
    store.append(child_id, [user("a fork-only platypus note")])
    assert f"session {child_id} v5 message" in handle_recall(store, sid, {"action": "search", "query": "platypus"})
    assert handle_recall(store, sid, {"action": "read", "version": 5, "session": child_id}).endswith("platypus note")
    assert "No stored event" in handle_recall(store, sid, {"action": "search", "query": "platypus"}, scope="session")
    assert "No stored event matches" in handle_recall(store, sid, {"action": "search", "query": "secret"})
    # forked at v4: the parent's v5 is not the fork's history, but it is its lineage
    assert "v5" not in handle_recall(store, child_id, {"action": "search", "query": "zebrafish"}, scope="session")
    assert f"session {sid} v5" in handle_recall(store, child_id, {"action": "search", "query": "zebrafish"})
    assert other not in handle_recall(store, sid, {"action": "search", "query": "schema"})
    assert "Recall failed: unknown field(s) session_id" in handle_recall(
        store, sid, {"action": "read", "version": 4, "session_id": other})


def test_erased_session_answers_its_tombstone(store: SessionStore) -> None:
    sid = _session(store, "private data")
    store.erase(sid, "user asked")
    for request in ({"action": "read", "version": 4}, {"action": "search", "query": "private"}):
        answer = handle_recall(store, sid, request)
        assert "erased: user asked" in answer and "private" not in answer.replace("private data", "")
        assert "private data" not in answer


@pytest.mark.parametrize("bad, says", [
    ({"action": "read", "version": 99}, "no version 99"),
    ({"action": "read", "version": "three"}, "'version' must be an integer"),
    ({"action": "read", "version": 4, "page": 9}, "page 9 does not exist"),
    ({"action": "search", "query": "-only"}, "Recall failed"),
    ({"action": "search", "query": 7}, "non-empty 'query'"),
    ({"action": "delete"}, "'action' must be"),
    ("read v3", "must be an object"),
])
def test_bad_input_is_a_readable_error(store: SessionStore, bad: object, says: str) -> None:
    sid = _session(store, "out")
    answer = handle_recall(store, sid, bad)
    assert answer.startswith("Recall failed") and says in answer
    assert "Recall failed" in handle_recall(store, "no-such-session", {"action": "read", "version": 1})


def test_async_door_answers_the_same(store: SessionStore, store_url: str) -> None:
    sid = _session(store, "async output " * 1000)
    requests = [{"action": "search", "query": "zebrafish"}, {"action": "read", "version": 4, "page": 2},
                {"action": "read", "version": 42}]
    expected = [handle_recall(store, sid, r) for r in requests]

    async def scenario() -> list[str]:
        astore = AsyncSessionStore(store_url)
        try:
            return [await ahandle_recall(astore, sid, r) for r in requests]
        finally:
            await astore.close()

    assert asyncio.run(scenario()) == expected
