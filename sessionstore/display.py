"""Human-readable renderings of transcripts, views and statistics (pure: text in, text out).

The CLI and the demo print these; keeping them here keeps printing out of the library and
lets tests check what a user would read.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from .events import StoredEvent, content_blocks
from .projection import ContextView
from .store import CompactionResult, SessionStats


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" … [{len(text) - limit} more characters]"


def _one_line(text: str, limit: int) -> str:
    return _clip(" ".join(text.split()), limit)


def block_text(block: Mapping[str, Any], limit: int | None = None) -> str:
    """One content block as a reader would want to see it."""
    btype = block.get("type")
    if btype == "text":
        return _clip(str(block.get("text", "")), limit)
    if btype == "thinking":
        return "(thinking) " + _clip(str(block.get("thinking", "")), limit)
    if btype == "image":
        source = block.get("source") or {}
        return f"[image {source.get('media_type') or source.get('type') or ''}]".replace(" ]", "]")
    if btype == "tool_use":
        return f"→ {block.get('name')}({_clip(json.dumps(block.get('input'), ensure_ascii=False), limit)})"
    if btype == "tool_result":
        content = block.get("content", "")
        text = content if isinstance(content, str) else "\n".join(block_text(b, None) for b in content)
        marker = "✗" if block.get("is_error") else "←"
        return f"{marker} {block.get('tool_use_id')}: {_clip(text, limit)}"
    return _clip(json.dumps(block, ensure_ascii=False), limit)


def event_summary(event: StoredEvent, limit: int | None = None) -> str:
    """The content of an event as text (`limit` clips long parts)."""
    p = event.payload
    if event.kind == "message":
        return "\n".join(block_text(b, limit) for b in content_blocks(p["content"]))
    if event.kind == "tool_call":
        return f"{p['name']}({_clip(json.dumps(p['input'], ensure_ascii=False), limit)}) [{p['call_id']}]"
    if event.kind == "tool_result":
        output = p["output"]
        text = output if isinstance(output, str) else "\n".join(block_text(b, limit) for b in output)
        return f"[{p['call_id']}{' ERROR' if p.get('is_error') else ''}] {_clip(text, limit)}"
    if event.kind in ("system", "scratchpad"):
        return _clip(p["text"], limit)
    if event.kind == "compaction":
        return (f"summary of everything before v{p['first_kept_version']} ({p.get('trigger')}, "
                f"{p.get('summarizer')}; {p.get('tokens_before')} → {p.get('tokens_after')} tokens)\n"
                + _clip(p["summary"], limit))
    if event.kind == "prune":
        return f"{p['rule']}: {p['mode']} {len(p['targets'])} event(s) {p['targets'][:12]}" + (
            "…" if len(p["targets"]) > 12 else "")
    if event.kind == "rewrite":
        return f"v{p['target_version']} {p['field']} → {p['language']} skeleton of {p['original_lines']} lines"
    if event.kind == "custom":
        data = p.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return f"{p['type']}{' (in context)' if p.get('in_context') else ''}: {_clip(text, limit)}"
    return _clip(json.dumps(p, ensure_ascii=False), limit)


def _role_of(event: StoredEvent) -> str:
    if event.kind == "message":
        return str(event.payload["role"])
    return {"tool_call": "assistant", "tool_result": "tool"}.get(event.kind, event.kind)


def log_lines(events: Iterable[StoredEvent], *, brief: bool = False) -> Iterable[str]:
    """The transcript, event by event: `v12 14:03:07 message/user  text…`."""
    for event in events:
        head = f"v{event.version:<5} {event.created_at:%Y-%m-%d %H:%M:%S}  {event.kind}/{_role_of(event):<9}" \
               f" {event.tokens:>6} tok  "
        if brief:
            yield head + _one_line(event_summary(event, 400), 160)
        else:
            body = event_summary(event)
            yield head + body.replace("\n", "\n" + " " * 8)


def event_json(event: StoredEvent) -> str:
    data = asdict(event)
    data["created_at"] = event.created_at.isoformat()
    return json.dumps(data, ensure_ascii=False)


def view_text(view: ContextView, *, limit: int | None = 2000) -> str:
    """The context as the model reads it, message by message."""
    parts = [f"# context of {view.session_id} at v{view.version}: {len(view.messages)} messages, "
             f"~{view.tokens} tokens" + (f" (provider-anchored: {view.usage.total})" if view.usage else "")]
    if view.system:
        parts.append(f"── system ──\n{_clip(view.system, limit)}")
    for index, message in enumerate(view.messages, 1):
        body = "\n".join(block_text(b, limit) for b in message["content"])
        parts.append(f"── {index}. {message['role']} ──\n{body}")
    for diagnostic in view.diagnostics:
        parts.append(f"! {diagnostic.code}: {diagnostic.message} {list(diagnostic.versions)[:10]}")
    return "\n\n".join(parts)


def view_json(view: ContextView) -> dict[str, Any]:
    """The view with its provenance: which event each item comes from, and what changed it."""
    return {
        "session_id": view.session_id,
        "version": view.version,
        "tokens": view.tokens,
        "usage": asdict(view.usage) if view.usage else None,
        "compaction_version": view.compaction.version if view.compaction else None,
        "system": view.system,
        "items": [{"version": i.version, "kind": i.kind, "origin": i.origin, "tokens": i.tokens,
                   "marker": i.marker, "cleared": i.cleared, "rewritten": i.rewritten} for i in view.items],
        "messages": view.messages,
        "diagnostics": [asdict(d) for d in view.diagnostics],
    }


def stats_rows(stats: SessionStats) -> list[tuple[str, str]]:
    saved = 1 - stats.view_tokens / stats.transcript_tokens if stats.transcript_tokens else 0.0
    rows = [
        ("version", str(stats.version)),
        ("events", str(stats.events)),
        ("transcript tokens", f"{stats.transcript_tokens:,}"),
        ("view tokens", f"{stats.view_tokens:,} ({saved:.0%} smaller)"),
        ("messages in view", str(stats.messages_in_view)),
        ("compactions", str(stats.compactions)),
        ("pruned events", str(stats.pruned)),
        ("rewritten outputs", str(stats.rewritten)),
        ("view repairs", str(stats.diagnostics)),
    ]
    rows += [(f"  {kind}", f"{n} events, {tokens:,} tokens") for kind, (n, tokens) in sorted(stats.by_kind.items())]
    return rows


def compaction_rows(result: CompactionResult) -> list[tuple[str, str]]:
    plan = result.plan
    rows = [
        ("trigger", result.trigger + (" (dry run)" if result.dry_run else "")),
        ("tokens before", f"{plan.tokens_before:,}"),
        ("after prune + rewrite", f"{plan.tokens_after_prune:,}"),
        ("tokens after", f"{plan.tokens_after:,}"),
        ("summariser calls", str(plan.summarizer_calls)),
        ("first kept version", str(plan.first_kept_version or "—")),
        ("outcome", plan.reason),
    ]
    rows += [(f"  prune: {p.rule}", f"{p.mode} {len(p.targets)} event(s), {p.tokens:,} tokens") for p in plan.prunes]
    if plan.rewrites:
        rows.append(("  rewrites", f"{len(plan.rewrites)} skeleton(s), "
                                   f"{sum(r.saved_chars for r in plan.rewrites):,} characters saved"))
    return rows


def table_text(rows: Sequence[tuple[str, str]]) -> str:
    width = max((len(k) for k, _ in rows), default=0)
    return "\n".join(f"{k.ljust(width)}  {v}" for k, v in rows)
