"""Exports: a stored session as a file, in three formats.

```python
from sessionstore.exports import export_session
with open("s.jsonl", "w") as out:
    export_session(store, sid, "jsonl", out)     # re-importable: `sessionstore import s.jsonl`
```

* ``jsonl``: every event with its id, version, payload, meta, tokens and time, after a header
  line with the session; payloads byte-identical to the stored text, and `sessionstore
  import` reads it back (`importers.sessionstore_jsonl` defines the lines, both ways, so
  the writer and the reader cannot drift).
* ``markdown``: a readable transcript: roles as headings, tool calls and results as fenced
  blocks, compactions as quoted summaries, markers as notes.
* ``html``: the viewer's page (`sessionstore.viewer`).

Why a module of its own, beside the store rather than inside the viewer: an export is a way
out of the store for any purpose (backup, moving a session between SQLite and PostgreSQL,
reading it elsewhere), and only one of its formats is a view. jsonl and markdown stream the
transcript, so memory stays flat however long the session; the page needs it whole.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from datetime import timezone
from typing import Any, Final, TextIO

from . import display
from .errors import ConfigurationError
from .events import StoredEvent, content_blocks
from .importers.sessionstore_jsonl import event_line, session_line
from .store import SessionInfo, SessionStore

EXPORT_FORMATS: Final = ("jsonl", "markdown", "html")
_BACKTICKS: Final = re.compile(r"`{3,}")
# Blocks `display.block_text` renders well; other provider-native blocks get `_native_md`.
_DISPLAYED_BLOCKS: Final = frozenset({"thinking", "image", "redacted_thinking"})


def export_session(store: SessionStore, session_id: str, fmt: str, out: TextIO) -> int:
    """Write session `session_id` to `out` as `fmt`; the number of events written.

    Raises `SessionNotFound`, or `ConfigurationError` for a format that is not one of
    `EXPORT_FORMATS` (before anything is read or written).
    """
    if fmt not in EXPORT_FORMATS:
        raise ConfigurationError(f"unknown export format {fmt!r}: expected one of {', '.join(EXPORT_FORMATS)}")
    info = store.session(session_id)
    if fmt == "html":
        from .viewer.page import session_page  # lazy: only this format needs the page (CLI startup)

        events = store.transcript(session_id)
        out.write(session_page(info, events))
        return len(events)
    count = 0

    def counted(events: Iterable[StoredEvent]) -> Iterator[StoredEvent]:
        nonlocal count
        for event in events:
            count += 1
            yield event

    render = jsonl_lines if fmt == "jsonl" else markdown_lines
    for line in render(info, counted(store.events(session_id))):
        out.write(line)
        out.write("\n")
    return count


def jsonl_lines(info: SessionInfo, events: Iterable[StoredEvent]) -> Iterator[str]:
    """The session's header line, then one line per event (see `importers.sessionstore_jsonl`)."""
    yield session_line(info.id, info.metadata, info.parent_id, info.fork_version, info.head, info.created_at)
    for event in events:
        yield event_line(event)


# --------------------------------------------------------------------------- markdown


def markdown_lines(info: SessionInfo, events: Iterable[StoredEvent]) -> Iterator[str]:
    """A readable transcript; import records (custom events outside the context) are counted, not shown."""
    from .viewer.digest import session_digest  # lazy, as above

    events = iter(events)
    first = [e for _, e in zip(range(60), events)]
    digest = session_digest(info.id, info.metadata, info.head, info.parent_id, info.fork_version, first)
    yield f"# {_inline(digest.heading)}"
    yield ""
    facts = [("session", f"`{info.id}`"), ("source", digest.source), ("project", digest.project),
             ("model", digest.model),
             ("started", f"{digest.started_at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
              if digest.started_at else None),
             ("events", f"{info.head:,}"),
             ("forked from", f"`{info.parent_id}` at v{info.fork_version}" if info.parent_id else None)]
    for key, value in facts:
        if value:
            yield f"- **{key}**: {_inline(value) if key not in ('session', 'forked from') else value}"
    calls: dict[str, str] = {}
    hidden = 0
    compactions = 0
    previous_cut = 1
    for event in (*first, *events):
        if event.kind == "custom" and not event.payload.get("in_context"):
            hidden += 1
            continue
        if event.kind == "tool_call":
            calls[event.payload["call_id"]] = event.payload["name"]
        if event.kind == "compaction":
            compactions += 1
            yield from _compaction_md(event, compactions, previous_cut)
            previous_cut = max(previous_cut, event.payload["first_kept_version"])
            continue
        yield from _event_md(event, calls)
    yield ""
    yield "---"
    yield ""
    yield (f"*{hidden:,} import record(s) (custom events outside the model's context) left out; "
           f"`sessionstore export {info.id} --format jsonl` holds everything.*" if hidden
           else "*Every event of the session is above.*")


def _event_md(event: StoredEvent, calls: Mapping[str, str]) -> Iterator[str]:
    p = event.payload
    when = f"{event.created_at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
    yield ""
    if event.kind == "message":
        role = "developer" if event.meta.get("source_role") == "developer" else p["role"]
        model = event.meta.get("model") if p["role"] == "assistant" else None
        yield f"### v{event.version} · {role}{f' ({_inline(model)})' if isinstance(model, str) else ''} · {when}"
        for block in content_blocks(p["content"]):
            yield ""
            if block.get("type") == "text":
                yield str(block.get("text", ""))
            elif block.get("type") in _DISPLAYED_BLOCKS:
                yield from _quoted(display.block_text(block))
            else:
                yield from _quoted(_native_md(block))
    elif event.kind == "tool_call":
        yield f"### v{event.version} · tool call `{_inline(p['name'])}` · {when}"
        yield ""
        yield from _fenced(_json(p["input"]), "json")
    elif event.kind == "tool_result":
        name = calls.get(p["call_id"], "unknown call")
        what = "error from" if p.get("is_error") else "result of"
        yield f"### v{event.version} · {what} `{_inline(name)}` · {when}"
        yield ""
        output = p["output"]
        text = output if isinstance(output, str) else "\n".join(display.block_text(b) for b in output)
        yield from _fenced(text, "")
    elif event.kind in ("system", "scratchpad"):
        yield f"### v{event.version} · {'system prompt' if event.kind == 'system' else 'scratchpad'} · {when}"
        yield ""
        yield from _fenced(str(p["text"]), "")
    elif event.kind in ("prune", "rewrite"):
        yield f"### v{event.version} · {event.kind} · {when}"
        yield ""
        yield f"*{_inline(display.event_summary(event))}*"
    else:  # custom events in the context
        yield f"### v{event.version} · {_inline(str(p.get('type')))} (custom, in context) · {when}"
        yield ""
        data = p.get("data")
        yield from _fenced(data if isinstance(data, str) else _json(data), "")


def _compaction_md(event: StoredEvent, number: int, previous_cut: int) -> Iterator[str]:
    p = event.payload
    first_kept = p["first_kept_version"]
    summarised = f"v{previous_cut}–v{first_kept - 1}" if first_kept > previous_cut else "nothing new"
    how = " · ".join(str(p[k]) for k in ("trigger", "strategy", "summarizer") if p.get(k))
    tokens = f"{p.get('tokens_before') or '?'} → {p.get('tokens_after') or '?'} tokens"
    yield ""
    when = f"{event.created_at.astimezone(timezone.utc):%Y-%m-%d %H:%M:%S} UTC"
    yield f"### v{event.version} · compaction {number} · {when}"
    yield ""
    yield f"> **Compaction {number}**: summarised {summarised}{' and the previous summary' if number > 1 else ''}, " \
          f"kept from v{first_kept} · {tokens} · {_inline(how)}"
    details = p.get("details") or {}
    for label in ("restored", "critical"):
        if details.get(label):
            yield f"> {label}: " + ", ".join(f"v{v}" for v in sorted(details[label]))
    yield ">"
    yield from _quoted(str(p["summary"]))


def _native_md(block: Mapping[str, Any]) -> str:
    """A provider-native block (OpenAI reasoning, web search, …): its summary text; the rest is in jsonl."""
    summary = block.get("summary")
    texts = [str(s["text"]) for s in summary if isinstance(s, Mapping) and s.get("text")] \
        if isinstance(summary, list) else []
    label = f"*{_inline(block.get('type') or 'block')}*"
    return f"{label}: " + "\n".join(texts) if texts else f"{label} (kept verbatim; see the jsonl export)"


def _quoted(text: str) -> Iterator[str]:
    for line in text.splitlines() or [""]:
        yield f"> {line}" if line else ">"


def _fenced(text: str, language: str) -> Iterator[str]:
    """A fenced block that no backtick run inside `text` can close."""
    longest = max((len(m) for m in _BACKTICKS.findall(text)), default=2)
    fence = "`" * (longest + 1)
    yield fence + language
    yield text
    yield fence


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, indent=2)


def _inline(value: Any) -> str:
    """Text for a heading or list item: one line."""
    return " ".join(str(value).split())
