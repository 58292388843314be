"""What importing reports: counts, parsed sessions and transcripts, and each file's and run's outcome.

Plain data: nothing here reads a file or touches a store. A `TranscriptError` names the file
and the 1-based line (`WHOLE_FILE`, 0, for the file as a whole); a `TranscriptWarning` says
something was reported but nothing was lost.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from ..errors import TranscriptError
from ..events import NewEvent

FORMATS: Final = ("claude-code", "pi", "codex", "gemini-cli", "opencode", "openhands", "swe-agent", "sessionstore",
                  "copilot-cli", "qwen-code", "cline", "aider", "cursor", "mini-swe-agent")
# A line number of 0 in a TranscriptError means "the file as a whole" (empty file, unknown format).
WHOLE_FILE: Final = 0


class TranscriptWarning(TranscriptError):
    """Reported, but nothing was lost: every other `TranscriptError` in a report means
    something was not imported (what exit status 1 means for ``sessionstore import``)."""


class RecoveredLine(TranscriptWarning):
    """A line read in full despite a defect: two JSON objects glued on one line, undecodable
    bytes replaced, a non-standard constant read as null."""


class InFlight(TranscriptWarning):
    """A record the agent is still writing (a message not yet complete), left for a later import:
    importing only what the agent is done with keeps what is stored from ever changing."""


ON_DIVERGENCE: Final = ("fail", "fork")


@dataclass(slots=True)
class Counts:
    """What a session (or a file) holds, by event kind."""

    messages: int = 0
    tool_calls: int = 0
    tool_results: int = 0
    compactions: int = 0
    system: int = 0
    custom: int = 0

    @property
    def total(self) -> int:
        return self.messages + self.tool_calls + self.tool_results + self.compactions + self.system + self.custom

    def add_kind(self, kind: str) -> None:
        if kind == "message":
            self.messages += 1
        elif kind == "tool_call":
            self.tool_calls += 1
        elif kind == "tool_result":
            self.tool_results += 1
        elif kind == "compaction":
            self.compactions += 1
        elif kind == "system":
            self.system += 1
        else:
            self.custom += 1

    def __add__(self, other: Counts) -> Counts:
        return Counts(self.messages + other.messages, self.tool_calls + other.tool_calls,
                      self.tool_results + other.tool_results, self.compactions + other.compactions,
                      self.system + other.system, self.custom + other.custom)

    @classmethod
    def of(cls, events: Sequence[NewEvent]) -> Counts:
        counts = cls()
        for event in events:
            counts.add_kind(event.kind)
        return counts


@dataclass(slots=True)
class ParsedSession:
    """One session parsed from a file: the file's own, or one of its abandoned branches.

    A branch is stored as a fork of `fork_of` at version `fork_at`; its `events` are only its
    own (versions ``fork_at + 1`` on).
    """

    session_id: str
    metadata: dict[str, Any]
    events: list[NewEvent]
    fork_of: str | None = None
    fork_at: int | None = None

    @property
    def counts(self) -> Counts:
        return Counts.of(self.events)


@dataclass(slots=True)
class ParsedTranscript:
    """What `parse_file` returns: no store involved.

    `events` are the main session's events in append order (event i gets version i + 1);
    `branches` are sessions forked from it (Pi trees with abandoned branches); `issues`
    are the lines that could not be read, with their 1-based line numbers.
    """

    path: str
    format: str
    session_id: str
    metadata: dict[str, Any]
    events: list[NewEvent]
    issues: list[TranscriptError]
    lines: int
    branches: list[ParsedSession] = field(default_factory=list)

    @property
    def sessions(self) -> list[ParsedSession]:
        return [ParsedSession(self.session_id, self.metadata, self.events), *self.branches]

    @property
    def counts(self) -> Counts:
        total = Counts.of(self.events)
        for branch in self.branches:
            total = total + branch.counts
        return total


@dataclass(slots=True)
class SessionImport:
    """What importing one session wrote."""

    session_id: str
    events: int
    added: int
    present: int
    counts: Counts
    created: bool
    forked_from: str | None = None
    fork_version: int | None = None
    diverged_from: str | None = None  # set when this session continues a diverging re-import of that one


@dataclass(slots=True)
class FileImport:
    """One file's import, as a row of the CLI's table (`as_row()`).

    `sessions` are the file's sessions (more than one for a Pi tree with branches);
    `subagents` are the Claude Code subagent files imported with this one (each has
    `parent_path` set). Issues carry the file and the 1-based line (0: the whole file).
    """

    path: str
    format: str | None
    sessions: list[SessionImport] = field(default_factory=list)
    issues: list[TranscriptError] = field(default_factory=list)
    lines: int = 0
    seconds: float = 0.0
    parent_path: str | None = None
    subagents: list[FileImport] = field(default_factory=list)

    @property
    def session_ids(self) -> list[str]:
        return [s.session_id for s in self.sessions]

    @property
    def session_id(self) -> str | None:
        return self.sessions[0].session_id if self.sessions else None

    @property
    def counts(self) -> Counts:
        total = Counts()
        for s in self.sessions:
            total = total + s.counts
        return total

    @property
    def events(self) -> int:
        return sum(s.events for s in self.sessions)

    @property
    def events_added(self) -> int:
        return sum(s.added for s in self.sessions)

    @property
    def events_present(self) -> int:
        return sum(s.present for s in self.sessions)

    @property
    def messages(self) -> int:
        return self.counts.messages

    @property
    def tool_calls(self) -> int:
        return self.counts.tool_calls

    @property
    def tool_results(self) -> int:
        return self.counts.tool_results

    @property
    def compactions(self) -> int:
        return self.counts.compactions

    @property
    def warnings(self) -> list[TranscriptError]:
        """Reported, but nothing was lost (`TranscriptWarning`: recovered lines, a divergence continued in a fork)."""
        return [i for i in self.issues if isinstance(i, TranscriptWarning)]

    @property
    def failures(self) -> list[TranscriptError]:
        """What could not be imported: the file (unknown format, unreadable), lines, or sessions."""
        return [i for i in self.issues if not isinstance(i, TranscriptWarning)]

    @property
    def imported(self) -> bool:
        """The file was recognised and its sessions written (some lines may still have failed)."""
        return self.format is not None and bool(self.sessions)

    @property
    def ok(self) -> bool:
        """Everything in the file is stored (warnings allowed)."""
        return not self.failures

    def as_row(self) -> dict[str, Any]:
        counts = self.counts
        return {"path": self.path, "format": self.format or "unknown", "sessions": ", ".join(self.session_ids),
                "lines": self.lines, "added": self.events_added, "present": self.events_present,
                "messages": counts.messages, "tool_calls": counts.tool_calls, "tool_results": counts.tool_results,
                "compactions": counts.compactions, "issues": len(self.issues), "seconds": round(self.seconds, 3)}


@dataclass(slots=True)
class ImportReport:
    """Every file `import_path` looked at, subagent files included, in import order."""

    files: list[FileImport] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def issues(self) -> list[TranscriptError]:
        return [issue for f in self.files for issue in f.issues]

    @property
    def events_added(self) -> int:
        return sum(f.events_added for f in self.files)

    @property
    def events_present(self) -> int:
        return sum(f.events_present for f in self.files)

    @property
    def session_ids(self) -> list[str]:
        return [sid for f in self.files for sid in f.session_ids]

    @property
    def counts(self) -> Counts:
        total = Counts()
        for f in self.files:
            total = total + f.counts
        return total

    @property
    def warnings(self) -> list[TranscriptError]:
        return [issue for f in self.files for issue in f.warnings]

    @property
    def failures(self) -> list[TranscriptError]:
        return [issue for f in self.files for issue in f.failures]

    @property
    def ok(self) -> bool:
        """Every file imported in full (warnings allowed): what exit status 0 means."""
        return all(f.ok for f in self.files)

    def rows(self) -> list[dict[str, Any]]:
        return [f.as_row() for f in self.files]
