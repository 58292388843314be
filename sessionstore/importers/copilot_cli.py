"""GitHub Copilot CLI sessions (``~/.copilot/session-state/<session id>/events.jsonl``).

The format (npm ``@github/copilot``; its own JSON Schema ships in the package as
``schemas/session-events.schema.json``): one event a line, ``{type, data, id, timestamp,
parentId}``, the session's id in the first line's ``data.sessionId`` (``session.start``). A
resumed session appends to the same file after a ``session.resume`` line. What each becomes:

* ``session.start`` → session metadata (``copilot_version``, ``cwd``, git root, branch and
  repository, ``model`` from ``selectedModel``, ``started_at`` from ``startTime``) and a custom
  event; ``session.model_change`` updates the model the next replies are tagged with;
* ``system.message`` → a `system` event (Copilot writes its system prompt again when it changes);
* ``user.message`` → a user message: ``content`` as the user typed it; what the model was sent
  (``transformedContent``: the date and reminders around it) and attachments in meta;
* ``assistant.message`` → an assistant message (thinking blocks from ``reasoningBlocks``, else
  ``reasoningText``/``reasoningOpaque``; then its text), then a `tool_call` per ``toolRequests``
  item. Its ``session.usage_record`` (written just before it, naming the same ``apiCallId``)
  goes in ``meta["usage"]`` of its first event, as Copilot wrote it (``inputTokens`` counts the
  whole prompt, cached or not);
* ``tool.execution_complete`` → the `tool_result` of its call: ``result.content`` (what the model
  was sent), else ``error.message`` with ``is_error``; the shell's exit code, file edits and
  the longer ``detailedContent`` in meta;
* ``session.compaction_complete`` that succeeded → a `compaction` event: summary
  ``summaryContent``, ``tokens_before`` / ``tokens_after`` the pre- and post-compaction counts,
  trigger ``manual``, ``overflow`` (``context_limit_retry``) or ``auto`` (``threshold``, …;
  Copilot's own word kept in meta), ``first_kept_version`` its own version: Copilot replaces the
  whole conversation by the summary;
* events of a sub-agent (a ``parentToolCallId``: they answer a ``task`` call, not the user) and
  every other line (``assistant.turn_start``, ``tool.execution_start``, ``session.resume``,
  ``session.shutdown``, the compaction's ``model.*`` call records, a failed compaction, …) →
  custom events ``copilot-cli:<type>``, not in context, so that nothing of the file is lost.

Copilot appends each event once it is complete (a reply's deltas are never written), so the
file's lines never change and a grown file imports incrementally.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from .reading import SourceFile, SourceObject
from .reports import ParsedTranscript
from .rules import (EventBuilder, as_int, as_list, keep_rest, parse_arguments, parse_time, source_meta, text_blocks,
                    tool_output)
from .steps import call_id_or, pick_text, session_metadata, tool_name

FORMAT: Final = "copilot-cli"
FOLDER: Final = "~/.copilot/session-state"
_TRIGGERS: Final = {"manual": "manual", "context_limit_retry": "overflow"}
_ENVELOPE: Final = frozenset({"type", "data", "id", "timestamp", "parentId"})


def looks_like(obj: Any) -> bool:
    """One line of ``events.jsonl``: a dotted event type, a ``data`` object and an id."""
    t = obj.get("type") if isinstance(obj, dict) else None
    return (isinstance(t, str) and "." in t and isinstance(obj.get("data"), dict) and isinstance(obj.get("id"), str)
            and "timestamp" in obj and "parentId" in obj)


def parse(source: SourceFile) -> ParsedTranscript:
    path = source.path
    start = next((so.obj["data"] for so in source.objects if so.obj.get("type") == "session.start"), {})
    sid = start.get("sessionId") if isinstance(start.get("sessionId"), str) and start.get("sessionId") else (
        _id_from_path(path))
    state = _State(EventBuilder(FORMAT, sid, path, source.issues), _metadata(path, start))
    for so in source.objects:
        state.line(so)
    return ParsedTranscript(path, FORMAT, sid, state.metadata, state.b.finish(), source.issues, source.lines)


def _id_from_path(path: str) -> str:
    p = Path(path)
    return p.parent.name if p.name == "events.jsonl" else p.stem


def _metadata(path: str, start: dict[str, Any]) -> dict[str, Any]:
    meta = session_metadata(FORMAT, path)
    context = start.get("context") if isinstance(start.get("context"), dict) else {}
    meta.update(pick_text(start, {"copilotVersion": "copilot_version", "producer": "producer",
                                  "selectedModel": "model", "startTime": "started_at"}))
    meta.update(pick_text(context, {"cwd": "cwd", "gitRoot": "git_root", "branch": "git_branch",
                                    "repository": "repository"}))
    return meta


class _State:
    def __init__(self, builder: EventBuilder, metadata: dict[str, Any]) -> None:
        self.b = builder
        self.metadata = metadata
        self.model: str | None = metadata.get("model")
        self.usage: dict[str, dict[str, Any]] = {}  # apiCallId -> its usage record, until its reply comes
        self.last_prompt: int | None = None

    def line(self, so: SourceObject) -> None:
        obj = so.obj
        etype = obj.get("type")
        data = obj.get("data")
        if not isinstance(etype, str) or not isinstance(data, dict):
            self.b.issue(so.line, "not a Copilot CLI event: no 'type' string and 'data' object")
            return
        if isinstance(data.get("parentToolCallId"), str):  # a sub-agent's: it answers a task call
            self.custom(so, f"subagent.{etype}")
        elif etype == "system.message":
            meta = self.meta(so)
            keep_rest(meta, "extra", data, ("content", "role"))
            self.b.add("system", {"text": tool_output(data.get("content"), meta)}, meta, key=so.key, line=so.line,
                       created_at=self.created(so))
        elif etype == "user.message":
            self.user(so, data)
        elif etype == "assistant.message":
            self.assistant(so, data)
        elif etype == "tool.execution_complete":
            self.result(so, data)
        elif etype == "session.compaction_complete" and data.get("success") is True:
            self.compaction(so, data)
        else:
            if etype == "session.usage_record":
                self.usage_record(data.get("usage"))
            elif etype == "session.model_change" and isinstance(data.get("newModel"), str):
                self.model = data["newModel"]
            self.custom(so, etype)

    # ------------------------------------------------------------------ helpers

    def meta(self, so: SourceObject, **extra: Any) -> dict[str, Any]:
        return source_meta(so, event_id=so.obj.get("id"), timestamp=so.obj.get("timestamp"), **extra)

    @staticmethod
    def created(so: SourceObject) -> Any:
        return parse_time(so.obj.get("timestamp"))

    def custom(self, so: SourceObject, etype: str) -> None:
        self.b.custom(f"{FORMAT}:{etype}", so.obj, self.meta(so), key=so.key, line=so.line, created_at=self.created(so))

    # ------------------------------------------------------------------ events

    def user(self, so: SourceObject, data: dict[str, Any]) -> None:
        meta = self.meta(so, message_id=data.get("messageId"))
        keep_rest(meta, "extra", data, ("content", "messageId"))
        content = data.get("content")
        if not isinstance(content, str):
            meta["content_unreadable"] = repr(content)[:200]
        self.b.message("user", text_blocks(content), meta, key=so.key, line=so.line, created_at=self.created(so))

    def usage_record(self, usage: Any) -> None:
        """A model call's usage, kept for its reply (Copilot writes it just before the reply)."""
        if isinstance(usage, dict) and isinstance(usage.get("apiCallId"), str):
            self.usage[usage["apiCallId"]] = usage
            if as_int(usage.get("inputTokens")) is not None:
                self.last_prompt = usage["inputTokens"]

    def assistant(self, so: SourceObject, data: dict[str, Any]) -> None:
        created = self.created(so)
        model = data.get("model") if isinstance(data.get("model"), str) else self.model
        base = self.meta(so, message_id=data.get("messageId"), model=model)
        first = dict(base)
        call_id = data.get("apiCallId")
        if isinstance(call_id, str) and call_id in self.usage:
            first["usage"] = self.usage.pop(call_id)
        keep_rest(first, "extra", data, ("messageId", "model", "content", "toolRequests", "reasoningBlocks",
                                         "reasoningText", "reasoningOpaque"))
        blocks = [*_thinking(data), *text_blocks(data.get("content"))]
        requests = [r for r in as_list(data.get("toolRequests")) if isinstance(r, dict)]
        if blocks or not requests:
            self.b.message("assistant", blocks, first, key=so.key, line=so.line, created_at=created)
            first = dict(base)
        for i, request in enumerate(requests):
            meta = first if i == 0 else dict(base)
            tool_id = call_id_or(self.b, request.get("toolCallId"), f"{FORMAT}:{so.key}:{i}", meta, so.line,
                                 f"tool request {i} has no toolCallId")
            name = tool_name(request.get("name"))
            arguments, ok = parse_arguments(request.get("arguments", {}))
            if not ok:
                meta["arguments_wrapped"] = True
            keep_rest(meta, "request", request, ("toolCallId", "name", "arguments"))
            self.b.tool_call(tool_id, name, arguments, meta, key=so.key, index=f"call{i}", line=so.line,
                             created_at=created)

    def result(self, so: SourceObject, data: dict[str, Any]) -> None:
        meta = self.meta(so)
        tool_id = data.get("toolCallId")
        if not isinstance(tool_id, str) or not tool_id:
            self.b.issue(so.line, "a tool.execution_complete without toolCallId: kept as a custom event")
            self.custom(so, "tool.execution_complete")
            return
        result = data.get("result") if isinstance(data.get("result"), dict) else {}
        error = data.get("error") if isinstance(data.get("error"), dict) else {}
        is_error = data.get("success") is False
        if "content" in result:
            output = tool_output(result["content"], meta)
        else:
            output = tool_output(error.get("message", data.get("error")), meta)
        shell = data.get("shellExecution")
        if isinstance(shell, dict) and as_int(shell.get("exitCode")) is not None:
            meta["exit_code"] = shell["exitCode"]
        keep_rest(meta, "extra", data, ("toolCallId", "success"))
        self.b.tool_result(tool_id, output, is_error, meta, key=so.key, line=so.line, created_at=self.created(so))

    def compaction(self, so: SourceObject, data: dict[str, Any]) -> None:
        meta = self.meta(so)
        summary = data.get("summaryContent")
        if not isinstance(summary, str):
            summary = ""
            meta["summary_missing"] = True
        keep_rest(meta, "compaction", data, ("summaryContent", "preCompactionTokens", "postCompactionTokens"))
        source_trigger = data.get("trigger")
        if source_trigger is None:
            meta["trigger_recorded"] = False
        before = as_int(data.get("preCompactionTokens"))
        trigger = _TRIGGERS.get(source_trigger, "auto") if isinstance(source_trigger, str) else "auto"
        self.b.compaction(summary, self.b.next_version, meta, tokens_after=as_int(data.get("postCompactionTokens")),
                          tokens_before=before if before is not None else self.last_prompt,
                          trigger=trigger, summarizer=FORMAT, key=so.key, line=so.line, created_at=self.created(so))


def _thinking(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A reply's reasoning as thinking blocks: the provider's own blocks when Copilot kept them."""
    kept = data.get("reasoningBlocks")
    blocks = [dict(b) for b in as_list(kept.get("blocks") if isinstance(kept, dict) else None)
              if isinstance(b, dict) and isinstance(b.get("type"), str)]
    if blocks:
        return blocks
    text = data.get("reasoningText")
    if isinstance(text, str) and text:
        block: dict[str, Any] = {"type": "thinking", "thinking": text}
        if isinstance(data.get("reasoningOpaque"), str):
            block["signature"] = data["reasoningOpaque"]
        return [block]
    return []
