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
  compaction's ``meta["resent"]`` names the events holding that content (`claude_code_resent`), for the
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

from pathlib import Path
from typing import Any, Final

from ..projection.view import RESENT_KEY
from .claude_code_resent import Files, resent, resent_known
from .claude_code_subagents import agent_id_of, agent_meta, is_subagent_path, link_subagents, link_to_parent, role_of
# The format's doors to its subagent files, as `importers` and the format registry call them.
from .claude_code_subagents import first_value as _first_value  # noqa: F401
from .claude_code_subagents import main_file_of, parent_path_of, subagent_files  # noqa: F401
from .reading import SourceFile, SourceObject, read_objects
from .reports import ParsedTranscript
from .rules import EventBuilder, as_int, parse_time, rest_of, text_of, tool_output
from .steps import Turn, as_subagent, call_id_or, object_input, session_metadata, subagent_id, tool_name

FORMAT: Final = "claude-code"
LINE_TYPES: Final = frozenset({"user", "assistant", "system", "summary", "progress", "file-history-snapshot",
                               "queue-operation", "attachment", "permission-mode", "last-prompt"})
_TRIGGERS: Final = {"auto": "auto", "manual": "manual"}
# Line fields that meta carries under their own names; everything else goes to meta["extra"].
_LINE_KEYS: Final = frozenset({"type", "message", "uuid", "parentUuid", "logicalParentUuid", "timestamp",
                               "isSidechain", "isMeta", "requestId"})
_MESSAGE_KEYS: Final = frozenset({"role", "content", "model", "id", "stop_reason", "stop_sequence", "usage"})
_SUMMARY_LOOKAHEAD: Final = 50


def looks_like(obj: dict[str, Any]) -> bool:
    t = obj.get("type")
    if "payload" in obj or not isinstance(t, str):
        return False
    if "sessionId" in obj and t in LINE_TYPES:
        return True
    return (t == "summary" and "leafUuid" in obj) or (t == "file-history-snapshot" and "messageId" in obj) or (
        t in ("user", "assistant") and "uuid" in obj and isinstance(obj.get("message"), dict))


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
    metadata = session_metadata(FORMAT, path)
    if subagent:
        agent_id = line_agent or agent_id_of(path)
        parent_sid = claude_sid or (path.parent.parent.name if path.parent.name == "subagents" else None)
        sid = subagent_id(parent_sid, f"agent-{agent_id}") if parent_sid else f"agent-{agent_id}"
        as_subagent(metadata, parent_sid, agent_id, role_of(agent_id))
        described = agent_meta(path)
        if described:
            metadata["agent_meta"] = described
            for src, dst in (("agentType", "agent_type"), ("description", "description")):
                if src in described:
                    metadata[dst] = described[src]
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
        sent = resent(builder, version, state.restorable.get(version, []))
        if sent:
            meta[RESENT_KEY] = sent
        if not resent_known(builder, version):
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
        link_to_parent(parsed, parent)
    elif discover:
        link_subagents(parsed, state.agent_calls, state.compactions)
    return parsed


def _summary_may_follow(objects: list[SourceObject], boundary: int) -> bool:
    """Whether the summary line of the boundary at `boundary` may still be written: nothing that
    ends `_pair_compactions`' look-ahead follows it yet."""
    rest = objects[boundary + 1:]
    if len(rest) >= _SUMMARY_LOOKAHEAD:
        return False
    return not any(o.obj.get("type") in ("user", "assistant")
                   or (o.obj.get("type") == "system" and o.obj.get("subtype") == "compact_boundary") for o in rest)


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
        self.files = Files()
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
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[tuple[int, Any]] = [(0, {"type": "text", "text": content})] if content else []
        elif isinstance(content, list):
            blocks = list(enumerate(content))
        else:
            blocks = []
            if content is not None:
                self.b.issue(so.line, f"message content is a {type(content).__name__}, not text or blocks")
        turn = Turn(self.b, role, ids, first, key=key, line=so.line, created_at=created, several=len(blocks) > 1)
        typed = 0
        for bi, block in blocks:
            if isinstance(block, str):
                block = {"type": "text", "text": block}
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                self.b.issue(so.line, f"content block {bi} is not a typed block object; left out")
                continue
            btype = block["type"]
            typed += 1
            if btype == "tool_use":
                turn.flush()
                turn.added(self._tool_use(so, block, bi, turn.meta(bi), key, created))
            elif btype == "tool_result":
                turn.flush()
                turn.added(self._tool_result(so, block, bi, turn.meta(bi), key, created, agent))
            else:
                turn.text(bi, block)
        turn.flush()
        if typed == 0:  # no content at all: still a message in the history
            turn.empty()

    def _call_id(self, so: SourceObject, block: dict[str, Any], key: str, bi: int, meta: dict[str, Any]) -> str:
        return call_id_or(self.b, block.get(key), f"{FORMAT}:{so.key}:{bi}", meta, so.line,
                          f"{block.get('type')} block {bi} has no {key}")

    def _tool_use(self, so: SourceObject, block: dict[str, Any], bi: int, meta: dict[str, Any], key: str,
                  created: Any) -> int | None:
        cid = self._call_id(so, block, "id", bi, meta)
        name = tool_name(block.get("name"), meta)
        input_ = object_input(block.get("input", {}), "input", meta)
        extra = self._extra(block, frozenset({"type", "id", "name", "input"}))
        if extra:
            meta["block_extra"] = extra
        version = self.b.tool_call(cid, name, input_, meta, key=key, index=bi, line=so.line, created_at=created)
        if version is not None:
            self.files.called(cid, name, input_, version)
        return version

    def _tool_result(self, so: SourceObject, block: dict[str, Any], bi: int, meta: dict[str, Any], key: str,
                     created: Any, agent: str | None) -> int | None:
        cid = self._call_id(so, block, "tool_use_id", bi, meta)
        content = block.get("content")
        output: str | list[dict[str, Any]] = (
            [b if isinstance(b, dict) else {"type": "text", "text": str(b)} for b in content]
            if isinstance(content, list) else tool_output(content, meta))
        extra = self._extra(block, frozenset({"type", "tool_use_id", "content", "is_error"}))
        if extra:
            meta["block_extra"] = extra
        if agent:
            meta["subagent_session"] = subagent_id(self.sid, f"agent-{agent}")
            self.agent_calls.setdefault(agent, cid)
        version = self.b.tool_result(cid, output, block.get("is_error") is True, meta, key=key, index=bi,
                                     line=so.line, created_at=created)
        if version is not None and block.get("is_error") is not True:
            self.files.answered(cid, version, so.obj.get("toolUseResult"), output)
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
        # Claude Code keeps nothing before its boundary but a preserved segment: never clamped forward.
        version = self.b.compaction(text, self._first_kept(compact), meta,
                                    tokens_before=as_int(compact.get("preTokens")),
                                    tokens_after=as_int(compact.get("postTokens")),
                                    trigger=_TRIGGERS.get(trigger_raw, "auto"), summarizer=FORMAT,
                                    key=self._key(anchor), line=anchor.line,
                                    created_at=parse_time(obj.get("timestamp")), clamp=False)
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


def _agent_of_result(obj: dict[str, Any]) -> str | None:
    result = obj.get("toolUseResult")
    if isinstance(result, dict) and isinstance(result.get("agentId"), str) and result["agentId"]:
        return result["agentId"]
    return None
