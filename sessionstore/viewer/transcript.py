"""The transcript part of a session page: every event as a card, in order, with the day lines and
the compaction cuts between them.

A message open, a tool call or result folded to one line with its size, a compaction with its
figures, a prune or rewrite marker with its targets, import records marked as noise (hidden by
default). Apart from the page's header and bars (page.py): the bulk of a page, and of its code.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import timezone
from typing import Any

from ..events import StoredEvent, content_blocks
from .content import (args_html, before_after, blocks_html, call_preview, counted_by, figure, one_line, pre_html,
                      pretty_json, size_text, text_html, utc_time, version_list)
from .document import body_text, esc
from .timeline import CompactionSpan, MarkerNote, Timeline

def events_html(events: Sequence[StoredEvent], timeline: Timeline) -> str:
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
        if not is_noise(event) and when.date() != quiet_day:
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
        body = blocks_html(content_blocks(event.payload["content"])) or '<div class="size">(no text)</div>'
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
        return _folded(event, kind, label, one_line(text), size_text(text), text_html(text), notes)
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
            f'<summary><span class="who">{esc(who)}</span><span class="preview">{body_text(preview)}</span>'
            f'{_notes_html(notes)}<span class="state"></span><span class="size">{esc(size)}</span>'
            f'<span class="size">{event.tokens:,} tok</span></summary>{body}</details></div></article>')


def _notes_html(notes: Sequence[MarkerNote]) -> str:
    return "".join(f'<a class="note" href="#v{n.marker}" title="{esc(utc_time(n.created_at))}">{esc(n.action)} by '
                   f"v{n.marker:,}{' · ' + esc(n.detail) if n.detail else ''} · "
                   f"{n.created_at.astimezone(timezone.utc):%H:%M:%S}</a>" for n in notes)


def _tool_call(event: StoredEvent, notes: Sequence[MarkerNote]) -> str:
    p = event.payload
    args = p["input"]
    return _folded(event, "tool call", f"→ {p['name']}", call_preview(args), size_text(pretty_json(args)),
                   args_html(args) + f'<div class="size">call id <code>{esc(p["call_id"])}</code></div>', notes)


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
        body = (pre_html(text) + f'<div class="size">shown decoded from the recorded JSON; with it: '
                             f"<code>{esc(json.dumps(rest, ensure_ascii=False))}</code></div>")
    elif isinstance(output, str):
        body = pre_html(output)
    else:
        body = blocks_html(content_blocks(output), pre=True)
    link = f' of <a href="#v{call.version}">v{call.version:,}</a>' if call is not None else ""
    error = p.get("is_error") is True
    who = f"{'✗ error from' if error else '←'} {name}"
    return _folded(event, "tool result" + (" error" if error else ""), who, one_line(text), size_text(text),
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
             f"<span>{before_after(p.get('tokens_before'), p.get('tokens_after'), bold=True)} "
             f"({esc(counted_by(str(p.get('strategy') or ''), str(p.get('summarizer') or '')))})</span>",
             f"<span>{esc(' · '.join(str(p[k]) for k in ('trigger', 'strategy', 'summarizer') if p.get(k)))}</span>"]
    for label, key in (("restored", "restored"), ("critical", "critical")):
        versions = sorted(details.get(key, ()))
        if versions:
            facts.append(f"<span>{version_list(label, versions)}</span>")
    files = [f for key in ("read_files", "modified_files") for f in details.get(key, ())]
    if files:
        facts.append(f"<span>{len(details.get('read_files', ()))} files read, "
                     f"{len(details.get('modified_files', ()))} modified</span>")
    if p.get("instructions"):
        facts.append(f"<span>instructions: {esc(p['instructions'])}</span>")
    body = (f'<div class="facts">{"".join(facts)}</div>'
            f'<div class="summary-text">{text_html(str(p["summary"]), head_lines=16)}</div>')
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
            f"{figure(p.get('original_lines'))} lines")
    content = str(p.get("content") or "")
    body = (f'<div class="facts"><span>{what}</span></div><details class="inner"><summary>the outline · '
            f'{esc(size_text(content))}</summary>{pre_html(content)}</details>')
    return _article(event, "marker rewrite", "Rewrite", "", body, ())


def _custom(event: StoredEvent, notes: Sequence[MarkerNote]) -> str:
    p = event.payload
    data = p.get("data")
    noise = "" if p.get("in_context") else " noise"
    # import records (outside the context) are the bulk of some transcripts: one compact line each
    text = data if isinstance(data, str) else pretty_json(data) if not noise else json.dumps(data, ensure_ascii=False)
    label = str(p.get("type") or "custom") + (" (in context)" if p.get("in_context") else "")
    return _folded(event, "custom" + noise, label, one_line(text), size_text(text), pre_html(text), notes)


def is_noise(event: StoredEvent) -> bool:
    return event.kind == "custom" and not event.payload.get("in_context")
