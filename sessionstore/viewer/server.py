"""`sessionstore serve`: the session list and every session's page, read-only, on 127.0.0.1 by default.

The standard library's threading HTTP server is enough for one person's browser: each
request reads the store through its public API and renders a page; nothing is ever written.
Every response carries the pages' Content-Security-Policy as a header too, and anything but
GET and HEAD is refused. Requests are logged through structlog (the server never prints).
"""

from __future__ import annotations

import io
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Final
from urllib.parse import parse_qs, quote, unquote, urlencode, urlsplit

import structlog

from ..errors import InvalidQuery, SessionNotFound
from ..finding import where_option
from ..exports import export_session
from ..store import SessionStore
from . import digest_page, session_html
from .page import PageLinks, content_security_policy, document, esc, index_page

log = structlog.get_logger("sessionstore.viewer")

DEFAULT_HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8765
INDEX_PAGE: Final = 200  # sessions the list shows a page (each one reads its first events)
_DOWNLOADS: Final = {"export.jsonl": ("jsonl", "application/x-ndjson; charset=utf-8"),
                     "export.md": ("markdown", "text/markdown; charset=utf-8")}


def session_href(session_id: str) -> str:
    """The path of a session's page (ids may hold ``:`` and ``/``: quoted whole)."""
    return "/s/" + quote(session_id, safe="")


class ViewerServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, store: SessionStore, address: tuple[str, int]) -> None:
        self.store = store
        super().__init__(address, _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}/"


class _Handler(BaseHTTPRequestHandler):
    server: ViewerServer
    server_version = "sessionstore"

    def do_GET(self) -> None:  # noqa: N802 (the http.server naming)
        self._answer(send_body=True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(send_body=False)

    def _answer(self, *, send_body: bool) -> None:
        url = urlsplit(self.path)
        path = url.path
        try:
            status, ctype, body = self._route(path, url.query)
        except Exception as exc:  # one broken session must not take the server down
            log.exception("viewer request failed", path=path)
            status, ctype = HTTPStatus.INTERNAL_SERVER_ERROR, "text/html; charset=utf-8"
            body = _message_page("Something went wrong", f"{type(exc).__name__}: {exc}").encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Content-Security-Policy", content_security_policy())
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if send_body:
            self.wfile.write(body)

    def _route(self, path: str, query_text: str = "") -> tuple[HTTPStatus, str, bytes]:
        store = self.server.store
        html_type = "text/html; charset=utf-8"
        if path in ("/", "/index.html"):
            query = parse_qs(query_text)
            try:
                found, cursor = digest_page(store, **listing_query(query))
            except InvalidQuery as exc:
                return HTTPStatus.BAD_REQUEST, html_type, _message_page("Not a session query", str(exc)).encode("utf-8")
            more = "/?" + urlencode([*((k, v) for k, vs in query.items() if k != "after" for v in vs),
                                     ("after", cursor)]) if cursor else None
            page = index_page(found, where=store.engine.url.render_as_string(hide_password=True),
                              href=session_href, more=more, filtered=bool(set(query) - {"after"}))
            return HTTPStatus.OK, html_type, page.encode("utf-8")
        parts = path.split("/")
        if len(parts) in (3, 4) and parts[1] == "s" and parts[2]:
            session_id = unquote(parts[2])
            try:
                if len(parts) == 3:
                    base = session_href(session_id)
                    links = PageLinks(index="/", downloads=(("jsonl", f"{base}/export.jsonl"),
                                                            ("markdown", f"{base}/export.md")))
                    return HTTPStatus.OK, html_type, session_html(store, session_id, links=links).encode("utf-8")
                if parts[3] in _DOWNLOADS:
                    fmt, ctype = _DOWNLOADS[parts[3]]
                    buffer = io.StringIO()
                    export_session(store, session_id, fmt, buffer)
                    return HTTPStatus.OK, ctype, buffer.getvalue().encode("utf-8")
            except SessionNotFound:
                return HTTPStatus.NOT_FOUND, html_type, _message_page(
                    "No such session", f"There is no session {session_id!r} in this store.").encode("utf-8")
        return HTTPStatus.NOT_FOUND, html_type, _message_page("Not found", f"Nothing at {path}.").encode("utf-8")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's signature)
        log.info("viewer request", client=self.client_address[0], request=format % args)


def listing_query(query: dict[str, list[str]]) -> dict[str, Any]:
    """The list's URL query (``?where=user=ann&agent=codex&since=7d&limit=50&after=…``) as
    `sessions()` arguments (`limit` at most `INDEX_PAGE`, its default); an unknown parameter is
    `InvalidQuery`."""
    known = ("where", "agent", "project", "since", "until", "limit", "after")
    unknown = sorted(set(query) - set(known))
    if unknown:
        raise InvalidQuery(f"unknown parameter {unknown[0]!r} ({', '.join(known)})", field=unknown[0])
    arguments: dict[str, Any] = {k: v[-1] for k, v in query.items() if k not in ("where", "limit")}
    if "where" in query:
        arguments["where"] = where_option(query["where"])
    limit = query.get("limit", [str(INDEX_PAGE)])[-1]
    if not limit.isdigit() or not 1 <= int(limit) <= INDEX_PAGE:
        raise InvalidQuery(f"limit must be a whole number from 1 to {INDEX_PAGE}, got {limit!r}", field="limit")
    return {**arguments, "limit": int(limit)}


def _message_page(title: str, text: str) -> str:
    return document(title, f'<header class="top wrap"><div class="crumb"><a href="/">sessions</a></div>'
                           f"<h1>{esc(title)}</h1><p>{esc(text)}</p></header>")


def make_server(store: SessionStore, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> ViewerServer:
    """A bound server (port 0: any free port; see `.url`); call `serve_forever()` on it."""
    return ViewerServer(store, (host, port))


def serve(store: SessionStore, host: str = DEFAULT_HOST, port: int = DEFAULT_PORT) -> None:
    """Serve until interrupted."""
    with make_server(store, host, port) as server:
        server.serve_forever()
