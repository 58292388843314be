"""`sessionstore mcp`: the store as a Model Context Protocol server, read-only.

Coding agents (Claude Code, Codex, the Agents SDK) take tools from outside over MCP; this gives
them `search`, `sessions`, `log`, `show` and `recall` over the stored sessions, within a scope
fixed on the command line (one session, its lineage, or the whole store).

Every result is one an agent can take (DESIGN §12): at most `--max-tokens` by the store's own
counter (`sessionstore.budget`), a longer one paged, its last line naming the exact call for the
next page; a session id may be a unique prefix, resolved as on the command line, within the
scope; and every failure — no such session, outside the scope, a bad argument — is an error
result (``isError``) saying so. The `mcp` SDK (the ``[mcp]`` extra) is imported only when the
command runs: the CLI's start-up stays fast, and without it the command says which extra to
install.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from importlib import import_module
from typing import TYPE_CHECKING, Any, Final

import click

from .. import __version__
from .. import budget
from ..budget import MIN_TOOL_RESULT_TOKENS, TOOL_RESULT_TOKENS, NextCall
from ..errors import SessionStoreError, ToolInputError
from ..recall import SEARCH_HITS, format_hits, lineage, original_text, recall_answer
from .app import SID, CliError, State, main, resolve_session

if TYPE_CHECKING:
    from ..events import StoredEvent
    from ..store import SessionStore

MAX_SEARCH_HITS: Final = 200
SESSIONS_PAGE: Final = 50  # sessions a `sessions` call lists unless it asks for another number
MAX_SESSIONS_PAGE: Final = 200
LOG_LINE_CHARS: Final = 160  # of an event's text, in its `log` line
_INSTALL: Final = ("`sessionstore mcp` needs the MCP SDK 2.3 (the package `mcp`): "
                   "pip install 'sessionstore[mcp]'")


class Scope:
    """The sessions a server may show: checked on every tool call, never widened by its input."""

    def __init__(self, store: SessionStore, kind: str, session_id: str | None) -> None:
        self.store, self.kind, self.session_id = store, kind, session_id

    def sessions(self) -> list[str] | None:
        """The ids in scope (None: every session of the store)."""
        if self.kind == "all":
            return None
        assert self.session_id is not None
        if self.kind == "session":
            return [self.session_id]
        infos = self.store.sessions()
        members = lineage(self.session_id, infos)
        return [info.id for info in infos if info.id in members]

    def __str__(self) -> str:
        if self.kind == "all":
            return "this server's scope (the whole store)"
        return f"this server's scope (--scope {self.kind} of session {self.session_id})"

    def resolve(self, text: str) -> str:
        """The full id of the session `text` names (an id or a unique prefix) within the scope."""
        return resolve_session(self.store, text, among=self.sessions(), scope=str(self),
                               listed="the sessions tool lists them")


def sessions_page(store: SessionStore, scope: Scope, max_tokens: int, *, limit: int, after: str | None,
                  **filters: Any) -> str:
    """One page of the `sessions` tool: the sessions of `store.sessions(**filters)` in scope, newest
    first, as many as `limit` and the token budget allow, and the call that continues after the last."""
    from ..finding import encode_cursor

    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_SESSIONS_PAGE:
        raise ToolInputError(f"limit must be between 1 and {MAX_SESSIONS_PAGE}, got {limit!r}")
    allowed = scope.sessions()
    counter = store.token_counter
    call = NextCall("sessions", {k: v for k, v in filters.items() if v is not None})
    room = max_tokens - budget.reserve(counter, f"next page: {call.with_(after='s1.' + 'x' * 120, limit=limit)}")
    lines: list[str] = []
    last: Any = None
    cursor = after
    # A scoped server (one session, one lineage) keeps few of what it reads: it reads more a call.
    # (It reads the query's whole listing in the worst case; the whole store's server, one page.)
    batch = limit if allowed is None else MAX_SESSIONS_PAGE
    while True:
        page = store.sessions(**filters, limit=batch, after=cursor)
        for info in page:
            if allowed is not None and info.id not in allowed:
                continue
            line = json.dumps({"id": info.id, "started": info.started_at, "head": info.head,
                               "parent": info.parent_id or info.metadata.get("parent_session"),
                               "title": info.metadata.get("title") or info.metadata.get("first_prompt"),
                               "erased": info.erased_at is not None}, ensure_ascii=False, default=str)
            room -= counter.count(line) + 1
            if len(lines) == limit or (room < 0 and lines):
                return "\n".join(lines) + budget.footer(
                    f"next page: {call.with_(after=encode_cursor(last.started_at, last.id), limit=limit)}")
            lines.append(line)
            last = info
        if page.cursor is None:
            return "\n".join(lines) or "(no sessions)"
        cursor = page.cursor


def build_server(store: SessionStore, scope: Scope, max_tokens: int = TOOL_RESULT_TOKENS) -> Any:
    """The MCP server (`mcp.server.mcpserver.MCPServer`, the SDK 2 name of FastMCP) over `store`."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ResourceError, ToolError

    server = MCPServer("sessionstore", version=__version__, log_level="WARNING", instructions=(
        "Read-only access to stored agent sessions: search them, list them, read their events, and recall "
        f"any event exactly as stored (what compaction cleared or truncated included). A result holds at most "
        f"{max_tokens:,} tokens; a longer one is paged, and its last line names the call for the next page. "
        "A session id may be a unique prefix of one."))
    counter = store.token_counter

    def answer(run: Callable[[], str]) -> str:
        """`run`'s text; what goes wrong is an error result that says what (never a success)."""
        try:
            return run()
        except (SessionStoreError, CliError) as error:
            raise ToolError(str(error)) from None

    def paged(text: str, number: int, call: NextCall) -> str:
        return budget.page(text, number, max_tokens, counter, call)

    @server.tool()
    def search(query: str, session_id: str | None = None, limit: int = SEARCH_HITS, page: int = 1) -> str:
        """Find events by words ("a phrase", prefix*, OR, -excluded) in the sessions in scope (or in one
        session's history), best first: at most `limit` hits (1 to 200)."""
        def run() -> str:
            if not 1 <= limit <= MAX_SEARCH_HITS:
                raise ToolInputError(f"limit must be between 1 and {MAX_SEARCH_HITS}, got {limit}")
            target = scope.resolve(session_id) if session_id is not None else scope.sessions()
            call = NextCall("search", {"query": query, **({"session_id": target} if session_id else {}),
                                       "limit": limit})
            return paged(format_hits(query, store.search(query, target, limit=limit, meta=False)), page, call)
        return answer(run)

    @server.tool()
    def sessions(where: dict[str, Any] | None = None, agent: str | None = None, project: str | None = None,
                 since: str | None = None, until: str | None = None, limit: int = SESSIONS_PAGE,
                 after: str | None = None) -> str:
        """The sessions in scope, newest first, one JSON object a line: id, start, head version, links,
        title. Filters: `where` (metadata equality, e.g. {"user": "ann"}, nested keys as "adk.user_id"),
        `agent` (claude-code, codex, langgraph, …), `project` (its directory), `since` (started at or
        after) and `until` (last active at or before): dates (2026-11-01) or ages (7d). At most `limit`
        (1 to 200) a call; the last line names the call for the next page."""
        return answer(lambda: sessions_page(store, scope, max_tokens, where=where, agent=agent, project=project,
                                            since=since, until=until, limit=limit, after=after))

    @server.tool()
    def log(session_id: str, after: int = 0, upto: int | None = None) -> str:
        """One line per event of a session, versions after `after` up to `upto` (default: the last):
        version, kind, the start of its text. A longer log is paged: its last line names the next call."""
        return answer(lambda: log_page(store, scope.resolve(session_id), after, upto, max_tokens))

    @server.tool()
    def show(session_id: str, page: int = 1) -> str:
        """The session's context as the model sees it now (after compaction), as Anthropic messages:
        one JSON object a line (the system prompt, then each message)."""
        def run() -> str:
            sid = scope.resolve(session_id)
            request = store.context(sid).to_anthropic()
            lines = [json.dumps({"system": request["system"]}, ensure_ascii=False, default=str)] \
                if request.get("system") else []
            lines += [json.dumps(message, ensure_ascii=False, default=str) for message in request["messages"]]
            return paged("\n".join(lines), page, NextCall("show", {"session_id": sid}))
        return answer(run)

    @server.tool()
    def recall(session_id: str, action: str, query: str | None = None, version: int | None = None,
               to: int | None = None, page: int | None = None, session: str | None = None) -> str:
        """search, or read version N (to M) of a session exactly as stored, in pages."""
        def run() -> str:
            sid = scope.resolve(session_id)
            request = {k: v for k, v in {"action": action, "query": query, "version": version, "to": to,
                                         "page": page, "session": session}.items() if v is not None}
            if session is not None:
                request["session"] = scope.resolve(session)
            return recall_answer(store, sid, request, scope="session" if scope.kind == "session" else "lineage",
                                 max_tokens=max_tokens, call=NextCall("recall", {"session_id": sid}))
        return answer(run)

    @server.resource("session://{session_id}", mime_type="text/plain")
    def session_resource(session_id: str) -> str:
        """A session's events, one line each (the first page of its `log`)."""
        try:
            return log_page(store, scope.resolve(session_id), 0, None, max_tokens)
        except (SessionStoreError, CliError) as error:
            raise ResourceError(str(error)) from None

    return server


def log_page(store: SessionStore, session_id: str, after: int, upto: int | None, max_tokens: int) -> str:
    """A page of `log`: the lines of the versions in (after, upto] that fit `max_tokens`, then, when
    more follow, a line naming the call that continues after the last one shown."""
    head = store.version(session_id)
    if not 0 <= after <= head:
        raise ToolInputError(f"after={after} is out of range: session {session_id} has versions 1..{head} "
                             f"(after is 0..{head})")
    if upto is not None and not after < upto <= head:
        raise ToolInputError(f"upto={upto} is out of range: it must be greater than after ({after}) and at most "
                             f"the session's last version, {head}")
    end = head if upto is None else upto

    def call(last: int) -> NextCall:
        return NextCall("log", {"session_id": session_id, "after": last, **({"upto": upto} if upto else {})})

    def line_footer(first: int, last: int) -> str:
        return f"v{first}..v{last} of {end}; next page: {call(last)}"

    counter = store.token_counter
    capacity = max_tokens - budget.reserve(counter, line_footer(end, end))
    events = store.events(session_id, after=after, upto=upto)
    text, more = budget.fill(budget.Pieces(budget.pieces(_log_lines(events), capacity, counter)), capacity, counter)
    text = text.rstrip("\n")
    if not more:
        return text or "(no events)"
    # The last line begun on this page (a line too long for a page is cut: the rest is left out).
    last = int(_LINE_START.findall(text)[-1])
    return text + budget.footer(line_footer(after + 1, last))


_LINE_START: Final = re.compile(r"^v(\d+) ", re.MULTILINE)


def _log_lines(events: Iterable[StoredEvent]) -> Iterator[str]:
    for event in events:
        text = " ".join(original_text(event).split())
        yield f"v{event.version} {event.kind}: {text[:LOG_LINE_CHARS]}\n"


@main.command()
@click.option("--scope", "scope_kind", type=click.Choice(["session", "lineage", "all"]), default="all",
              show_default=True, help="What the server may show: one session, its lineage, or the whole store.")
@click.option("--session", "session_id", type=SID, default=None, metavar="SID", help="The session of --scope session|lineage.")
@click.option("--http", "port", type=click.IntRange(1, 65535), default=None,
              help="Serve streamable HTTP on 127.0.0.1:PORT (at /mcp) instead of stdio.")
@click.option("--max-tokens", type=click.IntRange(MIN_TOOL_RESULT_TOKENS), default=TOOL_RESULT_TOKENS,
              show_default=True, help="The most tokens a tool result holds (the store's counter); longer ones are paged.")
@click.pass_obj
def mcp(state: State, scope_kind: str, session_id: str | None, port: int | None, max_tokens: int) -> None:
    """Serve the store to coding agents over MCP (read-only): search, sessions, log, show, recall."""
    try:
        import_module("mcp.server.mcpserver")  # the SDK 2 server (1.x has no such module)
    except ImportError:
        raise CliError(_INSTALL) from None
    store = state.store()
    if scope_kind != "all" and session_id is None:
        raise click.UsageError(f"--scope {scope_kind} needs --session SID")
    server = build_server(store, Scope(store, scope_kind, session_id), max_tokens)
    if port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)
