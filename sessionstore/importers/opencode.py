"""OpenCode sessions: its database (1.x), its storage folder (``~/.local/share/opencode/storage/``) and
``opencode export``.

The format (sst/opencode, ``packages/opencode/src/session/message-v2.ts`` and
``session/index.ts``, MIT): a session ``{id: "ses_…", projectID, directory, title, version,
time, parentID?}`` holds messages (``{id: "msg_…", sessionID, role: user|assistant, time, …}``;
an assistant one adds ``modelID``, ``providerID``, ``tokens``, ``cost``, ``summary``,
``error``), each made of typed parts (``{id: "prt_…", messageID, sessionID, type, …}``). On
disk, ``storage/session/<project>/<session>.json``, ``storage/message/<session>/<message>.json``
and ``storage/part/<message>/<part>.json``, ids sorting in creation order; ``opencode export``
writes ``{info: <session>, messages: [{info, parts}]}``. The session file (or the export) is
the transcript; message and part files are its companions. What each part becomes:

* user ``text`` parts (not ``ignored``) and image ``file`` parts → one user message;
* assistant ``text`` and ``reasoning`` parts (a thinking block, with the provider's signature
  when its metadata has one) → an assistant message per run of them; ``tool`` parts → a
  `tool_call` (``callID``, ``tool``, ``state.input``) and, once its state is ``completed`` or
  ``error``, a `tool_result` (``output``, or ``error`` with ``is_error``), the results of one
  model step after its calls; an output OpenCode pruned keeps its text, its
  ``time.compacted`` in ``meta["compacted_at"]``;
* ``step-finish`` → the step's ``tokens`` in ``meta["usage"]`` (``input``, ``output``,
  ``cacheRead``, ``cacheWrite``, ``reasoning``) and ``cost`` on the step's first event;
* OpenCode's compaction: the user message holding a ``compaction`` part (OpenCode sends the
  model "What did we do so far?") → a custom event ``opencode:compaction-request``, not in
  context; the assistant message answering it (``summary: true``) → a `compaction` event
  whose summary is its text, ``first_kept_version`` its own version (or the first event of
  ``tail_start_id``'s message, where newer versions keep a tail), trigger ``overflow`` /
  ``auto`` / ``manual`` from the request's part, ``tokens_before`` the last step's input;
* ``step-start``, ``snapshot``, ``patch``, ``retry``, ``agent``, ``subtask`` and unknown parts →
  custom events ``opencode:<type>``, not in context.

OpenCode rewrites a message's files while it works (a text part grows as it streams in, a tool
part goes ``pending`` with an empty input, then ``running``, then ``completed``; the message
gets its tokens at each step's end and ``time.completed`` last, once every part is final).
Events are immutable, so a message is imported only once OpenCode is done with it: an
assistant message once it has ``time.completed`` (or a later assistant message exists: OpenCode
answers one at a time, so the earlier one was abandoned), a user message once a later message
exists (its parts are written before the answer starts); the first message not done yet and
everything after it wait for a later import (an `InFlight` warning names it). A user message's
``summary`` (the turn's title and file diffs, which OpenCode rewrites after each step of the
answer) is left out for the same reason.

A message or part file that cannot be read fails its whole session for that import (each
broken file reported with its line; nothing stored changes), as a broken JSON document does.

OpenCode 1.x (1.18.33, recorded in ``tests/fixtures/transcripts/opencode/recorded-1.18.33/``) keeps
the same session, messages and parts in a SQLite database instead (``$XDG_DATA_HOME/opencode/opencode.db``);
`opencode_db` reads its rows back into these objects, and every session of the database is parsed here
as an export's is (the same events: a session imported from its database and from its export is one).
In 1.x each model step is its own assistant message (``finish`` ``tool-calls`` or ``stop``); an
automatic compaction's request keeps a tail (``tail_start_id``, the first message kept), and OpenCode
then adds a ``synthetic`` user text ("Continue if you have next steps…"), imported as the user message
it is to the model.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Final

from ..errors import TranscriptError
from . import opencode_db
from .reading import SourceObject, read_document
from .reports import WHOLE_FILE, InFlight, ParsedSession, ParsedTranscript, TranscriptWarning
from .rules import EventBuilder, as_int, data_url_image, parse_time, rest_of, source_meta, text_blocks
from .steps import session_metadata

FORMAT: Final = "opencode"


def _session_like(value: Any) -> bool:
    return (isinstance(value, dict) and isinstance(value.get("id"), str) and "projectID" in value
            and isinstance(value.get("time"), dict) and "role" not in value and "messageID" not in value)


def looks_like_document(value: Any) -> bool:
    """A session file of the storage folder, or the JSON of ``opencode export``."""
    if isinstance(value, dict) and _session_like(value.get("info")) and isinstance(value.get("messages"), list):
        return True
    return _session_like(value)


def _storage_of(session_file: Path) -> Path | None:
    """The storage folder of ``storage/session/<project>/<session>.json``."""
    if session_file.parent.parent.name == "session":
        return session_file.parent.parent.parent
    return None


def session_file_of(path: Path) -> Path | None:
    """The session file a message or part file of the storage folder belongs to (or the database its
    write-ahead log belongs to)."""
    database = opencode_db.owner(path)
    if database is not None:
        return database
    kind = path.parent.parent.name
    if kind not in ("message", "part") or path.suffix != ".json":
        return None
    storage = path.parent.parent.parent
    try:
        value = json.loads(path.read_bytes())
    except (OSError, ValueError):
        value = {}
    sid = value.get("sessionID") if isinstance(value, dict) else None
    if not isinstance(sid, str):
        sid = path.parent.name if kind == "message" else None
    if not isinstance(sid, str):
        return None
    return next(iter(sorted((storage / "session").glob(f"*/{sid}.json"))), None)


def parse_file(path: Path) -> ParsedTranscript:
    if opencode_db.looks_like_database(Path(path)):
        return _parse_database(Path(path))
    document = read_document(path)
    root = document.root
    issues = document.issues
    if isinstance(root, dict) and isinstance(root.get("info"), dict):  # an export
        info = root["info"]
        messages = [(so, so.obj.get("info"), so.obj.get("parts")) for so in document.objects("messages")]
    else:
        info = root if isinstance(root, dict) else {}
        messages = _stored_messages(Path(path), info, issues)
    session = _session(str(path), info, messages, issues, Path(path).stem)
    return ParsedTranscript(str(path), FORMAT, session.session_id, session.metadata, session.events, issues,
                            document.lines)


def _parse_database(path: Path) -> ParsedTranscript:
    """Every session of OpenCode 1.x's database: the oldest is the transcript's own, the others beside it
    (`ParsedTranscript.branches` with no fork: sessions of their own)."""
    issues: list[TranscriptError] = []
    read = opencode_db.read_sessions(path, issues)
    sessions = [_session(str(path), info, messages, issues, "") for info, messages in read]
    first = sessions[0] if sessions else ParsedSession("", session_metadata(FORMAT, path), [])
    rows = sum(len(messages) for _, messages in read) + len(read)  # a database has no lines: its rows read
    return ParsedTranscript(str(path), FORMAT, first.session_id, first.metadata, first.events, issues, rows,
                            sessions[1:])


def _session(path: str, info: dict[str, Any], messages: list[tuple[SourceObject, Any, Any]],
             issues: list[TranscriptError], default_id: str) -> ParsedSession:
    """One session from its export-shaped info and messages (a file, a storage folder or a database)."""
    sid = info.get("id") if isinstance(info.get("id"), str) and info.get("id") else default_id
    metadata = session_metadata(FORMAT, path)
    for src, dst in (("title", "title"), ("directory", "cwd"), ("projectID", "project_id"), ("version",
                     "opencode_version"), ("parentID", "parent_session"), ("slug", "slug")):
        if info.get(src) is not None:
            metadata[dst] = info[src]
    if isinstance(info.get("time"), dict) and parse_time(info["time"].get("created")):
        metadata["started_at"] = parse_time(info["time"]["created"]).isoformat()  # type: ignore[union-attr]
    state = _State(EventBuilder(FORMAT, sid, path, issues))
    for so, minfo, parts in _done(path, messages, issues):
        if not isinstance(minfo, dict) or not isinstance(parts, list):
            state.b.issue(so.line, "a message without its info object and parts list")
            continue
        state.message(so, minfo, [p for p in parts if isinstance(p, dict)])
    return ParsedSession(sid, metadata, state.b.finish())


def _stored_messages(path: Path, info: dict[str, Any], issues: list[TranscriptError]
                     ) -> list[tuple[SourceObject, Any, list[Any]]]:
    """Each message of a storage folder's session with its parts, in id (creation) order.

    A message or part file that cannot be read (OpenCode was writing it, a disk fault) fails the
    whole session for this import, as a broken JSON document does: imported without it, the
    session would hold events a later import, with the file repaired, could no longer extend."""
    storage = _storage_of(path)
    sid = info.get("id")
    if storage is None or not isinstance(sid, str):
        return []
    found = []
    broken = 0
    for message_file in sorted((storage / "message" / sid).glob("*.json")):
        doc = _companion(message_file, issues)
        broken += doc is None
        if doc is None:
            continue
        parts = []
        mid = doc.get("id") if isinstance(doc.get("id"), str) else message_file.stem
        for part_file in sorted((storage / "part" / mid).glob("*.json")):
            part = _companion(part_file, issues)
            broken += part is None
            if part is not None:
                parts.append(part)
        found.append((SourceObject(1, 0, doc, None), doc, parts))
    if broken:
        issues.append(TranscriptError(str(path), WHOLE_FILE, f"session {sid} not imported: {broken} of its message "
                                                             "or part files cannot be read (reported above); nothing "
                                                             "stored was changed"))
        return []
    return found


def _companion(path: Path, issues: list[TranscriptError]) -> dict[str, Any] | None:
    """A message or part file's object; None (reported) when it is not one."""
    doc = read_document(path)
    issues.extend(doc.issues)
    if isinstance(doc.root, dict):
        return doc.root
    if all(isinstance(i, TranscriptWarning) for i in doc.issues):  # it parsed: a JSON value of another type
        issues.append(TranscriptError(str(path), 1, "not a JSON object: not an OpenCode message or part"))
    return None


def _done(path: str, messages: list[tuple[SourceObject, Any, Any]], issues: list[TranscriptError]
          ) -> list[tuple[SourceObject, Any, Any]]:
    """The messages OpenCode is done writing, up to the first it is still writing (see the module's
    docstring); that one is reported as an `InFlight` warning."""
    roles = [info.get("role") if isinstance(info, dict) else None for _, info, _ in messages]
    for i, (so, info, _) in enumerate(messages):
        if not isinstance(info, dict):
            continue  # reported when it is read
        later = roles[i + 1:]
        if info.get("role") == "assistant":
            done = _completed(info) or "assistant" in later
        else:
            done = bool(later)
        if not done:
            waiting = "its completion" if info.get("role") == "assistant" else "the answer to start"
            after = f" and {len(messages) - i - 1} after it" if i + 1 < len(messages) else ""
            issues.append(InFlight(path, so.line, f"message {info.get('id')}{after} not imported yet: OpenCode is "
                                                  f"still writing it (waiting for {waiting})"))
            return messages[:i]
    return messages


def _completed(info: dict[str, Any]) -> bool:
    return isinstance(info.get("time"), dict) and info["time"].get("completed") is not None


class _State:
    def __init__(self, builder: EventBuilder) -> None:
        self.b = builder
        self.first_version: dict[str, int] = {}  # message id -> version of its first event
        self.requests: dict[str, dict[str, Any]] = {}  # compaction request message id -> its compaction part
        self.last_input: int | None = None

    def message(self, so: SourceObject, info: dict[str, Any], parts: list[dict[str, Any]]) -> None:
        mid = info.get("id") if isinstance(info.get("id"), str) else so.key
        self.first_version[mid] = self.b.next_version
        created = parse_time((info.get("time") or {}).get("created") if isinstance(info.get("time"), dict) else None)
        meta = source_meta(so, message_id=mid)
        if info.get("role") == "assistant":
            if isinstance(info.get("modelID"), str):
                meta["model"] = info["modelID"]
            if info.get("providerID") is not None:
                meta["provider"] = info["providerID"]
            if info.get("summary") is True:
                self._summary(so, info, parts, meta, created)
            else:
                self._assistant(so, info, parts, meta, created)
        else:  # without the summary OpenCode rewrites after each step of the answer
            self._user(so, {k: v for k, v in info.items() if k != "summary"}, parts, meta, created)

    def _custom(self, part: dict[str, Any], meta: dict[str, Any], line: int, created: Any) -> None:
        self.b.custom(f"{FORMAT}:{part.get('type')}", part, dict(meta), key=str(part.get("id")), line=line,
                      created_at=created)

    def _user(self, so: SourceObject, info: dict[str, Any], parts: list[dict[str, Any]], meta: dict[str, Any],
              created: Any) -> None:
        compaction = next((p for p in parts if p.get("type") == "compaction"), None)
        if compaction is not None:
            self.requests[meta["message_id"]] = compaction
            m = {**meta, "info": info}
            self.b.custom(f"{FORMAT}:compaction-request", {"info": info, "parts": parts}, m,
                          key=str(compaction.get("id")), line=so.line, created_at=created)
            return
        blocks: list[dict[str, Any]] = []
        for part in parts:
            ptype = part.get("type")
            if ptype == "text" and not part.get("ignored"):
                blocks.extend(text_blocks(part.get("text")))
            elif ptype == "file" and isinstance(part.get("url"), str) and str(part.get("mime", "")).startswith(
                    "image/"):
                blocks.append(data_url_image(part["url"]))
            elif ptype not in ("text", "file"):
                self._custom(part, meta, so.line, created)
        key = next((str(p.get("id")) for p in parts), str(info.get("id")))
        self.b.message("user", blocks, {**meta, "info": _info_rest(info)}, key=key, line=so.line, created_at=created)

    def _assistant(self, so: SourceObject, info: dict[str, Any], parts: list[dict[str, Any]], meta: dict[str, Any],
                   created: Any) -> None:
        b = self.b
        first = {**meta, "info": _info_rest(info)}
        run: list[dict[str, Any]] = []
        run_key = ""
        step_first: int | None = None
        results: list[tuple[dict[str, Any], str]] = []

        def event_meta() -> dict[str, Any]:
            nonlocal first
            m, first = first, dict(meta)
            return m

        def flush() -> None:
            nonlocal run, step_first
            if run:
                v = b.message("assistant", run, event_meta(), key=run_key, line=so.line, created_at=created)
                step_first = step_first if step_first is not None else v
                run = []

        def close_step() -> None:
            flush()
            for part, call_id in results:
                state = part["state"]
                m = event_meta()
                if isinstance(state.get("time"), dict) and state["time"].get("compacted") is not None:
                    m["compacted_at"] = state["time"]["compacted"]
                if state.get("status") == "completed":
                    out = state.get("output")
                    b.tool_result(call_id, out if isinstance(out, str) else json.dumps(out), False, m,
                                  key=str(part.get("id")), index="result", line=so.line, created_at=created)
                else:
                    b.tool_result(call_id, str(state.get("error", "")), True, m, key=str(part.get("id")),
                                  index="result", line=so.line, created_at=created)
            results.clear()

        for part in parts:
            ptype = part.get("type")
            if ptype in ("text", "reasoning"):
                block = _block(part)
                if block is not None:
                    if not run:
                        run_key = str(part.get("id"))
                    run.append(block)
            elif ptype == "tool":
                flush()
                state = part.get("state") if isinstance(part.get("state"), dict) else {}
                call_id = part.get("callID") if isinstance(part.get("callID"), str) else f"{FORMAT}:{part.get('id')}"
                name = part.get("tool") if isinstance(part.get("tool"), str) else "unknown"
                input_ = state.get("input") if isinstance(state.get("input"), dict) else {}
                m = event_meta()
                m.update({k: state[k] for k in ("title", "metadata", "status") if state.get(k) is not None})
                v = b.tool_call(call_id, name, input_, m, key=str(part.get("id")), line=so.line, created_at=created)
                step_first = step_first if step_first is not None else v
                if state.get("status") in ("completed", "error"):
                    results.append((part, call_id))
            elif ptype == "step-finish":
                close_step()
                tokens = part.get("tokens") if isinstance(part.get("tokens"), dict) else {}
                if step_first is not None and tokens:
                    usage = _usage(tokens)
                    b.annotate(step_first, {"usage": usage, "cost": part.get("cost")})
                    self.last_input = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
                step_first = None
                self._custom(part, meta, so.line, created)
            else:  # step-start, snapshot, patch, retry, agent, …
                if ptype == "step-start":
                    close_step()
                    step_first = None
                self._custom(part, meta, so.line, created)
        close_step()
        if info.get("error") is not None:
            b.custom(f"{FORMAT}:error", info["error"], event_meta(), key=f"{info.get('id')}:error", line=so.line,
                     created_at=created)

    def _summary(self, so: SourceObject, info: dict[str, Any], parts: list[dict[str, Any]], meta: dict[str, Any],
                 created: Any) -> None:
        """An assistant message answering a compaction request: OpenCode's summary."""
        parent = info.get("parentID")
        request = self.requests.get(parent, {}) if isinstance(parent, str) else {}
        text = "\n".join(p["text"] for p in parts if p.get("type") == "text" and isinstance(p.get("text"), str))
        trigger = "overflow" if request.get("overflow") else "manual" if request.get("auto") is False else "auto"
        meta = {**meta, "info": _info_rest(info), "parts": [p for p in parts if p.get("type") != "text"]}
        if not request:
            meta["trigger_recorded"] = False
        own = self.b.next_version
        tail = request.get("tail_start_id")
        first_kept = self.first_version.get(tail, own) if isinstance(tail, str) else own
        tokens = info.get("tokens") if isinstance(info.get("tokens"), dict) else {}
        if tokens:
            meta["usage"] = _usage(tokens)
        self.b.compaction(text, first_kept, meta, tokens_before=self.last_input, trigger=trigger, summarizer=FORMAT,
                          key=str(info.get("id")), line=so.line, created_at=created)


def _info_rest(info: dict[str, Any]) -> dict[str, Any]:
    return rest_of(info, ("id", "sessionID", "role", "tokens", "modelID"))


def _block(part: dict[str, Any]) -> dict[str, Any] | None:
    text = part.get("text")
    if not isinstance(text, str) or not text:
        return None
    if part.get("type") == "text":
        return {"type": "text", "text": text}
    block: dict[str, Any] = {"type": "thinking", "thinking": text}
    metadata = part.get("metadata") if isinstance(part.get("metadata"), dict) else {}
    for provider in metadata.values():
        if isinstance(provider, dict) and isinstance(provider.get("signature"), str):
            block["signature"] = provider["signature"]
    return block


def _usage(tokens: dict[str, Any]) -> dict[str, int]:
    cache = tokens.get("cache") if isinstance(tokens.get("cache"), dict) else {}
    return {"input": as_int(tokens.get("input")) or 0, "output": as_int(tokens.get("output")) or 0,
            "cacheRead": as_int(cache.get("read")) or 0, "cacheWrite": as_int(cache.get("write")) or 0,
            "reasoning": as_int(tokens.get("reasoning")) or 0}
