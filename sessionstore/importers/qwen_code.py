"""Qwen Code sessions (``~/.qwen/projects/<project>/chats/<session id>.jsonl``).

The format (npm ``@qwen-code/qwen-code``, a Gemini CLI fork; ``ChatRecordingService``): one
record a line, ``{uuid, parentUuid, sessionId, timestamp, type, cwd, version, …}``, each record's
``parentUuid`` the record written before it, so that a rewind can re-root the chain. Messages
hold Gemini parts (``{text}``, ``{text, thought: true}``, ``{functionCall}``,
``{functionResponse}``, ``{inlineData}``). What each becomes:

* ``user`` → a user message (its parts: `gemini_cli`'s reading);
* ``assistant`` (``message.role`` ``model``) → an assistant message (thought parts as thinking
  blocks, then text), then a `tool_call` per ``functionCall`` part; its ``usageMetadata``
  (``promptTokenCount`` counts the whole prompt) in ``meta["usage"]``, ``model`` in meta;
* ``tool_result`` → a `tool_result` per ``functionResponse`` part: the response's ``output``,
  else its ``error`` with ``is_error`` (as ``toolCallResult.status`` says); the result record's
  ``toolCallResult`` (display, error type) in meta;
* ``system`` ``chat_compression`` (``/compress``, or Qwen's own compression: ``systemPayload``
  ``{info: {originalTokenCount, newTokenCount, triggerReason, …}, compressedHistory}``) that
  replaced the history → a `compaction` event: summary = the first user text of the new history
  (the ``<state_snapshot>``), ``tokens_before`` / ``tokens_after`` from ``info``, trigger
  ``manual``, ``overflow`` (``payload_overflow``) or ``auto``, ``first_kept_version`` the first
  event of the messages the new history keeps (its tail that repeats the last messages
  recorded), else its own version. What the new history adds between the summary and that tail
  (the model's acknowledgement, files attached again) is kept in meta; the attached files as
  user messages after the compaction, so that the view sends what Qwen sent;
* ``system`` ``rewind`` (``/rewind``: Qwen re-roots the chain at the record before the turn
  rewound to, and writes this record there) → a retraction (a ``drop`` prune, rule ``retract``)
  of the messages written after the record its ``parentUuid`` names (all of them when it is
  null), as Gemini CLI's ``$rewindTo`` is read;
* other ``system`` records (``ui_telemetry``, ``attribution_snapshot``, ``slash_command``, …) →
  custom events ``qwen-code:<subtype>``, not in context.

Qwen Code appends a record once it is complete and never rewrites one: a grown file imports
incrementally. Older Qwen Code versions wrote Gemini CLI's session files, read by `gemini_cli`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from .. import events as ev
from ..repository.base import RETRACT_RULE
from .gemini_cli import _content as parts_to_blocks
from .gemini_cli import _result as call_result
from .reading import SourceFile, SourceObject
from .reports import ParsedTranscript
from .rules import EventBuilder, as_int, as_list, keep_rest, parse_time, source_meta, text_of
from .steps import call_id_or, object_input, pick_text, session_metadata, tool_name

FORMAT: Final = "qwen-code"
FOLDER: Final = "~/.qwen/projects"
RECORD_TYPES: Final = frozenset({"user", "assistant", "tool_result", "system"})
_TRIGGERS: Final = {"manual": "manual", "payload_overflow": "overflow"}  # else token_limit, image_overflow
_ENVELOPE: Final = ("uuid", "parentUuid", "sessionId", "timestamp", "type", "cwd", "version", "message")


def looks_like(obj: Any) -> bool:
    """One chat record: a uuid and a session id, and Gemini parts or a system payload (Claude Code's
    records, otherwise alike, hold ``content``, never ``parts`` or ``systemPayload``)."""
    if not (isinstance(obj, dict) and isinstance(obj.get("type"), str) and obj["type"] in RECORD_TYPES
            and "uuid" in obj and "sessionId" in obj):
        return False
    message = obj.get("message")
    return (isinstance(message, dict) and isinstance(message.get("parts"), list)) or "systemPayload" in obj


def parse(source: SourceFile) -> ParsedTranscript:
    path = source.path
    head = next((so.obj for so in source.objects if isinstance(so.obj.get("sessionId"), str)), {})
    sid = head.get("sessionId") or Path(path).stem
    metadata = session_metadata(FORMAT, path)
    metadata.update(pick_text(head, {"cwd": "cwd", "version": "qwen_code_version", "gitBranch": "git_branch"}))
    if Path(path).parent.name == "chats":
        metadata["project"] = Path(path).parent.parent.name
    state = _State(EventBuilder(FORMAT, sid, path, source.issues))
    for so in source.objects:
        state.record(so)
    return ParsedTranscript(path, FORMAT, sid, metadata, state.b.finish(), source.issues, source.lines)


class _State:
    def __init__(self, builder: EventBuilder) -> None:
        self.b = builder
        # The conversation as Qwen Code sends it: each message record's uuid, its content as the model
        # saw it ({role, parts}) and the versions of its events, in order.
        self.history: list[tuple[str, dict[str, Any], list[int]]] = []
        self.order: list[str] = []  # every record's uuid, in file order (a rewind names one)
        self.last_prompt: int | None = None

    def record(self, so: SourceObject) -> None:
        obj = so.obj
        rtype = obj.get("type")
        message = obj.get("message") if isinstance(obj.get("message"), dict) else {}
        uid = _uid(so)
        self.order.append(uid)
        if rtype == "user" and message:
            meta = self.meta(so)
            blocks = parts_to_blocks(message.get("parts"), meta)
            versions = [self.b.message("user", blocks, meta, key=uid, line=so.line, created_at=self.created(so))]
        elif rtype == "assistant" and message:
            versions = self.assistant(so, message)
        elif rtype == "tool_result" and message:
            versions = self.results(so, message)
        elif rtype == "system" and obj.get("subtype") == "chat_compression" and _compressed(obj):
            self.compression(so, obj["systemPayload"])
            return
        elif rtype == "system" and obj.get("subtype") == "rewind":
            self.rewind(so)
            return
        else:
            if not isinstance(rtype, str) or rtype not in RECORD_TYPES:
                self.b.issue(so.line, f"not a Qwen Code record: type {rtype!r}")
                return
            subtype = obj.get("subtype") if isinstance(obj.get("subtype"), str) else rtype
            self.b.custom(f"{FORMAT}:{subtype}", obj, self.meta(so), key=uid, line=so.line,
                          created_at=self.created(so))
            return
        self.history.append((uid, {"role": message.get("role"), "parts": message.get("parts")},
                             [v for v in versions if v is not None]))

    # ------------------------------------------------------------------ helpers

    def meta(self, so: SourceObject, **extra: Any) -> dict[str, Any]:
        meta = source_meta(so, uuid=so.obj.get("uuid"), parent_uuid=so.obj.get("parentUuid"),
                           timestamp=so.obj.get("timestamp"), **extra)
        keep_rest(meta, "extra", so.obj, (*_ENVELOPE, "model", "usageMetadata", "toolCallResult", "subtype",
                                          "systemPayload"))
        return meta

    @staticmethod
    def created(so: SourceObject) -> Any:
        return parse_time(so.obj.get("timestamp"))

    # ------------------------------------------------------------------ records

    def assistant(self, so: SourceObject, message: dict[str, Any]) -> list[int | None]:
        obj = so.obj
        uid = _uid(so)
        created = self.created(so)
        base = self.meta(so, message_id=obj.get("uuid"), model=obj.get("model"))
        first = dict(base)
        usage = obj.get("usageMetadata")
        if isinstance(usage, dict):
            first["usage"] = usage
            if as_int(usage.get("promptTokenCount")) is not None:
                self.last_prompt = usage["promptTokenCount"]
        parts = [p for p in as_list(message.get("parts")) if isinstance(p, dict)]
        calls = [p["functionCall"] for p in parts if isinstance(p.get("functionCall"), dict)]
        thinking = [{"type": "thinking", "thinking": p["text"],
                     **({"signature": p["thoughtSignature"]} if isinstance(p.get("thoughtSignature"), str) else {})}
                    for p in parts if p.get("thought") is True and isinstance(p.get("text"), str)]
        said = [p for p in parts if "functionCall" not in p and p.get("thought") is not True]
        blocks = [*thinking, *parts_to_blocks(said, first)]
        versions: list[int | None] = []
        if blocks or not calls:
            versions.append(self.b.message("assistant", blocks, first, key=uid, line=so.line, created_at=created))
            first = dict(base)
        for i, call in enumerate(calls):
            meta = first if i == 0 else dict(base)
            call_id = call_id_or(self.b, call.get("id"), f"{FORMAT}:{uid}:{i}", meta, so.line,
                                 f"function call {i} has no id")
            name = tool_name(call.get("name"))
            args = object_input(call.get("args"), "args")
            versions.append(self.b.tool_call(call_id, name, args, meta, key=uid, index=f"call{i}", line=so.line,
                                             created_at=created))
        return versions

    def results(self, so: SourceObject, message: dict[str, Any]) -> list[int | None]:
        uid = _uid(so)
        outcome = so.obj.get("toolCallResult") if isinstance(so.obj.get("toolCallResult"), dict) else {}
        responses = [p["functionResponse"] for p in as_list(message.get("parts"))
                     if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]
        versions: list[int | None] = []
        for i, response in enumerate(responses):
            meta = self.meta(so)
            if outcome:
                meta["tool_call_result"] = outcome
            call_id = call_id_or(self.b, response.get("id") if isinstance(response.get("id"), str)
                                 else outcome.get("callId"), f"{FORMAT}:{uid}:{i}", meta, so.line,
                                 f"function response {i} has no id")
            output, is_error = call_result({"result": [{"functionResponse": response}],
                                            "status": outcome.get("status")}, meta)
            versions.append(self.b.tool_result(call_id, output, is_error, meta, key=uid, index=i, line=so.line,
                                               created_at=self.created(so)))
        if not responses:
            self.b.issue(so.line, "a tool_result record without a functionResponse part")
        return versions

    def compression(self, so: SourceObject, payload: dict[str, Any]) -> None:
        uid = _uid(so)
        info = payload.get("info") if isinstance(payload.get("info"), dict) else {}
        new = [c for c in as_list(payload.get("compressedHistory")) if isinstance(c, dict)]
        meta = self.meta(so)
        keep_rest(meta, "compression", payload, ("compressedHistory",))
        kept = _kept_tail(new, [content for _, content, _ in self.history])
        head = new[:len(new) - kept]
        summary = text_of(head[0].get("parts"), "") if head and head[0].get("role") == "user" else ""
        if not summary:
            meta["summary_missing"] = True
        attached = [c for c in head[1:] if c.get("role") == "user"]
        meta["compressed_head"] = head[1:]  # the model's acknowledgement, files attached again
        tail = [v for _, _, versions in self.history[len(self.history) - kept:] for v in versions] if kept else []
        trigger = _TRIGGERS.get(info.get("triggerReason"), "auto") if isinstance(info.get("triggerReason"), str) \
            else "auto"
        self.b.compaction(summary, min(tail, default=self.b.next_version), meta,
                          tokens_before=as_int(info.get("originalTokenCount")) or self.last_prompt,
                          tokens_after=as_int(info.get("newTokenCount")), trigger=trigger, summarizer=FORMAT,
                          key=uid, line=so.line, created_at=self.created(so))
        self.history = self.history[len(self.history) - kept:] if kept else []
        for i, content in enumerate(attached):
            extra = self.meta(so, reattached=True)
            version = self.b.message("user", parts_to_blocks(content.get("parts"), extra), extra, key=uid,
                                     index=f"attached{i}", line=so.line, created_at=self.created(so))
            self.history.insert(i, (f"{uid}:attached{i}", content, [version] if version is not None else []))

    def rewind(self, so: SourceObject) -> None:
        """A rewind re-roots the chain at its parent: the messages written after it leave the conversation."""
        uid = _uid(so)
        meta = self.meta(so)
        parent = so.obj.get("parentUuid")  # None: rewound to the first turn, nothing before it
        after = 0 if parent is None else self.order.index(parent) + 1 if parent in self.order else None
        if after is None:
            self.b.issue(so.line, f"a rewind whose parentUuid {parent!r} names no earlier record")
            self.b.custom(f"{FORMAT}:rewind", so.obj, meta, key=uid, line=so.line, created_at=self.created(so))
            return
        gone = set(self.order[after:])
        versions = [v for owner, _, vs in self.history if owner in gone for v in vs]
        self.history = [h for h in self.history if h[0] not in gone]
        if versions:
            marker = ev.prune(versions, mode="drop", rule=RETRACT_RULE)
            self.b.add("prune", dict(marker.payload), {**meta, "reason": "qwen-code rewind"}, key=uid, line=so.line,
                       created_at=self.created(so))
        else:
            self.b.custom(f"{FORMAT}:rewind", so.obj, meta, key=uid, line=so.line, created_at=self.created(so))


def _compressed(record: dict[str, Any]) -> bool:
    """A compression that replaced the history (Qwen reads only those back on resume); a failed or
    skipped one, without a new history, is a custom event like the other system records."""
    payload = record.get("systemPayload")
    return isinstance(payload, dict) and isinstance(payload.get("compressedHistory"), list) and bool(
        payload["compressedHistory"])


def _uid(so: SourceObject) -> str:
    """What names a record's events: its uuid (a record keeps it wherever its line moves), else its line."""
    uid = so.obj.get("uuid")
    return uid if isinstance(uid, str) and uid else so.key


def _kept_tail(new: list[dict[str, Any]], history: list[dict[str, Any]]) -> int:
    """How many of the last messages recorded the compressed history ends with (its kept tail)."""
    for k in range(min(len(new) - 1, len(history)), 0, -1):
        if all(_same(a, b) for a, b in zip(new[-k:], history[-k:])):
            return k
    return 0


def _same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return a.get("role") == b.get("role") and a.get("parts") == b.get("parts")
