"""The offline viewer: a session as one self-contained HTML page, and a read-only local server.

```python
from sessionstore.viewer import session_html
from sessionstore.viewer.server import serve
html = session_html(store, session_id)       # the page: no network, every event, the view at any version
serve(store, host="127.0.0.1", port=8765)    # the session list and the same pages, read-only
```

`timeline` (views over versions, pure), `chart` (the SVG), `digest` (header facts) and the HTML
(`page`: a session's page, its header and bars; `transcript`: its events' cards; `content`: what
an event holds; `listing`: the session list; `document`: the document, escaping and the CSP) are
pure; this module and `server` are the only ones that read the store. `server`
is imported from its own module, not re-exported here: it offers downloads through
`sessionstore.exports`, whose html format is `page`, so the arrows go server → exports → page.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ..store import SessionInfo, SessionStore
from .digest import PREFIX_EVENTS, SessionDigest, ancestors_metadata, inherit_metadata, session_digest
from .page import PageLinks, content_security_policy, index_page, session_page
from .timeline import Timeline, build_timeline

__all__ = ["PageLinks", "SessionDigest", "Timeline", "build_timeline", "content_security_policy", "digest_page",
           "index_page", "session_html", "session_page"]


def session_html(store: SessionStore, session_id: str, *, links: PageLinks | None = None) -> str:
    """The page of one session, from one read of its transcript (raises `SessionNotFound`)."""
    info = store.session(session_id)
    return session_page(with_lineage(info, store.session), store.transcript(session_id), links=links)


def with_lineage(info: SessionInfo, session: Callable[[str], SessionInfo]) -> SessionInfo:
    """`info` with a fork's metadata completed from its ancestors (`inherit_metadata`)."""
    ancestors = ancestors_metadata(info.parent_id, session)
    return replace(info, metadata=inherit_metadata(info.metadata, ancestors)) if ancestors else info


def digest_page(store: SessionStore, **query: Any) -> tuple[list[SessionDigest], str | None]:
    """The digest of each session of one page of `store.sessions(**query)` (every session without a
    query), from its metadata and its first `PREFIX_EVENTS` events; and the next page's cursor."""
    infos = store.sessions(**query)
    by_id = {info.id: info for info in infos}
    found = []
    for info in infos:
        info = with_lineage(info, lambda sid: by_id[sid] if sid in by_id else store.session(sid))
        found.append(session_digest(info.id, info.metadata, info.head, info.parent_id, info.fork_version,
                                    list(store.events(info.id, upto=PREFIX_EVENTS))))
    return found, infos.cursor
