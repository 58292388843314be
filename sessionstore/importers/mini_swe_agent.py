"""mini-SWE-agent trajectories (``*.traj.json``; ``mini`` saves its last run in
``~/.config/mini-swe-agent/last_mini_run.traj.json``).

The format (SWE-agent/mini-swe-agent, ``agents/default.py``: ``serialize``, MIT): one JSON document
``{info: {model_stats: {instance_cost, api_calls}, config: {agent, model, environment, …},
mini_version, exit_status, submission}, messages: [...], trajectory_format}``. ``messages`` is the
chat the model was sent, each with an ``extra`` of mini's own:

* ``mini-swe-agent-1.1`` (2.x, tool calling): OpenAI Chat Completions messages — ``system``,
  ``user``, ``assistant`` with ``tool_calls`` (``extra``: ``actions``, the provider's ``response``
  with its ``usage``, ``cost``, ``timestamp``), ``tool`` (``tool_call_id``; ``extra``:
  ``raw_output``, ``returncode``, ``timestamp``) — and a last ``exit`` message;
* ``mini-swe-agent-1`` (1.x, text-based): the command in a ```` ```bash ```` block of the
  assistant's text, its output the next user message (``<returncode>…</returncode>``,
  ``<output>…</output>``).

What each becomes: ``system`` → a `system` event; ``user`` → a user message; ``assistant`` → an
assistant message of its text, then a `tool_call` per call (its ``arguments`` parsed); ``tool`` →
its `tool_result` (``is_error`` when the return code is not 0); in 1.x the bash block is the call
(id ``mini-swe-agent:<item>``) and the user message that answers it its result; ``exit`` → a
custom event ``mini-swe-agent:exit``, not in context. Usage (``usage`` of the response) and cost go
in the assistant message's meta; times from ``extra.timestamp`` (seconds); the session's metadata
from ``info`` (``agent_version``, ``model``, ``exit_status``, ``submission``, ``instance_cost``,
``api_calls``). mini-SWE-agent keeps the whole history: there is no compaction to import.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from .reading import SourceObject, read_document
from .reports import ParsedTranscript
from .rules import (EventBuilder, as_list, document_session_id, parse_arguments, source_meta, text_blocks, text_of,
                    tool_output)
from .steps import session_metadata

FORMAT: Final = "mini-swe-agent"
_BASH = re.compile(r"```(?:bash|mswea_bash_command)\s*\n(.*?)\n```", re.S)
_RETURNCODE = re.compile(r"\A\s*<returncode>(-?\d+)</returncode>")


def looks_like_document(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("messages"), list)
            and str(value.get("trajectory_format", "")).startswith("mini-swe-agent"))


def parse_file(path: Path) -> ParsedTranscript:
    document = read_document(path)
    root = document.root if isinstance(document.root, dict) else {}
    items = document.objects("messages")
    stem = Path(path).name.removesuffix(".json").removesuffix(".traj")
    sid = document_session_id(stem, items[0].obj if items else None)
    info = root.get("info") if isinstance(root.get("info"), dict) else {}
    stats = info.get("model_stats") if isinstance(info.get("model_stats"), dict) else {}
    config = info.get("config") if isinstance(info.get("config"), dict) else {}
    model = config.get("model") if isinstance(config.get("model"), dict) else {}
    metadata: dict[str, Any] = {**session_metadata(FORMAT, path), "agent": FORMAT,
                                "trajectory_format": root.get("trajectory_format")}
    for key, value in (("agent_version", info.get("mini_version")), ("model", model.get("model_name")),
                       ("exit_status", info.get("exit_status")), ("submission", info.get("submission")),
                       ("instance_cost", stats.get("instance_cost")), ("api_calls", stats.get("api_calls"))):
        if value not in (None, ""):
            metadata[key] = value
    b = EventBuilder(FORMAT, sid, str(path), document.issues)
    pending: str | None = None  # 1.x: the call a bash block made, answered by the next user message
    for so in items:
        pending = _message(b, so, pending)
    return ParsedTranscript(str(path), FORMAT, sid, metadata, b.finish(), document.issues, document.lines)


def _time(extra: dict[str, Any]) -> datetime | None:
    stamp = extra.get("timestamp")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool) and stamp > 0:
        return datetime.fromtimestamp(stamp, tz=timezone.utc)
    return None


def _message(b: EventBuilder, so: SourceObject, pending: str | None) -> str | None:
    obj = so.obj
    role = obj.get("role")
    extra = obj.get("extra") if isinstance(obj.get("extra"), dict) else {}
    created = _time(extra)
    meta = source_meta(so)
    text = text_of(obj.get("content"))
    key = so.key
    if role == "system":
        b.add("system", {"text": text}, meta, key=key, line=so.line, created_at=created)
    elif role == "tool" or (role == "user" and pending is not None and _RETURNCODE.match(text)):
        call_id = obj.get("tool_call_id") if role == "tool" else pending
        code = extra.get("returncode")
        if code is None and (found := _RETURNCODE.match(text)):
            code = int(found.group(1))
        for name in ("returncode", "exception_info"):
            if extra.get(name) not in (None, ""):
                meta[name] = extra[name]
        b.tool_result(str(call_id or ""), tool_output(obj.get("content"), meta), code not in (0, None), meta,
                      key=key, line=so.line, created_at=created)
        return None if role == "user" else pending
    elif role == "user":
        b.message("user", text_blocks(text), meta, key=key, line=so.line, created_at=created)
    elif role == "assistant":
        return _assistant(b, so, obj, extra, text, meta, created)
    else:
        b.custom(f"{FORMAT}:{role if isinstance(role, str) else 'record'}", obj, meta, key=key, line=so.line,
                 created_at=created)
    return pending


def _assistant(b: EventBuilder, so: SourceObject, obj: dict[str, Any], extra: dict[str, Any], text: str,
               meta: dict[str, Any], created: datetime | None) -> str | None:
    response = extra.get("response") if isinstance(extra.get("response"), dict) else {}
    first = dict(meta)
    if isinstance(response.get("usage"), dict):
        first["usage"] = response["usage"]
    if isinstance(response.get("model"), str):
        first["model"] = response["model"]
    if isinstance(extra.get("cost"), (int, float)):
        first["cost"] = extra["cost"]
    calls = [c for c in as_list(obj.get("tool_calls")) if isinstance(c, dict)]
    bash = _BASH.findall(text) if not calls else []
    b.message("assistant", text_blocks(text), first, key=so.key, line=so.line, created_at=created)
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call.get("function"), dict) else {}
        args, parsed = parse_arguments(function.get("arguments"))
        call_meta = dict(meta) if parsed else {**meta, "arguments_unparsed": True}
        b.tool_call(str(call.get("id") or f"{FORMAT}:{so.index}:{i}"), str(function.get("name") or "unknown"), args,
                    call_meta, key=so.key, index=f"call{i}", line=so.line, created_at=created)
    if len(bash) == 1:  # 1.x: exactly one bash block is an action (mini asks again otherwise)
        call_id = f"{FORMAT}:{so.index}"
        b.tool_call(call_id, "bash", {"command": bash[0]}, {**meta, "from_text": True}, key=so.key, index="bash",
                    line=so.line, created_at=created)
        return call_id
    return None
