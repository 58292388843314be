"""The OpenAI summariser: the real `openai` SDK over HTTP against the local server's Chat
Completions and Responses endpoints, alone and inside the store's compaction (both backends)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import openai
import pytest

import sessionstore as ss
from sessionstore import OpenAISummarizer, SessionStore
from sessionstore.summarizers import SECTIONS, ContextOverflow, SummaryRequest
from sessionstore.testing.openai_server import OpenAIServer

from .checks import assert_valid_view
from .test_anthropic import HISTORY, SUMMARY
from .test_compaction import SMALL, work_session


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(default=SUMMARY) as running:
        yield running


def summarizer(server: OpenAIServer, api: str = "chat", **kwargs: object) -> OpenAISummarizer:
    return OpenAISummarizer("small-model", base_url=server.url + "/v1", api_key="test-key", api=api,  # type: ignore[arg-type]
                            **kwargs)  # type: ignore[arg-type]


def test_chat_completions_summary(server: OpenAIServer) -> None:
    server.reply("Here is the summary:\n\n" + SUMMARY)
    summary = summarizer(server, max_tokens=900).summarize(SummaryRequest(messages=HISTORY, instructions="keep paths"))
    assert summary == SUMMARY  # the same cleaning and sections as Anthropic's
    [request] = server.chat_requests
    body = request.body
    assert body["model"] == "small-model" and body["max_tokens"] == 900  # a local server: the cap all honour
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert "keep paths" in body["messages"][1]["content"] and "tests/test_parser.py" in body["messages"][1]["content"]
    assert all(title in body["messages"][1]["content"] for title in SECTIONS)


def test_responses_summary_sync_and_async(server: OpenAIServer) -> None:
    summarizer_ = summarizer(server, api="responses")
    assert summarizer_.summarize(SummaryRequest(messages=HISTORY)) == SUMMARY
    assert asyncio.run(summarizer_.asummarize(SummaryRequest(messages=HISTORY))) == SUMMARY
    assert not server.chat_requests and len(server.response_requests) == 2
    body = server.response_requests[0].body
    assert body["instructions"] and body["input"][0]["role"] == "user" and body["max_output_tokens"] == 8192


def test_async_chat_summary(server: OpenAIServer) -> None:
    assert asyncio.run(summarizer(server).asummarize(SummaryRequest(messages=HISTORY))) == SUMMARY
    assert len(server.chat_requests) == 1


def test_rate_limited_then_success_is_retried_by_the_sdk(server: OpenAIServer) -> None:
    server.rate_limited(retry_after=0.01)
    server.server_error(retry_after=0.01)
    assert summarizer(server, max_retries=3).summarize(SummaryRequest(messages=HISTORY)) == SUMMARY
    assert [r.status for r in server.chat_requests] == [429, 500, 200]


def test_exhausted_retries_are_a_summarizer_error(server: OpenAIServer) -> None:
    server.rate_limited(retry_after=0.01)
    server.rate_limited(retry_after=0.01)
    with pytest.raises(ss.SummarizerError) as raised:
        summarizer(server, max_retries=1).summarize(SummaryRequest(messages=HISTORY))
    assert isinstance(raised.value.__cause__, openai.RateLimitError)


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_context_length_error_is_context_overflow(server: OpenAIServer, api: str) -> None:
    server.context_length_exceeded(tokens=130_000, limit=128_000)
    with pytest.raises(ContextOverflow) as raised:
        summarizer(server, api=api).summarize(SummaryRequest(messages=HISTORY))
    assert (raised.value.tokens, raised.value.limit) == (130_000, 128_000)
    assert isinstance(raised.value.__cause__, openai.BadRequestError)


def test_compaction_halves_after_context_length_error(store: SessionStore, server: OpenAIServer) -> None:
    sid = work_session(store, 12)
    server.context_length_exceeded()
    result = store.compact(sid, SMALL.with_(rules=(), rewrite=False), summarizer(server))
    assert result is not None and result.compaction is not None
    statuses = [r.status for r in server.chat_requests]
    assert statuses[0] == 400 and statuses.count(200) >= 3  # slices, then the merge
    assert result.compaction.payload["details"]["slices"] > 1
    assert result.compaction.payload["summarizer"] == "openai:small-model"
    assert_valid_view(store.context(sid))


def test_async_store_compacts_through_chat_completions(store: SessionStore, server: OpenAIServer) -> None:
    sid = work_session(store, 6)

    async def go() -> None:
        async with ss.AsyncSessionStore(store.url) as astore:
            result = await astore.compact(sid, SMALL.with_(rules=()), summarizer(server))
            assert result is not None and result.compaction is not None
            assert all(f"## {title}" in result.compaction.payload["summary"] for title in SECTIONS)

    asyncio.run(go())
    assert server.chat_requests and all(r.status == 200 for r in server.chat_requests)
    assert_valid_view(store.context(sid))


# --------------------------------------------------------------------------- the CLI


def cli(url: str, *args: str) -> str:
    from click.testing import CliRunner

    from sessionstore.cli import main

    env: dict[str, str | None] = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}  # --base-url alone must do
    result = CliRunner(env=env).invoke(main, ["--db", url, "--log-format", "json", *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_cli_compact_with_openai_against_a_local_server(store: SessionStore, server: OpenAIServer) -> None:
    sid = work_session(store, 8)
    cli(store.url, "compact", sid, "--summarizer", "openai", "--model", "local-small", "--base-url",
        server.url + "/v1", "--context-window", "60000", "--keep-recent-tokens", "500")
    compaction = store.context(sid).compaction
    assert compaction is not None and compaction.payload["summarizer"] == "openai:local-small"
    assert server.chat_requests and all(r.body["model"] == "local-small" for r in server.chat_requests)
    assert all(f"## {title}" in compaction.payload["summary"] for title in SECTIONS)


def test_cli_replay_with_openai(store: SessionStore, server: OpenAIServer) -> None:
    import json

    from .test_replay import recorded_session

    sid, _ = recorded_session(store)
    out = cli(store.url, "replay", sid, "--window", "16000", "--json", "--summarizer", "openai",
              "--base-url", server.url + "/v1")
    [row] = [json.loads(line) for line in out.splitlines()]
    assert row["compactions"] and row["summarizer_calls"] == len(server.chat_requests) > 0


def test_cli_openai_dry_run_sends_nothing_and_no_credentials_is_a_clear_error(store: SessionStore,
                                                                             server: OpenAIServer) -> None:
    from click.testing import CliRunner

    from sessionstore.cli import main

    sid = work_session(store, 6)
    head = store.version(sid)
    out = cli(store.url, "compact", sid, "--dry-run", "--summarizer", "openai", "--base-url", server.url + "/v1",
              "--context-window", "60000", "--keep-recent-tokens", "500")
    assert "(none was sent)" in out and '"max_tokens"' in out
    assert server.requests == [] and store.version(sid) == head
    env: dict[str, str | None] = {"OPENAI_API_KEY": None, "OPENAI_BASE_URL": None}
    refused = CliRunner(env=env).invoke(main, ["--db", store.url, "compact", sid, "--summarizer", "openai"])
    assert refused.exit_code != 0 and "OPENAI_API_KEY" in refused.output
    assert store.version(sid) == head


def test_no_api_key_is_a_summarizer_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ss.SummarizerError, match="OPENAI_API_KEY"):
        OpenAISummarizer("m")
    with pytest.raises(ss.SummarizerError, match="unknown OpenAI API"):
        OpenAISummarizer("m", api_key="k", api="completions")  # type: ignore[arg-type]
