"""The session list that `serve` shows: newest first, subagent transcripts under their main session.

Apart from the session page (page.py): it reads digests, not events, and shares only the document.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from .digest import SessionDigest
from .document import document, esc

def index_page(digests: Sequence[SessionDigest], *, where: str, href: Any, more: str | None = None,
               filtered: bool = False) -> str:
    """The session list: newest first, subagent transcripts under their main session.

    `href(session_id)` gives each session's link (the server's URL scheme); `more`, the link to
    the next page of a paged list; `filtered`, that the list is a query's (`sessions()`'s filters).
    """
    children: dict[str, list[SessionDigest]] = {}
    top: list[SessionDigest] = []
    ids = {d.session_id for d in digests}
    for d in digests:
        parent = d.parent_session or d.parent_id
        if parent in ids:
            children.setdefault(parent, []).append(d)
        else:
            top.append(d)
    epoch = datetime.min.replace(tzinfo=timezone.utc)
    top.sort(key=lambda d: d.started_at or epoch, reverse=True)
    rows = []
    for d in top:
        rows.append(_index_row(d, href, sub=False))
        rows.extend(_index_row(c, href, sub=True) for c in sorted(children.get(d.session_id, ()),
                                                                   key=lambda c: c.started_at or epoch))
    columns = "".join(f'<col class="c-{c}">' for c in ("session", "started", "source", "project", "model", "events"))
    table = (f'<table class="sessions"><colgroup>{columns}</colgroup><thead><tr><th>session</th><th>started</th>'
             '<th>source</th><th>project</th><th>model</th><th class="num">events</th></tr></thead><tbody>'
             + "".join(rows) + "</tbody></table>"
             if rows else '<p class="empty">No sessions in this store yet: <code>sessionstore import PATH</code>.</p>')
    body = (f'<header class="top wrap"><div class="crumb">sessionstore</div><h1>Sessions</h1>'
            f'<p class="crumb">{len(digests):,} session(s){" found" if filtered else ""} in <code>{esc(where)}</code>, '
            f'newest first</p></header>'
            f'<main class="wrap"><section class="card-box">{table}</section>'
            + (f'<p class="crumb"><a href="{esc(more)}">older sessions →</a></p>' if more else "") + '</main>')
    return document("Sessions · sessionstore", body)


def _index_row(d: SessionDigest, href: Any, *, sub: bool) -> str:
    kind = f" ({d.role})" if d.role else (f" (fork at v{d.fork_version})" if d.parent_id else "")
    return (f'<tr><td class="{"sub" if sub else ""}"><a href="{esc(href(d.session_id))}">{esc(d.heading)}</a>'
            f'<div class="sid">{esc(d.session_id)}{esc(kind)}</div></td>'
            f"<td>{esc(f'{d.started_at.astimezone(timezone.utc):%Y-%m-%d %H:%M}') if d.started_at else '—'}</td>"
            f"<td>{esc(d.source or '—')}</td><td>{esc(d.project or '—')}</td><td>{esc(d.model or '—')}</td>"
            f'<td class="num">{d.events:,}</td></tr>')
