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
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from functools import cache
from importlib import resources
from typing import Any, Final

from ..events import StoredEvent, content_blocks
from ..store import SessionInfo
from ..tokens import OUR_COUNT, PROVIDER_COUNT
from .chart import token_chart
from .digest import SessionDigest, session_digest
from .timeline import STATES, CompactionSpan, MarkerNote, Timeline, build_timeline

HEAD_LINES: Final = 30
HEAD_CHARS: Final = 4_000
PREVIEW_CHARS: Final = 180
IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_IMAGE_BYTES: Final = 2_000_000
_SMALL_REST_CHARS: Final = 400
_SMALL_REST_LINES: Final = 4
_BASE64: Final = re.compile(r"^[A-Za-z0-9+/]*={0,2}$")
# Tool input keys whose value says best what a call does, in order of preference.
_PREVIEW_KEYS: Final = ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description", "prompt",
                        "input", "arguments")
_ARGV_KEYS: Final = frozenset({"command", "cmd", "argv"})
STATE_CODES: Final = {state: code for state, code in zip(STATES, "vcwspkyx")}


def esc(value: object) -> str:
    """For attributes and anything short: quotes escaped too."""
    return html.escape(str(value), quote=True)


def _body(text: str) -> str:
    """For element content only (the bulk of a page: outputs, JSON): ``&``, ``<`` and ``>`` escaped,
    which is all element content needs; quotes stay as they are (JSON would double in size)."""
    return html.escape(text, quote=False)


@dataclass(frozen=True, slots=True)
class PageLinks:
    """Links a served page carries (the file written by `sessionstore html` has none)."""

    index: str | None = None
    downloads: tuple[tuple[str, str], ...] = ()  # (label, href)


# --------------------------------------------------------------------------- the document


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath("static", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def content_security_policy() -> str:
    """The page's own script and stylesheet, data: images; nothing else (no network, no other script)."""
    return (f"default-src 'none'; script-src '{_sha256(_asset('page.js'))}'; "
            f"style-src '{_sha256(_asset('page.css'))}'; img-src data:; base-uri 'none'; form-action 'none'")


def document(title: str, body: str, *, body_class: str = "", data: Mapping[str, Any] | None = None) -> str:
    """A complete HTML document with the stylesheet, the CSP and (with `data`) the script."""
    script = ""
    if data is not None:
        blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c").replace(">", "\\u003e")
        script = (f'<script type="application/json" id="timeline-data">{blob}</script>\n'
                  f"<script>{_asset('page.js')}</script>\n")
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f'<meta http-equiv="Content-Security-Policy" content="{esc(content_security_policy())}">\n'
            '<meta name="referrer" content="no-referrer">\n'
            '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
            '<meta name="color-scheme" content="light dark">\n'
            f"<title>{esc(title)}</title>\n<style>{_asset('page.css')}</style>\n</head>\n"
            f'<body class="{esc(body_class)}">\n{body}\n{script}</body>\n</html>\n')


# --------------------------------------------------------------------------- the session page


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
        _travel_bar(timeline.head, any(_is_noise(e) for e in events)),
        f'<main class="timeline wrap">\n{_events_html(events, timeline)}\n</main>',
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
        ("started", esc(_when(digest.started_at)) if digest.started_at else "—"),
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


def _when(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


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
        kept = f'<a href="#v{c.first_kept}">v{c.first_kept:,}</a>' + _version_list(" · restored", c.restored) + \
            _version_list(" · critical", c.critical)
        rows.append(f'<tr><td><a href="#v{c.version}">#{c.number} at v{c.version:,}</a></td><td>{summarised}</td>'
                    f'<td>{kept}</td><td class="num">{_before_after(c.tokens_before, c.tokens_after)}'
                    f'<br><small>{esc(_counted_by(c.strategy, c.summarizer))}</small></td>'
                    f"<td>{esc(' · '.join(p for p in (c.trigger, c.strategy, c.summarizer) if p))}</td></tr>")
    return ('<section class="card-box"><h2>Compactions</h2><table class="compactions"><thead><tr><th>compaction</th>'
            "<th>summarised</th><th>kept from</th><th>tokens</th><th>how</th></tr></thead><tbody>"
            + "".join(rows) + "</tbody></table></section>")


def _version_list(label: str, versions: Sequence[int], limit: int = 12) -> str:
    if not versions:
        return ""
    shown = ", ".join(f'<a href="#v{v}">v{v:,}</a>' for v in versions[:limit])
    more = f" and {len(versions) - limit} more" if len(versions) > limit else ""
    return f"{label} {shown}{more}"


def _counted_by(strategy: str, summarizer: str) -> str:
    """Whose count a compaction's figures are: an imported one recorded the agent's own (its
    provider's) count, which the chart's estimate need not match; ours are our estimate."""
    return f"{PROVIDER_COUNT}, recorded by {summarizer or 'the agent'}" if strategy == "imported" else OUR_COUNT


def _before_after(before: Any, after: Any, *, bold: bool = False) -> str:
    """"34,344 → 14,060 tokens"; an imported compaction often recorded only the size before."""
    b, e = ("<b>", "</b>") if bold else ("", "")
    if not _is_count(after):
        return f"{b}{_tokens(before)}{e} tokens before" if _is_count(before) else "tokens not recorded"
    return f"{b}{_tokens(before)}{e} → {b}{_tokens(after)}{e} tokens"


def _is_count(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _tokens(value: Any) -> str:
    return f"{value:,}" if _is_count(value) else "?"


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


# --------------------------------------------------------------------------- events


def _events_html(events: Sequence[StoredEvent], timeline: Timeline) -> str:
    calls = {e.payload["call_id"]: e for e in events if e.kind == "tool_call"}
    cuts: dict[int, list[CompactionSpan]] = {}
    for span in timeline.compactions:
        cuts.setdefault(span.first_kept, []).append(span)
    parts: list[str] = []
    day = quiet_day = None  # the last date shown with import records, and without them
    for event in events:
        when = event.created_at.astimezone(timezone.utc)
        seqs = []
        if when.date() != day:
            day = when.date()
            seqs.append("a")
        if not _is_noise(event) and when.date() != quiet_day:
            quiet_day = when.date()
            seqs.append("q")
        if seqs:
            parts.append(f'<div class="day {" ".join(seqs)}" data-next="{event.version}">{when:%A} {when.day} '
                         f"{when:%B %Y}</div>")
        for span in cuts.get(event.version, ()):
            parts.append(f'<div class="cut" id="cut-{span.number}" data-next="{event.version}">'
                         f"✂ compaction {span.number} "
                         f'(<a href="#v{span.version}">v{span.version:,}</a>) summarised what is above; '
                         f"the view keeps from here</div>")
        parts.append(_event_html(event, calls, timeline.notes.get(event.version, ())))
    return "\n".join(parts)


def _event_html(event: StoredEvent, calls: Mapping[str, StoredEvent], notes: Sequence[MarkerNote]) -> str:
    kind = event.kind
    if kind == "message":
        role = str(event.payload["role"])
        who = "Developer" if event.meta.get("source_role") == "developer" else role.capitalize()
        model = event.meta.get("model") if role == "assistant" else None
        extra = f'<span class="mono">{esc(model)}</span>' if isinstance(model, str) else ""
        body = _blocks_html(content_blocks(event.payload["content"])) or '<div class="size">(no text)</div>'
        return _article(event, role, who, extra, body, notes)
    if kind == "tool_call":
        return _tool_call(event, notes)
    if kind == "tool_result":
        return _tool_result(event, calls, notes)
    if kind == "compaction":
        return _compaction(event)
    if kind in ("prune", "rewrite"):
        return _marker(event)
    if kind in ("system", "scratchpad"):
        text = str(event.payload["text"])
        label = "System prompt" if kind == "system" else "Scratchpad"
        return _folded(event, kind, label, _one_line(text), _size(text), _text_html(text), notes)
    return _custom(event, notes)


def _article(event: StoredEvent, classes: str, who: str, extra: str, body: str, notes: Sequence[MarkerNote]) -> str:
    return (f'{_open(event, classes)}<div class="card"><div class="head"><span class="who">{esc(who)}</span>{extra}'
            f'{_notes_html(notes)}<span class="state"></span><span class="tok">{event.tokens:,} tok</span></div>'
            f'<div class="body">{body}</div></div></article>')


def _open(event: StoredEvent, classes: str) -> str:
    when = event.created_at.astimezone(timezone.utc)
    return (f'<article class="ev {esc(classes)}" id="v{event.version}" data-version="{event.version}" '
            f'data-kind="{esc(event.kind)}"><div class="gutter"><a class="vn" href="#v{event.version}">'
            f'v{event.version:,}</a><time datetime="{when.isoformat(timespec="seconds")}">{when:%H:%M:%S}</time></div>')


def _folded(event: StoredEvent, classes: str, who: str, preview: str, size: str, body: str,
            notes: Sequence[MarkerNote], *, open_: bool = False) -> str:
    """An event whose body is folded behind a one-line summary (tool calls and results, system, custom)."""
    return (f'{_open(event, classes)}<div class="card"><details class="ev-fold"{" open" if open_ else ""}>'
            f'<summary><span class="who">{esc(who)}</span><span class="preview">{_body(preview)}</span>'
            f'{_notes_html(notes)}<span class="state"></span><span class="size">{esc(size)}</span>'
            f'<span class="size">{event.tokens:,} tok</span></summary>{body}</details></div></article>')


def _notes_html(notes: Sequence[MarkerNote]) -> str:
    return "".join(f'<a class="note" href="#v{n.marker}" title="{esc(_when(n.created_at))}">{esc(n.action)} by '
                   f"v{n.marker:,}{' · ' + esc(n.detail) if n.detail else ''} · "
                   f"{n.created_at.astimezone(timezone.utc):%H:%M:%S}</a>" for n in notes)


def _tool_call(event: StoredEvent, notes: Sequence[MarkerNote]) -> str:
    p = event.payload
    args = p["input"]
    return _folded(event, "tool call", f"→ {p['name']}", _call_preview(args), _size(_json(args)),
                   _args_html(args) + f'<div class="size">call id <code>{esc(p["call_id"])}</code></div>', notes)


def _tool_result(event: StoredEvent, calls: Mapping[str, StoredEvent], notes: Sequence[MarkerNote]) -> str:
    p = event.payload
    call = calls.get(p["call_id"])
    name = call.payload["name"] if call is not None else "unknown call"
    output = p["output"]
    text = output if isinstance(output, str) else "\n".join(
        str(b.get("text", "")) for b in output if isinstance(b, Mapping) and b.get("type") == "text")
    wrapped = _wrapped_output(output)
    if wrapped is not None:
        text, rest = wrapped
        body = (_pre(text) + f'<div class="size">shown decoded from the recorded JSON; with it: '
                             f"<code>{esc(json.dumps(rest, ensure_ascii=False))}</code></div>")
    elif isinstance(output, str):
        body = _pre(output)
    else:
        body = _blocks_html(content_blocks(output), pre=True)
    link = f' of <a href="#v{call.version}">v{call.version:,}</a>' if call is not None else ""
    error = p.get("is_error") is True
    who = f"{'✗ error from' if error else '←'} {name}"
    return _folded(event, "tool result" + (" error" if error else ""), who, _one_line(text), _size(text),
                   f'<div class="size">result{link}</div>{body}', notes)


def _wrapped_output(output: Any) -> tuple[str, dict[str, Any]] | None:
    """An output recorded as a JSON object around the text (Codex: ``{"output": …, "metadata": …}``):
    (the text, the other keys), so that it reads as the tool printed it; None for anything else."""
    if not isinstance(output, str) or not output.startswith('{"output"'):
        return None
    try:
        value = json.loads(output)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("output"), str):
        return None
    return value["output"], {k: v for k, v in value.items() if k != "output"}


def _compaction(event: StoredEvent) -> str:
    p = event.payload
    details = p.get("details") or {}
    facts = [f"<span>summarised everything before <a href=\"#v{p['first_kept_version']}\">"
             f"v{p['first_kept_version']:,}</a></span>",
             f"<span>{_before_after(p.get('tokens_before'), p.get('tokens_after'), bold=True)} "
             f"({esc(_counted_by(str(p.get('strategy') or ''), str(p.get('summarizer') or '')))})</span>",
             f"<span>{esc(' · '.join(str(p[k]) for k in ('trigger', 'strategy', 'summarizer') if p.get(k)))}</span>"]
    for label, key in (("restored", "restored"), ("critical", "critical")):
        versions = sorted(details.get(key, ()))
        if versions:
            facts.append(f"<span>{_version_list(label, versions)}</span>")
    files = [f for key in ("read_files", "modified_files") for f in details.get(key, ())]
    if files:
        facts.append(f"<span>{len(details.get('read_files', ()))} files read, "
                     f"{len(details.get('modified_files', ()))} modified</span>")
    if p.get("instructions"):
        facts.append(f"<span>instructions: {esc(p['instructions'])}</span>")
    body = (f'<div class="facts">{"".join(facts)}</div>'
            f'<div class="summary-text">{_text_html(str(p["summary"]), head_lines=16)}</div>')
    return _article(event, "compaction", "Compaction", "", body, ())


def _marker(event: StoredEvent) -> str:
    p = event.payload
    if event.kind == "prune":
        targets = p["targets"]
        what = f"{p['mode'].replace('_', ' ')} of {len(targets)} event(s) · rule {p.get('rule') or '—'}"
        links = "".join(f'<a href="#v{t}">v{t:,}</a>' for t in targets)
        body = f'<div class="facts">{esc(what)}</div><div class="targets">{links}</div>'
        if p.get("placeholder"):
            body += f'<div class="size">placeholder: {esc(p["placeholder"])}</div>'
        return _article(event, "marker prune", "Prune", "", body, ())
    target = p["target_version"]
    what = (f"{p['field']} of <a href=\"#v{target}\">v{target:,}</a> → {esc(p.get('language') or '')} outline of "
            f"{_tokens(p.get('original_lines'))} lines")
    content = str(p.get("content") or "")
    body = (f'<div class="facts"><span>{what}</span></div><details class="inner"><summary>the outline · '
            f'{esc(_size(content))}</summary>{_pre(content)}</details>')
    return _article(event, "marker rewrite", "Rewrite", "", body, ())


def _custom(event: StoredEvent, notes: Sequence[MarkerNote]) -> str:
    p = event.payload
    data = p.get("data")
    noise = "" if p.get("in_context") else " noise"
    # import records (outside the context) are the bulk of some transcripts: one compact line each
    text = data if isinstance(data, str) else _json(data) if not noise else json.dumps(data, ensure_ascii=False)
    label = str(p.get("type") or "custom") + (" (in context)" if p.get("in_context") else "")
    return _folded(event, "custom" + noise, label, _one_line(text), _size(text), _pre(text), notes)


def _is_noise(event: StoredEvent) -> bool:
    return event.kind == "custom" and not event.payload.get("in_context")


# --------------------------------------------------------------------------- content


def _blocks_html(blocks: Iterable[Mapping[str, Any]], *, pre: bool = False) -> str:
    parts = []
    for block in blocks:
        btype = block.get("type")
        if btype == "text":
            text = str(block.get("text", ""))
            if text.strip():
                parts.append(_pre(text) if pre else _text_html(text))
        elif btype == "thinking":
            thought = str(block.get("thinking", ""))
            parts.append(f'<details class="inner thinking"><summary>thinking · {esc(_size(thought))}</summary>'
                         f"{_text_html(thought)}</details>")
        elif btype == "redacted_thinking":
            parts.append('<div class="thinking">(redacted thinking)</div>')
        elif btype == "image":
            parts.append(_image(block))
        else:
            parts.append(_native(block))
    return "".join(parts)


def _native(block: Mapping[str, Any]) -> str:
    """A provider-native block kept verbatim (OpenAI reasoning, web search, …): its summary text, and the JSON."""
    summary = block.get("summary")
    texts = [str(s.get("text")) for s in summary if isinstance(s, Mapping) and s.get("text")] \
        if isinstance(summary, list) else []
    shown = _text_html("\n\n".join(texts)) if texts else ""
    raw = _json(block)
    return (f'{shown}<details class="inner"><summary>{esc(block.get("type") or "block")} · {esc(_size(raw))}'
            f'</summary>{_pre(raw)}</details>')


def _image(block: Mapping[str, Any]) -> str:
    source = block.get("source") if isinstance(block.get("source"), Mapping) else {}
    media = source.get("media_type")
    data = source.get("data")
    if (source.get("type") == "base64" and media in IMAGE_TYPES and isinstance(data, str)
            and len(data) <= MAX_IMAGE_BYTES * 4 // 3 and _BASE64.match(data)):
        return f'<img class="shot" alt="image ({esc(media)})" src="data:{media};base64,{data}">'
    what = media or source.get("type") or "unknown"
    size = f", {len(data) * 3 // 4:,} bytes" if isinstance(data, str) else ""
    return f'<div class="size">[image: {esc(what)}{esc(size)}, not shown]</div>'


def _text_html(text: str, *, head_lines: int = HEAD_LINES) -> str:
    """Prose (messages, summaries): the first lines shown, the rest behind a "more" fold."""
    head, rest = _split(text, head_lines, HEAD_CHARS)
    if not rest:
        return f'<div class="text">{_body(text)}</div>'
    return (f'<div class="text">{_body(head)}</div><details class="more"><summary>{esc(_more(rest))}</summary>'
            f'<div class="text">{_body(rest)}</div></details>')


def _pre(text: str) -> str:
    """Output and code (tool results, inputs): more lines shown before the fold, since they are already folded."""
    head, rest = _split(text, HEAD_LINES * 4, HEAD_CHARS * 4)
    if not rest:
        return f'<pre class="out">{_body(text)}</pre>'
    return (f'<pre class="out">{_body(head)}</pre><details class="more"><summary>{esc(_more(rest))}</summary>'
            f'<pre class="out">{_body(rest)}</pre></details>')


def _split(text: str, max_lines: int, max_chars: int) -> tuple[str, str]:
    """(what to show, what to fold): cut after `max_lines` lines or `max_chars` characters; never fold a
    remainder so small that the fold would hide less than it costs to open."""
    end = len(text)
    pos = -1
    for _ in range(max_lines):
        pos = text.find("\n", pos + 1)
        if pos < 0:
            break
    if pos >= 0:
        end = pos
    end = min(end, max_chars)
    rest = text[end:]
    if len(rest) <= _SMALL_REST_CHARS and rest.count("\n") <= _SMALL_REST_LINES:
        return text, ""
    return text[:end], rest


def _more(rest: str) -> str:
    lines = rest.count("\n") + (0 if rest.endswith("\n") else 1)
    return f"{lines:,} more line{'s' if lines != 1 else ''} · {len(rest):,} characters"


def _size(text: str) -> str:
    lines = text.count("\n") + 1 if text else 0
    chars = len(text)
    amount = f"{chars / 1000:.1f}k chars" if chars >= 1000 else f"{chars} chars"
    return f"{lines:,} lines · {amount}" if lines > 1 else amount


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= PREVIEW_CHARS else line[:PREVIEW_CHARS - 1] + "…"


def _call_preview(args: Any) -> str:
    if isinstance(args, Mapping):
        for key in _PREVIEW_KEYS:
            value = args.get(key)
            if key in _ARGV_KEYS and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
                value = _argv_text(value)
            if isinstance(value, str) and value.strip():
                return _one_line(value)
    return _one_line(_json(args))


def _argv_text(argv: Sequence[str]) -> str:
    """An argv as a shell line; a ``sh -c SCRIPT`` with its script verbatim on the next line (quoting a
    script inside quotes would bury it)."""
    if len(argv) >= 3 and argv[-2] in ("-c", "-lc"):
        return f"{shlex.join(argv[:-1])}\n{argv[-1]}"
    return shlex.join(argv)


def _args_html(args: Any) -> str:
    """Tool input as name/value pairs, strings shown as written (multi-line edits stay readable)."""
    if not isinstance(args, Mapping) or not args:
        return _pre(_json(args))
    rows = []
    for key, value in args.items():
        if key in _ARGV_KEYS and isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            shown = _argv_text(value)
        else:
            shown = value if isinstance(value, str) else _json(value)
        rows.append(f"<dt>{esc(key)}</dt><dd>{_pre(shown)}</dd>")
    return f'<dl class="args">{"".join(rows)}</dl>'


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


# --------------------------------------------------------------------------- the session list


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
