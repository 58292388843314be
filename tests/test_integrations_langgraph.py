"""SessionStoreSaver, a LangGraph checkpointer, on a real SQLite file and a real PostgreSQL server:
LangGraph's own conformance suite (every base and extended capability), through the async and
the sync methods; real graphs; the thread as a sessionstore conversation; bad input."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from langchain.agents.middleware import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (BaseCheckpointSaver, ChannelVersions, Checkpoint, CheckpointMetadata,
                                      CheckpointTuple)
from langgraph.checkpoint.base.id import uuid6
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES
from langgraph.errors import EmptyInputError
from langgraph.graph.message import REMOVE_ALL_MESSAGES

import sessionstore as ss
from sessionstore.cli import main as cli
from sessionstore.integrations._langchain_messages import events_to_messages, view_to_messages
from sessionstore.integrations.langchain_middleware import SessionStoreCompaction
from sessionstore.integrations.langgraph import SessionStoreSaver
from sessionstore.testing.langgraph_agent import make_agent

run = asyncio.run
ROOT = Path(__file__).resolve().parents[1]


class SyncDriven(SessionStoreSaver):
    """The conformance suite calls the async methods; these run the sync ones (on a worker thread),
    so that the same suite checks both."""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        return await asyncio.to_thread(self.get_tuple, config)

    async def alist(self, config: RunnableConfig | None, *, filter: dict[str, Any] | None = None,
                    before: RunnableConfig | None = None, limit: int | None = None
                    ) -> AsyncIterator[CheckpointTuple]:
        for item in await asyncio.to_thread(lambda: list(self.list(config, filter=filter, before=before,
                                                                   limit=limit))):
            yield item

    async def aput(self, config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata,
                   new_versions: ChannelVersions) -> RunnableConfig:
        return await asyncio.to_thread(self.put, config, checkpoint, metadata, new_versions)

    async def aput_writes(self, config: RunnableConfig, writes: Sequence[tuple[str, Any]], task_id: str,
                          task_path: str = "") -> None:
        await asyncio.to_thread(self.put_writes, config, writes, task_id, task_path)

    async def adelete_thread(self, thread_id: str) -> None:
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        await asyncio.to_thread(self.prune, thread_ids, strategy=strategy)


@pytest.mark.parametrize("methods", ["async", "sync"])
def test_langgraph_conformance_every_capability(store_url: str, methods: str) -> None:
    """langgraph-checkpoint-conformance: the 5 base and the 3 extended capabilities, all 81 tests."""
    @checkpointer_test(name=f"SessionStoreSaver-{methods}")
    async def factory() -> AsyncIterator[SessionStoreSaver]:
        # async: a URL (the saver opens an AsyncSessionStore); sync: a SessionStore given to it
        saver = SessionStoreSaver(store_url) if methods == "async" else SyncDriven(ss.SessionStore(store_url))
        yield saver
        if methods == "async":
            await saver.aclose()
        else:
            saver.store.close()

    report = run(validate(factory))
    assert set(report.results) == {c.value for c in ALL_CAPABILITIES}
    failures = {cap: r.failures for cap, r in report.results.items() if not r.passed}
    assert not failures, failures
    assert all(r.detected for r in report.results.values())
    assert sum(r.tests_passed for r in report.results.values()) == 81


# --------------------------------------------------------------------------- a real agent's thread

CONVERSATION_KINDS = ("message", "tool_call", "tool_result", "system")


def _turns(graph: Any, config: RunnableConfig, questions: Sequence[str], method: str = "invoke") -> None:
    for question in questions:
        if method == "invoke":
            graph.invoke({"messages": [("user", question)]}, config)
        else:
            run(graph.ainvoke({"messages": [("user", question)]}, config))


@pytest.mark.parametrize("method", ["invoke", "ainvoke"])
def test_a_create_agent_thread_is_a_sessionstore_conversation(store_url: str, method: str) -> None:
    """The messages of the graph's state are the session's message, tool call and tool result events,
    once each, in order, field for field; the store's tools work on the thread."""
    saver = SessionStoreSaver(store_url)
    graph, model = make_agent(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "support-42"}}
    _turns(graph, config, ["where is my order", "and the invoice"], method)
    messages = graph.get_state(config).values["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"] * 2
    sid = SessionStoreSaver.session_id(config)
    with ss.SessionStore(store_url) as store:
        transcript = store.transcript(sid)
        conversation = [e for e in transcript if e.kind in CONVERSATION_KINDS]
        assert [e.kind for e in conversation] == ["message", "message", "tool_call", "tool_result", "message"] * 2
        assert events_to_messages(conversation) == messages
        view = store.context(sid)
        assert [m["role"] for m in view.messages] == ["user", "assistant", "user", "assistant"] * 2
        assert view.messages[-1]["content"] == [{"type": "text", "text": "Found it: result for and the"}]
        hit = store.search("invoice", session_id=sid)[0]
        assert hit.event.kind == "message" and hit.event.payload["role"] == "user"
        assert store.stats(sid).by_kind["tool_result"][0] == 2
        assert store.verify([sid])[0].broken is None
        checkpoints = [e for e in transcript if e.kind == "custom" and e.payload["type"] == "langgraph:checkpoint"]
        assert len(list(graph.get_state_history(config))) == len(checkpoints)
    # the command line reads it as any session
    logged = CliRunner().invoke(cli, ["--db", store_url, "log", sid, "--brief"], catch_exceptions=False)
    assert logged.exit_code == 0 and "and the invoice" in logged.stdout and "lookup" in logged.stdout
    # an AI message that only calls a tool: no empty row in --brief (its call's row stands for it),
    # its own row in the full log, saying so; the hidden checkpoints are called what they are
    lines = logged.stdout.splitlines()
    assert all(line.rstrip().split("tok", 1)[1].strip() for line in lines), logged.stdout
    assert not any("(no text" in line for line in lines) and sum("tool_call/" in line for line in lines) == 2
    full = CliRunner().invoke(cli, ["--db", store_url, "log", sid], catch_exceptions=False).stdout
    assert sum("message/assistant" in line and "(no text: tool calls follow)" in line for line in full.splitlines()) == 2

    def tokens(log: str) -> int:
        return sum(int(n) for n in re.findall(r"^v\d+\s.*?\s(\d+) tok  ", log, re.MULTILINE))

    assert tokens(logged.stdout) == tokens(full) == sum(e.tokens for e in conversation)
    assert "records the model never sees hidden" in logged.stderr and "import record" not in logged.stderr
    assert f"{len(checkpoints)} langgraph:checkpoint" in logged.stderr
    shown = CliRunner().invoke(cli, ["--db", store_url, "show", sid], catch_exceptions=False)
    assert shown.exit_code == 0 and "Found it: result for and the" in shown.stdout
    saver.close()


def test_channel_values_are_stored_once_per_version(store_url: str) -> None:
    """A checkpoint event holds only the channels whose version changed; the others are read from
    the checkpoints that wrote them."""
    saver = SessionStoreSaver(store_url)
    graph, _ = make_agent(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "once"}}
    _turns(graph, config, ["one", "two"])
    with ss.SessionStore(store_url) as store:
        events = store.transcript(SessionStoreSaver.session_id(config))
    written = [(channel, e.meta["langgraph_checkpoint"]["channel_versions"][channel])
               for e in events if e.kind == "custom" and e.payload["type"] == "langgraph:checkpoint"
               for channel in e.payload["data"]["channels"]]
    assert len(written) == len(set(written))
    latest = saver.get_tuple(config)
    assert latest is not None and latest.checkpoint["channel_values"]["messages"] == \
        graph.get_state(config).values["messages"]
    # the messages grow by what each step added: every version but the first is a delta …
    packed = [e.meta["langgraph_values"]["messages"] for e in events
              if e.kind == "custom" and "messages" in e.meta.get("langgraph_values", {})]
    assert packed[0][0] != "delta" and all(p[0] == "delta" for p in packed[1:])
    # … which another saver, reading the events alone, follows back to every checkpoint's value;
    # it finds every pending write too, most of them carried by the next checkpoint's event
    fresh = SessionStoreSaver(ss.SessionStore(store_url))
    assert [t.checkpoint for t in fresh.list(config)] == [t.checkpoint for t in saver.list(config)]
    assert [t.pending_writes for t in fresh.list(config)] == [t.pending_writes for t in saver.list(config)]
    carried = [w for e in events if e.kind == "custom" and e.payload["type"] == "langgraph:checkpoint"
               for w in e.payload["data"].get("writes", ())]
    pending = {(t.config["configurable"]["checkpoint_id"], task) for t in fresh.list(config)
               for task, _, _ in t.pending_writes or ()}
    assert carried and all((w["checkpoint"], w["task_id"]) in pending for w in carried)
    fresh.close()
    fresh.store.close()
    saver.close()


class CountingStore(ss.SessionStore):
    """A real store that counts its appends."""

    appends = 0

    def append(self, *args: Any, **kwargs: Any) -> Any:
        self.appends += 1
        return super().append(*args, **kwargs)


def test_sync_writes_that_wait_together_are_one_append(store_url: str) -> None:
    """Puts and writes of a thread that wait for its worker together are appended in one batch (a put
    at most in each); a call that fails fails alone, and each returns only once what it wrote is stored."""
    store = CountingStore(store_url)
    saver = SessionStoreSaver(store)
    graph, _ = make_agent(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "together"}}
    _turns(graph, config, ["one"])
    latest = saver.get_tuple(config)
    assert latest is not None
    child: Any = {**latest.checkpoint, "id": str(uuid6(clock_seq=7))}
    foreign: RunnableConfig = {"configurable": {"thread_id": "together", "checkpoint_ns": "",
                                                "checkpoint_id": str(uuid6(clock_seq=8))}}
    astray = str(uuid6(clock_seq=9))
    calls = {"writes": lambda: saver.put_writes(latest.config, [("messages", [HumanMessage("late", id="late")])], "t1"),
             "astray": lambda: saver.put(foreign, {**child, "id": astray}, {"step": 9}, {}),
             "child": lambda: saver.put(latest.config, child, {"step": 8}, {}),
             "more writes": lambda: saver.put_writes(latest.config, [("branch:to:model", None)], "t2")}
    outcomes: dict[str, Any] = {}

    def call(name: str) -> None:
        try:
            outcomes[name] = calls[name]()
        except Exception as exc:
            outcomes[name] = exc

    key = SessionStoreSaver.session_id(config)
    release = threading.Event()
    busy = threading.Thread(target=saver._worker(key).call, args=(release.wait,))  # the session's worker is busy
    busy.start()
    before = store.appends
    threads = []
    for name in calls:  # they wait in this order
        threads.append(threading.Thread(target=call, args=(name,)))
        threads[-1].start()
        while len(saver._waiting.get(key, ())) < len(threads):
            time.sleep(0.001)
    release.set()
    for thread in [busy, *threads]:
        thread.join()
    # [writes, astray] was refused as a batch (nothing appended), then went one by one (the writes
    # appended, astray refused); [child, more writes] went as one
    assert store.appends - before == 2
    assert outcomes["writes"] is None and outcomes["more writes"] is None
    assert isinstance(outcomes["astray"], ss.CheckpointNotFound)
    assert outcomes["child"]["configurable"]["checkpoint_id"] == child["id"]
    assert [t.checkpoint["id"] for t in saver.list(config, limit=2)] == [child["id"], latest.checkpoint["id"]]
    assert [(task, channel) for task, channel, _ in saver.get_tuple(latest.config).pending_writes] == [
        *[(task, channel) for task, channel, _ in latest.pending_writes], ("t1", "messages"), ("t2", "branch:to:model")]
    with ss.SessionStore(store_url) as reader:
        events = reader.transcript(key)
    # the writes alone are an event of their own; the more writes ride in the child's event
    tail = [e.payload["type"] for e in events[-2:]]
    assert tail == ["langgraph:writes", "langgraph:checkpoint"]
    assert [w["task_id"] for w in events[-1].payload["data"]["writes"]] == ["t2"]
    assert astray not in json.dumps([e.payload for e in events]) and store.verify([key])[0].broken is None
    saver.close()
    store.close()


def test_an_erased_thread_refuses_reads_and_writes(store_url: str) -> None:
    saver = SessionStoreSaver(store_url)
    graph, _ = make_agent(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "forget-me"}}
    _turns(graph, config, ["my card number is 4111"])
    sid = SessionStoreSaver.session_id(config)
    with ss.SessionStore(store_url) as store:
        before = store.version(sid)
        store.erase(sid, "asked to")
        with pytest.raises(ss.SessionErased):
            graph.invoke({"messages": [("user", "again")]}, config)
        with pytest.raises(ss.SessionErased):
            graph.get_state(config)
        with pytest.raises(ss.SessionErased):
            run(saver.aget_tuple(config))
        assert store.version(sid) == before and store.verify([sid])[0].broken is None
        assert not store.search("4111")
    saver.close()


def test_bad_input_gets_langgraphs_errors_or_the_stores(store_url: str) -> None:
    saver = SessionStoreSaver(store_url)
    graph, _ = make_agent(saver)
    mine: RunnableConfig = {"configurable": {"thread_id": "mine"}}
    theirs: RunnableConfig = {"configurable": {"thread_id": "theirs"}}
    _turns(graph, mine, ["hello"])
    _turns(graph, theirs, ["hi"])
    def stored(config: RunnableConfig) -> tuple[list[str], list[Any]]:
        """What LangGraph and the conversation hold for a thread: its checkpoint ids and its messages."""
        with ss.SessionStore(store_url) as store:
            events = store.transcript(SessionStoreSaver.session_id(config))
        return ([t.config["configurable"]["checkpoint_id"] for t in saver.list(config)],
                [e.payload for e in events if e.kind in CONVERSATION_KINDS])

    before = stored(mine), stored(theirs)

    # no thread: LangGraph refuses it before the saver is called; the saver itself names what is missing
    with pytest.raises(ValueError, match="thread_id"):
        graph.invoke({"messages": [("user", "x")]}, {"configurable": {}})
    with pytest.raises(ss.ConfigurationError, match="thread_id"):
        saver.get_tuple({"configurable": {"checkpoint_ns": ""}})
    with pytest.raises(ss.ConfigurationError, match="thread_id"):
        run(saver.aput_writes({"configurable": {"checkpoint_id": "x"}}, [("a", 1)], "task"))

    # a checkpoint of another thread: not found here (None, LangGraph's contract), and not continued from
    # (LangGraph stores a task's writes before its checkpoint: those of the refused one stay inert)
    foreign = saver.get_tuple(theirs).config["configurable"]["checkpoint_id"]
    there: RunnableConfig = {"configurable": {"thread_id": "mine", "checkpoint_ns": "", "checkpoint_id": foreign}}
    assert saver.get_tuple(there) is None
    with pytest.raises(EmptyInputError):
        graph.invoke(None, there)
    with pytest.raises(ss.CheckpointNotFound, match=foreign):
        graph.invoke({"messages": [("user", "continue from theirs")]}, there)

    with pytest.raises(ss.SessionExists):
        saver.copy_thread("mine", "theirs")
    with pytest.raises(ss.ConfigurationError, match="keep_latest"):
        saver.prune(["mine"], strategy="everything")
    assert (stored(mine), stored(theirs)) == before
    saver.close()


# --------------------------------------------------------------------------- compaction as middleware

SMALL = ss.CompactionPolicy(context_window=1_000, reserve_tokens=200, keep_recent_tokens=200,
                            prune_protect_tokens=100, prune_minimum_tokens=50, min_summarized_tokens=100)
QUESTIONS = [f"question {i}" for i in range(10)]


def _pairs_intact(messages: Sequence[Any]) -> bool:
    """Every tool call is answered right after its message, and every result answers a call before it."""
    open_calls: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
        elif open_calls:
            return False
        if isinstance(message, AIMessage):
            open_calls = {call["id"] for call in message.tool_calls}
    return True


@pytest.mark.parametrize("method", ["invoke", "ainvoke"])
def test_compaction_middleware_sends_the_view_and_keeps_every_message(store_url: str, method: str) -> None:
    saver = SessionStoreSaver(store_url)
    graph, model = make_agent(saver, middleware=[SessionStoreCompaction(saver, SMALL)], output_chars=2_000)
    config: RunnableConfig = {"configurable": {"thread_id": "long"}}
    _turns(graph, config, QUESTIONS, method)
    sid = SessionStoreSaver.session_id(config)
    with ss.SessionStore(store_url) as store:
        view, stats = store.context(sid), store.stats(sid)
        assert stats.compactions >= 1 and stats.pruned >= 1 and view.tokens < stats.transcript_tokens
        assert [s.id for s in store.sessions()] == [sid]  # the model node's namespace is not a thread
    # the model received the store's view: the summary first, then the kept tail, pairs intact
    last = model.received[-1]
    assert last == view_to_messages(view)[:len(last)]
    assert "continues an earlier conversation" in last[0].text and len(last) < 4 * len(QUESTIONS)
    assert all(_pairs_intact(sent) for sent in model.received)
    assert any("Old tool result content cleared" in m.text for sent in model.received for m in sent)
    # the graph's state, every checkpoint and time travel keep every message
    messages = graph.get_state(config).values["messages"]
    assert [m.type for m in messages] == ["human", "ai", "tool", "ai"] * len(QUESTIONS)
    assert all(len(m.content) >= 2_000 for m in messages if isinstance(m, ToolMessage))
    history = list(graph.get_state_history(config))
    assert max(len(s.values.get("messages", [])) for s in history) == len(messages)
    with ss.SessionStore(store_url) as store:
        conversation = [e for e in store.transcript(sid) if e.kind in CONVERSATION_KINDS]
    assert events_to_messages(conversation) == messages
    saver.close()


def test_summarization_middleware_loses_what_ours_keeps(store_url: str) -> None:
    """The same run under LangChain's SummarizationMiddleware: the thread's state keeps the summary
    in place of the messages it summarised (RemoveMessage); under ours the state keeps them all."""
    theirs_saver = SessionStoreSaver(store_url)
    summarizer_model = FakeListChatModel(responses=["The user asked several questions; each was looked up."])
    theirs, _ = make_agent(theirs_saver, output_chars=2_000, middleware=[SummarizationMiddleware(
        summarizer_model, trigger=("tokens", SMALL.threshold), keep=("messages", 4))])
    ours, _ = make_agent(theirs_saver, output_chars=2_000, middleware=[SessionStoreCompaction(theirs_saver, SMALL)])
    theirs_config: RunnableConfig = {"configurable": {"thread_id": "theirs"}}
    ours_config: RunnableConfig = {"configurable": {"thread_id": "ours"}}
    _turns(theirs, theirs_config, QUESTIONS)
    _turns(ours, ours_config, QUESTIONS)
    kept_theirs = theirs.get_state(theirs_config).values["messages"]
    kept_ours = ours.get_state(ours_config).values["messages"]
    asked = {f"question {i}" for i in range(len(QUESTIONS))}
    assert {m.text for m in kept_ours if isinstance(m, HumanMessage)} == asked
    assert not asked <= {m.text for m in kept_theirs if isinstance(m, HumanMessage)}  # summarised away
    assert len(kept_theirs) < len(kept_ours) == 4 * len(QUESTIONS)
    # their RemoveMessage is honoured by the thread's view (which starts again with the summary);
    # the transcript keeps every question
    with ss.SessionStore(store_url) as store:
        sid = SessionStoreSaver.session_id(theirs_config)
        assert view_to_messages(store.context(sid)) == kept_theirs
        said = {e.payload["content"][0]["text"] for e in store.transcript(sid)
                if e.kind == "message" and e.payload["role"] == "user" and e.payload["content"]}
        assert asked <= said
    theirs_saver.close()


def test_remove_message_is_recorded_and_the_view_follows(store_url: str) -> None:
    """RemoveMessage takes messages out of the thread's view: a retraction when the others keep their
    order, else the view starts again (a reset); the transcript keeps them; a new saver (another
    process) folds the same state and goes on."""
    saver = SessionStoreSaver(store_url)
    graph, _ = make_agent(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "trimmed"}}
    sid = SessionStoreSaver.session_id(config)
    _turns(graph, config, ["first question", "second question"])

    def view_is_state(graph: Any) -> list[Any]:
        state = graph.get_state(config).values["messages"]
        with ss.SessionStore(store_url) as store:
            assert view_to_messages(store.context(sid)) == state
            assert store.verify([sid])[0].broken is None
            return store.transcript(sid)

    first_turn = graph.get_state(config).values["messages"][:4]
    graph.update_state(config, {"messages": [RemoveMessage(id=m.id) for m in first_turn]})
    transcript = view_is_state(graph)
    [retraction] = [e for e in transcript if e.kind == "prune"]
    assert retraction.meta["reason"] == "RemoveMessage" and retraction.meta["messages"] == [m.id for m in first_turn]
    assert [e.kind for e in transcript if e.version in retraction.payload["targets"]] == [
        "message", "message", "tool_call", "tool_result", "message"]  # the AI message's tool call with it
    _turns(graph, config, ["third question"])
    view_is_state(graph)
    # everything out, a summary put first: the view starts again with the channel's messages
    latest = graph.get_state(config).values["messages"][-1]
    graph.update_state(config, {"messages": [RemoveMessage(id=REMOVE_ALL_MESSAGES), HumanMessage("summary so far"),
                                             latest]})
    transcript = view_is_state(graph)
    assert [e.meta["reason"] for e in transcript if e.kind == "compaction"] == ["langgraph rewrite"]
    said = [e.payload["content"][0]["text"] for e in transcript if e.kind == "message" and e.payload["role"] == "user"]
    assert said[:3] == ["first question", "second question", "third question"] and said[-1] == "summary so far"
    again = SessionStoreSaver(ss.SessionStore(store_url))
    _turns(make_agent(again)[0], config, ["fourth question"])
    transcript = view_is_state(graph)
    assert [e.payload["content"][0]["text"] for e in transcript if e.kind == "message" and e.payload["role"] == "user"
            ].count("summary so far") == 1  # what the view held was recorded once
    again.close()
    again.store.close()
    saver.close()


# --------------------------------------------------------------------------- human in the loop, time travel


def _process(*args: str) -> Any:
    done = subprocess.run([sys.executable, "-m", "tests.langgraph_processes", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_an_interrupt_is_resumed_by_another_process(store_url: str) -> None:
    """interrupt() in one process (sync methods); Command(resume=…) in another, with a new saver (async)."""
    asked = _process("ask", store_url, "refund-42")
    assert asked == {"asked": {"question": "approve refund order 42?"}, "next": ["approve"]}
    assert _process("resume", store_url, "refund-42", "approved") == {
        "request": "refund order 42", "decision": "approved", "done": "refund order 42: approved"}


def test_a_replay_from_an_earlier_checkpoint_branches_and_the_view_follows(store_url: str) -> None:
    saver = SessionStoreSaver(store_url)
    graph, model = make_agent(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "travel"}}
    _turns(graph, config, ["first question", "second question"])
    # the checkpoint where the first turn's tool was about to run
    before_tool = next(s for s in graph.get_state_history(config)
                       if s.next == ("tools",) and len(s.values["messages"]) == 2)
    replayed = graph.invoke(None, before_tool.config)["messages"]
    assert [m.type for m in replayed] == ["human", "ai", "tool", "ai"]
    assert replayed[:2] == before_tool.values["messages"]
    assert graph.get_state(config).values["messages"] == replayed
    with ss.SessionStore(store_url) as store:
        sid = SessionStoreSaver.session_id(config)
        # the view follows the branch (it restarts with the branch's messages); the transcript keeps both
        assert view_to_messages(store.context(sid)) == replayed
        transcript = store.transcript(sid)
        said = [e.payload["content"][0]["text"] if e.kind == "message" else e.meta["reason"] for e in transcript
                if e.kind == "message" and e.payload["role"] == "user" or e.kind == "compaction"]
        assert said == ["first question", "second question", "langgraph branch", "first question"]
        assert store.verify([sid])[0].broken is None
    # and back to the abandoned branch: its latest checkpoint is still there
    abandoned = next(s for s in graph.get_state_history(config) if len(s.values.get("messages", [])) == 8)
    assert [m.text for m in abandoned.values["messages"] if m.type == "human"] == ["first question", "second question"]
    saver.close()


def test_two_savers_take_turns_on_one_thread(store_url: str) -> None:
    """Two savers (two processes' worth of caches; sync and async methods) alternate on one thread: each
    finds what the other wrote, and every message is recorded once."""
    first, second = SessionStoreSaver(store_url), SessionStoreSaver(ss.AsyncSessionStore(store_url))
    graphs = [make_agent(saver, middleware=[SessionStoreCompaction(saver)])[0] for saver in (first, second)]
    config: RunnableConfig = {"configurable": {"thread_id": "shared"}}
    for i, graph in enumerate([*graphs, *graphs]):
        if i % 2:
            run(graph.ainvoke({"messages": [("user", f"turn {i}")]}, config))
        else:
            graph.invoke({"messages": [("user", f"turn {i}")]}, config)
    messages = graphs[0].get_state(config).values["messages"]
    assert [m.text for m in messages if m.type == "human"] == [f"turn {i}" for i in range(4)]
    assert graphs[1].get_state(config).values["messages"] == messages
    with ss.SessionStore(store_url) as store:
        transcript = store.transcript(SessionStoreSaver.session_id(config))
    conversation = [e for e in transcript if e.kind in CONVERSATION_KINDS]
    assert events_to_messages(conversation) == messages
    first.close()
    run(second.store.close())


def test_delta_channel_history_is_langgraphs_walk(store_url: str) -> None:
    """get_delta_channel_history from one read equals LangGraph's default walk (a get_tuple per ancestor)."""
    saver = SessionStoreSaver(store_url)
    graph, _ = make_agent(saver)
    config: RunnableConfig = {"configurable": {"thread_id": "deltas"}}
    _turns(graph, config, ["one", "two"])
    channels = ["messages", "branch:to:model", "__start__", "no-such-channel"]
    for state in list(graph.get_state_history(config))[::3]:
        ours = saver.get_delta_channel_history(config=state.config, channels=channels)
        assert ours == BaseCheckpointSaver.get_delta_channel_history(saver, config=state.config, channels=channels)
        assert run(saver.aget_delta_channel_history(config=state.config, channels=channels)) == ours
    assert saver.get_delta_channel_history(config=config, channels=[]) == {}
    latest = saver.get_delta_channel_history(config=config, channels=channels)
    assert latest["messages"]["writes"] and "seed" in latest["messages"] and "seed" not in latest["no-such-channel"]
    saver.close()
