"""The Anthropic summariser, the local Messages API server and AnthropicCounter.

The real `anthropic` SDK talks HTTP to `AnthropicServer` on 127.0.0.1: its retries, its
error classes and its parsing are the real ones; only the model is scripted.
"""

from __future__ import annotations

import asyncio
import copy
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from sessionstore.summarizers import (
    SECTIONS,
    ContextOverflow,
    SummarizerError,
    SummaryRequest,
    is_context_overflow,
    parse_sections,
)
from sessionstore.summarizers.anthropic import AnthropicSummarizer
from sessionstore.summarizers.prompts import SYSTEM_PROMPT
from sessionstore.testing.anthropic_server import (
    AnthropicServer,
    InvalidRequest,
    RecordedRequest,
    validate_request,
)
from sessionstore.tokens import AnthropicCounter

MODEL = "claude-haiku-4-5"

SUMMARY = "\n\n".join(f"## {title}\nsomething about {title.lower()}" for title in SECTIONS)

HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Fix the failing test in tests/test_parser.py, and never touch setup.cfg."},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "I should read the parser first.", "signature": "sig-1"},
        {"type": "text", "text": "Let me look at the parser."},
        {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "src/parser.py"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": "def parse(text):\n    return text.split(',')"},
    ]},
    {"role": "assistant", "content": [
        {"type": "tool_use", "id": "toolu_02", "name": "bash", "input": {"command": "pytest -x"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_02", "is_error": True,
         "content": [{"type": "text", "text": "E   AssertionError: expected 3 fields, got 2"}]},
    ]},
    {"role": "assistant", "content": "The split ignores quoted commas; I will use the csv module."},
]
# about 6,000 tokens more than HISTORY for the server's chars/4 estimate
LONG_HISTORY: list[dict[str, Any]] = [*HISTORY, {"role": "user", "content": "lorem ipsum " * 2000}]


@pytest.fixture(scope="module")
def shared_server() -> Iterator[AnthropicServer]:
    with AnthropicServer() as s:
        yield s


@pytest.fixture
def server(shared_server: AnthropicServer) -> AnthropicServer:
    """One server for the module (starting one and its client costs ~0.1 s), reset for each test."""
    shared_server.reset()
    return shared_server


@pytest.fixture(scope="module")
def client(shared_server: AnthropicServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=shared_server.url, api_key="test-key", max_retries=0)


def only_prompt(request: RecordedRequest) -> str:
    messages = request.body["messages"]
    assert len(messages) == 1 and messages[0]["role"] == "user" and isinstance(messages[0]["content"], str)
    return messages[0]["content"]


# --------------------------------------------------------------------------- the request the summariser sends


def test_request_shape(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    server.reply(SUMMARY)
    summarizer = AnthropicSummarizer(client)
    assert summarizer.name == f"anthropic:{MODEL}"
    request = SummaryRequest(
        messages=HISTORY,
        previous_summary="## Primary request and intent\nMake the CSV importer robust (from the first compaction).",
        instructions="Focus on the parser decisions.",
        read_files=["src/parser.py", "tests/test_parser.py"],
        modified_files=["src/parser.py"],
    )
    summary = summarizer.summarize(request)

    assert summary == SUMMARY
    (sent,) = server.requests
    assert (sent.method, sent.path, sent.status) == ("POST", "/v1/messages", 200)
    # SDK 2.12 sends the key as a bearer token; earlier versions as x-api-key
    assert "test-key" in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
    assert sent.headers["anthropic-version"]
    body = sent.body
    assert body["model"] == MODEL and body["max_tokens"] == 8192 and body["system"] == SYSTEM_PROMPT
    assert set(body) == {"model", "max_tokens", "system", "messages"}
    prompt = only_prompt(sent)
    for expected in (
        "[User]: Fix the failing test in tests/test_parser.py, and never touch setup.cfg.",
        "[Assistant thinking]: I should read the parser first.",
        "[Assistant]: Let me look at the parser.",
        '[Tool call] read_file({"path": "src/parser.py"})',
        "[Tool result] read_file: def parse(text):",
        '[Tool call] bash({"command": "pytest -x"})',
        "[Tool error] bash: E   AssertionError: expected 3 fields, got 2",
        "[Assistant]: The split ignores quoted commas",
        "Make the CSV importer robust (from the first compaction).",   # the previous summary …
        "UPDATE the summary",                                          # … to be updated, not redone
        "Focus on the parser decisions.",
        "<read-files>\nsrc/parser.py\ntests/test_parser.py\n</read-files>",
        "<modified-files>\nsrc/parser.py\n</modified-files>",
    ):
        assert expected in prompt, expected
    positions = [prompt.index(f"## {title}") for title in SECTIONS]
    assert positions == sorted(positions)
    assert all(f"## {title}" in SYSTEM_PROMPT for title in SECTIONS)


def test_history_that_is_invalid_as_a_conversation_still_makes_a_valid_request(
        server: AnthropicServer, client: anthropic.Anthropic) -> None:
    broken = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_x", "name": "ls", "input": {}}]},
        {"role": "assistant", "content": "two assistant messages in a row, a call without result"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "nowhere", "content": "orphan"}]},
    ]
    with pytest.raises(InvalidRequest):
        validate_request({"model": MODEL, "max_tokens": 10, "messages": broken})
    summary = AnthropicSummarizer(client).summarize(SummaryRequest(messages=broken))
    assert list(parse_sections(summary)) == list(SECTIONS)   # the server's default answer, accepted
    assert "[Tool result]: orphan" in only_prompt(server.requests[0])


def test_long_tool_output_is_truncated_with_a_marker(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    output = "HEAD-LINE\n" + "x" * 50_000 + "\nTAIL-ERROR: boom"
    history = [*HISTORY[:2], {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_01", "content": output}]}]
    AnthropicSummarizer(client, tool_result_chars=2000).summarize(SummaryRequest(messages=history))
    prompt = only_prompt(server.requests[0])
    assert "HEAD-LINE" in prompt and "TAIL-ERROR: boom" in prompt
    assert "characters truncated" in prompt
    assert len(prompt) < 12_000


def test_turn_prefix_and_merge_prompts(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    summarizer = AnthropicSummarizer(client, max_tokens=4096)
    summarizer.summarize(SummaryRequest(messages=HISTORY[:3], purpose="turn_prefix", max_tokens=1000))
    summarizer.summarize(SummaryRequest(purpose="merge", partials=["PART-ONE: older facts", "PART-TWO: newer facts"],
                                        instructions="keep the csv decision"))
    prefix, merge = server.requests
    assert prefix.body["max_tokens"] == 1000            # the request can lower the cap …
    assert merge.body["max_tokens"] == 4096             # … never raise it
    prefix_prompt = only_prompt(prefix)
    assert "FIRST PART" in prefix_prompt and "[Tool call] read_file" in prefix_prompt
    merge_prompt = only_prompt(merge)
    assert merge_prompt.index("PART-ONE") < merge_prompt.index("PART-TWO")
    assert "OLDEST FIRST" in merge_prompt and "keep the csv decision" in merge_prompt
    with pytest.raises(SummarizerError):
        summarizer.summarize(SummaryRequest(purpose="merge"))
    assert len(server.requests) == 2


def test_a_drifted_answer_is_normalised_to_the_sections(server: AnthropicServer,
                                                        client: anthropic.Anthropic) -> None:
    server.reply("Here is the summary:\n\n<summary>\n### 1. Primary Request and Intent:\nFix the parser.\n\n"
                 "### 3. Files and Code Sections\n- src/parser.py\n</summary>")
    summary = AnthropicSummarizer(client).summarize(SummaryRequest(messages=HISTORY))
    sections = parse_sections(summary)
    assert list(sections) == list(SECTIONS)
    assert sections["Primary request and intent"] == "Fix the parser."
    assert sections["Files and code"] == "- src/parser.py"
    assert sections["Pending tasks"] == "(none)"
    assert summary.startswith("## Primary request and intent\n")


def test_a_reply_callable_sees_the_parsed_request(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    server.enqueue(lambda req: SUMMARY.replace("something", f"{len(req.messages)} message"))
    summary = AnthropicSummarizer(client).summarize(SummaryRequest(messages=HISTORY))
    assert "1 message about primary request and intent" in summary


# --------------------------------------------------------------------------- errors and retries


def test_overloaded_then_success_is_retried_by_the_sdk(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    server.overloaded(retry_after=0.01).reply(SUMMARY)
    summary = AnthropicSummarizer(client, max_retries=4).summarize(SummaryRequest(messages=HISTORY))
    assert summary == SUMMARY
    assert [r.status for r in server.message_requests] == [529, 200]
    assert [r.headers["x-stainless-retry-count"] for r in server.message_requests] == ["0", "1"]
    assert server.requests[0].body == server.requests[1].body


def test_rate_limit_retry_after_is_honoured(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    server.rate_limited(retry_after=0.8).reply(SUMMARY)
    started = time.monotonic()
    summary = AnthropicSummarizer(client, max_retries=2).summarize(SummaryRequest(messages=HISTORY))
    elapsed = time.monotonic() - started
    assert summary == SUMMARY
    assert [r.status for r in server.message_requests] == [429, 200]
    assert elapsed >= 0.8   # the SDK's own first backoff is at most 0.5 s: the header was obeyed


def test_retries_exhausted_is_a_summarizer_error(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    server.overloaded(retry_after=0.01).server_error(retry_after=0.01).reply(SUMMARY)
    with pytest.raises(SummarizerError) as raised:
        AnthropicSummarizer(client, max_retries=1).summarize(SummaryRequest(messages=HISTORY))
    assert not isinstance(raised.value, ContextOverflow)
    assert isinstance(raised.value.__cause__, anthropic.InternalServerError)
    assert raised.value.__cause__.status_code == 500
    assert [r.status for r in server.message_requests] == [529, 500]
    assert server.pending == 1


def test_other_bad_request_is_a_summarizer_error(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    server.error(400, "invalid_request_error", "model: unknown model")
    with pytest.raises(SummarizerError) as raised:
        AnthropicSummarizer(client).summarize(SummaryRequest(messages=HISTORY))
    assert not isinstance(raised.value, ContextOverflow)
    assert isinstance(raised.value.__cause__, anthropic.BadRequestError)


def test_prompt_too_long_is_context_overflow(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    server.prompt_too_long(212_000, 200_000)
    with pytest.raises(ContextOverflow) as raised:
        AnthropicSummarizer(client, max_retries=3).summarize(SummaryRequest(messages=HISTORY))
    overflow = raised.value
    assert (overflow.tokens, overflow.limit) == (212_000, 200_000)
    assert isinstance(overflow.__cause__, anthropic.BadRequestError)
    assert is_context_overflow(overflow) and is_context_overflow(overflow.__cause__)
    assert len(server.message_requests) == 1   # a 400 is not retried


def test_is_context_overflow_recognises_the_sdk_exception(server: AnthropicServer,
                                                          client: anthropic.Anthropic) -> None:
    server.prompt_too_long().error(400, "invalid_request_error", "messages: something else")
    kwargs = {"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}
    with pytest.raises(anthropic.BadRequestError) as too_long:
        client.messages.create(**kwargs)
    assert is_context_overflow(too_long.value)
    assert too_long.value.request_id and too_long.value.request_id.startswith("req_")
    with pytest.raises(anthropic.BadRequestError) as other:
        client.messages.create(**kwargs)
    assert not is_context_overflow(other.value)


def test_server_context_window_gives_the_real_overflow(client: anthropic.Anthropic) -> None:
    with AnthropicServer(context_window=2000) as small:
        small_client = anthropic.Anthropic(base_url=small.url, api_key="k", max_retries=0)
        summarizer = AnthropicSummarizer(small_client)
        with pytest.raises(ContextOverflow) as raised:
            summarizer.summarize(SummaryRequest(messages=LONG_HISTORY))
        assert raised.value.limit == 2000 and raised.value.tokens > 2000
        assert raised.value.tokens == small.estimate(small.message_requests[0].body)
        # a short history fits and gets the default answer
        assert list(parse_sections(summarizer.summarize(SummaryRequest(messages=HISTORY[:1])))) == list(SECTIONS)


def test_count_tokens_overflow_is_raised_before_sending(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    summarizer = AnthropicSummarizer(client, count_tokens=True, context_window=3000, max_tokens=1000)
    with pytest.raises(ContextOverflow) as raised:
        summarizer.summarize(SummaryRequest(messages=LONG_HISTORY))
    assert raised.value.limit == 2000 and raised.value.tokens > 2000
    assert server.message_requests == []
    (counted,) = server.count_requests
    assert raised.value.tokens == server.estimate(counted.body)
    assert "max_tokens" not in counted.body and counted.body["system"] == SYSTEM_PROMPT

    server.reset()
    assert summarizer.summarize(SummaryRequest(messages=HISTORY[:1])).startswith("## Primary request and intent")
    assert [r.path for r in server.requests] == ["/v1/messages/count_tokens", "/v1/messages"]


# --------------------------------------------------------------------------- AnthropicCounter through the server


def test_anthropic_counter_counts_through_the_server(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    counter = AnthropicCounter(client, model=MODEL)
    assert counter.name == f"anthropic:{MODEL}"
    assert counter.count("") == 0
    assert server.requests == []
    a, b = "The parser splits on commas. " * 20, "Quoted fields keep their commas intact. " * 30
    count_a, count_b, count_ab = counter.count(a), counter.count(b), counter.count(a + b)
    assert count_a > 0 and count_b > count_a
    assert abs(count_ab - (count_a + count_b)) <= 2
    assert counter.count_many([a, b]) == [count_a, count_b]
    assert all(r.path == "/v1/messages/count_tokens" for r in server.requests)

    request = {
        "system": "You are a careful coding agent.",
        "tools": [{"name": "read_file", "description": "Read a file",
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}],
        "messages": HISTORY,
    }
    full = counter.count_request(request)
    assert full == server.estimate({"model": MODEL, **request})
    assert full > counter.count_request({"messages": HISTORY}) > 0


# --------------------------------------------------------------------------- the server's validator

BASE: dict[str, Any] = {"model": MODEL, "max_tokens": 64}
VALID_CONVERSATION: list[dict[str, Any]] = [
    {"role": "user", "content": [
        {"type": "text", "text": "Look at this screenshot and the two files."},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}},
    ]},
    {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Two reads in parallel.", "signature": "c2ln"},
        {"type": "redacted_thinking", "data": "b3BhcXVl"},
        {"type": "tool_use", "id": "toolu_a", "name": "read_file", "input": {"path": "a.py"}},
        {"type": "tool_use", "id": "toolu_b", "name": "read_file", "input": {"path": "b.py"}},
    ]},
    {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_b", "content": [{"type": "text", "text": "print('b')"}]},
        {"type": "tool_result", "tool_use_id": "toolu_a", "content": "No such file", "is_error": True},
        {"type": "text", "text": "a.py was renamed, by the way."},
    ]},
    {"role": "assistant", "content": [
        {"type": "text", "text": "Then I will search for it."},
        {"type": "tool_use", "id": "toolu_c", "name": "glob", "input": {"pattern": "**/a*.py"}},
    ]},
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_c"}]},
    {"role": "assistant", "content": "Nothing matched."},
    {"role": "user", "content": "OK, stop there."},
]
VALID_TOOLS = [{"name": "read_file", "description": "Read a file",
                "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}},
               {"name": "glob", "input_schema": {"type": "object"}}]


def test_the_server_accepts_a_valid_multi_turn_tool_conversation(server: AnthropicServer,
                                                                 client: anthropic.Anthropic) -> None:
    server.reply_tool_use("read_file", {"path": "c.py"}, text="One more.")
    message = client.messages.create(**BASE, messages=VALID_CONVERSATION, tools=VALID_TOOLS,
                                     system=[{"type": "text", "text": "You are terse."}])
    assert message.stop_reason == "tool_use"
    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"path": "c.py"} and message.model == MODEL
    assert message.usage.input_tokens == server.estimate(server.requests[0].body)
    # the conversation continues with the answer and its result: still valid
    follow = [*VALID_CONVERSATION, {"role": "assistant", "content": [b.model_dump(exclude_none=True, include={
        "type", "text", "id", "name", "input"}) for b in message.content]},
              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": message.content[1].id,
                                            "content": "print('c')"}]}]
    assert client.messages.create(**BASE, messages=follow, tools=VALID_TOOLS).stop_reason == "end_turn"
    assert server.errors == []


def _with(messages: list[dict[str, Any]], index: int, content: Any) -> list[dict[str, Any]]:
    changed = copy.deepcopy(messages)
    changed[index]["content"] = content
    return changed


INVALID: dict[str, tuple[dict[str, Any], str]] = {
    "orphan tool_use": (
        {"messages": _with(VALID_CONVERSATION, 4, "nothing about the glob")},
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_c"),
    "tool_use in the last message": (
        {"messages": VALID_CONVERSATION[:4]},
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_c"),
    "one of two tool_use unanswered": (
        {"messages": _with(VALID_CONVERSATION, 2, VALID_CONVERSATION[2]["content"][:1])},
        "immediately after: toolu_a"),
    "orphan tool_result": (
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_z"}]}]},
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_z"),
    "tool_result not right after its call": (
        {"messages": [*VALID_CONVERSATION[:3], {"role": "assistant", "content": "wait"},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a"}]}]},
        "unexpected `tool_use_id`"),
    "tool_result after text": (
        {"messages": _with(VALID_CONVERSATION, 2, [VALID_CONVERSATION[2]["content"][2],
                                                   *VALID_CONVERSATION[2]["content"][:2]])},
        "`tool_result` blocks must come first"),
    "consecutive user messages": (
        {"messages": [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]},
        'roles must alternate between "user" and "assistant", but found multiple "user" roles in a row'),
    "consecutive assistant messages": (
        {"messages": [{"role": "user", "content": "one"}, {"role": "assistant", "content": "a"},
                      {"role": "assistant", "content": "b"}]},
        'found multiple "assistant" roles in a row'),
    "first message from the assistant": (
        {"messages": [{"role": "assistant", "content": "hello"}, {"role": "user", "content": "hi"}]},
        'first message must use the "user" role'),
    "empty string content": (
        {"messages": [{"role": "user", "content": ""}]},
        "all messages must have non-empty content"),
    "empty block list": (
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": []},
                      {"role": "user", "content": "again"}]},
        "messages.1: all messages must have non-empty content"),
    "empty text block": (
        {"messages": [{"role": "user", "content": [{"type": "text", "text": ""}]}]},
        "text content blocks must be non-empty"),
    "whitespace-only text": (
        {"messages": [{"role": "user", "content": "   \n"}]},
        "text content blocks must contain non-whitespace text"),
    "duplicate tool_use ids": (
        {"messages": [{"role": "user", "content": "go"},
                      {"role": "assistant", "content": [
                          {"type": "tool_use", "id": "toolu_d", "name": "ls", "input": {}},
                          {"type": "tool_use", "id": "toolu_d", "name": "ls", "input": {}}]},
                      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_d"}]}]},
        "`tool_use` ids must be unique"),
    "tool_use id reused in a later turn": (
        {"messages": [*VALID_CONVERSATION[:3], {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_a", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a"}]}]},
        "`tool_use` ids must be unique"),
    "thinking without signature": (
        {"messages": _with(VALID_CONVERSATION, 1, [{"type": "thinking", "thinking": "hm"},
                                                   *VALID_CONVERSATION[1]["content"][2:]])},
        "messages.1.content.0.thinking.signature: Field required"),
    "tool_use input not an object": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "toolu_e", "name": "ls", "input": "-la"}]}]},
        "tool_use.input: Input should be a valid dictionary"),
    "tool_use id with a pipe": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [
            {"type": "tool_use", "id": "call_1|fc_2", "name": "ls", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1|fc_2"}]}]},
        "String should match pattern"),
    "unknown block type": (
        {"messages": [{"role": "user", "content": [{"type": "tool_call", "text": "x"}]}]},
        "Input tag 'tool_call' found using 'type' does not match"),
    "tool_result in an assistant message": (
        {"messages": [{"role": "user", "content": "go"}, {"role": "assistant", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_f"}]}]},
        "`tool_result` blocks can only be in `user` messages"),
    "system role in messages": (
        {"messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]},
        "messages.0.role: Input should be 'user' or 'assistant'"),
    "no messages": ({"messages": []}, "at least one message is required"),
    "system block of the wrong type": (
        {"messages": [{"role": "user", "content": "hi"}], "system": [{"type": "image", "text": "x"}]},
        "system.0.type: Input should be 'text'"),
    "tool without input_schema": (
        {"messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "ls"}]},
        "tools.0.custom.input_schema: Field required"),
    "duplicate tool names": (
        {"messages": [{"role": "user", "content": "hi"}], "tools": VALID_TOOLS[:1] * 2},
        "Tool names must be unique"),
    "trailing whitespace in the final assistant message": (
        {"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "The answer is "}]},
        "final assistant content cannot end with trailing whitespace"),
}


@pytest.mark.parametrize("case", list(INVALID))
def test_the_server_rejects_invalid_requests(server: AnthropicServer, client: anthropic.Anthropic, case: str) -> None:
    fields, expected = INVALID[case]
    server.reply("never sent")
    with pytest.raises(anthropic.BadRequestError) as raised:
        client.messages.create(**{**BASE, **fields})
    error = raised.value
    assert error.status_code == 400 and error.type == "invalid_request_error"
    assert expected in (error.api_message or ""), error.api_message
    assert error.body["type"] == "error" and error.request_id
    assert server.pending == 1   # an invalid request does not use up the script
    with pytest.raises(InvalidRequest, match="."):
        validate_request({**BASE, **fields})


def test_required_fields(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    messages = [{"role": "user", "content": "hi"}]
    cases = [({"model": MODEL, "messages": messages}, "max_tokens: Field required"),
             ({"model": MODEL, "max_tokens": 0, "messages": messages}, "greater than or equal to 1"),
             ({"model": MODEL, "max_tokens": "10", "messages": messages}, "valid integer"),
             ({"max_tokens": 10, "messages": messages}, "model: Field required"),
             ({"model": MODEL, "max_tokens": 10}, "messages: Field required"),
             ({"model": MODEL, "max_tokens": 10, "messages": messages, "temprature": 1}, "Extra inputs")]
    for body, expected in cases:
        with pytest.raises(anthropic.BadRequestError, match=expected):
            client.post("/v1/messages", body=body, cast_to=anthropic.types.Message)
    assert [r.status for r in server.requests] == [400] * len(cases)


def test_lenient_mode_merges_same_role_messages_but_still_checks_pairing() -> None:
    with AnthropicServer(strict=False) as lenient:
        c = anthropic.Anthropic(base_url=lenient.url, api_key="k", max_retries=0)
        consecutive = [{"role": "user", "content": "one"}, {"role": "user", "content": "two"}]
        assert c.messages.create(**BASE, messages=consecutive).stop_reason == "end_turn"
        split = [{"role": "user", "content": "go"},
                 {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_g", "name": "ls", "input": {}}]},
                 {"role": "user", "content": "first"},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_g"}]}]
        with pytest.raises(anthropic.BadRequestError, match="must come first"):
            c.messages.create(**BASE, messages=split)


def test_server_auth_streaming_and_failing_callables(server: AnthropicServer, client: anthropic.Anthropic) -> None:
    messages = [{"role": "user", "content": "hi"}]
    with AnthropicServer(api_key="secret") as guarded:
        for key, expected in (("wrong", anthropic.AuthenticationError), ("secret", None)):
            guarded_client = anthropic.Anthropic(base_url=guarded.url, api_key=key, max_retries=0)
            if expected is None:
                assert guarded_client.messages.create(**BASE, messages=messages).content
            else:
                with pytest.raises(expected):
                    guarded_client.messages.create(**BASE, messages=messages)

    server.reply("streamed text")
    with client.messages.stream(**BASE, messages=messages) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "streamed text" and final.stop_reason == "end_turn"

    def broken(request: RecordedRequest) -> str:
        raise RuntimeError("script bug")

    server.enqueue(broken)
    retrying = client.with_options(max_retries=3)
    with pytest.raises(anthropic.InternalServerError, match="script bug"):
        retrying.messages.create(**BASE, messages=messages)
    assert [type(e) for e in server.errors] == [RuntimeError]
    assert server.requests[-1].status == 500 and len(server.message_requests) == 2   # not retried


# --------------------------------------------------------------------------- asummarize: AsyncAnthropic over HTTP


def async_summarizer(server: AnthropicServer, **kwargs: Any) -> AnthropicSummarizer:
    """A summariser whose async client is a real AsyncAnthropic talking to the local server
    (the sync client is given too, so that nothing is created from the environment)."""
    sync = anthropic.Anthropic(base_url=server.url, api_key="test-key", max_retries=0)
    return AnthropicSummarizer(sync, async_client=anthropic.AsyncAnthropic(base_url=server.url, api_key="test-key"),
                               **kwargs)


def arun(summarizer: AnthropicSummarizer, request: SummaryRequest) -> str:
    """`asummarize` on a fresh event loop, closing the async client with it."""
    async def go() -> str:
        try:
            return await summarizer.asummarize(request)
        finally:
            if summarizer.async_client is not None:
                await summarizer.async_client.close()
    return asyncio.run(go())


def test_asummarize_sends_the_same_request_as_summarize(server: AnthropicServer) -> None:
    request = SummaryRequest(messages=HISTORY, previous_summary="## Primary request and intent\nearlier",
                             instructions="Focus on the parser.", read_files=["src/parser.py"],
                             versions=[[1], [2, 3, 4], [5], [6], [7], [8]])
    summarizer = async_summarizer(server.reply(SUMMARY).reply(SUMMARY))
    assert arun(summarizer, request) == SUMMARY
    assert summarizer.summarize(request) == SUMMARY
    sent_async, sent_sync = server.message_requests
    assert sent_async.body == sent_sync.body == summarizer.build_request(request)
    assert sent_async.headers["x-stainless-async"].startswith("async:")
    assert sent_sync.headers["x-stainless-async"] == "false"
    prompt = only_prompt(sent_async)
    assert "[User v1]: Fix the failing test" in prompt and "[Tool call v4] read_file(" in prompt
    assert "[Tool error v7] bash: E   AssertionError" in prompt


def test_asummarize_overloaded_is_retried_by_the_async_sdk(server: AnthropicServer) -> None:
    server.overloaded(retry_after=0.01).reply(SUMMARY)
    summary = arun(async_summarizer(server, max_retries=2), SummaryRequest(messages=HISTORY))
    assert summary == SUMMARY
    assert [r.status for r in server.message_requests] == [529, 200]
    assert [r.headers["x-stainless-retry-count"] for r in server.message_requests] == ["0", "1"]


def test_asummarize_maps_errors_like_summarize(server: AnthropicServer) -> None:
    server.prompt_too_long(212_000, 200_000)
    with pytest.raises(ContextOverflow) as overflow:
        arun(async_summarizer(server, max_retries=1), SummaryRequest(messages=HISTORY))
    assert (overflow.value.tokens, overflow.value.limit) == (212_000, 200_000)
    assert isinstance(overflow.value.__cause__, anthropic.BadRequestError)
    server.overloaded(retry_after=0.01).overloaded(retry_after=0.01)
    with pytest.raises(SummarizerError) as failed:
        arun(async_summarizer(server, max_retries=1), SummaryRequest(messages=HISTORY))
    assert not isinstance(failed.value, ContextOverflow)
    assert isinstance(failed.value.__cause__, anthropic.APIStatusError) and failed.value.__cause__.status_code == 529
    assert [r.status for r in server.message_requests] == [400, 529, 529]


def test_asummarize_count_tokens_overflow_before_sending(server: AnthropicServer) -> None:
    summarizer = async_summarizer(server, count_tokens=True, context_window=3000, max_tokens=1000)
    with pytest.raises(ContextOverflow) as raised:
        arun(summarizer, SummaryRequest(messages=LONG_HISTORY))
    assert raised.value.limit == 2000 and server.message_requests == [] and len(server.count_requests) == 1


def test_asummarize_creates_its_async_client_from_the_environment(server: AnthropicServer,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    summarizer = AnthropicSummarizer(anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0))
    assert summarizer.async_client is None  # nothing built until it is needed
    server.reply(SUMMARY)
    assert arun(summarizer, SummaryRequest(messages=HISTORY)) == SUMMARY
    assert isinstance(summarizer.async_client, anthropic.AsyncAnthropic)
    (sent,) = server.message_requests
    assert "env-key" in (sent.headers.get("x-api-key"), sent.headers.get("authorization", "").removeprefix("Bearer "))
