"""Gemini CLI sessions (``~/.gemini/tmp/<project hash>/chats/session-<time>-<id>.json`` or ``.jsonl``).

The format (google-gemini/gemini-cli, ``packages/core/src/services/chatRecordingService.ts``
and ``chatRecordingTypes.ts``, Apache-2.0), in two layouts:

* **one JSON document** (older versions): a ``ConversationRecord`` ``{sessionId, projectHash,
  startTime, lastUpdated, messages: [MessageRecord], summary?, directories?, kind?}``,
  rewritten whole at every change;
* **JSONL** (newer versions): a first line with the record's metadata, then one line per
  write: a ``MessageRecord`` (the whole message again each time it changes: its tool calls
  completed, its token counts added), ``{"$set": {…}}`` (metadata; ``messages`` when the
  chat's history was replaced, as after a compression) and ``{"$rewindTo": id}`` (``/rewind``:
  that message and everything after it left the conversation).

A ``MessageRecord`` is ``{id, timestamp, type: user|gemini|info|error|warning, content}``
(``content`` a string or a list of Gemini parts); a ``gemini`` one adds ``toolCalls``
(``{id, name, args, result: [parts with a functionResponse], status, …}``), ``thoughts``
(``{subject, description, timestamp}``), ``tokens`` (``{input, output, cached, thoughts, tool,
total}``) and ``model``. What each becomes:

* ``user`` → a user message; ``gemini`` → an assistant message (its text; thoughts in
  ``meta["thoughts"]``, tokens in ``meta["usage"]``, the model in ``meta["model"]``), then a
  `tool_call` per tool call, then a `tool_result` per call that has its result (output: the
  ``functionResponse.response.output``, else the response as JSON; ``is_error`` when the call's
  status is ``error`` or the response holds an ``error``);
* a ``user`` message made only of ``functionResponse`` parts (newer versions record the tool
  results sent back as a turn of their own, beside each call's ``result``) → a custom event
  ``gemini-cli:tool-response``, not in context (each result is already its call's
  `tool_result`; one the call lacks becomes its `tool_result` here);
* ``info``, ``error``, ``warning`` (what the CLI showed, not the model) → custom events
  ``gemini-cli:<type>``, not in context;
* a message written again → nothing new: each message is imported once, at its first
  position, from its last version in the file (a call's result arrives with a later write);
* ``$set`` with ``messages`` that leaves out messages the chat had (its compression: the
  new history starts with the ``<state_snapshot>`` summary as a user message and the model's
  acknowledgement, then the kept messages) → a `compaction` event: summary = that text,
  ``first_kept_version`` = the first kept message's first event (trigger ``auto``: the file
  does not say; the acknowledgement is kept in meta); new messages after the summary are
  imported as usual. Older versions did not record a compression in the file at all
  (gemini-cli issues #20803, #21335): nothing to import then;
* an ``info`` message saying the CLI compressed the context ("Context compressed from 68% to
  3%.", "Chat history compressed from 120000 to 9000 tokens.") where no ``$set`` replaced the
  history since the last turn (Gemini CLI 2026 records a compression only so) → a `compaction`
  event at that point: the percentages in ``details`` (``context_percent_before`` /
  ``_after``, of the model's window; the token figures as ``tokens_before`` / ``tokens_after``
  when the notice gives tokens, else ``tokens_before`` is the last reply's prompt). The file
  keeps neither the summary the model got nor where the history it kept begins, so the
  compaction's summary says so (``meta["summary_recorded"]`` is False) and keeps nothing before
  it: the view holds that note, then what followed; the events before stay in the transcript,
  where ``recall`` reads them;
* ``$rewindTo`` → a retraction (a ``drop`` prune, rule ``retract``) of the events of the
  messages it removed: the view leaves them out, the transcript keeps them;
* other ``$set`` lines and the metadata line → session metadata (``project_hash``,
  ``summary`` as the title, ``directories``, ``kind``).

Sub-agents (``chats/<parent session id>/<agent id>.json`` or ``.jsonl``, ``kind: "subagent"``)
are sessions ``<parent session>:<agent id>``, linked both ways as Claude Code's are: the
sub-agent's metadata names ``role`` ``subagent``, ``agent_id``, ``parent_session`` and
``parent_call_id`` (the parent's tool call whose record names the agent: ``toolCalls[].agentId``);
the parent's lists its ``subagents`` and that call carries ``meta["subagent_session"]``.
Importing the parent imports its sub-agents' files with it.

Gemini CLI rewrites the conversation's last message while it works (its tool calls' results
and statuses, its tokens: `recordToolCalls`, `recordMessageTokens` touch only the last
message). Events are immutable, so a ``gemini`` message that is still the last one, not yet
holding its ``tokens`` or with a tool call neither answered nor ended (``success``, ``error``,
``cancelled``), is left for a later import, with what follows it (an `InFlight` warning names
it): what is stored never changes, and importing a growing file ends as importing it once
does. A message is done once another message is written after it (or a ``$rewindTo`` removes it).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final

from .. import events as ev
from ..repository.base import RETRACT_RULE
from .reading import Document, SourceObject, read_document, read_objects
from .reports import InFlight, ParsedTranscript
from .rules import (EventBuilder, as_int, as_list, image_block, keep_rest, parse_time, source_meta, text_blocks,
                    text_of, tool_output)
from .steps import as_subagent, call_id_or, object_input, pick, session_metadata, subagent_entry, subagent_id, tool_name

FORMAT: Final = "gemini-cli"
MESSAGE_TYPES: Final = frozenset({"user", "gemini", "info", "error", "warning"})
SNAPSHOT_MARK: Final = "<state_snapshot>"
# What the CLI shows (and records as an ``info`` message) when it compressed the context.
COMPRESSED_PERCENT: Final = re.compile(r"Context compressed from (\d+)% to (\d+)%")
COMPRESSED_TOKENS: Final = re.compile(r"Chat history compressed from (\d+) to (\d+) tokens")
NO_SUMMARY: Final = ("Gemini CLI compressed the conversation here ({figures}). Its summary was not recorded in "
                     "the session file: what came before is in the transcript, not in this view.")
_SESSION_ID: Final = re.compile(rb'"sessionId"\s*:\s*"([^"\\]+)"')


# --------------------------------------------------------------------------- sub-agent files


def is_subagent_path(path: str | Path) -> bool:
    """``chats/<parent session id>/<agent id>.json(l)``: a sub-agent's chat."""
    p = Path(path)
    return p.suffix in (".json", ".jsonl") and p.parent.parent.name == "chats" and not p.name.startswith(
        "session-")


def subagent_files(main_path: str | Path, session_id: str) -> list[Path]:
    """The sub-agent chats of a main session file: the files in ``chats/<its session id>/``."""
    folder = Path(main_path).parent / session_id
    try:
        return sorted(f for f in folder.iterdir() if f.suffix in (".json", ".jsonl") and f.is_file()) if (
            session_id and folder.is_dir()) else []
    except OSError:  # an id no folder can be named by (300 characters): no sub-agents there
        return []


def _session_id_of(path: Path) -> str | None:
    """The first ``sessionId`` in the file (its metadata's, in either layout), reading only its head."""
    try:
        with open(path, "rb") as fh:
            found = _SESSION_ID.search(fh.read(8192))
    except OSError:
        return None
    return found.group(1).decode("utf-8", "replace") if found else None


def main_file_of(path: Path) -> Path | None:
    """The main chat a sub-agent chat belongs to (``chats/session-*-<first 8 of its id>.json(l)``)."""
    if not is_subagent_path(path):
        return None
    parent_sid = path.parent.name
    for candidate in sorted(path.parent.parent.glob(f"session-*-{parent_sid[:8]}.json*")):
        if candidate.suffix in (".json", ".jsonl") and _session_id_of(candidate) == parent_sid:
            return candidate
    return None


def _agent_calls(path: Path) -> dict[str, str]:
    """agent id -> the id of the tool call that ran it, from a main chat's tool call records."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return {}
    records: list[Any] = []
    try:
        root = json.loads(text)
        records = root.get("messages", []) if isinstance(root, dict) else []
    except ValueError:
        for raw in text.splitlines():
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if isinstance(obj, dict):
                records.extend(obj["$set"].get("messages") or [] if isinstance(obj.get("$set"), dict) else [obj])
    found: dict[str, str] = {}
    for record in records:
        for call in as_list(record.get("toolCalls")) if isinstance(record, dict) else []:
            if isinstance(call, dict) and isinstance(call.get("agentId"), str) and isinstance(call.get("id"), str):
                found.setdefault(call["agentId"], call["id"])
    return found


def _link(path: str, parsed: ParsedTranscript, parent_sid: str | None, calls: dict[str, str]) -> None:
    """A sub-agent's links to its parent, or a main chat's list of its sub-agents."""
    meta = parsed.metadata
    if parent_sid is not None:
        agent_id = Path(path).stem
        as_subagent(meta, parent_sid, agent_id)
        main = main_file_of(Path(path))
        call_id = _agent_calls(main).get(agent_id) if main is not None else None
        if call_id:
            meta["parent_call_id"] = call_id
        return
    entries = []
    for sub in subagent_files(path, parsed.session_id):
        entries.append(subagent_entry(sub.stem, subagent_id(parsed.session_id, sub.stem), sub, "subagent",
                                      calls.get(sub.stem)))
    if entries:
        meta["subagents"] = entries


def looks_like(obj: Any) -> bool:
    """One line of the JSONL layout."""
    if not isinstance(obj, dict):
        return False
    if "$rewindTo" in obj or isinstance(obj.get("$set"), dict):
        return True
    if isinstance(obj.get("sessionId"), str) and isinstance(obj.get("projectHash"), str):
        return True
    return (_is_message(obj) and "content" in obj and "timestamp" in obj and "uuid" not in obj
            and "sessionId" not in obj)


def _is_message(obj: dict[str, Any]) -> bool:
    """A message record: a string id and one of the message types (a type of another JSON type is none)."""
    mtype = obj.get("type")
    return isinstance(obj.get("id"), str) and isinstance(mtype, str) and mtype in MESSAGE_TYPES


def looks_like_document(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("sessionId"), str)
            and isinstance(value.get("projectHash"), str) and isinstance(value.get("messages"), list))


def parse_file(path: Path) -> ParsedTranscript:
    """Either layout: JSONL when the first line is a JSON value of its own (unless that value is
    the whole ConversationRecord, written on one line), else one JSON document."""
    parent_sid = Path(path).parent.name if is_subagent_path(path) else None
    source = read_objects(path)
    jsonl = bool(source.objects) and source.objects[0].line == _first_line(path)
    parsed: ParsedTranscript | None = None
    if not jsonl or (len(source.objects) == 1 and looks_like_document(source.objects[0].obj)):
        document = read_document(path)
        if document.root is None or looks_like_document(document.root):
            parsed, calls = _parse_document(document, parent_sid)
    if parsed is None:
        parsed, calls = _parse_records(str(path), source.objects, source.issues, source.lines, parent_sid)
    _link(str(path), parsed, parent_sid, calls)
    return parsed


def _first_line(path: Path) -> int:
    """The number of the file's first non-blank line."""
    with open(path, "rb") as fh:
        for number, raw in enumerate(fh, 1):
            if raw.strip():
                return number
    return 0


def _metadata(path: str, record: dict[str, Any]) -> dict[str, Any]:
    meta = session_metadata(FORMAT, path)
    meta.update(pick(record, {"projectHash": "project_hash", "startTime": "started_at", "lastUpdated": "last_updated",
                              "summary": "title", "directories": "directories", "kind": "kind"}))
    return meta


def _session_id(path: str, own: Any, parent_sid: str | None) -> str:
    """The file's ``sessionId``; a sub-agent's is ``<parent>:<agent id>`` (its own id is a few random
    characters, unique only under its parent, and its file is named by it)."""
    if parent_sid is not None:
        return f"{parent_sid}:{Path(path).stem}"
    return own if isinstance(own, str) and own else Path(path).stem


def _parse_document(document: Document, parent_sid: str | None) -> tuple[ParsedTranscript, dict[str, str]]:
    root = document.root if isinstance(document.root, dict) else {}
    sid = _session_id(document.path, root.get("sessionId"), parent_sid)
    state = _State(EventBuilder(FORMAT, sid, document.path, document.issues))
    items = document.objects("messages")
    for so in items:
        if so is items[-1] and _in_flight(so.obj):
            document.issues.append(_waiting(document.path, so))
            break
        state.message(so, so.obj)
    return ParsedTranscript(document.path, FORMAT, sid, _metadata(document.path, root), state.b.finish(),
                            document.issues, document.lines), state.agent_calls


def _parse_records(path: str, objects: list[SourceObject], issues: list[Any], lines: int,
                   parent_sid: str | None) -> tuple[ParsedTranscript, dict[str, str]]:
    head = next((so.obj for so in objects if isinstance(so.obj.get("sessionId"), str)), {})
    sid = _session_id(path, head.get("sessionId"), parent_sid)
    metadata = _metadata(path, head)
    # Each message from its last version in the file, imported where it first appears.
    latest: dict[str, SourceObject] = {}
    for so in objects:
        if _is_message(so.obj):
            latest[so.obj["id"]] = so
    # The last message written, when nothing after it (another message, a /rewind) ends it and it is
    # still in flight: it, and every line from its first, wait for a later import.
    last = next((so for so in reversed(objects) if _is_message(so.obj) or "$rewindTo" in so.obj), None)
    held = last.obj["id"] if last is not None and "$rewindTo" not in last.obj and _in_flight(last.obj) else None
    state = _State(EventBuilder(FORMAT, sid, path, issues))
    for so in objects:
        obj = so.obj
        if held is not None and _is_message(obj) and obj["id"] == held:
            issues.append(_waiting(path, latest[held]))
            break
        if "$rewindTo" in obj:
            state.rewind(so, obj["$rewindTo"])
        elif "$set" in obj:
            updates = obj["$set"]
            if not isinstance(updates, dict):
                state.b.issue(so.line, "a $set line whose value is not an object")
                continue
            metadata.update(_metadata(path, updates) | session_metadata(FORMAT, path))
            if isinstance(updates.get("messages"), list):
                state.history(so, updates["messages"])
        elif _is_message(obj):
            if obj["id"] not in state.seen:
                state.message(so, latest[obj["id"]].obj)
        elif isinstance(obj.get("sessionId"), str):
            continue  # the metadata line (read above)
        else:
            state.b.issue(so.line, "not a Gemini CLI record: no message id and type, $set or $rewindTo")
    return ParsedTranscript(path, FORMAT, sid, metadata, state.b.finish(), issues, lines), state.agent_calls


def _in_flight(record: dict[str, Any]) -> bool:
    """A reply Gemini CLI may still rewrite, were it the last message: no tokens yet, a tool call
    neither answered nor ended, or nothing said yet (0.61 writes a reply's tokens before its tool
    calls: an empty reply with tokens is rewritten with them a line later)."""
    if record.get("type") != "gemini":
        return False
    calls = [c for c in as_list(record.get("toolCalls")) if isinstance(c, dict)]
    said = bool(calls) or bool(record.get("content")) or bool(record.get("thoughts"))
    return not isinstance(record.get("tokens"), dict) or not said or any(
        c.get("result") is None and c.get("status") not in ("success", "error", "cancelled") for c in calls)


def _waiting(path: str, so: SourceObject) -> InFlight:
    return InFlight(path, so.line, f"message {so.obj.get('id')} not imported yet: Gemini CLI is still writing it "
                                   "(waiting for its tokens or tool results)")


class _State:
    def __init__(self, builder: EventBuilder) -> None:
        self.b = builder
        self.seen: dict[str, list[int]] = {}  # message id -> versions of its events, in order
        self.order: list[str] = []  # the conversation's message ids, as the agent has it now
        self.agent_calls: dict[str, str] = {}  # sub-agent id -> the call that ran it
        self.replaced = False  # a $set replaced the history since the last turn (its compression is recorded)
        self.called: set[str] = set()  # call ids imported
        self.answered: set[str] = set()  # call ids whose result is imported

    def message(self, so: SourceObject, record: dict[str, Any]) -> None:
        mid = record.get("id") if isinstance(record.get("id"), str) else so.key
        mtype = record.get("type")
        created = parse_time(record.get("timestamp"))
        meta = source_meta(so, message_id=mid, timestamp=record.get("timestamp"))
        b = self.b
        versions: list[int] = []

        def keep(version: int | None) -> None:
            if version is not None:
                versions.append(version)

        compressed = _compression(record.get("content")) if mtype == "info" and not self.replaced else None
        if mtype in ("user", "gemini"):
            self.replaced = False
        if compressed is not None:
            keep(self.compressed(so, record, mid, meta, created, compressed))
        elif mtype == "user" and (responses := _function_responses(record.get("content"))):
            self.tool_responses(so, record, mid, meta, created, responses, keep)
        elif mtype == "user":
            keep_rest(meta, "extra", record, {"id", "timestamp", "type", "content"})
            keep(b.message("user", _content(record.get("content"), meta), meta, key=mid, line=so.line,
                           created_at=created))
        elif mtype == "gemini":
            self._gemini(so, record, mid, meta, created, keep)
        else:
            keep(b.custom(f"{FORMAT}:{mtype if isinstance(mtype, str) else 'record'}", record, meta, key=mid,
                          line=so.line, created_at=created))
        self.seen[mid] = versions
        self.order.append(mid)

    def tool_responses(self, so: SourceObject, record: dict[str, Any], mid: str, meta: dict[str, Any],
                       created: Any, responses: list[dict[str, Any]], keep: Any) -> None:
        """A user turn that only returns tool results (newer versions record it beside the calls' own
        ``result``): a result not imported yet is the call's `tool_result`; the turn itself a custom
        record out of context, so that no result is in the view twice."""
        for i, response in enumerate(responses):
            call_id = response.get("id")
            if isinstance(call_id, str) and call_id in self.called and call_id not in self.answered:
                m = dict(meta)
                output, is_error = _result({"result": [{"functionResponse": response}]}, m)
                keep(self.b.tool_result(call_id, output, is_error, m, key=mid, index=f"result{i}", line=so.line,
                                        created_at=created))
                self.answered.add(call_id)
        keep(self.b.custom(f"{FORMAT}:tool-response", record, meta, key=mid, line=so.line, created_at=created))

    def compressed(self, so: SourceObject, record: dict[str, Any], mid: str, meta: dict[str, Any], created: Any,
                   figures: tuple[str, int, int]) -> int | None:
        """The CLI's notice of a compression as the agent's compaction, keeping nothing before it (the file
        says neither the summary nor where the kept history begins)."""
        unit, before, after = figures
        details: dict[str, Any] = {}
        if unit == "%":
            details.update(context_percent_before=before, context_percent_after=after)
            tokens_before, tokens_after = self._last_prompt(), None
            said = f"the context went from {before}% to {after}% of the model's window"
        else:
            tokens_before, tokens_after = before, after
            said = f"from {before:,} to {after:,} tokens"
        meta.update(notice=text_of(record.get("content"), ""), summary_recorded=False, trigger_recorded=False)
        return self.b.compaction(NO_SUMMARY.format(figures=said), self.b.next_version, meta,
                                 tokens_before=tokens_before, tokens_after=tokens_after, trigger="auto",
                                 summarizer=FORMAT, details=details, key=mid, line=so.line, created_at=created)

    def _gemini(self, so: SourceObject, record: dict[str, Any], mid: str, meta: dict[str, Any], created: Any,
                keep: Any) -> None:
        b = self.b
        first = dict(meta)
        if isinstance(record.get("model"), str):
            meta["model"] = first["model"] = record["model"]
        if isinstance(record.get("tokens"), dict):
            first["usage"] = record["tokens"]
        if isinstance(record.get("thoughts"), list) and record["thoughts"]:
            first["thoughts"] = record["thoughts"]
        keep_rest(first, "extra", record, {"id", "timestamp", "type", "content", "toolCalls", "thoughts", "tokens",
                                           "model"})
        calls = [c for c in as_list(record.get("toolCalls")) if isinstance(c, dict)]
        blocks = _content(record.get("content"), first)
        if blocks or not calls:
            keep(b.message("assistant", blocks, first, key=mid, line=so.line, created_at=created))
            first = dict(meta)
        answered: list[tuple[int, dict[str, Any], str]] = []
        for i, call in enumerate(calls):
            m = first if i == 0 else dict(meta)
            call_id = call_id_or(b, call.get("id"), f"{FORMAT}:{mid}:{i}", m, so.line,
                                 f"tool call {i} of message {mid} has no id")
            name = tool_name(call.get("name"))
            args = object_input(call.get("args"), "args")
            keep_rest(m, "call", call, ("id", "name", "args", "result", "resultDisplay"))
            if isinstance(call.get("agentId"), str) and call["agentId"]:
                m["subagent_session"] = subagent_id(b.session_id, call["agentId"])
                self.agent_calls.setdefault(call["agentId"], call_id)
            keep(b.tool_call(call_id, name, args, m, key=mid, index=f"call{i}", line=so.line,
                             created_at=parse_time(call.get("timestamp")) or created))
            self.called.add(call_id)
            if call.get("result") is not None or call.get("status") in ("error", "cancelled"):
                answered.append((i, call, call_id))
                self.answered.add(call_id)
        for i, call, call_id in answered:
            m = dict(meta)
            output, is_error = _result(call, m)
            keep(b.tool_result(call_id, output, is_error, m, key=mid, index=f"result{i}", line=so.line,
                               created_at=parse_time(call.get("timestamp")) or created))

    def history(self, so: SourceObject, messages: list[Any]) -> None:
        """A replaced history: a compaction when it leaves out messages the chat had."""
        ids = [m["id"] for m in messages if isinstance(m, dict) and isinstance(m.get("id"), str)]
        dropped = [mid for mid in self.order if mid not in ids]
        kept = [mid for mid in ids if mid in self.seen]
        if not dropped:
            for m in messages:  # a history rewritten in place (tool outputs masked): new turns only
                if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"] not in self.seen:
                    self.message(so, m)
            return
        head = []
        for m in messages:
            if not isinstance(m, dict) or (isinstance(m.get("id"), str) and m["id"] in self.seen):
                break
            head.append(m)
        summary_at = next((i for i, m in enumerate(head) if m.get("type") == "user"), None)
        summary = text_of(head[summary_at].get("content"), "") if summary_at is not None else ""
        meta = source_meta(so, dropped=len(dropped))
        meta["summary_messages"] = head
        if SNAPSHOT_MARK not in summary:
            meta["state_snapshot"] = False
        first_kept = min((self.seen[mid][0] for mid in kept if self.seen.get(mid)), default=self.b.next_version)
        meta["trigger_recorded"] = False
        self.b.compaction(summary, first_kept, meta, tokens_before=self._last_prompt(), trigger="auto",
                          summarizer=FORMAT, key=f"compression:{so.key}", line=so.line,
                          created_at=parse_time(head[0].get("timestamp")) if head else None)
        self.replaced = True
        self.order = ids
        for m in messages[len(head):]:
            if isinstance(m, dict) and isinstance(m.get("id"), str) and m["id"] not in self.seen:
                self.message(so, m)

    def rewind(self, so: SourceObject, target: Any) -> None:
        if target not in self.order:
            self.b.issue(so.line, f"$rewindTo names message {target!r}, which the conversation does not hold")
            return
        removed = self.order[self.order.index(target):]
        self.order = self.order[:self.order.index(target)]
        versions = [v for mid in removed for v in self.seen.get(mid, [])]
        if versions:
            marker = ev.prune(versions, mode="drop", rule=RETRACT_RULE)
            self.b.add("prune", dict(marker.payload), source_meta(so, reason="gemini-cli /rewind",
                                                                  rewind_to=target),
                       key=f"rewind:{so.key}", line=so.line)

    def _last_prompt(self) -> int | None:
        for event in reversed(self.b.events):
            usage = event.meta.get("usage") if isinstance(event.meta, dict) else None
            if isinstance(usage, dict) and as_int(usage.get("input")) is not None:
                return usage["input"]
        return None


def _function_responses(content: Any) -> list[dict[str, Any]]:
    """The function responses of a turn made of nothing else (a tool-response turn), else []."""
    parts = content if isinstance(content, list) else []
    found = [p["functionResponse"] for p in parts if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]
    return found if found and len(found) == len(parts) else []


def _compression(content: Any) -> tuple[str, int, int] | None:
    """("%" or "tokens", before, after) when an info message is the CLI's notice of a compression."""
    text = text_of(content, "")
    if (found := COMPRESSED_PERCENT.search(text)) is not None:
        return "%", int(found.group(1)), int(found.group(2))
    if (found := COMPRESSED_TOKENS.search(text)) is not None:
        return "tokens", int(found.group(1)), int(found.group(2))
    return None


def _content(content: Any, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """Gemini parts as content blocks: text, inline images; other parts verbatim."""
    if isinstance(content, str):
        return text_blocks(content)
    parts = content if isinstance(content, list) else [content] if isinstance(content, dict) else []
    blocks: list[dict[str, Any]] = []
    for part in parts:
        if isinstance(part, str):
            blocks.extend(text_blocks(part))
        elif isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought"):
            blocks.extend(text_blocks(part["text"]))
        elif isinstance(part, dict) and isinstance(part.get("inlineData"), dict):
            data = part["inlineData"]
            blocks.append(image_block(data.get("mimeType"), data.get("data")))
        elif isinstance(part, dict):
            blocks.append({"type": "gemini_part", **part})
    if content is not None and not isinstance(content, (str, list, dict)):
        meta["content_unreadable"] = repr(content)[:200]
    return blocks


def _result(call: dict[str, Any], meta: dict[str, Any]) -> tuple[str, bool]:
    """A tool call's result: the function response's output (else the response as JSON)."""
    result = call.get("result")
    parts = result if isinstance(result, list) else [result] if isinstance(result, dict) else []
    texts: list[str] = []
    error = call.get("status") in ("error", "cancelled")
    for part in parts:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict) and "output" in body and len(body) == 1:
                texts.append(tool_output(body["output"], meta))
            elif isinstance(body, dict) and "error" in body:
                error = True
                texts.append(tool_output(body["error"], meta))
            else:
                texts.append(tool_output(body, meta))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif part is not None:
            texts.append(tool_output(part, meta))
    if isinstance(result, str):
        texts.append(result)
    if not texts and isinstance(call.get("resultDisplay"), str):
        texts.append(call["resultDisplay"])
        meta["output_from_display"] = True
    if call.get("status") is not None:
        meta["status"] = call["status"]
    return "\n".join(texts), error
