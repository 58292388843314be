"""`sessionstore mcp`: the store as a Model Context Protocol server, read-only.

Coding agents (Claude Code, Codex, the Agents SDK) take tools from outside over MCP; this gives
them `search`, `sessions`, `log`, `show` and `recall` over the stored sessions, within a scope
fixed on the command line (one session, its lineage, or the whole store). The `mcp` SDK is
imported only when the command runs: the CLI's start-up stays fast.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from ..errors import SessionStoreError
from ..recall import SEARCH_HITS, format_hits, handle_recall, lineage, merge_hits
from .app import SID, State, main, resolve_session

if TYPE_CHECKING:
    from ..store import SessionStore


class Scope:
    """The sessions a server may show: checked on every tool call, never widened by its input."""

    def __init__(self, store: SessionStore, kind: str, session_id: str | None) -> None:
        self.store, self.kind, self.session_id = store, kind, session_id

    def sessions(self) -> list[str]:
        infos = self.store.sessions()
        if self.kind == "all":
            return [info.id for info in infos]
        assert self.session_id is not None
        if self.kind == "session":
            return [self.session_id]
        members = lineage(self.session_id, infos)
        return [info.id for info in infos if info.id in members]

    def check(self, session_id: str) -> str:
        if session_id not in self.sessions():
            raise SessionStoreError(f"session {session_id} is outside this server's scope")
        return session_id


def build_server(store: SessionStore, scope: Scope) -> Any:
    """The MCP server (`mcp.server.mcpserver.MCPServer`, the SDK 2 name of FastMCP) over `store`."""
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("sessionstore", instructions=(
        "Read-only access to stored agent sessions: search them, list them, read their events, and recall "
        "any event exactly as stored (what compaction cleared or truncated included)."))

    def guarded(call: Any) -> str:
        try:
            return str(call())
        except SessionStoreError as error:
            return f"Error: {error}"

    @server.tool()
    def search(query: str, session_id: str | None = None) -> str:
        """Find events by words ("a phrase", prefix*, OR, -excluded) in the sessions in scope."""
        def run() -> str:
            targets = [scope.check(session_id)] if session_id else scope.sessions()
            if scope.kind == "all" and not session_id:
                return format_hits(query, store.search(query, limit=SEARCH_HITS))
            return format_hits(query, merge_hits([store.search(query, sid, limit=SEARCH_HITS) for sid in targets]))
        return guarded(run)

    @server.tool()
    def sessions() -> str:
        """The sessions in scope: id, head version, links, metadata title."""
        def run() -> str:
            allowed = set(scope.sessions())
            rows = [{"id": i.id, "head": i.head, "parent": i.parent_id or i.metadata.get("parent_session"),
                     "title": i.metadata.get("title") or i.metadata.get("first_prompt"),
                     "erased": i.erased_at is not None}
                    for i in store.sessions() if i.id in allowed]
            return json.dumps(rows, ensure_ascii=False, default=str)
        return guarded(run)

    @server.tool()
    def log(session_id: str, after: int = 0, upto: int | None = None) -> str:
        """One line per event of a session (version, kind, the start of its text)."""
        def run() -> str:
            return _log(store, scope.check(session_id), after, upto)
        return guarded(run)

    @server.tool()
    def show(session_id: str) -> str:
        """The session's context as the model sees it now (after compaction), as Anthropic messages."""
        def run() -> str:
            return json.dumps(store.context(scope.check(session_id)).to_anthropic(), ensure_ascii=False,
                              default=str)
        return guarded(run)

    @server.tool()
    def recall(session_id: str, action: str, query: str | None = None, version: int | None = None,
               to: int | None = None, page: int | None = None, session: str | None = None) -> str:
        """search, or read version N (to M) of a session exactly as stored, in pages."""
        def run() -> str:
            request = {k: v for k, v in {"action": action, "query": query, "version": version, "to": to,
                                         "page": page, "session": session}.items() if v is not None}
            if session is not None:
                scope.check(session)
            return handle_recall(store, scope.check(session_id), request,
                                 scope="session" if scope.kind == "session" else "lineage")
        return guarded(run)

    @server.resource("session://{session_id}", mime_type="text/plain")
    def session_resource(session_id: str) -> str:
        """A session's events, one line each."""
        return guarded(lambda: _log(store, scope.check(session_id), 0, None))

    return server


def _log(store: SessionStore, session_id: str, after: int, upto: int | None) -> str:
    from ..recall import original_text

    lines = []
    for event in store.events(session_id, after=after, upto=upto):
        text = " ".join(original_text(event).split())
        lines.append(f"v{event.version} {event.kind}: {text[:160]}")
    return "\n".join(lines) or "(no events)"


@main.command()
@click.option("--scope", "scope_kind", type=click.Choice(["session", "lineage", "all"]), default="all",
              show_default=True, help="What the server may show: one session, its lineage, or the whole store.")
@click.option("--session", "session_id", type=SID, default=None, metavar="SID", help="The session of --scope session|lineage.")
@click.option("--http", "port", type=click.IntRange(1, 65535), default=None,
              help="Serve streamable HTTP on 127.0.0.1:PORT instead of stdio.")
@click.pass_obj
def mcp(state: State, scope_kind: str, session_id: str | None, port: int | None) -> None:
    """Serve the store to coding agents over MCP (read-only): search, sessions, log, show, recall."""
    store = state.store()
    if scope_kind != "all" and session_id is None:
        raise click.UsageError(f"--scope {scope_kind} needs --session SID")
    sid = resolve_session(store, session_id) if session_id else None
    server = build_server(store, Scope(store, scope_kind, sid))
    if port is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)
