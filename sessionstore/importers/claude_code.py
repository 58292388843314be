"""Claude Code transcripts (``~/.claude/projects/<project>/<session>.jsonl``).

Every line is imported in file order (Claude Code's own `parentUuid` chain is kept in
`meta`; a file is one session, not a tree). What each line becomes:

* ``user`` / ``assistant`` lines: the message's content blocks in order. ``tool_use`` blocks
  become `tool_call` events, ``tool_result`` blocks `tool_result` events; every run of other
  blocks (text, image, thinking with its signature, redacted_thinking, server tool blocks, …)
  becomes one `message` event, verbatim. Claude Code writes one content block per line, so
  one streamed API message spans several lines sharing ``message.id``; each line's events
  carry that id, and the provider-reported ``message.usage`` sits on the first event of each
  line (``meta["usage"]``). A line with no content at all is an empty message.
* ``system`` line with ``subtype: compact_boundary`` + the following ``isCompactSummary``
  user line: ONE `compaction` event (summary = that message's text, ``tokens_before`` =
  ``compactMetadata.preTokens``, trigger from ``compactMetadata.trigger``,
  ``first_kept_version`` = its own version: Claude Code keeps nothing before the boundary, except,
  in newer versions, a ``compactMetadata.preservedSegment`` of the last messages, kept from its head).
  An ``isCompactSummary`` line without a boundary (older versions) is a compaction too.
  Claude Code sends the summary with what it re-attaches (the files read last, the plan): the
  compaction's ``meta["resent"]`` names the events holding that content (`_resent`), for the
  token estimate of the call after it (`projection.calibration`).
* ``summary`` lines (titles): session metadata ``title`` / ``summaries`` AND a custom event.
* everything else (``progress``, ``file-history-snapshot``, ``queue-operation``,
  ``attachment``, ``permission-mode``, ``last-prompt``, other ``system`` lines, unknown types):
  ``custom`` events ``claude-code:<type>`` with the line verbatim as data, ``in_context=False``.

Subagents (``<session>/subagents/agent-<id>.jsonl`` with ``agent-<id>.meta.json``; older
``agent-<id>.jsonl`` beside the main file) are sessions ``<parent session>:agent-<id>``,
linked both ways: the subagent's metadata names ``parent_session``, ``agent_id``,
``parent_call_id`` (the Task/Agent call, matched through ``toolUseResult.agentId`` or
``agent_progress`` lines) and, for the compaction summariser's ``agent-acompact-*`` files,
``parent_compaction_version``; the parent's metadata lists its ``subagents`` and the result of
its Task call carries ``meta["subagent_session"]`` (the call does not: the line that names the
agent comes after it, and a stored event never changes).

What a later line still changes waits while the file is being written (`EventBuilder.wait`):
a compaction until the lines that say what Claude Code sent with it (up to the next model
call), or until its summary line; the first lines until one of them is dated. A file imported
while Claude Code writes it ends as one imported once finished.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from ..projection.usage import prompt_tokens
from ..projection.view import RESENT_KEY
from .reading import SourceFile, SourceObject, read_objects
from .reports import ParsedTranscript
from .rules import EventBuilder, as_int, compaction_payload, parse_time, rest_of, text_of

FORMAT: Final = "claude-code"
LINE_TYPES: Final = frozenset({"user", "assistant", "system", "summary", "progress", "file-history-snapshot",
                               "queue-operation", "attachment", "permission-mode", "last-prompt"})
_TRIGGERS: Final = {"auto": "auto", "manual": "manual"}
# Line fields that meta carries under their own names; everything else goes to meta["extra"].
_LINE_KEYS: Final = frozenset({"type", "message", "uuid", "parentUuid", "logicalParentUuid", "timestamp",
                               "isSidechain", "isMeta", "requestId"})
_MESSAGE_KEYS: Final = frozenset({"role", "content", "model", "id", "stop_reason", "stop_sequence", "usage"})
_SUMMARY_LOOKAHEAD: Final = 50
# What Claude Code re-attaches after compacting (`createPostCompactFileAttachments`): the files
# it read or changed last, each whole when it holds at most 5,000 tokens (else a one-line
# reference), within 50,000 tokens, by its rough count (characters / 4); and the plan file.
_RESTORED_FILES: Final = 5
_RESTORED_FILE_TOKENS: Final = 5_000
_RESTORED_BUDGET_TOKENS: Final = 50_000
_CHARS_PER_TOKEN: Final = 4
_FILE_TOOLS: Final = frozenset({"Read", "Write", "Edit", "MultiEdit", "NotebookEdit"})
_MEMORY_FILES: Final = frozenset({"CLAUDE.md", "CLAUDE.local.md"})  # re-sent with every request, not restored
# Attachment lines (newer versions persist them) that carry restored content.
_RESTORED_ATTACHMENTS: Final = frozenset({"file", "plan_file_reference", "invoked_skills"})


def looks_like(obj: dict[str, Any]) -> bool:
    t = obj.get("type")
    if "payload" in obj or not isinstance(t, str):
        return False
    if "sessionId" in obj and t in LINE_TYPES:
        return True
    return (t == "summary" and "leafUuid" in obj) or (t == "file-history-snapshot" and "messageId" in obj) or (
        t in ("user", "assistant") and "uuid" in obj and isinstance(obj.get("message"), dict))


# --------------------------------------------------------------------------- files


def is_subagent_path(path: str | Path) -> bool:
    name = Path(path).name
    return name.startswith("agent-") and name.endswith(".jsonl")


def _agent_id_of(path: str | Path) -> str:
    return Path(path).name[len("agent-"):-len(".jsonl")]


def _first_value(path: Path, key: str) -> Any:
    """`key` of the first line that has it, reading as little of the file as possible."""
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(obj, dict) and obj.get(key) is not None:
                    return obj[key]
    except OSError:
        return None
    return None


def subagent_files(main_path: str | Path, session_id: str) -> list[Path]:
    """The subagent transcripts of a main session file, newer layout first."""
    main = Path(main_path)
    found: list[Path] = []
    nested = main.parent / main.stem / "subagents"
    if nested.is_dir():
        found.extend(sorted(nested.glob("agent-*.jsonl")))
    for candidate in sorted(main.parent.glob("agent-*.jsonl")):
        if _first_value(candidate, "sessionId") == session_id:
            found.append(candidate)
    return found


def parent_path_of(agent_path: str | Path, parent_session: str | None) -> Path | None:
    """Where the main transcript of a subagent file is, if it is there."""
    agent = Path(agent_path)
    if agent.parent.name == "subagents":
        candidate = agent.parent.parent.with_suffix(".jsonl")
    elif parent_session:
        candidate = agent.parent / f"{parent_session}.jsonl"
    else:
        return None
    return candidate if candidate.is_file() else None


def main_file_of(path: Path) -> Path | None:
    """The main transcript a subagent file belongs to (it imports its subagent files), if it is there."""
    if not is_subagent_path(path):
        return None
    parent_sid = _first_value(path, "sessionId")
    return parent_path_of(path, parent_sid if isinstance(parent_sid, str) else None)


def _agent_meta(agent_path: Path) -> dict[str, Any]:
    meta_path = agent_path.with_name(agent_path.name[:-len(".jsonl")] + ".meta.json")
    try:
        value = json.loads(meta_path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def _last_timestamp(path: Path) -> str | None:
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("timestamp"), str):
            return obj["timestamp"]
    return None


# --------------------------------------------------------------------------- parsing


def parse_file(path: str | Path, *, parent: ParsedTranscript | None = None,
               discover: bool = True) -> ParsedTranscript:
    """Parse one Claude Code file. For a subagent file without `parent`, the main file is read for links."""
    source = read_objects(path)
    if is_subagent_path(path) and parent is None:
        parent_sid = _first_str(source.objects, "sessionId")
        parent_file = parent_path_of(path, parent_sid)
        if parent_file is not None:
            parent = parse_file(parent_file, discover=True)
    return parse(source, parent=parent, discover=discover)


def _first_str(objects: list[SourceObject], key: str) -> str | None:
    for so in objects:
        value = so.obj.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def parse(source: SourceFile, *, parent: ParsedTranscript | None = None, discover: bool = True) -> ParsedTranscript:
    path = Path(source.path)
    objects = source.objects
    issues = source.issues
    claude_sid = _first_str(objects, "sessionId")
    # A subagent transcript: agent-<id>.jsonl, or sidechain lines that name their agent.
    first = next((so.obj for so in objects if "sessionId" in so.obj), {})
    line_agent = first.get("agentId") if first.get("isSidechain") and isinstance(first.get("agentId"), str) else None
    subagent = is_subagent_path(path) or line_agent is not None
    metadata: dict[str, Any] = {"source": FORMAT, "source_path": str(path)}
    if subagent:
        agent_id = line_agent or _agent_id_of(path)
        parent_sid = claude_sid or (path.parent.parent.name if path.parent.name == "subagents" else None)
        sid = f"{parent_sid}:agent-{agent_id}" if parent_sid else f"agent-{agent_id}"
        metadata.update(role="compaction" if agent_id.startswith("acompact") else "subagent", agent_id=agent_id,
                        parent_session=parent_sid)
        agent_meta = _agent_meta(path)
        if agent_meta:
            metadata["agent_meta"] = agent_meta
            for src, dst in (("agentType", "agent_type"), ("description", "description")):
                if src in agent_meta:
                    metadata[dst] = agent_meta[src]
    else:
        sid = claude_sid or path.stem
    # Fields every line repeats: kept once in the session metadata, and in a line's meta only where they differ.
    common: dict[str, str] = {}
    for src, dst in (("sessionId", "claude_session_id"), ("cwd", "cwd"), ("gitBranch", "git_branch"),
                     ("version", "claude_code_version"), ("userType", "user_type"), ("slug", "slug"),
                     ("entrypoint", "entrypoint")):
        value = _first_str(objects, src)
        if value:
            metadata[dst] = value
            common[src] = value

    builder = EventBuilder(FORMAT, sid, source.path, issues)
    state = _State(builder, sid, common)
    summary_of = _pair_compactions(objects)
    consumed = set(summary_of.values())
    open_boundary: tuple[int, int] | None = None  # (version, line) of a boundary whose summary may come next
    for i, so in enumerate(objects):
        if i in consumed:
            continue
        obj = so.obj
        kind = obj.get("type")
        if not isinstance(kind, str):
            builder.issue(so.line, "not a Claude Code line: no 'type'")
            continue
        if kind in ("user", "assistant"):
            if obj.get("isCompactSummary"):
                state.compaction(None, so)
            else:
                state.message_line(so, kind)
        elif kind == "system" and obj.get("subtype") == "compact_boundary":
            j = summary_of.get(i)
            if j is None and open_boundary is None and _summary_may_follow(objects, i):
                open_boundary = (builder.next_version, so.line)
            state.compaction(so, objects[j] if j is not None else None)
        elif kind == "summary":
            state.summary_line(so)
        else:
            state.custom_line(so, kind)

    for version, meta, _ in state.compactions:
        resent = _resent(builder, version, state.restorable.get(version, []))
        if resent:
            meta[RESENT_KEY] = resent
        if not _resent_known(builder, version):
            builder.wait(version, meta.get("line", 0), "the compaction waits for what Claude Code sends with it")
    if open_boundary is not None:
        builder.wait(*open_boundary, "the compaction waits for its summary line")
    if builder.events and all(e.created_at is None for e in builder.events):
        builder.wait(1, objects[0].line, "no line is dated yet")
    if state.summaries:
        own = [s for s in state.summaries if isinstance(s.get("leafUuid"), str) and s["leafUuid"] in state.uuids]
        metadata["title"] = (own or state.summaries)[-1]["summary"]
        metadata["summaries"] = state.summaries
    if state.agent_calls:
        metadata["agent_calls"] = state.agent_calls
    parsed = ParsedTranscript(source.path, FORMAT, sid, metadata, builder.finish(), issues, source.lines)
    if subagent:
        _link_to_parent(parsed, parent)
    elif discover:
        _link_subagents(parsed, state)
    return parsed


def _resent(builder: EventBuilder, compaction: int, restorable: list[int]) -> list[int | list[Any]]:
    """What Claude Code sent again with the summary of the compaction at version `compaction`,
    as the versions of the events holding that content:

    - the restored files and plan its attachment lines recorded before the next model call
      (newer versions persist them), each with the share of the line that was sent (`_sent_share`);
    - else the events `restorable` names (what its rule re-attaches, taken from the history),
      unless the session was resumed in between: older versions keep what they re-attach in
      memory only, and a restart, which answers the compaction's command with a synthetic
      "No response requested.", loses it.
    """
    recorded: list[int | list[Any]] = []
    for version, event in enumerate(builder.events[compaction - builder.base_version:], compaction + 1):
        if event.kind == "compaction" or prompt_tokens(event.meta.get("usage")):
            break
        line = event.payload["data"] if event.kind == "custom" else None
        if isinstance(line, dict) and event.payload["type"] == f"{FORMAT}:attachment":
            attachment = line.get("attachment")
            if isinstance(attachment, dict) and attachment.get("type") in _RESTORED_ATTACHMENTS:
                recorded.append(_sent_share(version, line))
        elif event.kind == "message" and event.meta.get("model") == "<synthetic>" and not recorded:
            return []
    return recorded or restorable


def _resent_known(builder: EventBuilder, compaction: int) -> bool:
    """Whether the lines that say what Claude Code sent with the compaction at `compaction` are all
    written (`_resent` reads them up to the next model call, compaction or restart)."""
    for event in builder.events[compaction - builder.base_version:]:
        if event.kind == "compaction" or prompt_tokens(event.meta.get("usage")):
            return True
        if event.kind == "message" and event.meta.get("model") == "<synthetic>":
            return True
    return False


def _summary_may_follow(objects: list[SourceObject], boundary: int) -> bool:
    """Whether the summary line of the boundary at `boundary` may still be written: nothing that
    ends `_pair_compactions`' look-ahead follows it yet."""
    rest = objects[boundary + 1:]
    if len(rest) >= _SUMMARY_LOOKAHEAD:
        return False
    return not any(o.obj.get("type") in ("user", "assistant")
                   or (o.obj.get("type") == "system" and o.obj.get("subtype") == "compact_boundary") for o in rest)


def _sent_share(version: int, line: dict[str, Any]) -> int | list[Any]:
    """A resent entry for an attachment line: its version, and the share of its characters that
    Claude Code sent (the line's ``rendered`` text; the rest is structured copies of it)."""
    rendered = line.get("rendered")  # a text, or a list of {"content": text}
    if not isinstance(rendered, (str, list)) or not rendered:
        return version
    return [version, round(min(1.0, len(json.dumps(rendered)) / len(json.dumps(line))), 4)]


def _pair_compactions(objects: list[SourceObject]) -> dict[int, int]:
    """compact_boundary line index -> index of its isCompactSummary user line."""
    pairs: dict[int, int] = {}
    for i, so in enumerate(objects):
        obj = so.obj
        if obj.get("type") != "system" or obj.get("subtype") != "compact_boundary":
            continue
        for j in range(i + 1, min(i + 1 + _SUMMARY_LOOKAHEAD, len(objects))):
            other = objects[j].obj
            otype = other.get("type")
            if otype == "user" and other.get("isCompactSummary"):
                pairs[i] = j
                break
            if otype in ("user", "assistant") or (otype == "system" and other.get("subtype") == "compact_boundary"):
                break
    return pairs


class _State:
    def __init__(self, builder: EventBuilder, sid: str, common: dict[str, str]) -> None:
        self.b = builder
        self.sid = sid
        self.common = common
        self.summaries: list[dict[str, Any]] = []
        self.uuids: set[str] = set()
        self.first_version: dict[str, int] = {}  # line uuid -> version of the first event made from it
        self.agent_calls: dict[str, str] = {}
        self.compactions: list[tuple[int, dict[str, Any], str | None]] = []  # version, meta, timestamp
        self.files = _Files()
        self.restorable: dict[int, list[int]] = {}  # compaction version -> what Claude Code's rule restores

    # ------------------------------------------------------------------ meta

    def _ids(self, so: SourceObject) -> dict[str, Any]:
        obj = so.obj
        meta: dict[str, Any] = {"line": so.line}
        if so.rank:
            meta["line_rank"] = so.rank
        for src, dst in (("uuid", "uuid"), ("parentUuid", "parent_uuid"), ("logicalParentUuid", "logical_parent_uuid"),
                         ("timestamp", "timestamp")):
            value = obj.get(src)
            if value is not None:
                meta[dst] = value
        if obj.get("isSidechain"):
            meta["is_sidechain"] = True
        if obj.get("isMeta"):
            meta["is_meta"] = True
        uid = obj.get("uuid")
        if isinstance(uid, str):
            self.uuids.add(uid)
            self.first_version.setdefault(uid, self.b.next_version)
        return meta

    @staticmethod
    def _key(so: SourceObject) -> str:
        uid = so.obj.get("uuid")
        return uid if isinstance(uid, str) and uid else so.key

    def _extra(self, obj: dict[str, Any], known: frozenset[str]) -> dict[str, Any]:
        """`rest_of` the line, without the fields every line repeats (`common`)."""
        common = self.common
        return {k: v for k, v in rest_of(obj, known).items() if k not in common or common[k] != v}

    # ------------------------------------------------------------------ lines

    def message_line(self, so: SourceObject, kind: str) -> None:
        obj = so.obj
        message = obj.get("message")
        if not isinstance(message, dict):
            self.b.issue(so.line, f"a {kind} line without a 'message' object")
            return
        role = message.get("role") if message.get("role") in ("user", "assistant") else kind
        created = parse_time(obj.get("timestamp"))
        key = self._key(so)
        ids = self._ids(so)
        if role == "assistant":
            for src, dst in (("model", "model"), ("id", "message_id")):
                if message.get(src) is not None:
                    ids[dst] = message[src]
        first: dict[str, Any] = {}
        if obj.get("requestId") is not None:
            first["request_id"] = obj["requestId"]
        for src, dst in (("stop_reason", "stop_reason"), ("stop_sequence", "stop_sequence"), ("usage", "usage")):
            if message.get(src) is not None:
                first[dst] = message[src]
        message_extra = self._extra(message, _MESSAGE_KEYS)
        if message_extra:
            first["message_extra"] = message_extra
        extra = self._extra(obj, _LINE_KEYS)
        if extra:
            first["extra"] = extra
        agent = _agent_of_result(obj)

        emitted = 0

        def meta(index: int | None) -> dict[str, Any]:
            m = dict(ids)
            if index is not None:
                m["block"] = index
            if emitted == 0:
                m.update(first)
            return m

        content = message.get("content")
        if isinstance(content, str):
            blocks: list[tuple[int, Any]] = [(0, {"type": "text", "text": content})] if content else []
        elif isinstance(content, list):
            blocks = list(enumerate(content))
        else:
            blocks = []
            if content is not None:
                self.b.issue(so.line, f"message content is a {type(content).__name__}, not text or blocks")
        pending: list[dict[str, Any]] = []
        pending_from = 0
        typed = 0

        def flush() -> None:
            nonlocal emitted, pending
            if pending:
                if self.b.message(role, pending, meta(pending_from if len(blocks) > 1 else None), key=key,
                                  index=f"m{pending_from}", line=so.line, created_at=created) is not None:
                    emitted += 1
                pending = []

        for bi, block in blocks:
            if isinstance(block, str):
                block = {"type": "text", "text": block}
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                self.b.issue(so.line, f"content block {bi} is not a typed block object; left out")
                continue
            btype = block["type"]
            typed += 1
            if btype == "tool_use":
                flush()
                if self._tool_use(so, block, bi, meta(bi), key, created, agent) is not None:
                    emitted += 1
            elif btype == "tool_result":
                flush()
                if self._tool_result(so, block, bi, meta(bi), key, created, agent) is not None:
                    emitted += 1
            else:
                if not pending:
                    pending_from = bi
                pending.append(block)
        flush()
        if typed == 0:  # no content at all: still a message in the history
            self.b.message(role, [], meta(None), key=key, index="m", line=so.line, created_at=created)

    def _call_id(self, so: SourceObject, block: dict[str, Any], key: str, bi: int, meta: dict[str, Any]) -> str:
        """The block's call id; a block without one gets a stable made-up id, noted in meta and reported."""
        call_id = block.get(key)
        if isinstance(call_id, str) and call_id:
            return call_id
        made_up = f"{FORMAT}:{so.key}:{bi}"
        meta["synthetic_call_id"] = True
        self.b.issue(so.line, f"{block.get('type')} block {bi} has no {key}; given {made_up!r}")
        return made_up

    def _tool_use(self, so: SourceObject, block: dict[str, Any], bi: int, meta: dict[str, Any], key: str,
                  created: Any, agent: str | None) -> int | None:
        call_id = self._call_id(so, block, "id", bi, meta)
        name = block.get("name")
        if not isinstance(name, str) or not name:
            meta["source_name"] = name
            name = "unknown"
        raw_input = block.get("input", {})
        if isinstance(raw_input, dict):
            input_ = raw_input
        else:
            input_ = {"input": raw_input}
            meta["input_wrapped"] = True
        extra = self._extra(block, frozenset({"type", "id", "name", "input"}))
        if extra:
            meta["block_extra"] = extra
        version = self.b.tool_call(call_id, name, input_, meta, key=key, index=bi, line=so.line, created_at=created)
        if version is not None:
            self.files.called(call_id, name, input_, version)
        return version

    def _tool_result(self, so: SourceObject, block: dict[str, Any], bi: int, meta: dict[str, Any], key: str,
                     created: Any, agent: str | None) -> int | None:
        call_id = self._call_id(so, block, "tool_use_id", bi, meta)
        content = block.get("content")
        if isinstance(content, str):
            output: str | list[dict[str, Any]] = content
        elif isinstance(content, list):
            output = [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
        elif content is None:
            output = ""
        else:
            output = json.dumps(content, ensure_ascii=False)
            meta["output_json_encoded"] = True
        extra = self._extra(block, frozenset({"type", "tool_use_id", "content", "is_error"}))
        if extra:
            meta["block_extra"] = extra
        if agent:
            sub = f"{self.sid}:agent-{agent}"
            meta["subagent_session"] = sub
            self.agent_calls.setdefault(agent, call_id)
        version = self.b.tool_result(call_id, output, block.get("is_error") is True, meta, key=key, index=bi,
                                     line=so.line, created_at=created)
        if version is not None and block.get("is_error") is not True:
            self.files.answered(call_id, version, so.obj.get("toolUseResult"), output)
        return version

    def compaction(self, boundary: SourceObject | None, summary: SourceObject | None) -> None:
        anchor = boundary or summary
        assert anchor is not None
        obj = anchor.obj
        meta = self._ids(anchor)
        compact = obj.get("compactMetadata") if boundary is not None else None
        compact = compact if isinstance(compact, dict) else {}
        if boundary is not None:
            extra = self._extra(boundary.obj, _LINE_KEYS)
            if extra:
                meta["extra"] = extra
        if summary is not None:
            sobj = summary.obj
            message = sobj.get("message") if isinstance(sobj.get("message"), dict) else {}
            text = text_of(message.get("content"))
            meta["summary_line"] = summary.line
            for src, dst in (("uuid", "summary_uuid"), ("parentUuid", "summary_parent_uuid"),
                             ("timestamp", "summary_timestamp")):
                if sobj.get(src) is not None:
                    meta[dst] = sobj[src]
            if isinstance(sobj.get("uuid"), str):
                self.uuids.add(sobj["uuid"])
            summary_extra = self._extra(sobj, _LINE_KEYS)
            if summary_extra:
                meta["summary_extra"] = summary_extra
            if isinstance(message.get("content"), list):
                meta["summary_content"] = message["content"]  # blocks other than text, if any, stay visible
        else:
            text = obj.get("content") if isinstance(obj.get("content"), str) else ""
            meta["summary_missing"] = True
        trigger_raw = compact.get("trigger")
        if not isinstance(trigger_raw, str):
            meta["trigger_recorded"] = False
            trigger_raw = "auto"
        payload = compaction_payload(text, self._first_kept(compact), tokens_before=as_int(compact.get("preTokens")),
                                     tokens_after=as_int(compact.get("postTokens")),
                                     trigger=_TRIGGERS.get(trigger_raw, "auto"), summarizer=FORMAT)
        version = self.b.add("compaction", payload, meta, key=self._key(anchor), line=anchor.line,
                             created_at=parse_time(obj.get("timestamp")))
        if version is not None:
            self.compactions.append((version, self.b.meta_of(version), obj.get("timestamp")))
            self.restorable[version] = self.files.restored()

    def _first_kept(self, compact: dict[str, Any]) -> int:
        """The boundary's own version, unless Claude Code kept the last messages before it (newer
        versions: ``compactMetadata.preservedSegment``, sent after the summary): then the first of those."""
        segment = compact.get("preservedSegment")
        head = segment.get("headUuid") if isinstance(segment, dict) else None
        return self.first_version.get(head, self.b.next_version) if isinstance(head, str) else self.b.next_version

    def summary_line(self, so: SourceObject) -> None:
        obj = so.obj
        if isinstance(obj.get("summary"), str):
            self.summaries.append({"summary": obj["summary"], "leafUuid": obj.get("leafUuid"), "line": so.line})
        self.custom_line(so, "summary")

    def custom_line(self, so: SourceObject, kind: str) -> None:
        obj = so.obj
        if kind == "progress":
            data = obj.get("data")
            if (isinstance(data, dict) and data.get("type") == "agent_progress"
                    and isinstance(data.get("agentId"), str) and isinstance(obj.get("parentToolUseID"), str)):
                self.agent_calls.setdefault(data["agentId"], obj["parentToolUseID"])
        self.b.custom(f"{FORMAT}:{kind}", obj, self._ids(so), key=self._key(so), line=so.line,
                      created_at=parse_time(obj.get("timestamp")))


class _Files:
    """Claude Code's `readFileState` as the transcript shows it: each file its tools read or
    changed, when, and the event holding its latest known content (a whole read's result, a
    write's call; else a partial read's result, a lower bound), to name what it re-attaches
    after compacting (`restored`)."""

    def __init__(self) -> None:
        self.pending: dict[str, tuple[str, dict[str, Any], int]] = {}  # call id -> name, input, version
        self.touched: dict[str, int] = {}  # path -> order of its latest touch (the latest last)
        self.content: dict[str, tuple[int, int, bool]] = {}  # path -> (version, characters, whole)
        self.order = 0

    def called(self, call_id: str, name: str, input_: dict[str, Any], version: int) -> None:
        if name in _FILE_TOOLS:
            self.pending[call_id] = (name, input_, version)

    def answered(self, call_id: str, version: int, result: Any, output: Any) -> None:
        """A successful result of a file tool's call: the file is in Claude Code's state now."""
        found = self.pending.pop(call_id, None)
        if found is None:
            return
        name, input_, call_version = found
        path = input_.get("file_path") or input_.get("notebook_path")
        if not isinstance(path, str) or not path:
            return
        self.order += 1
        self.touched[path] = self.order
        known = self.content.get(path)
        if name == "Write" and isinstance(input_.get("content"), str):
            self.content[path] = (call_version, len(input_["content"]), True)
        elif name == "Read":
            whole = "offset" not in input_ and "limit" not in input_
            if whole or known is None or not known[2]:
                self.content[path] = (version, _read_size(result, output), whole)

    def restored(self) -> list[int]:
        """The versions of the content Claude Code re-attaches after a compaction now: the
        latest of the files it touched last (but plans and memory files), each when not over its
        per-file limit and within the budget; then the plan."""
        budget = _RESTORED_BUDGET_TOKENS
        versions: list[int] = []
        recent = sorted((p for p in self.touched if not _is_plan(p) and Path(p).name not in _MEMORY_FILES),
                        key=lambda p: -self.touched[p])[:_RESTORED_FILES]
        for path in recent:
            known = self.content.get(path)
            tokens = known[1] // _CHARS_PER_TOKEN if known is not None else 0
            if known is None or tokens > _RESTORED_FILE_TOKENS or tokens > budget:
                continue  # too large: a one-line reference to the file, not its content
            budget -= tokens
            versions.append(known[0])
        plans = [p for p in self.touched if _is_plan(p) and p in self.content]
        if plans:
            versions.append(self.content[max(plans, key=lambda p: self.touched[p])][0])
        return sorted(versions)


def _is_plan(path: str) -> bool:
    return "/.claude/plans/" in path.replace("\\", "/") and path.endswith(".md")


def _read_size(result: Any, output: Any) -> int:
    """Characters of the file a Read returned (its ``toolUseResult`` holds the text without line
    numbers), scaled to the whole file when the read was partial: Claude Code re-reads it all."""
    file = result.get("file") if isinstance(result, dict) else None
    if isinstance(file, dict) and isinstance(file.get("content"), str):
        size = len(file["content"])
        lines, total = as_int(file.get("numLines")), as_int(file.get("totalLines"))
        return size * total // lines if lines and total and total > lines else size
    return len(output) if isinstance(output, str) else len(json.dumps(output))


def _agent_of_result(obj: dict[str, Any]) -> str | None:
    result = obj.get("toolUseResult")
    if isinstance(result, dict) and isinstance(result.get("agentId"), str) and result["agentId"]:
        return result["agentId"]
    return None


# --------------------------------------------------------------------------- subagent links


def _link_subagents(parsed: ParsedTranscript, state: _State) -> None:
    """List the subagent files beside a main file in its metadata; tie acompact files to compactions."""
    entries: list[dict[str, Any]] = []
    taken: set[int] = set()
    for sub_path in subagent_files(parsed.path, parsed.session_id):
        agent_id = _first_value(sub_path, "agentId") or _agent_id_of(sub_path)
        sub_sid = f"{parsed.session_id}:agent-{agent_id}"
        entry: dict[str, Any] = {"agent_id": agent_id, "session_id": sub_sid, "path": str(sub_path),
                                 "role": "compaction" if str(agent_id).startswith("acompact") else "subagent"}
        call_id = state.agent_calls.get(agent_id)
        if call_id:
            entry["call_id"] = call_id
        if entry["role"] == "compaction":
            last = parse_time(_last_timestamp(sub_path))
            for n, (version, meta, stamp) in enumerate(state.compactions):
                when = parse_time(stamp)
                if n not in taken and last is not None and when is not None and when >= last:
                    taken.add(n)
                    entry["compaction_version"] = version
                    meta["summarizer_session"] = sub_sid
                    break
        entries.append(entry)
    if entries:
        parsed.metadata["subagents"] = entries


def _link_to_parent(parsed: ParsedTranscript, parent: ParsedTranscript | None) -> None:
    if parent is None:
        return
    meta = parsed.metadata
    agent_id = meta.get("agent_id")
    calls = parent.metadata.get("agent_calls") or {}
    if agent_id in calls:
        meta["parent_call_id"] = calls[agent_id]
    for entry in parent.metadata.get("subagents") or []:
        if entry.get("session_id") == parsed.session_id and "compaction_version" in entry:
            meta["parent_compaction_version"] = entry["compaction_version"]
    meta["parent_session"] = parent.session_id
