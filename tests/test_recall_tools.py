"""The recall tool in the frameworks, on SQLite and PostgreSQL: the real Agents SDK Runner against the
local Responses server (the scripted model recalls a cleared output), LangChain and ADK tools."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
from openai import AsyncOpenAI

import sessionstore as ss
from sessionstore.compaction.policy import CompactionPolicy
from sessionstore.integrations.adk import SessionStoreSessionService
from sessionstore.integrations.langchain import SessionStoreChatMessageHistory
from sessionstore.integrations.openai_agents import SessionStoreSession
from sessionstore.integrations.recall_tools import adk_recall_tool, langchain_recall_tool, openai_agents_recall_tool
from sessionstore.testing.openai_server import OpenAIServer

set_tracing_disabled(True)

OUTPUT = "migration plan:\n" + "".join(f"step {i}: move shard {i}\n" for i in range(250))


def _cleared(store: ss.SessionStore, sid: str) -> int:
    """The version of the tool output, cleared from the view by a prune marker."""
    output = next(e for e in store.transcript(sid) if e.kind == "tool_result")
    store.append(sid, [ss.events.prune([output.version], rule="test", placeholder=CompactionPolicy().placeholder)])
    assert store.context(sid).to_anthropic()  # the view no longer holds it
    return output.version


def test_runner_recalls_a_cleared_output(store: ss.SessionStore, store_url: str) -> None:
    session = SessionStoreSession("agent", store_url, policy=CompactionPolicy())  # the Runner reads the view
    try:
        asyncio.run(session.add_items([
            {"role": "user", "content": "plan the migration"},
            {"type": "function_call", "call_id": "c1", "name": "plan", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": OUTPUT}]))
        version = _cleared(store, "agent")
        view = asyncio.run(session.get_items())
        assert OUTPUT not in json.dumps(view) and f"recall read v{version}" in json.dumps(view)
        with OpenAIServer() as server:
            server.reply_tool_use("recall", {"action": "read", "version": version})
            server.reply("step 249 moves shard 249.")
            model = OpenAIResponsesModel("gpt-4.1", AsyncOpenAI(base_url=server.url + "/v1", api_key="test",
                                                                max_retries=0))
            agent = Agent(name="assistant", instructions="Be brief.", model=model,
                          tools=[openai_agents_recall_tool(session)])
            result = asyncio.run(Runner.run(agent, "What was the last step?", session=session))
            assert result.final_output == "step 249 moves shard 249."
            sent = server.response_requests[-1].body["input"]
        outputs = [i["output"] for i in sent if i.get("type") == "function_call_output"]
        assert outputs[-1] == f"[v{version} tool_result]\n{OUTPUT}"  # the model got it back whole
    finally:
        session.close()


def test_langchain_and_adk_tools_recall_their_session(store: ss.SessionStore, store_url: str) -> None:
    history = SessionStoreChatMessageHistory("chat", store)
    sid = store.create_session("chat")
    store.append(sid, [ss.user("plan"), ss.assistant("ok", tool_calls=[ss.tool_call("c1", "plan", {})]),
                       ss.tool_result("c1", OUTPUT)])
    version = _cleared(store, sid)
    tool = langchain_recall_tool(history)
    assert tool.invoke({"action": "read", "version": version}) == f"[v{version} tool_result]\n{OUTPUT}"
    assert asyncio.run(tool.ainvoke({"action": "search", "query": "shard"})).startswith("1 match(es)")
    assert tool.invoke({"action": "read", "version": 999}) == "Recall failed: no version 999 in this session"

    async def adk() -> tuple[str, str]:
        service = SessionStoreSessionService(store_url)
        await service.create_session(app_name="app", user_id="u", session_id="s1")
        recall: Any = adk_recall_tool(service, "app", "u", "s1")
        assert recall.name == "recall"
        found = await recall.func(action="search", query="shard")  # the ADK session holds no shard
        read = await recall.func(action="read", version=1)
        return found, read

    found, read = asyncio.run(adk())
    assert found == "No stored event matches 'shard'."
    assert read.startswith("[v1 custom")
