"""OpenAI Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl``).

Each line is ``{"timestamp", "type", "payload"}`` (codex-rs ``RolloutItem``). What each becomes:

* ``session_meta``: session id and metadata (cwd, originator, cli version, git); its
  ``instructions`` (or ``base_instructions.text``) → a `system` event; the line itself → a
  custom event ``codex:session_meta``.
* ``response_item`` (what the model saw or said), by ``payload.type``:
  ``message`` role user → user message, role assistant → assistant message, role developer →
  user message with ``meta["source_role"] = "developer"`` (Codex sends it in place, between
  the turns, not as the base prompt), role system → `system`; ``reasoning`` → an assistant
  message holding the item verbatim as one provider-native block (``type: "reasoning"``,
  summary and ``encrypted_content`` intact); ``function_call`` → `tool_call` (``arguments``
  parsed into ``input``; ``{"arguments": raw}`` when not a JSON object);
  ``custom_tool_call`` → `tool_call` with ``input = {"input": raw}``; ``local_shell_call`` →
  `tool_call` ``local_shell`` with the action as input; ``function_call_output`` /
  ``custom_tool_call_output`` → `tool_result` (output string kept byte-for-byte);
  ``web_search_call`` and ``compaction`` (an encrypted summary item) → an assistant message
  with the item verbatim; ``ghost_snapshot`` and unknown items → custom events.
* ``compacted`` (Codex's own compaction: ``message`` = the summary, optionally
  ``replacement_history``) → a `compaction` event whose ``first_kept_version`` is its own
  version (Codex rebuilds the history from the summary; the replacement history is kept in
  ``meta``), ``tokens_before`` = the last reported context size. The earlier user and
  developer messages the replacement history sends again are named in ``meta["resent"]`` (for
  the token estimate of the call after it: `projection.calibration`).
* ``turn_context`` and ``event_msg`` → custom events ``codex:<type>``, ``in_context=False``.
  ``event_msg`` ``token_count`` also puts its ``last_token_usage`` in ``meta["usage"]`` of
  the first event of the model response it reports: the response still open when it arrives,
  or else (Codex 0.40 writes the count just before the items) the next one.
* ``token_usage_record`` (newer Codex, right after a response's items, before its tool outputs
  and its ``token_count``) → a custom event; its ``usage`` is the response's own, so it goes in
  ``meta["usage"]`` (with ``response_id``) and, once such records appear, ``token_count`` gives none.

Older rollouts (a first line ``{"id", "timestamp", "instructions"}`` then bare response
items) are read too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from ..projection.view import RESENT_KEY
from .reading import SourceFile, SourceObject
from .reports import ParsedTranscript
from .rules import EventBuilder, as_int, blocks_of, data_url_image, parse_arguments, parse_time
from .steps import call_id_or, session_metadata, tool_name

FORMAT: Final = "codex"
LINE_TYPES: Final = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted",
                               "token_usage_record"})
RESPONSE_ITEMS: Final = frozenset({"message", "reasoning", "function_call", "function_call_output",
                                   "custom_tool_call", "custom_tool_call_output", "local_shell_call",
                                   "web_search_call", "ghost_snapshot", "compaction", "compaction_summary"})
_TRIGGERS: Final = {"auto": "auto", "manual": "manual", "overflow": "overflow"}


def looks_like(obj: dict[str, Any]) -> bool:
    t = obj.get("type")
    if not isinstance(t, str):
        return False
    if t in LINE_TYPES and "payload" in obj:
        return True
    if "payload" in obj or "sessionId" in obj or "uuid" in obj:
        return False
    # the older rollout layout: bare response items
    return (t in ("function_call", "function_call_output", "reasoning") and ("call_id" in obj or "summary" in obj)) or (
        t == "message" and "role" in obj and isinstance(obj.get("content"), list))


def parse(source: SourceFile) -> ParsedTranscript:
    path = source.path
    objects = source.objects
    issues = source.issues
    meta_obj = next((so.obj.get("payload") for so in objects
                     if so.obj.get("type") == "session_meta" and isinstance(so.obj.get("payload"), dict)), None)
    legacy_head = objects[0].obj if objects and "type" not in objects[0].obj and "id" in objects[0].obj else None
    head = meta_obj if meta_obj is not None else (legacy_head or {})
    sid = head.get("id") if isinstance(head.get("id"), str) and head.get("id") else _id_from_name(path)
    metadata = session_metadata(FORMAT, path)
    for key in ("cwd", "originator", "cli_version", "git", "source", "model_provider"):
        if head.get(key) is not None:
            metadata["codex_source" if key == "source" else key] = head[key]
    if head.get("timestamp") is not None:
        metadata["started_at"] = head["timestamp"]

    state = _State(EventBuilder(FORMAT, sid, path, issues))
    for i, so in enumerate(objects):
        obj = so.obj
        kind = obj.get("type")
        if i == 0 and legacy_head is obj:
            state.session_meta(so, obj)
            continue
        if not isinstance(kind, str):
            if isinstance(obj.get("record_type"), str):  # older rollouts: {"record_type": "state", …}
                state.custom(so, f"codex:{obj['record_type']}", obj)
            else:
                state.b.issue(so.line, "not a Codex rollout line: no 'type'")
            continue
        if kind in LINE_TYPES:
            payload = obj.get("payload")
            if not isinstance(payload, dict):
                state.b.issue(so.line, f"a {kind} line without a 'payload' object")
                continue
        else:
            payload = obj
        if kind == "session_meta":
            state.session_meta(so, payload)
        elif kind == "response_item" or (kind not in LINE_TYPES and kind in RESPONSE_ITEMS):
            state.response_item(so, payload)
        elif kind == "compacted":
            state.compacted(so, payload)
        elif kind == "event_msg":
            state.event_msg(so, payload)
        elif kind == "token_usage_record":
            state.usage_record(so, payload)
        elif kind == "turn_context":
            if isinstance(payload.get("model"), str):
                state.model = payload["model"]
                metadata.setdefault("model", payload["model"])
            state.custom(so, "codex:turn_context", obj)
        else:
            state.custom(so, f"codex:{kind}", obj)
    if state.run and not state.run_has_usage and any("payload" in so.obj for so in source.objects):
        # the response's usage comes in a later line (`token_count`, `token_usage_record`), onto its first
        # event (older rollouts, without a line's `payload` envelope, report none)
        state.b.wait(state.run[0], state.b.meta_of(state.run[0]).get("line", 0), "the model's response waits for "
                                                                                 "its usage")
    return ParsedTranscript(path, FORMAT, sid, metadata, state.b.finish(), issues, source.lines)


def _said(item: dict[str, Any]) -> str:
    """A message item's text, to find a replacement history's message among the earlier ones."""
    content = item.get("content")
    if isinstance(content, str):
        return content.strip()
    parts = content if isinstance(content, list) else []
    return "\n".join(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)).strip()


def _id_from_name(path: str) -> str:
    stem = Path(path).stem
    # rollout-2025-09-24T19-22-20-01997e76-d124-7592-9cac-2ec05abbca08 -> the trailing uuid
    parts = stem.split("-")
    if len(parts) >= 5:
        candidate = "-".join(parts[-5:])
        if len(candidate) == 36:
            return candidate
    return stem


class _State:
    def __init__(self, builder: EventBuilder) -> None:
        self.b = builder
        self.model: str | None = None
        # The model response being read: versions of its events; whether it got its usage.
        self.run: list[int] = []
        self.run_has_usage = False
        self.pending_usage: dict[str, Any] | None = None
        self.usage_records = False  # the rollout has token_usage_record lines: usage comes from them
        self.last_tokens: int | None = None
        self.said: dict[str, int] = {}  # the text of a user or developer message -> its latest version

    # ------------------------------------------------------------------ helpers

    def _meta(self, so: SourceObject, payload: dict[str, Any] | None = None) -> dict[str, Any]:
        meta: dict[str, Any] = {"line": so.line}
        if so.rank:
            meta["line_rank"] = so.rank
        if so.obj.get("timestamp") is not None:
            meta["timestamp"] = so.obj["timestamp"]
        if payload is not None and payload.get("id") is not None:
            meta["item_id"] = payload["id"]
        return meta

    @staticmethod
    def _created(so: SourceObject) -> Any:
        return parse_time(so.obj.get("timestamp"))

    def custom(self, so: SourceObject, type_: str, data: Any) -> None:
        self.b.custom(type_, data, self._meta(so), key=so.key, line=so.line, created_at=self._created(so))

    def _assistant_side(self, version: int | None) -> None:
        """An event of the model's response: collect it, and give the response its usage."""
        if version is None:
            return
        if not self.run:
            self.run_has_usage = False
        self.run.append(version)
        if self.pending_usage is not None and not self.run_has_usage:
            self.b.annotate(version, self.pending_usage)
            self.pending_usage = None
            self.run_has_usage = True

    def _model(self, meta: dict[str, Any]) -> None:
        if self.model is not None:
            meta["model"] = self.model

    def _close_run(self) -> None:
        self.run = []

    # ------------------------------------------------------------------ lines

    def session_meta(self, so: SourceObject, payload: dict[str, Any]) -> None:
        instructions = payload.get("instructions")
        base = payload.get("base_instructions")
        if not (isinstance(instructions, str) and instructions) and isinstance(base, dict):
            instructions = base.get("text")
        if isinstance(instructions, str) and instructions:
            self.b.add("system", {"text": instructions}, self._meta(so), key=so.key, index="instructions",
                       line=so.line, created_at=self._created(so))
        self.custom(so, "codex:session_meta", so.obj)

    def response_item(self, so: SourceObject, item: dict[str, Any]) -> None:
        itype = item.get("type")
        created = self._created(so)
        meta = self._meta(so, item)
        key = so.key
        if itype == "message":
            role = item.get("role")
            content = _content(item.get("content"), meta)
            rest = {k: v for k, v in item.items() if k not in ("type", "role", "content", "id")}
            if rest:
                meta["item_extra"] = rest
            if role == "assistant":
                self._model(meta)
                self._assistant_side(self.b.message("assistant", content, meta, key=key, line=so.line,
                                                    created_at=created))
            elif role == "system":
                text = "\n".join(b["text"] for b in content if b.get("type") == "text")
                self.b.add("system", {"text": text}, meta, key=key, line=so.line, created_at=created)
            else:
                self._close_run()
                if role != "user":
                    meta["source_role"] = role
                version = self.b.message("user", content, meta, key=key, line=so.line, created_at=created)
                if version is not None:
                    self.said[_said(item)] = version
        elif itype in ("reasoning", "web_search_call", "compaction", "compaction_summary"):
            self._model(meta)
            self._assistant_side(self.b.message("assistant", [dict(item)], meta, key=key, line=so.line,
                                                created_at=created))
        elif itype in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = call_id_or(self.b, item.get("call_id") or item.get("id"), f"{FORMAT}:{key}", meta, so.line,
                                 f"{itype} without call_id")
            if itype == "function_call":
                name = item.get("name")
                input_, ok = parse_arguments(item.get("arguments", {}))
                if not ok:
                    meta["arguments_wrapped"] = True
            elif itype == "custom_tool_call":
                name = item.get("name")
                input_ = {"input": item.get("input")}
                meta["custom_tool_call"] = True
            else:
                name = "local_shell"
                action = item.get("action")
                input_ = action if isinstance(action, dict) else {"action": action}
            name = tool_name(name, meta)
            rest = {k: v for k, v in item.items() if k not in ("type", "call_id", "id", "name", "arguments", "input",
                                                               "action")}
            if rest:
                meta["item_extra"] = rest
            self._model(meta)
            self._assistant_side(self.b.tool_call(call_id, name, input_, meta, key=key, line=so.line,
                                                  created_at=created))
        elif itype in ("function_call_output", "custom_tool_call_output"):
            self._close_run()
            call_id = call_id_or(self.b, item.get("call_id"), f"{FORMAT}:{key}", meta, so.line,
                                 f"{itype} without call_id")
            output, is_error = _output(item.get("output"), meta)
            rest = {k: v for k, v in item.items() if k not in ("type", "call_id", "output")}
            if rest:
                meta["item_extra"] = rest
            self.b.tool_result(call_id, output, is_error, meta, key=key, line=so.line, created_at=created)
        else:
            self.custom(so, f"codex:{itype if isinstance(itype, str) else 'response_item'}", so.obj)

    def compacted(self, so: SourceObject, payload: dict[str, Any]) -> None:
        self._close_run()
        meta = self._meta(so)
        summary = payload.get("message")
        if not isinstance(summary, str):
            summary = ""
            meta["summary_missing"] = True
        rest = {k: v for k, v in payload.items() if k not in ("message", "trigger")}
        if rest:
            meta["compacted"] = rest  # replacement_history, window ids, …
        trigger = payload.get("trigger")
        if trigger is None:
            meta["trigger_recorded"] = False
        elif not isinstance(trigger, str):
            meta["source_trigger"] = trigger
            trigger = None
        resent = self._resent(payload.get("replacement_history"), summary)
        if resent:
            meta[RESENT_KEY] = resent
        self.b.compaction(summary, self.b.next_version, meta, tokens_before=self.last_tokens,
                          trigger=_TRIGGERS.get(trigger or "auto", "auto"), summarizer=FORMAT, key=so.key,
                          line=so.line, created_at=self._created(so))

    def _resent(self, history: Any, summary: str) -> list[int]:
        """The earlier messages Codex's replacement history sends again after the compaction
        (the user's and the developer's; the summary is the view's own), by version."""
        versions: set[int] = set()
        for item in history if isinstance(history, list) else ():
            if not (isinstance(item, dict) and item.get("type", "message") == "message"
                    and item.get("role") in ("user", "developer")):
                continue
            version = self.said.get(_said(item)) if _said(item) != summary.strip() else None
            if version is not None:
                versions.add(version)
        return sorted(versions)

    def event_msg(self, so: SourceObject, payload: dict[str, Any]) -> None:
        etype = payload.get("type")
        if etype == "token_count":
            info = payload.get("info")
            if isinstance(info, dict):
                last = info.get("last_token_usage")
                usage = {"usage": last if isinstance(last, dict) else info, "token_count": info}
                if isinstance(last, dict) and as_int(last.get("total_tokens")) is not None:
                    self.last_tokens = last["total_tokens"]
                if self.usage_records:
                    pass  # the response already has its own usage, from its token_usage_record
                elif self.run and not self.run_has_usage:
                    self.b.annotate(self.run[0], usage)
                    self.run_has_usage = True
                else:
                    self.pending_usage = usage
        self.custom(so, f"codex:{etype if isinstance(etype, str) else 'event_msg'}", so.obj)


    def usage_record(self, so: SourceObject, payload: dict[str, Any]) -> None:
        self.usage_records = True
        self.pending_usage = None
        usage = payload.get("usage")
        if isinstance(usage, dict) and self.run and not self.run_has_usage:
            values = {"usage": usage}
            if payload.get("response_id") is not None:
                values["response_id"] = payload["response_id"]
            self.b.annotate(self.run[0], values)
            self.run_has_usage = True
        self.custom(so, "codex:token_usage_record", so.obj)


def _item(item: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One Responses API content item as an Anthropic-shaped block (unknown items kept verbatim)."""
    itype = item["type"]
    if itype in ("input_text", "output_text", "text") and isinstance(item.get("text"), str):
        rest = {k: v for k, v in item.items() if k not in ("type", "text")}
        return {"type": "text", "text": item["text"]}, ({"type": itype, **rest} if rest else {})
    if itype == "input_image" and isinstance(item.get("image_url"), str):
        return data_url_image(item["image_url"]), {k: v for k, v in item.items() if k != "image_url"}
    return dict(item), {}


def _content(content: Any, meta: dict[str, Any]) -> list[dict[str, Any]]:
    return blocks_of(content, meta, _item, "content_types")


def _output(output: Any, meta: dict[str, Any]) -> tuple[str | list[dict[str, Any]], bool]:
    """A function_call_output's output: a string kept as is, content items as blocks."""
    if isinstance(output, str):
        try:
            parsed = json.loads(output) if output.startswith("{") else None
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and isinstance(parsed.get("metadata"), dict):
            code = parsed["metadata"].get("exit_code")
            if as_int(code) is not None:
                meta["exit_code"] = code
        return output, False
    if isinstance(output, list):
        return _content(output, meta), False
    if isinstance(output, dict):
        # FunctionCallOutputPayload {content, success} written as an object
        success = output.get("success")
        content = output.get("content", output.get("output"))
        rest = {k: v for k, v in output.items() if k not in ("content", "output")}
        if rest:
            meta["output_extra"] = rest
        if isinstance(content, str):
            return content, success is False
        if isinstance(content, list):
            return _content(content, meta), success is False
        meta["output_json_encoded"] = True
        return json.dumps(output, ensure_ascii=False), success is False
    meta["output_json_encoded"] = True
    return json.dumps(output, ensure_ascii=False), False
