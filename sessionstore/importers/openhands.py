"""OpenHands trajectories (a JSON list of events) and evaluation output (JSONL, one instance a line).

The format (All-Hands-AI/OpenHands, ``openhands/events/serialization``, MIT): each event is
``{id, timestamp, source: user|agent|environment, message, …}`` and either an action
(``action``: ``message``, ``system``, ``run``, ``run_ipython``, ``read``, ``edit``, ``think``,
``browse_interactive``, ``call_tool_mcp``, ``finish``, ``condensation``, …, with ``args``, and
``tool_call_metadata`` ``{function_name, tool_call_id, model_response, total_calls_in_response}``
when the model called a tool) or an observation (``observation``, ``content``, ``extras``, and
``cause``: the id of the action it answers). A trajectory file (``save_trajectory_path``, the
GUI's download) is the list; an evaluation's ``output.jsonl`` holds one instance a line
``{instance_id, instruction, history: [events], metadata, metrics, test_result, …}``, each a
session of its own (``<instance id>:<digest of its metadata>``). The issue resolver's
``output.jsonl`` (``openhands/resolver``, ``ResolverOutput``) is alike, one issue a line
``{issue: {owner, repo, number, title, body}, issue_type?, instruction, base_commit, git_patch,
history, metrics, success, success_explanation | result_explanation, comment_success?, error}``:
a session ``<owner>/<repo>#<number>:<digest of its outcome>`` titled by the issue. Its older
``history`` items have no ``id``, ``source`` or ``cause``, and their ``args`` / ``extras`` are
the item's own fields (``{"command": "ls", "thought": …, "action": "run"}``, then
``{"content": …, "exit_code": 0, "observation": "run"}``): each is numbered by its place in the
history, an observation answers the latest action not yet answered before it, and a message
is the user's when it is the history's first, the agent's after. What each event becomes:

* ``system`` → a `system` event (its ``content``); ``message`` → a user or assistant message
  (``args.content``, image URLs as image blocks);
* an action the model called (``tool_call_metadata``), or one an observation answers → a
  `tool_call` (the tool call's id and function name, else ``openhands:<id>`` and the action
  type; input: the action's ``args`` without ``thought``), after an assistant message with
  its ``thought`` when it has one (once per model response); ``finish`` (the agent's last
  word) and ``think`` alike;
* an observation answering such an action (``cause``) → its `tool_result` (``content``;
  ``is_error`` for ``error`` observations and a failed exit code); the model response's own
  token usage (``tool_call_metadata.model_response.usage``) in the call's ``meta["usage"]``, with
  its ``model`` and ``response_id`` (an event's ``llm_metrics`` are running totals over the
  session, not this call's, and are not read);
* ``condensation`` (a condenser's decision: ``forgotten_event_ids`` or
  ``forgotten_events_start_id``..``forgotten_events_end_id``, ``summary``, ``summary_offset``)
  → a `compaction` event: ``first_kept_version`` = the first event after the forgotten ones
  (never between a call and its result), the messages OpenHands kept before them (the task)
  as ``details.restored``, summary = its summary (empty when the condenser only forgot);
* anything else (agent state changes, recalls, observations of nothing, condensation
  requests) → custom events ``openhands:<action or observation>``, not in context.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from ..errors import TranscriptError
from .reading import SourceObject, read_document, read_objects
from .reports import ParsedSession, ParsedTranscript
from .rules import (EventBuilder, as_int, as_list, data_url_image, document_session_id, first_kept_after, parse_time,
                    source_meta, text_blocks, tool_output)
from .steps import session_metadata

FORMAT: Final = "openhands"
_RESOLVER_KEYS: Final = ("issue", "issue_type", "base_commit", "git_patch", "success", "success_explanation",
                         "result_explanation", "comment_success")
# The fields of an older, flat history item that are the event's, not its args or extras.
_EVENT_KEYS: Final = frozenset({"id", "timestamp", "source", "message", "action", "observation", "cause",
                                "tool_call_metadata", "llm_metrics", "content", "args", "extras", "success"})
_UNCAUSED: Final = frozenset({"agent_state_changed", "null", "recall"})  # observations that answer no action
_QUIET: Final = frozenset({"change_agent_state", "recall", "condensation_request", "null", "pause", "resume"})


def _event_like(value: Any) -> bool:
    return (isinstance(value, dict) and "id" in value and isinstance(value.get("source"), str)
            and (isinstance(value.get("action"), str) or isinstance(value.get("observation"), str)))


def looks_like_document(value: Any) -> bool:
    """A trajectory: a list of events."""
    return isinstance(value, list) and bool(value) and all(_event_like(v) for v in value[:5])


def _flat_event_like(value: Any) -> bool:
    """An older history item: an action or an observation without an id or a source."""
    return isinstance(value, dict) and (isinstance(value.get("action"), str)
                                        or isinstance(value.get("observation"), str))


def looks_like(obj: Any) -> bool:
    """One line of an evaluation's (or the issue resolver's) output: an instance and its history."""
    history = obj.get("history") if isinstance(obj, dict) else None
    if not isinstance(history, list):
        return False
    if "instance_id" in obj:
        return not history or _event_like(history[0]) or isinstance(history[0], list)
    return _resolved_issue(obj) is not None and (not history or _flat_event_like(history[0]))


def _resolved_issue(obj: dict[str, Any]) -> str | None:
    """``owner/repo#number`` of a resolver output line, else None."""
    issue = obj.get("issue")
    if not isinstance(issue, dict) or not ("git_patch" in obj or "instruction" in obj):
        return None
    owner, repo, number = issue.get("owner"), issue.get("repo"), issue.get("number")
    return f"{owner}/{repo}#{number}" if isinstance(owner, str) and isinstance(repo, str) else None


def parse_file(path: Path) -> ParsedTranscript:
    with open(path, "rb") as fh:
        head = fh.read(64).lstrip(b"\xef\xbb\xbf \t\r\n")
    if head.startswith(b"["):
        document = read_document(path)
        events = document.objects("")
        sid = document_session_id(FORMAT, events[0].obj if events else None)  # its content names it, not its file
        metadata = session_metadata(FORMAT, path)
        b = EventBuilder(FORMAT, sid, str(path), document.issues)
        _History(b).read(events)
        return ParsedTranscript(str(path), FORMAT, sid, metadata, b.finish(), document.issues, document.lines)
    source = read_objects(path)
    sessions: list[ParsedSession] = []
    for so in source.objects:
        obj = so.obj
        history = obj.get("history")
        if not isinstance(history, list):
            source.issues.append(TranscriptError(str(path), so.line,
                                                 "an evaluation output line without a history list"))
            continue
        resolved = _resolved_issue(obj) if "instance_id" not in obj else None
        instance = resolved or str(obj.get("instance_id"))
        # a resolver run names no run: its outcome (patch, costs) tells two runs on one issue apart
        anchor = obj.get("metadata") if resolved is None else {k: obj.get(k) for k in (
            "issue", "base_commit", "git_patch", "metrics")}
        sid = f"{instance}:{document_session_id('run', anchor)[4:]}"
        metadata = {**session_metadata(FORMAT, path), "line": so.line,
                    "instance_id": obj.get("instance_id") if resolved is None else resolved}
        for key in ("instruction", "metadata", "metrics", "test_result", "error", "report", *_RESOLVER_KEYS):
            if obj.get(key) is not None:
                metadata[key] = obj[key]
        if resolved is not None and isinstance(obj["issue"].get("title"), str):
            metadata["title"] = obj["issue"]["title"]
        if isinstance(obj.get("metadata"), dict) and isinstance(obj["metadata"].get("llm_config"), dict):
            model = obj["metadata"]["llm_config"].get("model")
            if isinstance(model, str):
                metadata["model"] = model
        b = EventBuilder(FORMAT, sid, str(path), source.issues)
        # events of a line have no lines of their own: each is its line, and its index in the history
        items = [SourceObject(so.line, 0, e, i) for i, e in enumerate(_numbered(_flat(history)))
                 if isinstance(e, dict)]
        _History(b).read(items)
        sessions.append(ParsedSession(sid, metadata, b.finish()))
    if not sessions:
        return ParsedTranscript(str(path), FORMAT, Path(path).stem, session_metadata(FORMAT, path),
                                [], source.issues, source.lines)
    main = sessions[0]
    return ParsedTranscript(str(path), FORMAT, main.session_id, main.metadata, main.events, source.issues,
                            source.lines, sessions[1:])


def _ref(value: Any) -> str | int | None:
    """An event's ``id`` or an observation's ``cause`` as a key that links the two: an integer or
    a string; any other value links nothing."""
    return value if isinstance(value, str) or as_int(value) is not None else None


def _flat(history: list[Any]) -> list[Any]:
    """Older evaluation output kept (action, observation) pairs; newer, the events."""
    flat: list[Any] = []
    for item in history:
        flat.extend(item if isinstance(item, list) else [item])
    return flat


def _numbered(history: list[Any]) -> list[Any]:
    """Older items (no ``id``, ``source``, ``args`` or ``extras``) as the events they were: numbered by
    their place, each observation (but a state change) caused by the latest action before it not yet
    answered (a message is none), a message
    the user's when it opens the history, and the item's own fields its args or extras."""
    if not any(isinstance(e, dict) and "id" not in e and "source" not in e for e in history):
        return history
    out: list[Any] = []
    waiting: list[int] = []  # actions not answered yet, latest last
    for i, item in enumerate(history):
        if not isinstance(item, dict) or "id" in item or "source" in item:
            out.append(item)
            continue
        event = {k: v for k, v in item.items() if k in _EVENT_KEYS}
        rest = {k: v for k, v in item.items() if k not in _EVENT_KEYS}
        event["id"] = i
        if isinstance(item.get("action"), str):
            event["source"] = "user" if item["action"] == "message" and i == 0 else "agent"
            if "args" not in item:
                event["args"] = {**rest, **({"content": item["content"]} if "content" in item else {})}
                event.pop("content", None)
            if item["action"] != "message":
                waiting.append(i)
        elif isinstance(item.get("observation"), str):
            event["source"] = "environment"
            if "extras" not in item:
                event["extras"] = rest
            if "cause" not in item and waiting and item["observation"] not in _UNCAUSED:
                event["cause"] = waiting.pop()
        out.append(event)
    return out


class _History:
    def __init__(self, builder: EventBuilder) -> None:
        self.b = builder
        self.versions: dict[str | int, int] = {}  # event id (`_ref`) -> version of the first event made from it
        self.calls: dict[str | int, str] = {}  # action id (`_ref`) -> call id of its tool_call
        self.responses: set[str] = set()  # model responses whose thought was imported

    def read(self, items: list[SourceObject]) -> None:
        answered = {_ref(e.obj.get("cause")) for e in items if e.obj.get("observation") is not None} - {None}
        for so in items:
            obj = so.obj
            if isinstance(obj.get("action"), str):
                self.action(so, obj, _ref(obj.get("id")) in answered)
            elif isinstance(obj.get("observation"), str):
                self.observation(so, obj)
            else:
                self.b.issue(so.line, "not an OpenHands event: neither an action nor an observation")

    def _meta(self, so: SourceObject, obj: dict[str, Any]) -> dict[str, Any]:
        return source_meta(so, event_id=obj.get("id"), source=obj.get("source"), timestamp=obj.get("timestamp"))

    def action(self, so: SourceObject, obj: dict[str, Any], answered: bool) -> None:
        b = self.b
        kind = obj["action"]
        args = obj.get("args") if isinstance(obj.get("args"), dict) else {}
        meta = self._meta(so, obj)
        created = parse_time(obj.get("timestamp"))
        key = f"E{obj.get('id')}" if obj.get("id") is not None else so.key
        start = b.next_version
        version: int | None
        if kind == "system":
            version = b.add("system", {"text": str(args.get("content", ""))}, {**meta, "args": {
                k: v for k, v in args.items() if k != "content"}}, key=key, line=so.line, created_at=created)
        elif kind == "message" and obj.get("tool_call_metadata") is None:
            role = "user" if obj.get("source") == "user" else "assistant"
            blocks = text_blocks(args.get("content"))
            blocks += [data_url_image(u) for u in as_list(args.get("image_urls")) if isinstance(u, str)]
            version = b.message(role, blocks, meta, key=key, line=so.line, created_at=created)
        elif kind == "condensation":
            version = self.condensation(so, obj, args, meta, key, created)
        elif kind in _QUIET and obj.get("tool_call_metadata") is None:
            version = b.custom(f"{FORMAT}:{kind}", obj, meta, key=key, line=so.line, created_at=created)
        elif obj.get("tool_call_metadata") is not None or answered or kind in ("finish", "think"):
            version = self.call(so, obj, kind, args, meta, key, created)
        else:
            version = b.custom(f"{FORMAT}:{kind}", obj, meta, key=key, line=so.line, created_at=created)
        if version is not None and _ref(obj.get("id")) is not None:
            self.versions[obj.get("id")] = start

    def call(self, so: SourceObject, obj: dict[str, Any], kind: str, args: dict[str, Any], meta: dict[str, Any],
             key: str, created: Any) -> int | None:
        b = self.b
        tcm = obj.get("tool_call_metadata") if isinstance(obj.get("tool_call_metadata"), dict) else {}
        response = tcm.get("model_response") if isinstance(tcm.get("model_response"), dict) else {}
        response_id = response.get("id") if isinstance(response.get("id"), str) else None
        thought = args.get("thought")
        if isinstance(thought, str) and thought and response_id not in self.responses:
            b.message("assistant", text_blocks(thought), dict(meta), key=key, index="thought", line=so.line,
                      created_at=created)
        if response_id is not None:
            self.responses.add(response_id)
            meta["response_id"] = response_id
        if isinstance(response.get("model"), str):
            meta["model"] = response["model"]
        usage = response.get("usage")
        if isinstance(usage, dict):
            meta["usage"] = usage
        call_id = tcm.get("tool_call_id") if isinstance(tcm.get("tool_call_id"), str) else f"{FORMAT}:{obj.get('id')}"
        name = tcm.get("function_name") if isinstance(tcm.get("function_name"), str) else kind
        meta["action"] = kind
        input_ = {k: v for k, v in args.items() if k != "thought"}
        version = b.tool_call(call_id, name, input_, meta, key=key, line=so.line, created_at=created)
        if version is not None and _ref(obj.get("id")) is not None:
            self.calls[obj.get("id")] = call_id
        return version

    def observation(self, so: SourceObject, obj: dict[str, Any]) -> None:
        kind = obj["observation"]
        meta = self._meta(so, obj)
        created = parse_time(obj.get("timestamp"))
        key = f"E{obj.get('id')}" if obj.get("id") is not None else so.key
        cause = _ref(obj.get("cause"))
        call_id = self.calls.pop(cause, None) if cause is not None else None
        start = self.b.next_version
        if call_id is None:
            version = self.b.custom(f"{FORMAT}:{kind}", obj, meta, key=key, line=so.line, created_at=created)
        else:
            extras = obj.get("extras") if isinstance(obj.get("extras"), dict) else {}
            meta.update(observation=kind, cause=obj.get("cause"))
            if extras:
                meta["extras"] = extras
            exit_code = as_int((extras.get("metadata") or {}).get("exit_code")) if isinstance(
                extras.get("metadata"), dict) else as_int(extras.get("exit_code"))  # older: on the observation
            is_error = kind == "error" or obj.get("success") is False or (exit_code is not None and exit_code != 0)
            version = self.b.tool_result(call_id, tool_output(obj.get("content"), meta), is_error, meta, key=key,
                                         line=so.line, created_at=created)
        if version is not None and _ref(obj.get("id")) is not None:
            self.versions[obj.get("id")] = start

    def condensation(self, so: SourceObject, obj: dict[str, Any], args: dict[str, Any], meta: dict[str, Any],
                     key: str, created: Any) -> int | None:
        ids = args.get("forgotten_event_ids")
        start, end = as_int(args.get("forgotten_events_start_id")), as_int(args.get("forgotten_events_end_id"))
        forgotten = {i for i in ids if as_int(i) is not None} if isinstance(ids, list) else set()
        if start is not None and end is not None:
            forgotten |= {i for i in self.versions if as_int(i) is not None and start <= i <= end}
        known = [i for i in self.versions if as_int(i) is not None]
        last = max((i for i in forgotten if i in self.versions), default=None)
        after = [i for i in known if last is not None and i > last]
        own = self.b.next_version
        first_kept = min((self.versions[i] for i in after), default=own) if last is not None else own
        first_kept = first_kept_after(self.b.events, first_kept, self.b.base_version)
        first_kept = self.b.keep_from(first_kept, meta)
        head = [self.versions[i] for i in known if last is not None and i < min(forgotten) and i not in forgotten]
        restored = sorted(v for v in head if v < first_kept and self.b.events[v - self.b.base_version - 1].kind
                          == "message")
        meta.update(forgotten=sorted(forgotten), summary_offset=args.get("summary_offset"))
        meta["trigger_recorded"] = False
        summary = args.get("summary") if isinstance(args.get("summary"), str) else ""
        return self.b.compaction(summary, first_kept, meta, tokens_before=None, trigger="auto", summarizer=FORMAT,
                                 details={"restored": restored}, key=key, line=so.line, created_at=created,
                                 clamp=False)
