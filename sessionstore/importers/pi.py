"""Pi coding agent sessions (``~/.pi/agent/sessions/…/<timestamp>_<id>.jsonl``), versions 1 to 3.

The formats (pi-mono, ``packages/coding-agent/src/core/session-manager.ts``):

* v1: a ``session`` header, then entries without ids, in order; a compaction names its first
  kept entry by ``firstKeptEntryIndex``, an index into the file's entries *header included*
  (Pi's own v1→v2 migration resolves it as ``entries[firstKeptEntryIndex]``).
* v2: every entry has ``id`` / ``parentId``: the file is a tree whose current leaf is the last
  entry; compactions use ``firstKeptEntryId``.
* v3: as v2, with the message role ``hookMessage`` renamed ``custom``.

The session is the path from the root to the leaf (the last entry). Every other leaf is an
abandoned branch: it becomes a session of its own, forked (``store.fork``) from the session
that holds its branch point at the version of the branch point's last event, holding only
the branch's own entries (``<session>:branch:<first entry id>``).

What each entry becomes:

* ``message`` by role: ``user`` → user message; ``assistant`` → assistant message (text,
  thinking with ``thinkingSignature`` as its ``signature``, images) followed by one
  `tool_call` per ``toolCall`` block, in block order, ``usage`` in ``meta``; ``toolResult`` →
  `tool_result`; ``bashExecution`` (a ``!command`` the user ran) → the user message Pi shows
  the model (``Ran `cmd` `` + output), or a custom event when ``excludeFromContext``;
  ``custom``/``hookMessage``, ``branchSummary``, ``compactionSummary`` → the user message Pi
  renders for them.
* ``compaction`` → a `compaction` event, ``first_kept_version`` = the version of the first
  event made from the first kept entry (trigger ``auto``: Pi does not record it).
* ``custom_message`` and ``branch_summary`` entries (in Pi's model context) → user messages
  with Pi's rendering; ``thinking_level_change``, ``model_change``, ``custom``, ``label``,
  ``session_info``, the header itself and unknown types → custom events ``pi:<type>`` with
  the entry verbatim, ``in_context=False``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from ..errors import TranscriptError
from .reading import SourceFile, SourceObject
from .reports import ParsedSession, ParsedTranscript
from .rules import EventBuilder, as_int, blocks_of, image_block, keep_rest, parse_arguments, parse_time
from .steps import Turn, call_id_or, pick, session_metadata, tool_name

FORMAT: Final = "pi"
ENTRY_TYPES: Final = frozenset({"message", "thinking_level_change", "model_change", "compaction", "branch_summary",
                                "custom", "custom_message", "label", "session_info"})
ROLES: Final = frozenset({"user", "assistant", "toolResult", "bashExecution", "custom", "hookMessage",
                          "branchSummary", "compactionSummary"})
COMPACTION_SUMMARY_PREFIX: Final = ("The conversation history before this point was compacted into the following "
                                    "summary:\n\n<summary>\n")
COMPACTION_SUMMARY_SUFFIX: Final = "\n</summary>"
BRANCH_SUMMARY_PREFIX: Final = ("The following is a summary of a branch that this conversation came back from:"
                                "\n\n<summary>\n")
BRANCH_SUMMARY_SUFFIX: Final = "</summary>"
_ENTRY_KEYS: Final = frozenset({"type", "id", "parentId", "timestamp", "message"})


def looks_like(obj: dict[str, Any]) -> bool:
    if "payload" in obj or "sessionId" in obj or "uuid" in obj:
        return False
    t = obj.get("type")
    if t == "session":
        return isinstance(obj.get("id"), str)
    if t == "message":
        message = obj.get("message")
        return isinstance(message, dict) and isinstance(message.get("role"), str) and message["role"] in ROLES
    if t == "compaction":
        return "firstKeptEntryIndex" in obj or "firstKeptEntryId" in obj
    return t in ("thinking_level_change", "model_change", "branch_summary", "custom_message", "session_info")


def bash_execution_text(message: dict[str, Any]) -> str:
    """What Pi sends the model for a user-run shell command (``bashExecutionToText``)."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message['fullOutputPath']}]"
    return text


# --------------------------------------------------------------------------- parsing


def parse(source: SourceFile) -> ParsedTranscript:
    path = source.path
    objects = source.objects
    issues = source.issues
    header_at = next((i for i, so in enumerate(objects) if so.obj.get("type") == "session"), None)
    header = objects[header_at].obj if header_at is not None else {}
    if header_at is None and objects:
        issues.append(TranscriptError(path, objects[0].line,
                                      "no 'session' header line: the file name is used as the session id"))
    elif header_at is not None and header_at != 0:
        issues.append(TranscriptError(path, objects[header_at].line, "the 'session' header is not the first entry"))
    sid = header.get("id") if isinstance(header.get("id"), str) and header.get("id") else Path(path).stem
    version = as_int(header.get("version")) or 1
    metadata = {**session_metadata(FORMAT, path), "pi_session_version": version}
    metadata.update(pick(header, {"cwd": "cwd", "provider": "provider", "modelId": "model",
                                  "thinkingLevel": "thinking_level", "branchedFrom": "branched_from",
                                  "parentSession": "parent_session_path", "timestamp": "started_at"}))

    entries = [(i, so) for i, so in enumerate(objects) if i != header_at]
    tree = version >= 2 or any("parentId" in so.obj for _, so in entries)
    ctx = _Context(source, tree)
    main = EventBuilder(FORMAT, sid, path, issues)
    if header_at is not None:
        so = objects[header_at]
        header_meta: dict[str, Any] = {"line": so.line}
        if header.get("timestamp") is not None:
            header_meta["timestamp"] = header["timestamp"]
        main.custom("pi:session", so.obj, header_meta, key="header", line=so.line,
                    created_at=parse_time(header.get("timestamp")))

    branches: list[ParsedSession] = []
    if not tree:
        for _, so in entries:
            ctx.emit(main, so, so.key)
    else:
        nodes = ctx.build_tree(entries)
        if nodes.order:
            leaf = nodes.order[-1]
            main_path = nodes.path_to(leaf)
            for node_id in main_path:
                ctx.emit(main, nodes.entry[node_id], node_id)
                ctx.owner[node_id] = (sid, main.head)
            branches = _branches(ctx, nodes, sid, leaf, metadata)
    for entry in ctx.session_infos:
        metadata["name"] = entry
    return ParsedTranscript(path, FORMAT, sid, metadata, main.finish(), issues, source.lines, branches)


class _Nodes:
    def __init__(self) -> None:
        self.entry: dict[str, SourceObject] = {}
        self.parent: dict[str, str | None] = {}
        self.order: list[str] = []
        self.has_children: set[str] = set()

    def path_to(self, node_id: str) -> list[str]:
        path: list[str] = []
        seen: set[str] = set()
        current: str | None = node_id
        while current is not None and current in self.entry and current not in seen:
            seen.add(current)
            path.append(current)
            current = self.parent.get(current)
        path.reverse()
        return path


class _Context:
    def __init__(self, source: SourceFile, tree: bool) -> None:
        self.source = source
        self.tree = tree
        self.first_version: dict[str, int] = {}  # entry key -> version of its first event (shared by branches)
        self.first_kept_after: dict[str, int] = {}  # compaction entry key -> first kept version it set
        self.owner: dict[str, tuple[str, int]] = {}  # entry id -> (session holding it, version of its last event)
        self.session_infos: list[str] = []

    # ------------------------------------------------------------------ tree

    def build_tree(self, entries: list[tuple[int, SourceObject]]) -> _Nodes:
        nodes = _Nodes()
        previous: str | None = None
        for _, so in entries:
            obj = so.obj
            node_id = obj.get("id")
            if not isinstance(node_id, str) or not node_id or node_id in nodes.entry:
                reason = "has no id" if not isinstance(node_id, str) or not node_id else f"reuses id {node_id!r}"
                node_id = f"{so.key}"
                self.source.issues.append(TranscriptError(self.source.path, so.line,
                                                          f"entry {reason}: chained to the previous entry"))
                parent = previous
            else:
                raw_parent = obj.get("parentId")
                parent = raw_parent if isinstance(raw_parent, str) and raw_parent else None
                if parent is not None and parent not in nodes.entry:
                    self.source.issues.append(TranscriptError(self.source.path, so.line,
                                                              f"parentId {parent!r} names no earlier entry: "
                                                              "treated as a root"))
                    parent = None
            nodes.entry[node_id] = so
            nodes.parent[node_id] = parent
            nodes.order.append(node_id)
            if parent is not None:
                nodes.has_children.add(parent)
            previous = node_id
        return nodes

    # ------------------------------------------------------------------ entries

    def emit(self, b: EventBuilder, so: SourceObject, key: str) -> None:
        """The events of entry `so` on the root-to-leaf path `b` builds."""
        obj = so.obj
        self.first_version[key] = b.next_version
        kind = obj.get("type")
        created = parse_time(obj.get("timestamp"))
        meta: dict[str, Any] = {"line": so.line}
        if so.rank:
            meta["line_rank"] = so.rank
        if self.tree:
            meta["entry_id"] = key
            if obj.get("parentId") is not None:
                meta["parent_id"] = obj["parentId"]
        if obj.get("timestamp") is not None:
            meta["timestamp"] = obj["timestamp"]
        if not isinstance(kind, str):
            b.issue(so.line, "not a Pi entry: no 'type'")
            return
        if kind == "message":
            message = obj.get("message")
            if not isinstance(message, dict):
                b.issue(so.line, "a message entry without a 'message' object")
                return
            extra = {k: v for k, v in obj.items() if k not in _ENTRY_KEYS}
            if extra:
                meta["extra"] = extra
            self._message(b, so, message, meta, key, created)
        elif kind == "compaction":
            self._compaction(b, so, meta, key, created)
        elif kind == "custom_message":
            content = _content(obj.get("content"), meta)
            meta.update(pick(obj, {"customType": "custom_type", "display": "display", "details": "details"}))
            b.message("user", content, meta, key=key, line=so.line, created_at=created)
        elif kind == "branch_summary":
            summary = obj.get("summary") if isinstance(obj.get("summary"), str) else ""
            meta.update(pick(obj, {"fromId": "from_id", "details": "details", "fromHook": "from_hook"}))
            meta["summary"] = summary
            b.message("user", [{"type": "text", "text": BRANCH_SUMMARY_PREFIX + summary + BRANCH_SUMMARY_SUFFIX}],
                      meta, key=key, line=so.line, created_at=created)
        else:
            if kind == "session_info" and isinstance(obj.get("name"), str):
                self.session_infos.append(obj["name"])
            b.custom(f"pi:{kind}", obj, meta, key=key, line=so.line, created_at=created)

    def _message(self, b: EventBuilder, so: SourceObject, message: dict[str, Any], meta: dict[str, Any], key: str,
                 created: Any) -> None:
        role = message.get("role")
        if created is None:
            created = parse_time(message.get("timestamp"))
        if message.get("timestamp") is not None:
            meta["message_timestamp"] = message["timestamp"]
        if role == "user":
            keep_rest(meta, "message_extra", message, {"role", "content", "timestamp"})
            b.message("user", _content(message.get("content"), meta), meta, key=key, line=so.line, created_at=created)
        elif role == "assistant":
            self._assistant(b, so, message, meta, key, created)
        elif role == "toolResult":
            call_id = call_id_or(b, message.get("toolCallId"), f"{FORMAT}:{key}", meta, so.line,
                                 "toolResult without toolCallId")
            meta.update(pick(message, {"toolName": "tool_name", "details": "details"}))
            keep_rest(meta, "message_extra", message, {"role", "content", "timestamp", "toolCallId", "toolName",
                                                       "details", "isError"})
            content = message.get("content")
            output: Any = content if isinstance(content, str) else _content(content, meta)
            b.tool_result(call_id, output, message.get("isError") is True, meta, key=key, line=so.line,
                          created_at=created)
        elif role == "bashExecution":
            meta["bash"] = {k: v for k, v in message.items() if k not in ("role", "output", "timestamp")}
            if message.get("excludeFromContext"):
                b.custom("pi:bashExecution", message, meta, key=key, line=so.line, created_at=created)
            else:
                b.message("user", [{"type": "text", "text": bash_execution_text(message)}], meta, key=key,
                          line=so.line, created_at=created)
        elif role in ("custom", "hookMessage"):
            meta["source_role"] = role
            meta.update(pick(message, {"customType": "custom_type", "display": "display", "details": "details"}))
            b.message("user", _content(message.get("content"), meta), meta, key=key, line=so.line, created_at=created)
        elif role in ("branchSummary", "compactionSummary"):
            summary = message.get("summary") if isinstance(message.get("summary"), str) else ""
            meta["source_role"] = role
            keep_rest(meta, "message_extra", message, {"role", "summary", "timestamp"})
            prefix, suffix = ((BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX) if role == "branchSummary"
                              else (COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX))
            b.message("user", [{"type": "text", "text": prefix + summary + suffix}], meta, key=key, line=so.line,
                      created_at=created)
        else:
            b.custom("pi:message", message, meta, key=key, line=so.line, created_at=created)

    def _assistant(self, b: EventBuilder, so: SourceObject, message: dict[str, Any], meta: dict[str, Any], key: str,
                   created: Any) -> None:
        meta.update(pick(message, {"model": "model", "provider": "provider", "api": "api"}))  # on every event
        first = pick(message, {"usage": "usage", "stopReason": "stop_reason", "errorMessage": "error_message"})
        keep_rest(first, "message_extra", message, {"role", "content", "timestamp", "model", "provider", "api",
                                                    "usage", "stopReason", "errorMessage"})
        content = message.get("content")
        blocks: list[Any] = content if isinstance(content, list) else (
            [{"type": "text", "text": content}] if isinstance(content, str) and content else [])
        turn = Turn(b, "assistant", meta, first, key=key, line=so.line, created_at=created, several=len(blocks) > 1)
        typed = 0
        for bi, block in enumerate(blocks):
            if not isinstance(block, dict) or not isinstance(block.get("type"), str):
                b.issue(so.line, f"content block {bi} is not a typed block object; left out")
                continue
            typed += 1
            if block["type"] == "toolCall":
                turn.flush()
                m = turn.meta(bi)
                call_id = call_id_or(b, block.get("id"), f"{FORMAT}:{key}:{bi}", m, so.line,
                                     f"toolCall block {bi} has no id")
                name = tool_name(block.get("name"))
                input_, ok = parse_arguments(block.get("arguments", {}))
                if not ok:
                    m["arguments_wrapped"] = True
                keep_rest(m, "block_extra", block, {"type", "id", "name", "arguments"})
                turn.added(b.tool_call(call_id, name, input_, m, key=key, index=bi, line=so.line, created_at=created))
                continue
            turn.text(bi, *_block(block))
        turn.flush()
        if typed == 0:  # an aborted or failed response with no content: still a message in the history
            turn.empty()

    def _compaction(self, b: EventBuilder, so: SourceObject, meta: dict[str, Any], key: str, created: Any) -> None:
        obj = so.obj
        own = b.next_version
        summary = obj.get("summary")
        if not isinstance(summary, str):
            b.issue(so.line, "compaction entry without a summary string")
            summary = ""
        target: str | None = None
        first_kept_id = obj.get("firstKeptEntryId")
        first_kept_index = obj.get("firstKeptEntryIndex")
        if isinstance(first_kept_id, str):
            target = first_kept_id
            meta["first_kept_entry_id"] = first_kept_id
        elif as_int(first_kept_index) is not None:
            meta["first_kept_entry_index"] = first_kept_index
            objects = self.source.objects
            if 0 <= first_kept_index < len(objects):
                target_so = objects[first_kept_index]
                target = (target_so.obj.get("id") if self.tree and isinstance(target_so.obj.get("id"), str)
                          else target_so.key)
        first_kept = self.first_version.get(target) if target is not None else None
        if first_kept is None or first_kept > own:
            b.issue(so.line, f"compaction's first kept entry ({first_kept_id or first_kept_index!r}) is not an "
                             "earlier entry of this branch: nothing before the compaction is kept")
            first_kept = own
        first_kept = b.keep_from(first_kept, meta)
        self.first_kept_after[key] = first_kept
        details = obj.get("details")
        mapped: dict[str, Any] = {}
        if isinstance(details, dict):
            for src, dst in (("readFiles", "read_files"), ("modifiedFiles", "modified_files")):
                files = details.get(src)
                if isinstance(files, list) and all(isinstance(f, str) for f in files):
                    mapped[dst] = files
        meta.update(pick(obj, {"details": "details", "fromHook": "from_hook"}))
        meta["trigger_recorded"] = False
        keep_rest(meta, "extra", obj, {"type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId",
                                       "firstKeptEntryIndex", "tokensBefore", "details", "fromHook"})
        b.compaction(summary, first_kept, meta, tokens_before=as_int(obj.get("tokensBefore")), trigger="auto",
                     summarizer=FORMAT, details=mapped, key=key, line=so.line, created_at=created, clamp=False)


def _branches(ctx: _Context, nodes: _Nodes, sid: str, leaf: str, metadata: dict[str, Any]) -> list[ParsedSession]:
    """Every abandoned branch as a fork of the session holding its branch point."""
    branches: list[ParsedSession] = []
    for node_id in nodes.order:
        if node_id in nodes.has_children or node_id == leaf or node_id in ctx.owner:
            continue
        path = nodes.path_to(node_id)
        k = len(path) - 1
        while k >= 0 and path[k] not in ctx.owner:
            k -= 1
        own = path[k + 1:]
        if not own:
            continue
        base_sid, at = ctx.owner[path[k]] if k >= 0 else (sid, 0)
        branch_sid = f"{sid}:branch:{own[0]}"
        first_kept = max((ctx.first_kept_after.get(e, 0) for e in path[:k + 1]), default=0)
        builder = EventBuilder(FORMAT, branch_sid, ctx.source.path, ctx.source.issues, base_version=at,
                               kept_from=first_kept)
        for entry_id in own:
            ctx.emit(builder, nodes.entry[entry_id], entry_id)
            ctx.owner[entry_id] = (branch_sid, builder.head)
        branch_meta = {**session_metadata(FORMAT, ctx.source.path), "branch_of": sid, "branch_leaf": node_id,
                       "branch_point_entry": path[k] if k >= 0 else None}
        for name in ("cwd", "pi_session_version"):
            if name in metadata:
                branch_meta[name] = metadata[name]
        branches.append(ParsedSession(branch_sid, branch_meta, builder.finish(), fork_of=base_sid, fork_at=at))
    return branches


# --------------------------------------------------------------------------- blocks


def _block(block: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A Pi content block in the Anthropic shape, and the fields that shape has no room for."""
    btype = block["type"]
    if btype == "text" and isinstance(block.get("text"), str):
        return {"type": "text", "text": block["text"]}, {k: v for k, v in block.items() if k not in ("type", "text")}
    if btype == "thinking" and isinstance(block.get("thinking"), str):
        out: dict[str, Any] = {"type": "thinking", "thinking": block["thinking"]}
        signature = block.get("thinkingSignature", block.get("signature"))
        if isinstance(signature, str):
            out["signature"] = signature
        return out, {k: v for k, v in block.items() if k not in ("type", "thinking", "thinkingSignature", "signature")}
    if btype == "image" and "data" in block:
        return image_block(block.get("mimeType"), block["data"]), {
            k: v for k, v in block.items() if k not in ("type", "data", "mimeType")}
    return dict(block), {}


def _content(content: Any, meta: dict[str, Any]) -> list[dict[str, Any]]:
    return blocks_of(content, meta, _block, "block_extra")
