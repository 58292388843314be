"""Human-readable renderings of transcripts, views and statistics (pure: text in, text out).

The CLI and the demo print these; keeping them here keeps printing out of the library and
lets tests check what a user would read.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import PurePath
from typing import Any, Final

from rich.cells import cell_len, get_character_cell_size, set_cell_size

from .events import StoredEvent, content_blocks
from .projection import ContextView
from .store import CompactionResult, Conversation, SessionInfo, SessionStats, VerifyReport
from .tokens import OUR_COUNT, PROVIDER_COUNT, counts_in_transcript

# `show` clips each block at this many characters unless --full.
SHOW_LIMIT: Final = 2000


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[:limit].rstrip() + f" … [{len(text) - limit} more characters]"


# Control characters from the data drawn as symbols (␛, ␀, ␍; a C1 control as �): printed raw, one
# would move the cursor, erase a line or begin a terminal escape sequence. Tabs and newlines are kept.
_CONTROLS: Final = str.maketrans({**{chr(c): chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)},
                                  "\x7f": "\u2421", **{chr(c): "\ufffd" for c in range(0x80, 0xA0)}})


def visible(text: str) -> str:
    """`text` with every control character but tab and newline drawn as a symbol, one for one
    (offsets into it still hold)."""
    return text.translate(_CONTROLS)


def terminal_text(text: str) -> str:
    """`text` as a terminal should show it: CRLF line ends as newlines, tabs expanded (stops every
    8 columns of each line: a terminal's, so that a line's width is what it measures), and other
    control characters drawn (`visible`)."""
    return visible(text.replace("\r\n", "\n")).expandtabs()


def short(text: str, limit: int) -> str:
    """`text` on one line, cut to `limit` characters with an ellipsis (for table cells)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1].rstrip() + "…"


def one_line(text: str, limit: int) -> str:
    """`text` on one line (runs of whitespace become one space), clipped to `limit` characters."""
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
    if event.erased_at is not None:
        return erased_text(event)
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


def erased_text(event: StoredEvent) -> str:
    """An erased event's tombstone: when, and why (the content is gone)."""
    return f"erased {event.erased_at:%Y-%m-%d %H:%M:%S}: {event.meta.get('erase_reason', '')}"


def _role_of(event: StoredEvent) -> str:
    if event.erased_at is not None:
        return "erased"
    if event.kind == "message":
        return str(event.payload["role"])
    return {"tool_call": "assistant", "tool_result": "tool"}.get(event.kind, event.kind)


# Below this width `log` heads each event with a shorter time (month-day hour:minute).
_NARROW_LOG: Final = 100
_INDENT: Final = " " * 8


def log_lines(events: Iterable[StoredEvent], *, brief: bool = False, width: int | None = None) -> Iterator[str]:
    """The transcript, event by event: `v12 2025-10-30 14:03:07 message/user  5 tok  text…`.

    With a `width` every line fits it: --brief lines are cut with an ellipsis; the full log
    wraps its lines, continuations indented. Tabs come expanded and control characters drawn
    (`terminal_text`): a line is as wide as it measures and sends no escape to the terminal.
    An assistant message with no text (its tool calls, the next events, are all it said) says
    so rather than showing nothing; with `brief` it has no row of its own: the row of the call
    that follows counts its tokens too (a LangGraph AI message that only calls a tool).
    """
    when = "%m-%d %H:%M" if width is not None and width < _NARROW_LOG else "%Y-%m-%d %H:%M:%S"
    pending: StoredEvent | None = None
    folded = 0  # --brief: the tokens of the empty message before the call shown next
    for event in events:  # one event late: an empty message is told by what follows it
        if pending is not None:
            if brief and _calls_follow(pending, event):
                folded += pending.tokens
            else:
                yield from _log_entry(pending, event, brief, width, when, folded)
                folded = 0
        pending = event
    if pending is not None:
        yield from _log_entry(pending, None, brief, width, when, folded)


def _calls_follow(event: StoredEvent, following: StoredEvent | None) -> bool:
    """Whether `event` is a message with no text (as `log` shows it) followed by a tool call."""
    return (following is not None and following.kind == "tool_call" and following.erased_at is None
            and event.kind == "message" and event.erased_at is None and not event_summary(event).strip())


def _log_entry(event: StoredEvent, following: StoredEvent | None, brief: bool, width: int | None,
               when: str, folded: int = 0) -> Iterator[str]:
    head = f"v{event.version:<5} {event.created_at:{when}}  {event.kind + '/' + visible(_role_of(event)):<19} " \
           f"{event.tokens + folded:>6} tok  "
    body = terminal_text(event_summary(event, 400 if brief else None))
    if not body.strip() and event.kind == "message":
        body = "(no text: tool calls follow)" if _calls_follow(event, following) else "(no text)"
    if brief:
        line = head + one_line(body, 160)
        yield line if width is None else fit_cells(line, width)
        return
    lines = (head + body).split("\n")
    if width is None:
        yield "\n".join([lines[0], *(_INDENT + line for line in lines[1:])])
        return
    for n, line in enumerate(lines):
        yield from wrap_cells(line if n == 0 else _INDENT + line, width, _INDENT)


def fit_cells(text: str, width: int) -> str:
    """`text` cut to `width` terminal cells, ending with an ellipsis when cut."""
    if cell_len(text) <= width:
        return text
    return set_cell_size(text, max(0, width - 1)).rstrip() + "…"


def wrap_cells(line: str, width: int, indent: str = "") -> Iterator[str]:
    """`line` in pieces of at most `width` terminal cells, each continuation after `indent`;
    a piece ends after a space when one is in its second half, else anywhere (a long token)."""
    narrow = line.isascii()  # then a character is a cell: no measuring
    rest, room, first = line, width, True
    while True:
        cut = room if narrow else _cells_prefix(rest, room)
        if cut >= len(rest):
            break
        space = rest.rfind(" ", 0, cut + 1)
        if space > cut // 2:
            cut = space + 1
        yield (rest[:cut] if first else indent + rest[:cut]).rstrip()
        rest, room, first = rest[cut:].lstrip(" "), max(1, width - cell_len(indent)), False
    yield rest if first else indent + rest


def _cells_prefix(text: str, cells: int) -> int:
    """How many characters of `text` fit `cells` terminal cells (at least one; all when it fits)."""
    used = 0
    for index, char in enumerate(text):
        used += get_character_cell_size(char)
        if used > cells:
            return max(1, index)
    return len(text)


def event_json(event: StoredEvent) -> str:
    data = asdict(event)
    data["created_at"] = event.created_at.isoformat()
    return json.dumps(data, ensure_ascii=False)


def view_text(view: ContextView, *, limit: int | None = SHOW_LIMIT, transcript_tokens: int | None = None) -> str:
    """The context as the model reads it, message by message (`limit` clips each block; None: nothing)."""
    whole = f"; the transcript holds {transcript_tokens:,} ({OUR_COUNT})" if transcript_tokens is not None else ""
    estimate = view.window_estimate()
    provider = (f"; {PROVIDER_COUNT} ~{estimate.tokens:,} ({provider_label(estimate.basis)})"
                if estimate.basis != "ratio" else "")
    parts = [f"# context of {view.session_id} at v{view.version}: {len(view.messages)} messages, "
             f"~{view.tokens:,} tokens ({OUR_COUNT}){provider}{whole}"]
    if view.system:
        parts.append(f"── system ──\n{_clip(view.system, limit)}")
    for index, message in enumerate(view.messages, 1):
        body = "\n".join(block_text(b, limit) for b in message["content"])
        parts.append(f"── {index}. {message['role']} ──\n{body}")
    for diagnostic in view.diagnostics:
        parts.append(f"! {diagnostic.code}: {diagnostic.message} {list(diagnostic.versions)[:10]}")
    if limit is not None and "more characters]" in "\n".join(parts):
        parts.append(f"(blocks over {limit:,} characters are shortened: --full shows them whole)")
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


def provider_label(basis: str | None) -> str:
    """How the provider's figure was reached (`WindowEstimate.basis`)."""
    return {"usage": "last usage report + our estimate since",
            "calibration": "our estimate, calibrated on the session's usage reports"}.get(basis or "", basis or "")


def stats_rows(stats: SessionStats) -> list[tuple[str, str]]:
    compacted = stats.compactions or stats.pruned or stats.rewritten
    saved = 1 - stats.view_tokens / stats.transcript_tokens if stats.transcript_tokens else 0.0
    # Without a compaction, prune or rewrite the view is the transcript: any gap is rendering
    # (provider-native blocks another provider does not take, repairs), not a saving.
    change = f" ({saved:.0%} smaller)" if compacted and saved > 0 else " (nothing compacted)" if not compacted else ""
    rows = [
        ("version", str(stats.version)),
        ("events", str(stats.events)),
        (f"transcript tokens ({OUR_COUNT})", f"{stats.transcript_tokens:,}"),
        (f"view tokens ({OUR_COUNT})", f"{stats.view_tokens:,}{change}"),
    ]
    if stats.provider_tokens is not None:
        rows.append((f"view tokens ({PROVIDER_COUNT})",
                     f"{stats.provider_tokens:,} ({provider_label(stats.provider_basis)})"))
    rows += [
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


# --------------------------------------------------------------------------- the log's filters


def is_import_noise(event: StoredEvent) -> bool:
    """An event the model never sees and a reader rarely wants: a custom event out of context
    (Claude Code's progress records and file-history snapshots, Pi's model changes, LangGraph's
    checkpoints…)."""
    return event.kind == "custom" and event.erased_at is None and not counts_in_transcript(event.kind, event.payload)


def hidden_note(hidden: Mapping[str, int]) -> str:
    """What `log` left out, by type, the most frequent first: ``12 records the model never sees
    hidden (10 langgraph:checkpoint, 2 progress)``."""
    total = sum(hidden.values())
    kinds = sorted(hidden.items(), key=lambda item: (-item[1], item[0]))
    listed = ", ".join(f"{n:,} {visible(name)}" for name, n in kinds[:3]) + (", …" if len(kinds) > 3 else "")
    return f"{total:,} record{'s' if total != 1 else ''} the model never sees hidden ({listed})"


@dataclass
class LogFilter:
    """Which events `log` shows. Empty sets mean "any"; a tool matches its calls and their results."""

    kinds: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    tools: frozenset[str] = frozenset()
    since: datetime | None = None
    include_noise: bool = False
    hidden: int = 0
    hidden_types: dict[str, int] = field(default_factory=dict)  # custom type → how many were hidden
    _calls: set[str] = field(default_factory=set)

    def apply(self, events: Iterable[StoredEvent]) -> Iterator[StoredEvent]:
        for event in events:
            if self.matches(event):
                yield event

    def matches(self, event: StoredEvent) -> bool:
        if self.kinds and event.kind not in self.kinds:
            return False
        if self.roles and _role_of(event) not in self.roles:
            return False
        if self.tools:
            if event.erased_at is not None:
                return False
            if event.kind == "tool_call" and event.payload["name"] in self.tools:
                self._calls.add(event.payload["call_id"])
            elif not (event.kind == "tool_result" and event.payload["call_id"] in self._calls):
                return False
        if self.since is not None and event.created_at < self.since:
            return False
        if not self.include_noise and "custom" not in self.kinds and is_import_noise(event):
            self.hidden += 1
            name = str(event.payload.get("type"))
            self.hidden_types[name] = self.hidden_types.get(name, 0) + 1
            return False
        return True


# --------------------------------------------------------------------------- the session list


@dataclass(frozen=True)
class SessionRow:
    """One session as `sessions` lists it."""

    id: str
    started_at: datetime
    events: int
    tokens: int
    source: str
    model: str
    project: str
    cwd: str
    title: str
    parent: str | None
    fork_version: int | None
    role: str | None
    links: str

    def as_json(self) -> dict[str, Any]:
        return {"id": self.id, "started_at": self.started_at.isoformat(), "events": self.events,
                "tokens": self.tokens, "source": self.source or None, "model": self.model or None,
                "project": self.cwd or None, "title": self.title or None, "parent": self.parent,
                "fork_version": self.fork_version, "role": self.role}


def session_rows(infos: Iterable[SessionInfo], tokens: Mapping[str, int], first_prompt: Callable[[str], str],
                 lookup: Callable[[str], SessionInfo | None] | None = None) -> list[SessionRow]:
    """The sessions newest first, each described from its metadata (what importers stored) and,
    for sessions made through the API, from its events (`first_prompt` is asked only then).
    `lookup` finds a fork's ancestor that is not among `infos` (a page of them)."""
    from .viewer.digest import ancestors_metadata, inherit_metadata, prompt_title

    rows = []
    infos = list(infos)
    by_id = {info.id: info for info in infos}

    def ancestor(sid: str) -> SessionInfo | None:
        return by_id[sid] if sid in by_id else lookup(sid) if lookup is not None else None

    for info in infos:
        # A fork shows its conversation's title, source, model and project.
        meta = inherit_metadata(info.metadata, ancestors_metadata(info.parent_id, ancestor))
        started = info.started_at or info.created_at
        cwd = str(meta.get("cwd") or meta.get("project") or "")
        title = str(meta.get("title") or meta.get("name") or meta.get("description")
                    or prompt_title(meta.get("first_prompt")) or "") or first_prompt(info.id)
        parent = info.parent_id or (str(meta["parent_session"]) if meta.get("parent_session") else None)
        role = str(meta["role"]) if meta.get("role") else ("fork" if info.parent_id else None)
        if info.parent_id:
            links = f"fork of {info.parent_id}@v{info.fork_version}"
        elif parent:
            links = f"{role or 'subagent'} of {parent}"
        else:
            links = ""
        if info.erased_at is not None:
            links = f"erased {info.erased_at:%Y-%m-%d}" + (f"; {links}" if links else "")
        rows.append(SessionRow(info.id, started, info.head, tokens.get(info.id, 0),
                               str(meta.get("source") or meta.get("format") or ""), str(meta.get("model") or ""),
                               PurePath(cwd).name if cwd else "", cwd, one_line(title, 300), parent,
                               info.fork_version, role, links))
    return sorted(rows, key=lambda r: (r.started_at, r.id), reverse=True)


def short_ids(ids: Iterable[str], every: Iterable[str], minimum: int = 8) -> dict[str, str]:
    """Each of `ids` at the shortest form that names it among `every` id (like git's short hashes;
    at least `minimum` characters a part), as every command resolves it (`cli.app.resolve_session`):

    - a prefix that no other id starts with, or only the id's own subagents (``<id>:…``);
    - for an id ``<a>:<b>`` (a subagent), when shorter: a prefix of ``<a>`` that no other part
      before a first ``:`` starts with, ``:``, and a prefix of ``<b>`` that no sibling's starts
      with (``258c7280:agent-a8``), unless an id starts with that very text.
    """
    ordered = sorted(set(every))
    heads = sorted({i.partition(":")[0] for i in ordered})

    def count(among: list[str], prefix: str) -> int:
        return bisect_right(among, prefix + "\U0010ffff") - bisect_left(among, prefix)

    def names(text: str, target: str) -> bool:
        """Whether the ids starting with `text` are `target` and its subagents (at least one)."""
        family = count(ordered, target + ":") + (bisect_right(ordered, target) - bisect_left(ordered, target))
        return 0 < count(ordered, text) == family and target.startswith(text)

    def shortest(whole: str, unique: Callable[[str], bool]) -> str:
        return next((whole[:n] for n in range(min(len(whole), minimum), len(whole)) if unique(whole[:n])), whole)

    shown: dict[str, str] = {}
    for target in ids:
        best = shortest(target, lambda text: names(text, target))
        head, colon, tail = target.partition(":")
        if colon and head and tail and len(best) > 2 * minimum + 1:
            short_head = shortest(head, lambda text: count(heads, text) == 1)
            siblings = f"{head}:"
            short_tail = shortest(tail, lambda text: names(siblings + text, target))
            compound = f"{short_head}:{short_tail}"
            if len(compound) < len(best) and (count(ordered, compound) == 0 or names(compound, target)):
                best = compound
        shown[target] = best
    return shown


# --------------------------------------------------------------------------- audit


def verify_lines(reports: Iterable[VerifyReport]) -> Iterator[str]:
    """One line per session: intact, or its first bad version and why."""
    for report in reports:
        erased = " (erased)" if report.erased else ""
        if report.broken is None:
            yield f"ok      {report.session_id}{erased}: {report.events} event(s), head v{report.head} {report.head_link}"
        else:
            yield (f"BROKEN  {report.session_id}{erased}: first bad version v{report.broken.version}: "
                   f"{report.broken.reason}")


def _part_line(info: SessionInfo) -> str:
    role = str(info.metadata.get("role") or "part")
    what = f"{role}: {one_line(str(info.metadata['description']), 50)}" if info.metadata.get("description") else role
    erased = ", already erased" if info.erased_at is not None else ""
    return f"  {info.id}  {what}, {info.head} event(s){erased}"


def conversation_lines(talk: Conversation, erasing: Sequence[SessionInfo]) -> Iterator[str]:
    """What an erase is about to reach and what it leaves, named before the question is asked."""
    head, *parts = talk.parts
    yield f"erasing {head.id} ({head.head} event(s))" + (f" and {len(erasing) - 1} session(s) that are part of it:"
                                                          if len(erasing) > 1 else "")
    yield from (_part_line(info) for info in erasing[1:])
    left = [info for info in parts if info not in erasing]
    if left:
        yield f"not erasing {len(left)} session(s) that are part of it (--only-this); they quote it:"
        yield from (_part_line(info) for info in left)
    if talk.forks:
        yield f"kept: {len(talk.forks)} fork(s), which keep their own events; what they inherited becomes tombstones:"
        for fork in talk.forks:
            yield f"  {fork.id}  fork of {fork.parent_id}@v{fork.fork_version}, {fork.head - (fork.fork_version or 0)} own event(s)"


def erase_aftermath(talk: Conversation, postgres: bool, vacuumed: bool) -> Iterator[str]:
    """Where copies of the erased content may still be, so that an operator can finish the job."""
    if talk.forks:
        yield f"{len(talk.forks)} fork(s) kept their own events: erase them too if they quote the conversation"
    if postgres:
        yield ("PostgreSQL: the tables were rewritten (VACUUM FULL): no old row version is left in them; the "
               "server's WAL and backups keep theirs until their retention ends" if vacuumed else
               "PostgreSQL keeps the old row versions until the tables are vacuumed: run `erase SID --vacuum` "
               "(or VACUUM FULL sessions, events), and the server's WAL and backups keep theirs until their "
               "retention ends")
