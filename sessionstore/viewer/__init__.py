"""The offline viewer: a session as one self-contained HTML page, and a read-only local server.

```python
from sessionstore.viewer import session_html, serve
html = session_html(store, session_id)       # the page: no network, every event, the view at any version
serve(store, host="127.0.0.1", port=8765)    # the session list and the same pages, read-only
```

`timeline` (views over versions, pure), `chart` (the SVG), `digest` (header facts) and `page`
(the HTML) are pure; this module and `server` are the only ones that read the store.
"""

from __future__ import annotations

from ..store import SessionStore
from .digest import PREFIX_EVENTS, SessionDigest, session_digest
from .page import PageLinks, content_security_policy, index_page, session_page
from .server import make_server, serve
from .timeline import Timeline, build_timeline

__all__ = ["PageLinks", "SessionDigest", "Timeline", "build_timeline", "content_security_policy", "digests",
           "index_page", "make_server", "serve", "session_html", "session_page"]


def session_html(store: SessionStore, session_id: str, *, links: PageLinks | None = None) -> str:
    """The page of one session, from one read of its transcript (raises `SessionNotFound`)."""
    info = store.session(session_id)
    return session_page(info, store.transcript(session_id), links=links)


def digests(store: SessionStore) -> list[SessionDigest]:
    """Every session's digest, from its metadata and its first `PREFIX_EVENTS` events."""
    return [session_digest(info.id, info.metadata, info.head, info.parent_id, info.fork_version,
                           list(store.events(info.id, upto=PREFIX_EVENTS)))
            for info in store.sessions()]
