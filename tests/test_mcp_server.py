"""`sessionstore mcp` driven by the official MCP SDK client over stdio, on SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client

from sessionstore import SessionStore, assistant, tool_call, tool_result, user


async def _talk(url: str, args: list[str], calls: list[tuple[str, dict[str, Any]]],
                resources: tuple[str, ...] = ()) -> tuple[list[str], list[str]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "sessionstore.cli", "--db", url, "mcp", *args])
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        await session.initialize()
        tools = sorted(t.name for t in (await session.list_tools()).tools)
        answers = []
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            answers.append("".join(c.text for c in result.content if hasattr(c, "text")))
        for uri in resources:
            contents = (await session.read_resource(uri)).contents
            answers.append("".join(getattr(c, "text", "") for c in contents))
        return tools, answers


def test_mcp_tools_over_stdio_stay_in_scope(store: SessionStore, store_url: str) -> None:
    sid = store.create_session()
    output = "kiwi schema dump\n" + "row\n" * 5000
    store.append(sid, [user("dump the kiwi schema"),
                       assistant("dumping", tool_calls=[tool_call("c1", "Bash", {"command": "pg_dump"})]),
                       tool_result("c1", output)])
    other = store.create_session()
    store.append(other, [user("the kiwi password is hunter2")])
    calls = [("recall", {"session_id": sid, "action": "read", "version": 4}),
             ("search", {"query": "kiwi"}),
             ("sessions", {}),
             ("log", {"session_id": other}),
             ("recall", {"session_id": sid, "action": "read", "version": 4, "session": other}),
             ("recall", {"session_id": sid, "action": "read", "version": 99})]
    tools, answers = asyncio.run(_talk(store_url, ["--scope", "lineage", "--session", sid], calls,
                                       (f"session://{sid}", f"session://{other}")))
    assert tools == ["log", "recall", "search", "sessions", "show"]
    read, found, listed, log, reach, unknown, resource, hidden = answers
    assert resource.startswith("v1 message: dump the kiwi schema") and "v4 tool_result: kiwi schema dump" in resource
    assert hidden == f"Error: session {other} is outside this server's scope"
    assert read.startswith("[v4 tool_result]\nkiwi schema dump\nrow\n") and "next: recall read v4 page 2" in read
    assert f"session {sid} v" in found and "hunter2" not in found
    assert sid in listed and other not in listed
    assert log == f"Error: session {other} is outside this server's scope"
    assert "outside this server's scope" in reach and "hunter2" not in reach
    assert unknown == "Recall failed: no version 99 in this session"
    _, (everything,) = asyncio.run(_talk(store_url, ["--scope", "all"], [("search", {"query": "hunter2"})]))
    assert f"session {other} v1 message" in everything
