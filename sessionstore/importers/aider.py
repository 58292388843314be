"""Aider's chat history (``.aider.chat.history.md`` in the repository aider ran in).

The format (Aider-AI/aider, ``aider/io.py``: ``append_chat_history``, ``user_input``,
``ai_output``, ``tool_output``): markdown, appended to as aider runs, one file for every run in
that repository. Each run starts with ``# aider chat started at <YYYY-MM-DD HH:MM:SS>``; then

* ``#### <text>`` lines: what the user typed (one line each; two trailing spaces, markdown's line
  break) — a message, or a command (``/run``, ``/clear``, ``/add`` …);
* ``> <text>`` lines: what aider printed, a line after such a line without a blank between
  continuing it (the command line and banner first: version, models,
  edit format, git repo; then ``Tokens: 2.5k sent, 50 received. Cost: …``, ``Applied edit to
  a.py``, confirmations);
* any other text: the model's reply, as it was written (edits as SEARCH/REPLACE blocks).

What each becomes: one session per run, ``aider-<start>-<digest of its command line>`` (a file
moved or copied elsewhere holds the same sessions; a last run with only its header so far waits,
``InFlight``, for its command line). The header's time (aider's local time, read as UTC:
``started_at_source`` says so) dates the run's events, as the file holds no other
(``created_at_inferred``). User lines → a user message; the reply → an assistant message; the
``> `` lines → a custom event ``aider:output``, not in context (the banner gives the session's
``agent_version``, ``model``, ``edit_format``, ``weak_model``, ``git_repo``; ``Tokens:`` the
reply's ``meta["usage"]`` — aider rounds thousands, ``usage_rounded`` says so — and ``Cost:`` its
``cost``; ``Applied edit to`` its ``meta["applied_edits"]``). Aider calls no tools: its edits are
the reply's text, and ``/run`` and ``!`` commands are the user's (a user message; the output the
user added to the chat is not in the file, ``meta["output_added"]`` says it was). ``/clear`` and
``/reset`` empty the chat: a ``drop`` prune of everything before (rule ``retract``). Other
commands (``/add``, ``/tokens`` …) are custom events ``aider:command``, not in context;
``/ask``, ``/code`` and ``/architect`` among them, as aider writes their text again as the
message it sends (``#### <text>``). Aider's own summarising of a long chat is not written to the
file: nothing to import there.
"""

from __future__ import annotations

import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Final

from .. import events as ev
from ..repository.base import RETRACT_RULE
from .reports import InFlight, ParsedSession, ParsedTranscript, RecoveredLine
from .rules import NAMESPACE, EventBuilder
from .steps import session_metadata

FORMAT: Final = "aider"
_HEADER = re.compile(r"^# aider chat started at (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\s*$")
_TOKENS = re.compile(r"([\d.,]+)(k?) (sent|received|cache write|cache hit)")
_COST = re.compile(r"Cost: \$([\d.]+) message")
_CLEARING: Final = ("/clear", "/reset")
_USAGE_KEYS: Final = {"sent": "input_tokens", "received": "output_tokens", "cache hit": "cache_read_input_tokens",
                      "cache write": "cache_creation_input_tokens"}


def looks_like_text(head: str) -> bool:
    return any(_HEADER.match(line) for line in head.splitlines()[:5])


def parse_file(path: Path) -> ParsedTranscript:
    data = Path(path).read_bytes()
    issues: list[Any] = []
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:  # aider writes with errors="ignore"; another editor may not
        text = data.decode("utf-8", "replace")
        issues.append(RecoveredLine(str(path), data[:exc.start].count(b"\n") + 1, f"invalid UTF-8 at byte "
                                    f"{exc.start}: undecodable bytes replaced by U+FFFD, the rest imported"))
    lines = text.split("\n")
    folder = Path(path).resolve().parent
    runs: list[ParsedSession] = []
    start = None
    for number, line in enumerate(lines, 1):
        if _HEADER.match(line):
            if start is not None:
                runs.append(_run(str(path), folder, lines, start, number - 1, issues))
            start = number
    if start is not None:
        if any(line.startswith("> ") for line in lines[start:]):
            runs.append(_run(str(path), folder, lines, start, len(lines), issues))
        else:  # its id needs the command line aider writes next
            issues.append(InFlight(str(path), start, "run not imported yet: aider has written its header only"))
    count = len(lines) - (1 if text.endswith("\n") else 0)
    if not runs:
        sid = f"aider-{uuid.uuid5(NAMESPACE, str(path)).hex[:8]}"
        return ParsedTranscript(str(path), FORMAT, sid, {"source": FORMAT}, [], issues, count)
    main, *others = runs
    return ParsedTranscript(str(path), FORMAT, main.session_id, main.metadata, main.events, issues, count, others)


def _run(path: str, folder: Path, lines: list[str], first: int, last: int, issues: list[Any]) -> ParsedSession:
    """One run: lines first..last (1-based, the header first)."""
    header = _HEADER.match(lines[first - 1])
    assert header is not None
    started = datetime.fromisoformat(header.group(1)).replace(tzinfo=timezone.utc)
    stamp = header.group(1).replace("-", "").replace(":", "").replace(" ", "T")
    command = next((line for line in lines[first:last] if line.startswith("> ")), "")
    sid = f"aider-{stamp}-{uuid.uuid5(NAMESPACE, command).hex[:8]}"
    metadata: dict[str, Any] = {**session_metadata(FORMAT, path), "agent": "aider", "cwd": str(folder),
                                "started_at": started.isoformat(), "started_at_source": "header (local time)"}
    run = _Run(EventBuilder(FORMAT, sid, path, issues), metadata, started)
    block: list[str] = []
    kind = ""
    at = first + 1
    fenced = False  # inside a code fence of the reply: its lines are the reply's, whatever they start with
    for number in range(first + 1, last + 1):
        line = lines[number - 1]
        if fenced:
            this = "reply"
        elif line.startswith("#### ") or line == "####":
            this = "user"
        else:
            this = "output" if line.startswith("> ") or line == ">" else "blank" if not line.strip() else "reply"
        if this == "reply" and kind == "output":
            this = "output"  # a message of several lines: aider quotes only its first ("> " + text)
        if this == "reply" and line.lstrip().startswith("```"):
            fenced = not fenced
        if this == "blank" and kind == "reply":
            block.append(line)
            continue
        if this != kind or this == "blank":
            run.block(kind, block, at)
            block, kind, at = [], this, number
        if this != "blank":
            block.append(line)
    run.block(kind, block, at)
    return ParsedSession(sid, metadata, run.b.finish())


class _Run:
    def __init__(self, builder: EventBuilder, metadata: dict[str, Any], started: datetime) -> None:
        self.b = builder
        self.metadata = metadata
        self.started: datetime | None = started  # on the first event only: the rest are dated like it
        self.reply: int | None = None  # the version of the last reply, which its Tokens line reports
        self.command: int | None = None  # the version of the last /run, whose output the user may add

    def _time(self) -> datetime | None:
        started, self.started = self.started, None
        return started

    def block(self, kind: str, block: list[str], line: int) -> None:
        if kind == "user":
            self._user("\n".join(_unbreak(b[5:] if b.startswith("#### ") else "") for b in block), line)
        elif kind == "output":
            self._output([_unbreak(b[2:] if b.startswith("> ") else b[1:]) for b in block], line)
        elif kind == "reply":
            text = "\n".join(block).strip("\n")
            if text:
                self.reply = self.b.message("assistant", [{"type": "text", "text": text}], {"line": line},
                                            key=f"L{line}", line=line, created_at=self._time())
                self.command = None

    def _user(self, text: str, line: int) -> None:
        meta: dict[str, Any] = {"line": line}
        command = text.split(maxsplit=1)[0] if text.startswith(("/", "!")) else None
        self.command = None
        targets = [self.b.base_version + i + 1 for i, e in enumerate(self.b.events)
                   if e.kind in ("message", "tool_call", "tool_result")]
        if command in _CLEARING and targets:
            marker = ev.prune(targets, mode="drop", rule=RETRACT_RULE)
            meta.update(reason=f"aider {command}", command=text)
            self.b.add("prune", dict(marker.payload), meta, key=f"L{line}", line=line, created_at=self._time())
        elif command is not None and (command in ("/run", "/test") or command.startswith("!")):
            meta["command"] = command if command.startswith("/") else "!"
            self.command = self.b.message("user", [{"type": "text", "text": text}], meta, key=f"L{line}",
                                          line=line, created_at=self._time())
        elif command is not None:
            self.b.custom("aider:command", {"command": text}, meta, key=f"L{line}", line=line,
                          created_at=self._time())
        else:
            self.b.message("user", [{"type": "text", "text": text}], meta, key=f"L{line}", line=line,
                           created_at=self._time())

    def _output(self, texts: list[str], line: int) -> None:
        for text in texts:
            self._banner(text)
            if text.startswith("Tokens: ") and self.reply is not None:
                usage = {_USAGE_KEYS[what]: round(float(n.replace(",", "")) * (1000 if k else 1))
                         for n, k, what in _TOKENS.findall(text)}
                cost = _COST.search(text)
                values: dict[str, Any] = {"usage": usage, "usage_rounded": any(k for _, k, _ in
                                                                                _TOKENS.findall(text))}
                if cost:
                    values["cost"] = float(cost.group(1))
                self.b.annotate(self.reply, values)
            elif text.startswith("Applied edit to ") and self.reply is not None:
                edits = self.b.meta_of(self.reply).get("applied_edits", [])
                self.b.annotate(self.reply, {"applied_edits": [*edits, text[len("Applied edit to "):]]})
            elif text.startswith("Added ") and "output to the chat" in text and self.command is not None:
                self.b.annotate(self.command, {"output_added": text})
        self.b.custom("aider:output", {"text": "\n".join(texts)}, {"line": line}, key=f"L{line}", line=line,
                      created_at=self._time())

    def _banner(self, text: str) -> None:
        meta = self.metadata
        if text.startswith("Aider v") and "agent_version" not in meta:
            meta["agent_version"] = text[len("Aider v"):].split()[0]
        for prefix, key in (("Main model: ", "model"), ("Model: ", "model"), ("Weak model: ", "weak_model")):
            if text.startswith(prefix) and key not in meta:
                model, _, rest = text[len(prefix):].partition(" with ")
                meta[key] = model
                if key == "model" and rest.endswith(" edit format"):
                    meta["edit_format"] = rest[:-len(" edit format")]
        if text.startswith("Git repo: ") and "git_repo" not in meta:
            meta["git_repo"] = text[len("Git repo: "):]


def _unbreak(text: str) -> str:
    """A line without the two trailing spaces aider writes (markdown's line break)."""
    return text[:-2] if text.endswith("  ") else text
