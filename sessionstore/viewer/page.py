"""The session page (one self-contained HTML file) and the session list that `serve` shows.

Pure: a session's events (and its `Timeline`) in, HTML text out.

**Nothing from a transcript can run.** Every string from an event or from session metadata
goes through `esc` (``html.escape`` with quotes) and lands in element text or a quoted
attribute; the only URLs the page holds are its own anchors (``#v12``, built from integers)
and ``data:`` URLs of images whose media type is one of four raster types and whose data is
checked to be base64. The data the script reads are numbers and fixed codes, in a JSON block
whose ``<`` are escaped. Behind that, a Content-Security-Policy allows exactly the page's own
script and stylesheet (by SHA-256), images from ``data:`` URLs and nothing else: no network
at all, and no injected script even if an escape were ever missed.

**Readable first.** The whole transcript is in the file and readable without the script:
messages open, tool calls and results folded to one line with their size, long texts cut
after `HEAD_LINES` lines behind a "more" fold. The script adds the time travel (which events
the model saw at version v), the chart cursor and the filters.

This module holds the session page's own parts: the header of facts, the chart and compactions
boxes, the time-travel bar and the script's data. The document around it and the escaping are in
`document`, the events' cards in `transcript`, what an event holds in `content`, and the session
list in `listing` (every name this module held before the split is importable from here too:
`server` imports `esc`, `document`, `content_security_policy` and `index_page` from it).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Final

from ..events import StoredEvent
from ..store import SessionInfo
from ..tokens import OUR_COUNT
from .chart import token_chart
from .content import (HEAD_CHARS, HEAD_LINES, IMAGE_TYPES, MAX_IMAGE_BYTES, PREVIEW_CHARS, before_after, counted_by,
                      utc_time, version_list)
from .digest import SessionDigest, session_digest
from .document import content_security_policy, document, esc
from .listing import index_page
from .timeline import STATES, CompactionSpan, Timeline, build_timeline
from .transcript import events_html, is_noise

__all__ = ["HEAD_CHARS", "HEAD_LINES", "IMAGE_TYPES", "MAX_IMAGE_BYTES", "PREVIEW_CHARS", "STATE_CODES", "PageLinks",
           "content_security_policy", "document", "esc", "index_page", "session_page"]

STATE_CODES: Final = {state: code for state, code in zip(STATES, "vcwspkyx")}


@dataclass(frozen=True, slots=True)
class PageLinks:
    """Links a served page carries (the file written by `sessionstore html` has none)."""

    index: str | None = None
    downloads: tuple[tuple[str, str], ...] = ()  # (label, href)


def session_page(info: SessionInfo, events: Sequence[StoredEvent], *, timeline: Timeline | None = None,
                 links: PageLinks | None = None, generated_at: datetime | None = None) -> str:
    """The page of one session: header, chart, compactions, time-travel bar and every event."""
    timeline = timeline or build_timeline(info.id, events)
    digest = session_digest(info.id, info.metadata, len(events), info.parent_id, info.fork_version, events)
    links = links or PageLinks()
    generated = (generated_at or datetime.now(timezone.utc)).strftime("%Y-%m-%d %H:%M UTC")
    markers = [e.version for e in events if e.kind in ("prune", "rewrite")]
    body = "\n".join([
        _header(digest, timeline, events, links),
        '<div class="wrap">',
        _chart_box(timeline, markers),
        _compactions_box(timeline.compactions),
        "</div>",
        _travel_bar(timeline.head, any(is_noise(e) for e in events)),
        f'<main class="timeline wrap">\n{events_html(events, timeline)}\n</main>',
        f'<footer class="wrap">Written by sessionstore on {esc(generated)} from session <code>{esc(info.id)}'
        f"</code> at version {timeline.head:,}. Self-contained: this file loads nothing from anywhere.</footer>",
    ])
    return document(f"{digest.heading} · sessionstore", body, body_class="mode-all hide-noise",
                    data=_page_data(timeline))


def _page_data(timeline: Timeline) -> dict[str, Any]:
    """What the script needs: numbers and state codes only."""
    return {
        "head": timeline.head,
        "states": {code: state for state, code in STATE_CODES.items()},
        "epochs": [[e.first, e.last, {STATE_CODES[state]: [list(run) for run in runs]
                                      for state, runs in e.members.items()}] for e in timeline.epochs],
        "tokens": list(timeline.series.view),
        "compactions": [[c.number, c.version, c.first_kept] for c in timeline.compactions],
    }


def _header(digest: SessionDigest, timeline: Timeline, events: Sequence[StoredEvent], links: PageLinks) -> str:
    crumb = [f'<a href="{esc(links.index)}">sessions</a>' if links.index else "sessionstore", "session"]
    crumb += [f'<a href="{esc(href)}" download>{esc(label)}</a>' for label, href in links.downloads]
    final = timeline.final
    transcript = timeline.series.transcript[-1] if events else 0
    facts: list[tuple[str, str]] = [
        ("source", esc(digest.source or "—") + (f" ({esc(digest.role)})" if digest.role else "")),
        ("project", esc(digest.project or "—")),
        ("model", esc(digest.model or "—")),
        ("started", esc(utc_time(digest.started_at)) if digest.started_at else "—"),
        ("events", f"{len(events):,}"),
        (f"transcript tokens ({OUR_COUNT})", f"{transcript:,}"),
        (f"view tokens now ({OUR_COUNT})", f"{final.tokens:,}" if final is not None else "—"),
        ("compactions", f"{len(timeline.compactions)}"
                        + (f" · {sum(1 for e in events if e.kind == 'prune')} prunes, "
                           f"{sum(1 for e in events if e.kind == 'rewrite')} rewrites"
                           if any(e.kind in ("prune", "rewrite") for e in events) else "")),
        ("session id", f"<code>{esc(digest.session_id)}</code>"),
    ]
    if digest.parent_id:
        facts.append(("forked from", f"<code>{esc(digest.parent_id)}</code> at v{digest.fork_version or 0:,}"))
    if digest.parent_session:
        facts.append(("main session", f"<code>{esc(digest.parent_session)}</code>"))
    subtitle = ""
    if digest.title and digest.first_prompt:
        subtitle = f'<p class="crumb">first prompt: {esc(digest.first_prompt)}</p>'
    items = "".join(f"<div><dt>{esc(k)}</dt><dd>{v}</dd></div>" for k, v in facts)
    return (f'<header class="top wrap"><div class="crumb">{" · ".join(crumb)}</div>'
            f"<h1>{esc(digest.heading)}</h1>{subtitle}<dl class=\"meta\">{items}</dl></header>")


def _chart_box(timeline: Timeline, markers: Sequence[int]) -> str:
    keep = [v for e in timeline.epochs for v in (e.first - 1, e.first, e.last)]
    sampled = "view tokens exact at each compaction and marker, within a few tokens a message in between"
    legend = (f'<div class="legend"><span class="l-view">view tokens (what the model is sent; {OUR_COUNT})</span>'
              f'<span class="l-transcript">transcript tokens (everything recorded; {OUR_COUNT})</span>'
              '<span class="l-compaction">compaction</span><span class="l-marker">prune / rewrite</span>'
              f'<span class="hint">{esc(sampled)}; click to see the view at a version</span></div>')
    return (f'<section class="card-box"><h2>Context over the session</h2>'
            f"{token_chart(timeline.series, timeline.compactions, markers, keep)}{legend}</section>")


def _compactions_box(spans: Sequence[CompactionSpan]) -> str:
    if not spans:
        return ""
    rows = []
    for c in spans:
        summarised = (f'<a href="#v{c.summarised[0]}">v{c.summarised[0]:,}</a>–<a href="#v{c.summarised[1]}">'
                      f"v{c.summarised[1]:,}</a>" if c.summarised else "nothing new")
        if c.number > 1:
            summarised += " + previous summary"
        kept = f'<a href="#v{c.first_kept}">v{c.first_kept:,}</a>' + version_list(" · restored", c.restored) + \
            version_list(" · critical", c.critical)
        rows.append(f'<tr><td><a href="#v{c.version}">#{c.number} at v{c.version:,}</a></td><td>{summarised}</td>'
                    f'<td>{kept}</td><td class="num">{before_after(c.tokens_before, c.tokens_after)}'
                    f'<br><small>{esc(counted_by(c.strategy, c.summarizer))}</small></td>'
                    f"<td>{esc(' · '.join(p for p in (c.trigger, c.strategy, c.summarizer) if p))}</td></tr>")
    return ('<section class="card-box"><h2>Compactions</h2><table class="compactions"><thead><tr><th>compaction</th>'
            "<th>summarised</th><th>kept from</th><th>tokens</th><th>how</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></section>")


def _travel_bar(head: int, has_noise: bool) -> str:
    noise = ('<label class="opt"><input type="checkbox" id="show-noise"> import records</label>' if has_noise else "")
    return (f'<nav class="travel" aria-label="The context view at a version"><div class="wrap"><div class="row">'
            f'<label for="at" class="opt">view at version</label>'
            f'<input type="range" id="at" min="1" max="{max(head, 1)}" value="{max(head, 1)}">'
            f'<input type="number" id="at-number" min="1" max="{max(head, 1)}" value="{max(head, 1)}" '
            f'aria-label="version">'
            '<fieldset><legend class="opt" hidden>show</legend>'
            '<label><input type="radio" name="mode" value="all" checked>whole transcript</label>'
            '<label><input type="radio" name="mode" value="mark">mark the view</label>'
            '<label><input type="radio" name="mode" value="only">only the view</label></fieldset>'
            f'{noise}</div><div class="row"><div class="info" id="at-info" aria-live="polite"></div>'
            '<button type="button" id="expand-all">expand all</button>'
            '<button type="button" id="collapse-all">collapse all</button></div></div></nav>')
