"""A summariser's own window: every request fits the model that reads it, down to 2,048 tokens.

The real `openai` SDK summarises a real transcript through `OpenAIServer` playing each kind
of OpenAI-compatible server with a 2,048-token window, each answering a request over it as that
server does (OpenAI's and llama-cpp-python's 400, llama.cpp's ``exceed_context_size_error``,
vLLM's words without a code, Ollama's silent cut) and stating it where that server states it.
The server counts chars/4, the store tiktoken: the two counts differ, as a model's and ours do.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest

import sessionstore as ss
from sessionstore import CompactionPolicy, OpenAISummarizer, SessionStore
from sessionstore.importers import import_path
from sessionstore.summarizers.prompts import BRIEF_SYSTEM_PROMPT
from sessionstore.summarizers.window import ModelWindow, stated_limits, window_from_ollama
from sessionstore.testing.openai_server import OpenAIServer

from .checks import assert_valid_view
from .conftest import FIXTURE_TRANSCRIPTS, shipped

WINDOW = 2_048
WORDS = "The agent recorded its session with the local model."
ANSWER = f"## Primary request and intent\n{WORDS}\n\n## Current work\nSummarising with a small window."
# Where each kind of server states its window (None: only in its errors, or nowhere).
STATED = {"openai": None, "llama-cpp-python": None, "vllm": "server", "llama.cpp": "server", "ollama": "server"}
CODEX = shipped("codex/recorded/rollout-*.jsonl")


def imported(store: SessionStore, relative: str) -> str:
    """A fork of the recorded session just before its own compaction: its whole history in the view."""
    before = {s.id for s in store.sessions()}
    import_path(store, FIXTURE_TRANSCRIPTS / relative)
    [sid] = [s.id for s in store.sessions() if s.id not in before and ":" not in s.id]
    [compaction] = store.events(sid, kinds=["compaction"])
    return store.fork(sid, at=compaction.version - 1)


def server_of(flavour: str) -> OpenAIServer:
    return OpenAIServer(default=ANSWER, served=("smollm2",), context_window=WINDOW, flavour=flavour)


def chat_fits(server: OpenAIServer) -> bool:
    """Every request the server answered fitted its window, as it counts (input + the answer's cap)."""
    for request in server.chat_requests:
        body = request.body
        texts = [m["content"] for m in body["messages"]]
        used = sum(server.counter.count_many(texts)) + (0 if server.flavour in ("llama.cpp", "llama-cpp-python")
                                                       else body.get("max_tokens", 0))
        if request.status == 200 and used > WINDOW:
            return False
    return True


@pytest.fixture(params=list(STATED))
def small(request: pytest.FixtureRequest) -> Iterator[OpenAIServer]:
    with server_of(request.param) as running:
        yield running


def test_a_real_session_summarised_by_a_2048_token_model(store: SessionStore, small: OpenAIServer) -> None:
    sid = imported(store, CODEX)
    summarizer = OpenAISummarizer(base_url=small.url + "/v1", api_key="local")  # no model: the server's only one
    assert summarizer.model == "smollm2"
    result = store.compact(sid, CompactionPolicy.for_window(16_000, keep_recent_tokens=500), summarizer)
    assert result is not None and result.compaction is not None
    statuses = [r.status for r in small.chat_requests]
    assert statuses.count(200) >= 3 and chat_fits(small) and small.truncated == 0
    if STATED[small.flavour]:
        assert set(statuses) == {200}  # planned for the stated window from the first request
    else:  # learned from the first batch's errors, then every request fits
        assert statuses[0] == 400 and set(statuses[statuses.index(200):]) == {200}
    window = result.compaction.payload["details"]["summarizer_window"]
    assert window["tokens"] == WINDOW and window["source"] == (STATED[small.flavour] or "error")
    assert summarizer.context_window == WINDOW
    answered = small.chat_requests[statuses.index(200):]  # planned for the small window: the brief prompts
    assert all(r.body["messages"][0]["content"] == BRIEF_SYSTEM_PROMPT for r in answered)
    view = store.context(sid)
    assert WORDS in str(view.to_anthropic()["messages"][0])  # the model's own words, in the view
    assert_valid_view(view)
    # remembered: a second compaction plans for the window at once (no request refused)
    store.append(sid, [ss.user("go on " * 400), ss.assistant("Going on. " * 400)])
    refused = sum(1 for r in small.chat_requests if r.status != 200)
    store.compact(sid, CompactionPolicy.for_window(16_000, keep_recent_tokens=500), summarizer)
    assert sum(1 for r in small.chat_requests if r.status != 200) == refused and chat_fits(small)


def test_a_declared_window_fits_from_the_first_request_on_the_async_door(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'declared.db'}"
    store = SessionStore(url)
    store.migrate()
    sid = imported(store, CODEX)
    store.close()
    with server_of("openai") as server:
        summarizer = OpenAISummarizer("smollm2", base_url=server.url + "/v1", api_key="local",
                                      context_window=WINDOW)

        async def go() -> ss.CompactionResult | None:
            async with ss.AsyncSessionStore(url) as astore:
                return await astore.compact(sid, CompactionPolicy.for_window(16_000, keep_recent_tokens=500),
                                            summarizer)

        result = asyncio.run(go())
        assert result is not None and result.compaction is not None
        assert {r.status for r in server.chat_requests} == {200} and chat_fits(server)
        assert result.compaction.payload["details"]["summarizer_window"]["source"] == "declared"
        assert server.requests[0].path == "/v1/chat/completions"  # a declared window asks the server nothing


def test_the_cli_takes_the_summarizers_window(store: SessionStore) -> None:
    from click.testing import CliRunner

    from sessionstore.cli import main

    sid = imported(store, CODEX)
    with server_of("openai") as server:
        result = CliRunner(env={"OPENAI_API_KEY": None}).invoke(main, [
            "--db", store.url, "compact", sid, "--summarizer", "openai", "--base-url", server.url + "/v1",
            "--summarizer-window", str(WINDOW), "--context-window", "16000", "--keep-recent-tokens", "500"])
        assert result.exit_code == 0, result.output
        assert {r.status for r in server.chat_requests} == {200} and chat_fits(server)
        assert all(r.body["model"] == "smollm2" for r in server.chat_requests)
    compaction = store.context(sid).compaction
    assert compaction is not None and compaction.payload["summarizer"] == "openai:smollm2"


def test_no_default_model_is_sent_to_a_server_that_serves_several(store: SessionStore) -> None:
    from click.testing import CliRunner

    from sessionstore.cli import main

    sid = store.create_session()
    with OpenAIServer(served=("llama-3-8b", "qwen-2.5-7b")) as server:
        url = server.url + "/v1"
        with pytest.raises(ss.SummarizerError, match="serves 2: llama-3-8b, qwen-2.5-7b") as raised:
            OpenAISummarizer(base_url=url, api_key="local")
        assert url in str(raised.value) and "model=" in str(raised.value)
        result = CliRunner(env={"OPENAI_API_KEY": None}).invoke(main, [
            "--db", store.url, "compact", sid, "--summarizer", "openai", "--base-url", url])
        assert result.exit_code == 2 and "--model" in result.output and url in result.output
        assert not server.chat_requests


def test_errors_name_the_url_and_the_model() -> None:
    summarizer = OpenAISummarizer("m-local", base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(ss.SummarizerError) as raised:
        summarizer.summarize(ss.SummaryRequest(messages=[{"role": "user", "content": "hello"}]))
    assert "openai model 'm-local' at http://127.0.0.1:9/v1" in str(raised.value)


@pytest.mark.parametrize(("message", "body", "expected"), [
    ("This model's maximum context length is 2048 tokens. However, you requested 2581 tokens (2531 in the "
     "messages, 50 in the completion). Please reduce the length of the messages or completion.", None,
     (2048, 2531, 50)),
    ("This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
     None, (128_000, 130_000, None)),
    ("'max_tokens' is too large: 1000. This model's maximum context length is 2048 tokens and your request has "
     "1500 input tokens (1000 > 2048 - 1500).", None, (2048, 1500, None)),
    ("the request exceeds the available context size, try increasing it",
     {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 4241, "n_ctx": 2048}, (2048, 4241, None)),
    ("prompt is too long: 212000 tokens > 200000 maximum", None, (200_000, 212_000, None)),
    ("input length and `max_tokens` exceed context limit: 188240 + 21333 > 200000, decrease input length or "
     "`max_tokens` and try again", None, (200_000, 188_240, 21_333)),
    ("Rate limit reached", None, (None, None, None)),
])
def test_what_a_context_length_error_states(message: str, body: object, expected: tuple[int | None, ...]) -> None:
    limits = stated_limits(message, body)
    assert (limits.window, limits.tokens, limits.output) == expected


def test_ollama_is_planned_at_its_smallest_default_unless_it_says_more() -> None:
    assert window_from_ollama({"parameters": "stop <|im_end|>"}, {"models": []}, "m") == 2048
    assert window_from_ollama({"parameters": "num_ctx 8192\nstop x"}, {"models": []}, "m") == 8192
    assert window_from_ollama({}, {"models": [{"name": "m", "context_length": 32768}]}, "m") == 32768
    # the margin while the model's count is unknown, and the learned ratio once it is
    assert ModelWindow(2048, "server").planning_tokens() < 2048
    assert ModelWindow(2048, "error", ratio=1.25).planning_tokens() == int(2048 / 1.25 * 0.95)
