"""A provider's own compaction recorded as a compaction of the projection (issue 14, items 2 and 4):
an Anthropic ``compaction`` block or an OpenAI ``compaction`` item inside a reply — appended through
the API or by the Agents SDK integration — makes the view start from it. The provider that made it
gets it back byte for byte; every other renderer gets a portable summary of the same range; the
transcript keeps everything. Real SDKs against the local servers, SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anthropic
import openai
import pytest

import sessionstore as ss
from sessionstore import events
from sessionstore.errors import InvalidEvent
from sessionstore.integrations._responses import view_to_items
from sessionstore.integrations.openai_agents import SessionStoreSession
from sessionstore.testing.anthropic_server import AnthropicServer
from sessionstore.testing.openai_server import OpenAIServer, replaced_by

BETA = ["compact-2026-01-12"]
EDIT = {"edits": [{"type": "compact_20260112", "pause_after_compaction": False,
                   "trigger": {"type": "input_tokens", "value": 1}}]}
TURNS = [ss.user("Plan the migration of the billing service."), ss.assistant("Step one: freeze writes."),
         ss.user("Go on.")]


def test_an_anthropic_reply_with_a_compaction_block_starts_the_view(store: ss.SessionStore) -> None:
    with AnthropicServer() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        sid = store.create_session()
        store.append(sid, TURNS)
        server.reply("Step two: migrate the ledger.")
        raw = client.beta.messages.with_raw_response.create(model="claude-x", max_tokens=256, betas=BETA,
                                                             context_management=EDIT,  # type: ignore[arg-type]
                                                             **store.context(sid).to_anthropic())
        content = raw.http_response.json()["content"]
        assert [b["type"] for b in content] == ["compaction", "text"]
        store.append(sid, [ss.assistant(content, meta={"model": "claude-x"}), ss.user("And then?")])

        events = list(store.transcript(sid))
        assert [e.kind for e in events] == ["message"] * 5 + ["compaction"]
        assert events[3].payload["content"] == content  # the transcript keeps the reply as it came
        compaction = events[-1].payload
        assert compaction["first_kept_version"] == 4 and compaction["native"]["provider"] == "anthropic"
        assert compaction["summary"] == content[0]["content"]  # the block's readable text is the summary

        view = store.context(sid)
        assert view.compaction is not None and view.compaction.version == 6 and not view.diagnostics
        request = view.to_anthropic()
        assert request["messages"][1] == {"role": "assistant", "content": content}  # byte for byte, in place
        assert request["messages"][2]["content"][0]["text"] == "And then?"
        server.reply("Then cut over.")
        client.beta.messages.create(model="claude-x", max_tokens=64, betas=BETA, **request)
        assert server.message_requests[-1].body["messages"][1]["content"] == content

        # other renderers: the readable text, never the opaque parts; the range is not dropped
        chat = view.to_openai()
        assert content[0]["content"] in chat[0]["content"] and "encrypted" not in json.dumps(chat)
        responses = view_to_items(view)
        assert content[0]["content"] in responses[0]["content"] and "encrypted" not in json.dumps(responses)
        # time travel: before the reply, the whole conversation
        assert [m["role"] for m in store.context(sid, at=3).messages] == ["user", "assistant", "user"]


def test_an_openai_compaction_item_from_the_agents_sdk_starts_the_view(store_url: str) -> None:
    with OpenAIServer() as server:
        client = openai.OpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
        history: list[Any] = [{"role": "user", "content": "What is the weather in Paris?"},
                              {"role": "assistant", "content": "Sunny, 24 degrees."}]
        window = client.responses.with_raw_response.compact(model="gpt-5.4", input=history  # type: ignore[arg-type]
                                                           ).http_response.json()["output"]
        item = window[-1]
        session = SessionStoreSession("paris", store_url)
        try:
            asyncio.run(session.add_items([*history, item, {"role": "user", "content": "And tomorrow?"}]))
            assert asyncio.run(session.get_items()) == [*history, item, {"role": "user", "content": "And tomorrow?"}]
        finally:
            session.close()
        store = ss.SessionStore(store_url)
        try:
            view = store.context("paris")
            assert view.compaction is not None and view.compaction.payload["native"]["items"] == [item]
            # the Responses rendering: the item verbatim, then what came after it
            assert view_to_items(view) == [item, {"role": "user", "content": "And tomorrow?"}]
            # no readable text: Anthropic gets our offline summary of the range, and the view says so
            summary = view.compaction.payload["summary"]
            assert "What is the weather in Paris?" in summary
            assert view.compaction.payload["details"]["portable"] == "offline"
            assert summary in view.messages[0]["content"][0]["text"]
            # ... and that it counts OpenAI's opaque item at an estimate (no usage came with it)
            assert [d.code for d in view.diagnostics] == ["portable_summary", "estimated_window"]
            assert "gAAAA" not in json.dumps(view.to_anthropic())
            assert len(list(store.transcript("paris"))) == 5  # 4 items + the compaction
        finally:
            store.close()


def test_a_retried_reply_is_recorded_once_and_a_bad_native_payload_is_refused(store: ss.SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, TURNS)
    block = {"type": "compaction", "content": "Billing migration, writes frozen.", "encrypted_content": "e30="}
    batch = [ss.assistant([block]), ss.user("Next?")]
    first = store.append(sid, batch)
    assert store.append(sid, batch) == first and store.version(sid) == 6
    with pytest.raises(InvalidEvent, match=r"payload\.native\.provider"):
        store.append(sid, [events.compaction("x", 1, native={"provider": "gemini", "items": [block]})])
    with pytest.raises(ss.ConcurrencyError):
        store.append(sid, [ss.assistant([block])], expected_version=2)
    assert store.version(sid) == 6


# ----------------------------------------------------------------------------- the Agents SDK's compaction session

def test_the_sdk_compaction_session_over_ours_is_one_compaction_in_the_store(store_url: str) -> None:
    """The real `Runner` with automatic compaction after every turn: each replacement the SDK makes
    is one compaction event (no reset, nothing deleted); `get_items` is the window byte for byte,
    and the next turn sends the compaction item back verbatim."""
    from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
    from agents.memory import OpenAIResponsesCompactionSession

    set_tracing_disabled(True)
    with OpenAIServer() as server:
        async def run() -> tuple[list[Any], list[Any]]:
            client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="test", max_retries=0)
            agent = Agent(name="assistant", instructions="Be brief.", model=OpenAIResponsesModel("gpt-4.1", client))
            ours = SessionStoreSession("sdk-compacted", store_url)
            try:
                session = OpenAIResponsesCompactionSession("sdk-compacted", ours, client=client,
                                                           should_trigger_compaction=lambda _context: True)
                server.reply("Paris is sunny.")
                await Runner.run(agent, "Weather in Paris?", session=session)
                first = await ours.get_items()
                assert first == await session.get_items()
                server.reply("Rain tomorrow.")
                await Runner.run(agent, "And tomorrow?", session=session)
                return first, await ours.get_items()
            finally:
                await ours.aclose()

        first, second = asyncio.run(run())
        assert len(server.compact_requests) == 2
        assert [(i["type"], i.get("role")) for i in first] == [("message", "user"), ("compaction", None)]
        replaced = replaced_by(first[-1])
        assert [i.get("role") for i in replaced] == ["user", "assistant"]
        assert replaced[0]["content"] == "Weather in Paris?"
        # the second turn sent the first window (its compaction item verbatim) to the model
        sent = server.response_requests[-1].body["input"]
        assert first[-1] in sent and first[-1]["type"] == "compaction"
        assert [i["type"] for i in second][-1] == "compaction" and second[-1] != first[-1]

    store = ss.SessionStore(store_url)
    try:
        events = list(store.transcript("sdk-compacted"))
        compactions = [e for e in events if e.kind == "compaction"]
        assert len(compactions) == 2 and all(e.payload["strategy"] == "provider" for e in compactions)
        assert not [e for e in events if e.kind == "prune"]  # no reset, no retraction: nothing taken back
        latest = compactions[-1]
        assert latest.payload["native"]["items"] == second and latest.payload["first_kept_version"] == latest.version
        assert "Weather in Paris?" in latest.payload["summary"]  # the portable summary covers the range
        assert store.stats("sdk-compacted").compactions == 2
        view = store.context("sdk-compacted")
        assert view.compaction == latest and view_to_items(view) == second
        # time travel: just before the latest compaction, the turn it replaced is in the view
        before = store.context("sdk-compacted", at=latest.version - 1)
        assert {"type": "text", "text": "Rain tomorrow."} in before.messages[-1]["content"]
        # Anthropic is sent the portable summary of the replaced range, which the view says
        assert len(view.messages) == 1 and "Rain tomorrow." in view.messages[0]["content"][0]["text"]
        assert [d.code for d in view.diagnostics] == ["portable_summary", "estimated_window"]
    finally:
        store.close()


# ----------------------------------------------------------------------------- level 3 by the provider

from sessionstore import AsyncSessionStore, CompactionPolicy  # noqa: E402
from sessionstore.summarizers.anthropic_compact import AnthropicCompactSummarizer  # noqa: E402
from sessionstore.summarizers.openai_compact import OpenAICompactSummarizer  # noqa: E402

POLICY = CompactionPolicy(context_window=8_000, reserve_tokens=1_000, keep_recent_tokens=1_500,
                          min_summarized_tokens=500)


def _long_session(store: ss.SessionStore, turns: int = 8) -> str:
    sid = store.create_session()
    for i in range(turns):
        store.append(sid, [ss.user(f"Step {i}: explain module {i}. " + "detail " * 300),
                           ss.assistant(f"Module {i} loads the ledger. " + "words " * 300)])
    return sid


def test_openai_compact_is_level_3_and_its_window_goes_back_verbatim(store: ss.SessionStore) -> None:
    with OpenAIServer() as server:
        compactor = OpenAICompactSummarizer(base_url=server.url + "/v1", api_key="test", max_retries=0)
        sid = _long_session(store)
        result = store.compact(sid, POLICY, compactor)
        assert result is not None and POLICY.window_tokens(result.plan.view_after) <= POLICY.threshold
        compaction = store.context(sid).compaction
        assert compaction is not None
        [request] = server.compact_requests
        native = compaction.payload["native"]
        assert native["provider"] == "openai" and native["items"][-1]["type"] == "compaction"
        # the planner's cut: everything before it went to responses.compact, the kept tail did not
        first_kept = compaction.payload["first_kept_version"]
        sent = request.body["input"]
        assert [i["content"][:7] for i in sent if i.get("role") == "user"] == [
            f"Step {i}:" for i in range(first_kept // 2)]
        assert compaction.payload["details"]["portable"] == "summarizer" and "Step 0" in compaction.payload["summary"]
        view = store.context(sid)
        items = view_to_items(view)
        assert items[:len(native["items"])] == native["items"]  # byte for byte, then the kept tail

        # the next compaction sends the previous window verbatim, so the provider's covers it
        for i in range(2):
            store.append(sid, [ss.user(f"More {i}: " + "detail " * 400), ss.assistant("ok " * 400)])
        store.compact(sid, POLICY, compactor)
        assert server.compact_requests[1].body["input"][:len(native["items"])] == native["items"]
        assert len([e for e in store.transcript(sid) if e.kind == "compaction"]) == 2


def test_anthropic_compact_is_level_3_and_its_block_goes_back_verbatim(store: ss.SessionStore) -> None:
    with AnthropicServer() as server:
        client = anthropic.Anthropic(base_url=server.url, api_key="test", max_retries=0)
        compactor = AnthropicCompactSummarizer(client, trigger=100, instructions="Keep module names.")
        sid = _long_session(store)
        result = store.compact(sid, POLICY, compactor)
        assert result is not None and POLICY.window_tokens(result.plan.view_after) <= POLICY.threshold
        request = server.message_requests[-1].body
        assert request["context_management"]["edits"][0]["pause_after_compaction"] is True
        assert request["context_management"]["edits"][0]["instructions"] == "Keep module names."
        view = store.context(sid)
        block = view.compaction.payload["native"]["items"][0]  # type: ignore[union-attr]
        assert block["type"] == "compaction" and block["signature"] and block["encrypted_content"]
        assert view.compaction.payload["summary"] == block["content"]  # type: ignore[union-attr]
        opening = view.to_anthropic()["messages"][1]
        assert opening["role"] == "assistant" and opening["content"][0] == block
        server.reply("Carrying on.")
        client.beta.messages.create(model="claude-x", max_tokens=32, betas=BETA, **view.to_anthropic())
        assert server.message_requests[-1].body["messages"][1]["content"][0] == block
        # a view under the trigger: the API does not compact; the planner's summary is recorded, and says so
        small = _long_session(store)
        store.compact(small, POLICY, AnthropicCompactSummarizer(client, trigger=10_000_000))
        [recorded] = [e for e in store.transcript(small) if e.kind == "compaction"]
        assert "native" not in recorded.payload
        assert "did not compact" in recorded.payload["details"]["provider_declined"]


def test_the_async_door_asks_the_provider_through_the_async_sdk(store_url: str) -> None:
    async def run(url: str) -> dict[str, Any]:
        store = AsyncSessionStore(store_url)
        try:
            sid = await store.create_session()
            for i in range(8):
                await store.append(sid, [ss.user(f"Step {i}: " + "detail " * 300), ss.assistant("words " * 300)])
            await store.compact(sid, POLICY, OpenAICompactSummarizer(base_url=url, api_key="test", max_retries=0))
            view = await store.context(sid)
            assert view.compaction is not None
            return dict(view.compaction.payload)
        finally:
            await store.close()

    with OpenAIServer() as server:
        payload = asyncio.run(run(server.url + "/v1"))
        assert len(server.compact_requests) == 1 and payload["native"]["items"][-1]["type"] == "compaction"


# ----------------------------------------------------------------------------- the command line

def test_replay_compares_the_four_summarizers_against_the_local_servers(store: ss.SessionStore, store_url: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from .test_replay import recorded_session, run

    sid, _ = recorded_session(store, turns=6)
    with OpenAIServer() as openai_server, AnthropicServer() as anthropic_server:
        monkeypatch.setenv("OPENAI_BASE_URL", openai_server.url + "/v1")
        monkeypatch.setenv("OPENAI_API_KEY", "test")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", anthropic_server.url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test")
        result = run(store_url, "replay", sid, "--window", "12000", "--json", *(
            arg for name in ("offline", "openai", "openai-compact", "anthropic-compact")
            for arg in ("--summarizer", name)))
        rows = {row["label"]: row for row in map(json.loads, result.stdout.splitlines())}
        assert list(rows) == [f"12k single {name}" for name in
                              ("offline", "openai", "openai-compact", "anthropic-compact")]
        assert all(row["compactions"] and row["invalid_requests"] == 0 and row["calls_over_window"] == 0
                   for row in rows.values())
        # each model summariser reached its server: the summaries, the compact endpoint, the compact edit
        assert openai_server.chat_requests and openai_server.compact_requests
        edits = [r.body.get("context_management") for r in anthropic_server.message_requests]
        assert any(e and e["edits"][0]["type"] == "compact_20260112" for e in edits)
        assert rows["12k single openai-compact"]["summarizer_calls"] > rows["12k single offline"]["summarizer_calls"]
        # OpenAI compacts every range; Anthropic's API only past its 50,000-token trigger (so: our summary)
        assert rows["12k single openai-compact"]["native"] == len(rows["12k single openai-compact"]["compactions"])
        assert rows["12k single offline"]["native"] == rows["12k single anthropic-compact"]["native"] == 0


def test_compact_with_openai_compact_on_the_command_line(store: ss.SessionStore, store_url: str) -> None:
    from .test_replay import run

    sid = _long_session(store)
    with OpenAIServer() as server:
        out = run(store_url, "compact", sid, "--summarizer", "openai-compact", "--base-url", server.url + "/v1",
                  "--context-window", "20000", "--keep-recent-tokens", "1500").stdout
        assert len(server.compact_requests) == 1, out
    compaction = store.context(sid).compaction
    assert compaction is not None and compaction.payload["native"]["provider"] == "openai"
    assert compaction.payload["summarizer"].startswith("openai-compact:")


def test_a_framework_window_recorded_through_the_blocking_store(store: ss.SessionStore) -> None:
    sid = store.create_session()
    store.append(sid, [ss.user("Weather in Paris?"), ss.assistant("Sunny.")])
    window = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
              {"id": "cmp_9", "type": "compaction", "encrypted_content": "gAAAAe30="}]
    with pytest.raises(InvalidEvent, match=r"payload\.native\.items"):
        store.record_provider_compaction(sid, "openai", [])
    with pytest.raises(ss.ConcurrencyError):
        store.record_provider_compaction(sid, "openai", window, expected_version=1)
    assert store.version(sid) == 2
    store.record_provider_compaction(sid, "openai", window, summarizer="my-framework", expected_version=2)
    store.append(sid, ss.user("And tomorrow?"))
    view = store.context(sid)
    assert view.compaction is not None and view.compaction.payload["first_kept_version"] == 3
    assert view_to_items(view)[:2] == window
    assert "Weather in Paris?" in view.compaction.payload["summary"]
    assert [m["role"] for m in view.messages] == ["user", "assistant", "user"]  # summary, ack, the new question


def test_the_sdk_suffix_replacement_keeps_the_older_items_and_refuses_a_moved_session(store_url: str) -> None:
    """`_get_compaction_snapshot`: the SDK replaces a suffix of the history; what came before stays,
    first in the recorded window; a session that moved since the snapshot is left as it is."""
    history: list[Any] = [{"role": "user", "content": f"q{i}"} for i in range(4)]
    window = [{"role": "user", "content": "q3"}, {"id": "cmp_2", "type": "compaction", "encrypted_content": "gAAAAe30="}]

    async def run() -> tuple[list[Any], bool, list[Any]]:
        session = SessionStoreSession("suffix", store_url)
        try:
            await session.add_items(history)
            snapshot = await session._get_compaction_snapshot(2)
            assert snapshot is not None and snapshot.items == history[2:] and not snapshot.complete
            assert await snapshot.replace_suffix(1, window)
            after = await session.get_items()
            stale = await session._get_compaction_snapshot(10)
            assert stale is not None
            await session.add_items([{"role": "user", "content": "meanwhile"}])
            refused = await stale.replace_suffix(0, window)
            return after, refused, await session.get_items()
        finally:
            await session.aclose()

    after, refused, final = asyncio.run(run())
    assert after == [*history[:3], *window]  # q0..q2 kept, the suffix (q3) replaced by the window
    assert not refused and final == [*after, {"role": "user", "content": "meanwhile"}]


def test_a_langchain_reply_with_a_compaction_block_and_one_whose_text_failed(store_url: str) -> None:
    """Through LangChain's history (which keeps foreign blocks whole) as through the API; a block
    whose readable text is null (the provider's summary failed) gets our offline summary."""
    from langchain_core.messages import AIMessage, HumanMessage

    from sessionstore.integrations.langchain import SessionStoreChatMessageHistory

    block = {"type": "compaction", "content": "They planned a migration.", "encrypted_content": "ZQ==",
             "signature": "c2ln"}
    history = SessionStoreChatMessageHistory("lc", store_url)
    history.add_messages([HumanMessage("Plan the migration."), AIMessage("Freeze writes."), HumanMessage("Go on."),
                          AIMessage(content=[block, {"type": "text", "text": "Next: cut over."}]),
                          HumanMessage("Then?")])
    assert history.messages[3].content == [block, {"type": "text", "text": "Next: cut over."}]
    store = ss.SessionStore(store_url)
    try:
        view = store.context("lc")
        assert view.compaction is not None and view.compaction.payload["summary"] == "They planned a migration."
        assert view.to_anthropic()["messages"][1]["content"] == [block, {"type": "text", "text": "Next: cut over."}]
        failed = {**block, "content": None}
        history.add_messages([AIMessage(content=[failed])])
        view = store.context("lc")
        assert view.compaction.payload["native"]["items"] == [failed]
        assert "Then?" in view.compaction.payload["summary"]  # ours, offline, of the range since the first
        assert "They planned a migration." in view.compaction.payload["summary"]  # which it updates
        assert view.to_anthropic()["messages"][-1]["content"] == [failed]
    finally:
        store.close()
        history.close()


def test_a_codex_rollout_compaction_item_is_openai_s(store: ss.SessionStore) -> None:
    """Codex records OpenAI's compaction item as it came (no wrapper): recognised as OpenAI's, not
    mistaken for Anthropic's block (which has a readable ``content``)."""
    from sessionstore.projection.native import native_artefact

    item = {"type": "compaction", "id": "cmp_7", "encrypted_content": "gAAAAe30="}
    assert native_artefact([item]) == {"provider": "openai", "items": [item]}
    assert native_artefact([{**item, "type": "compaction_summary"}])["provider"] == "openai"  # type: ignore[index]
    assert native_artefact([{"type": "compaction", "content": None}])["provider"] == "anthropic"  # type: ignore[index]
    sid = store.create_session()
    store.append(sid, [ss.user("Fix the parser."), ss.assistant([item]), ss.user("Carry on.")])
    view = store.context(sid)
    assert view_to_items(view)[0] == item and "cmp_7" not in json.dumps(view.to_anthropic())


def test_a_session_created_with_a_reply_that_compacts_and_its_export_imported_again(
        store: ss.SessionStore, tmp_path: Any) -> None:
    from .test_replay import run

    block = {"type": "compaction", "content": "Writes frozen.", "encrypted_content": "e30=", "signature": "c2ln"}
    sid = store.create_session(events=[*TURNS, ss.assistant([block, {"type": "text", "text": "Next."}])])
    kinds = [e.kind for e in store.transcript(sid)]
    assert kinds == ["message"] * 4 + ["compaction"] and store.context(sid).compaction is not None
    export = tmp_path / "export.jsonl"
    url = f"sqlite:///{tmp_path / 'again.db'}"
    export.write_text(run(store.url, "export", sid).stdout)
    run(url, "db", "upgrade")
    run(url, "import", str(export))
    again = ss.SessionStore(url)
    try:
        assert [e.payload for e in again.transcript(sid)] == [e.payload for e in store.transcript(sid)]
        assert again.context(sid).to_anthropic() == store.context(sid).to_anthropic()
    finally:
        again.close()
