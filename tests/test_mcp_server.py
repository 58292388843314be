"""`sessionstore mcp` driven by the official MCP SDK client, over stdio and over streamable HTTP, on
SQLite and PostgreSQL: results within the token budget and paged to the end, session ids resolved
within the scope, and every failure an error result.

One database per backend for the module (a real Claude Code transcript and a few sessions of our
own), and one server per transport on it: starting the SDK's client and the server is the cost.
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import sessionstore as ss
from sessionstore.budget import TOOL_RESULT_TOKENS, body
from sessionstore.importers import import_path
from sessionstore.tokens import default_counter

from .conftest import BACKENDS, FIXTURE_TRANSCRIPTS, fresh_url, shipped

MAIN = "5e55104e-c1a0-4d3e-9a11-0000000c0de0"  # the shipped Claude Code session, with one subagent
FORK = "5e55104e-fork"
KIWI_OUTPUT = "kiwi schema dump\n" + "".join(f"row {i}: CREATE TABLE kiwi_{i} (id int);\n" for i in range(3000))
count = default_counter().count


@dataclass(frozen=True)
class Database:
    url: str
    store: ss.SessionStore


@pytest.fixture(scope="module", params=BACKENDS)
def database(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Database]:
    """The real session (`MAIN`, its subagent, a fork of it) and three of our own (``kiwi-…``)."""
    url = fresh_url(request.param, tmp_path_factory.mktemp("mcp"), request)
    store = ss.SessionStore(url)
    store.migrate()
    import_path(store, FIXTURE_TRANSCRIPTS / shipped("claude-code/recorded/5e55104e-*.jsonl"))
    store.fork(MAIN, at=40, new_session_id=FORK)
    store.create_session("kiwi-main", events=[
        ss.user("dump the kiwi schema"),
        ss.assistant("dumping", tool_calls=[ss.tool_call("c1", "Bash", {"command": "pg_dump"})]),
        ss.tool_result("c1", KIWI_OUTPUT)])
    store.create_session("kiwi-other", events=[ss.user("the kiwi password is hunter2")])
    store.create_session("kiwi-third", events=[ss.user("a third kiwi")])
    yield Database(url, store)
    store.close()


class Client:
    """An MCP SDK client session: each call's text and whether it is an error result."""

    def __init__(self, session: ClientSession) -> None:
        self.session = session

    async def call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        result = await self.session.call_tool(tool, arguments)
        return "".join(getattr(c, "text", "") for c in result.content), bool(result.is_error)

    async def ok(self, tool: str, arguments: dict[str, Any]) -> str:
        text, error = await self.call(tool, arguments)
        assert not error, text
        return text

    async def error(self, tool: str, arguments: dict[str, Any]) -> str:
        text, error = await self.call(tool, arguments)
        assert error, text
        return text

    async def pages(self, tool: str, arguments: dict[str, Any], budget: int) -> list[str]:
        """Every page of a result, each asked for as the previous one's last line says."""
        found = []
        while True:
            text = await self.ok(tool, arguments)
            assert count(text) <= budget, (tool, arguments, count(text))
            found.append(text)
            following = re.search(rf"; next page: {tool} (\{{.*\}})\]\Z", text)
            if following is None:
                return found
            arguments = json.loads(following.group(1))


@asynccontextmanager
async def stdio(url: str, *args: str) -> AsyncIterator[tuple[Client, Any]]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "sessionstore.cli", "--db", url, "mcp", *args])
    async with stdio_client(params) as streams, ClientSession(*streams) as session:
        yield Client(session), await session.initialize()


@asynccontextmanager
async def http(url: str, *args: str) -> AsyncIterator[tuple[Client, Any]]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = subprocess.Popen([sys.executable, "-m", "sessionstore.cli", "--db", url, "mcp", "--http", str(port),
                               *args], stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert server.poll() is None, server.communicate()[1].decode()
                assert time.monotonic() < deadline, "the HTTP server did not start"
                await asyncio.sleep(0.1)
        async with streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write), \
                ClientSession(read, write) as session:
            yield Client(session), await session.initialize()
    finally:
        server.terminate()
        server.communicate(timeout=10)


def test_stdio_in_a_lineage_scope_with_a_small_budget(database: Database) -> None:
    """A server on the real session's lineage, results of at most 1,000 tokens: every event and the
    whole view reached page after page; ids and prefixes resolved within the scope; every failure an
    error result that says what."""
    store = database.store

    async def scenario() -> None:
        async with stdio(database.url, "--scope", "lineage", "--session", MAIN[:20], "--max-tokens", "1000") \
                as (client, hello):
            assert (hello.server_info.name, hello.server_info.version) == ("sessionstore", ss.__version__)
            tools = sorted(t.name for t in (await client.session.list_tools()).tools)
            assert tools == ["log", "recall", "search", "sessions", "show"]
            # log, followed to its end: every event once, in order; each page within the budget
            pages = await client.pages("log", {"session_id": MAIN}, 1000)
            shown = [int(v) for text in pages for v in re.findall(r"(?m)^v(\d+) ", text)]
            assert len(pages) > 3 and shown == list(range(1, store.version(MAIN) + 1))
            last = re.findall(r"(?m)^v(\d+) ", pages[0])[-1]
            assert pages[0].endswith(f'; next page: log {{"session_id": "{MAIN}", "after": {last}}}]')
            ranged = await client.pages("log", {"session_id": MAIN, "after": 10, "upto": 30}, 1000)
            assert [int(v) for t in ranged for v in re.findall(r"(?m)^v(\d+) ", t)] == list(range(11, 31))
            # show: the pages joined are the view, message for message
            shown_view = "".join(body(t)[0] for t in await client.pages("show", {"session_id": MAIN}, 1000))
            request = store.context(MAIN).to_anthropic()
            lines = [json.loads(line) for line in shown_view.split("\n")]
            assert lines[len(lines) - len(request["messages"]):] == json.loads(json.dumps(request["messages"]))
            # a prefix names a session in scope; a prefix of several in scope lists them, and only them
            assert (await client.ok("log", {"session_id": MAIN[:20], "upto": 1})).startswith("v1 ")
            ambiguous = await client.error("log", {"session_id": MAIN[:8]})
            assert "ambiguous" in ambiguous and MAIN in ambiguous and FORK in ambiguous and "kiwi" not in ambiguous
            sub = next(i.id for i in store.sessions() if i.id.startswith(MAIN + ":"))
            assert (await client.ok("log", {"session_id": sub, "upto": 1})).startswith("v1 ")
            # outside the scope, unknown, out of range, bad arguments: error results saying so
            assert "outside this server's scope" in await client.error("log", {"session_id": "kiwi-other"})
            assert "names only sessions outside this server's scope" in await client.error(
                "show", {"session_id": "kiwi"})
            assert "no session 'nosuch'" in await client.error("log", {"session_id": "nosuch"})
            refused = await client.error("log", {"session_id": MAIN, "after": -5, "upto": 10**12})
            assert "after=-5 is out of range" in refused
            assert "upto=1000000000000 is out of range" in await client.error(
                "log", {"session_id": MAIN, "after": 0, "upto": 10**12})
            assert "limit must be between 1 and 200" in await client.error("search", {"query": "x", "limit": 0})
            assert "page 99 does not exist" in await client.error("show", {"session_id": MAIN, "page": 99})
            assert "valid integer" in await client.error(  # the SDK checks the arguments against the schema
                "recall", {"session_id": MAIN, "action": "read", "version": "three"})
            assert "'action' must be" in await client.error("recall", {"session_id": MAIN, "action": "delete"})
            assert "no version 999" in await client.error(
                "recall", {"session_id": MAIN, "action": "read", "version": 999})
            assert "outside this server's scope" in await client.error(
                "recall", {"session_id": MAIN, "action": "read", "version": 1, "session": "kiwi-main"})
            # search and sessions stay in scope
            listed = [json.loads(line)["id"] for line in (await client.ok("sessions", {})).split("\n")]
            assert sorted(listed) == sorted([MAIN, FORK, sub])
            assert "hunter2" not in await client.ok("search", {"query": "kiwi"})
            found = await client.ok("search", {"query": "the", "limit": 3})
            assert found.startswith("3 match(es)")
            assert "No stored event" in await client.ok("search", {"query": "hunter2"})
            resource = await client.session.read_resource(f"session://{MAIN}")  # type: ignore[arg-type]
            assert "".join(getattr(c, "text", "") for c in resource.contents).startswith("v1 ")

    asyncio.run(scenario())


def test_http_over_the_store_with_the_default_budget(database: Database) -> None:
    """A server on the whole store over streamable HTTP, default budget: a 40,000-token output read
    back in pages of at most 10,000 tokens, joined exactly; search takes a limit; ambiguity lists."""
    async def scenario() -> None:
        async with http(database.url) as (client, hello):
            assert hello.server_info.version == ss.__version__
            pages = await client.pages("recall", {"session_id": "kiwi-m", "action": "read", "version": 4},
                                       TOOL_RESULT_TOKENS)
            assert len(pages) >= 4 and all(count(p) > TOOL_RESULT_TOKENS * 0.9 for p in pages[:-1])
            assert "".join(body(p)[0] for p in pages) == f"[v4 tool_result]\n{KIWI_OUTPUT}"
            assert pages[0].endswith('; next page: recall {"session_id": "kiwi-main", "action": "read", '
                                     '"version": 4, "page": 2}]')
            show = await client.pages("show", {"session_id": "kiwi-main"}, TOOL_RESULT_TOKENS)
            assert len(show) >= 4
            found = await client.ok("search", {"query": "kiwi", "limit": 2})
            assert found.startswith("2 match(es)") and found.count("\n- session ") == 2
            everywhere = await client.ok("search", {"query": "hunter2"})
            assert "session kiwi-other v1 message" in everywhere
            assert "ambiguous; it starts 3 ids: kiwi-main, kiwi-other, kiwi-third" in await client.error(
                "log", {"session_id": "kiwi-"})
            assert "no session 'zzz'" in await client.error("recall", {"session_id": "zzz", "action": "search",
                                                                      "query": "kiwi"})
            everyone = (await client.ok("sessions", {})).split("\n")
            assert len(everyone) == 6
            # paged: each call names the next (its `after` cursor); the pages join to the whole list
            walked: list[str] = []
            arguments: dict[str, object] = {"limit": 4}
            while True:
                text = await client.ok("sessions", arguments)
                lines = text.split("\n")
                if not lines[-1].startswith("[next page: sessions "):
                    walked += lines
                    break
                walked += lines[:-1]
                arguments = json.loads(lines[-1][len("[next page: sessions "):-1])
            assert walked == everyone
            assert "is in the future" in await client.error("sessions", {"since": "2999-01-01"})
            assert "must be a string, number" in await client.error("sessions", {"where": {"user": ["a"]}})
            assert "limit must be between 1 and 200" in await client.error("sessions", {"limit": 0})

    asyncio.run(scenario())


def test_without_the_sdk_one_line_names_the_extra(tmp_path: Path) -> None:
    """`mcp` not installed (an import of it fails, as it does then): one line, status 2, no traceback."""
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['mcp'] = None; "
                           "from sessionstore.cli import main; main()", "--db", str(tmp_path / "x.db"), "mcp"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [  # the command as typed, its --db included
        f"error: `sessionstore --db {tmp_path / 'x.db'} mcp` needs the MCP SDK 2.3 (the package `mcp`): "
        "pip install 'sessionstore[mcp]'"]
