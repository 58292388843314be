"""SWE-agent trajectories (``trajectories/<user>/<run>/<instance>/<instance>.traj``).

The format (SWE-agent/SWE-agent, ``sweagent/types.py`` and ``sweagent/agent/agents.py``, MIT):
one JSON document ``{trajectory: [step], history: [message], info, replay_config,
environment}``. A step is ``{action, observation, response, thought, execution_time, state,
query, extra_info}``: one model call (``query`` its input, ``response`` its output) and the
command it ran; a history message is ``{role: system|user|assistant|tool, content, agent,
message_type: system_prompt|demonstration|observation|action|thought, thought?, action?,
tool_calls?, tool_call_ids?}``, what the model was sent. What each becomes:

* the history's messages before the first action (the system prompt, the demonstrations,
  the instance's task) → a `system` event and user messages (``meta["message_type"]``);
* each step → an assistant message with its ``thought`` (when it has one), a `tool_call`
  with its ``action`` (``{"command": action}``; the id and name of the history's tool call for
  that step when the model used function calling, else ``swe-agent:step-<n>`` and ``bash``)
  and a `tool_result` with its ``observation``; the step's ``state``, ``execution_time`` and
  ``extra_info`` in the call's meta;
* the history's later messages that no step holds (format errors the agent was told about,
  requeries) → user messages, in their place;
* ``info`` (``exit_status``, ``submission``, ``model_stats``) → session metadata.

SWE-agent's history processors (keeping the last N observations, …) change only what a
request shows, not the file: there is no compaction to import.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from .reading import SourceObject, read_document
from .reports import ParsedTranscript
from .rules import EventBuilder, document_session_id, source_meta, text_blocks, text_of, tool_output
from .steps import session_metadata

FORMAT: Final = "swe-agent"


def looks_like_document(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("trajectory"), list) and isinstance(
        value.get("history"), list)


def parse_file(path: Path) -> ParsedTranscript:
    document = read_document(path)
    root = document.root if isinstance(document.root, dict) else {}
    history = document.objects("history")
    steps = document.objects("trajectory")
    # known by what it holds, not its name (a renamed or moved file is the same run): the messages
    # before the first action — the system prompt, demonstrations, the instance's task — which
    # SWE-agent writes once and which differ between instances
    actions = [so for so in history if so.obj.get("role") == "assistant"]
    first_action = history.index(actions[0]) if actions else len(history)
    anchor = [so.obj for so in history[:first_action]] or (steps[0].obj if steps else None)
    sid = document_session_id(FORMAT, anchor)
    metadata: dict[str, Any] = {**session_metadata(FORMAT, path), "instance": Path(path).stem}
    info = root.get("info") if isinstance(root.get("info"), dict) else {}
    for key in ("exit_status", "submission", "model_stats", "swe_agent_version", "swe_agent_hash"):
        if info.get(key) is not None:
            metadata[key] = info[key]
    b = EventBuilder(FORMAT, sid, str(path), document.issues)
    for so in history[:first_action]:
        _prompt(b, so)
    # what the history holds after the first action: per step, the assistant turn, its observation, and
    # anything else (a format error, a requery) that came before the next assistant turn
    between: list[list[SourceObject]] = []
    for so in history[first_action:]:
        if so.obj.get("role") == "assistant":
            between.append([])
        elif so.obj.get("message_type") != "observation" and between:
            between[-1].append(so)
    for n, step in enumerate(steps):
        turn = actions[n].obj if n < len(actions) else {}
        _step(b, step, n, turn)
        for so in between[n] if n < len(between) else []:
            _prompt(b, so)
    return ParsedTranscript(str(path), FORMAT, sid, metadata, b.finish(), document.issues, document.lines)


def _prompt(b: EventBuilder, so: SourceObject) -> None:
    obj = so.obj
    meta = source_meta(so, message_type=obj.get("message_type"), agent=obj.get("agent"), list="history")
    text = text_of(obj.get("content"), "")  # a string, or content parts [{type: text, text}]
    if obj.get("role") == "system":
        b.add("system", {"text": text}, meta, key=f"H{so.index}", line=so.line)
    else:
        if obj.get("role") != "user":
            meta["source_role"] = obj.get("role")
        b.message("user", text_blocks(text), meta, key=f"H{so.index}", line=so.line)


def _step(b: EventBuilder, so: SourceObject, n: int, turn: dict[str, Any]) -> None:
    step = so.obj
    meta = source_meta(so, step=n, list="trajectory")
    thought = step.get("thought") if isinstance(step.get("thought"), str) else ""
    if thought.strip():
        b.message("assistant", text_blocks(thought), dict(meta), key=f"S{n}", index="thought", line=so.line)
    calls = turn.get("tool_calls") if isinstance(turn.get("tool_calls"), list) else []
    call = calls[0] if calls and isinstance(calls[0], dict) else {}
    function = call.get("function") if isinstance(call.get("function"), dict) else {}
    call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"{FORMAT}:step-{n}"
    name = function.get("name") if isinstance(function.get("name"), str) else "bash"
    call_meta = dict(meta)
    for key in ("state", "execution_time", "extra_info"):
        if step.get(key) not in (None, {}, ""):
            call_meta[key] = step[key]
    if isinstance(step.get("response"), str) and step["response"] != thought:
        call_meta["response"] = step["response"]
    if function.get("arguments") is not None:
        call_meta["arguments"] = function["arguments"]
    action = step.get("action") if isinstance(step.get("action"), str) else tool_output(step.get("action"), call_meta)
    b.tool_call(call_id, name, {"command": action}, call_meta, key=f"S{n}", index="call", line=so.line)
    result_meta = dict(meta)
    b.tool_result(call_id, tool_output(step.get("observation"), result_meta), False, result_meta, key=f"S{n}",
                  index="result", line=so.line)
