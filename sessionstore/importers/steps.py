"""The steps every format takes, written once: an importer is a recipe of these over its own
record shapes.

Each agent writes its calls, results, metadata and sub-agents in its own shape, but what an
import makes of them is the same everywhere: a call without an id gets a stable made-up one
(and says so), a call without a name is ``unknown``, a message whose content mixes text and
tool blocks becomes one event per tool block and one per run of other blocks (the message's
usage on its first event only), a session's metadata is copied from a head record under our
names, and a sub-agent is a session ``<parent>:<agent>`` linked both ways. Written once, the
formats cannot drift apart on these, and a new format reads only what differs: its records.

The lower rules stay in `rules` (events, ids, times, JSONB-safe values, compaction payloads:
`EventBuilder.compaction`); reading files stays in `reading`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .rules import EventBuilder

# --------------------------------------------------------------------------- calls


def call_id_or(b: EventBuilder, raw: Any, made_up: str, meta: dict[str, Any], line: int, what: str) -> str:
    """A call's (or a result's) id: `raw` when it is one, else `made_up` — stable across
    re-imports, derived from the source position — noted in ``meta["synthetic_call_id"]`` and
    reported as "<what>; given <made_up>", so that the call and its result still pair."""
    if isinstance(raw, str) and raw:
        return raw
    meta["synthetic_call_id"] = True
    b.issue(line, f"{what}; given {made_up!r}")
    return made_up


def tool_name(raw: Any, meta: dict[str, Any] | None = None) -> str:
    """A call's tool name, ``unknown`` when the source has none (what it had kept in
    ``meta["source_name"]`` when `meta` is given)."""
    if isinstance(raw, str) and raw:
        return raw
    if meta is not None:
        meta["source_name"] = raw
    return "unknown"


def object_input(raw: Any, key: str, meta: dict[str, Any] | None = None) -> dict[str, Any]:
    """A call's input as the JSON object a `tool_call` holds: ``{key: raw}`` when it is not one
    (``meta["input_wrapped"]`` says so when `meta` is given)."""
    if isinstance(raw, dict):
        return raw
    if meta is not None:
        meta["input_wrapped"] = True
    return {key: raw}


class Turn:
    """One source message that becomes several events: each tool block its own event, each run
    of other blocks (text, thinking, images) one `message`, in order.

    Every event's meta starts from `base` (plus ``block``: its index in the content, where the
    content has several blocks); `first` (usage, stop reason) goes on the first event made only,
    so that a message's usage is counted once. A run's left-out block fields (`text`'s `rest`)
    go to its ``meta["block_extra"]``; a message with no typed block at all is still a message
    (`empty`).
    """

    def __init__(self, b: EventBuilder, role: str, base: Mapping[str, Any], first: Mapping[str, Any], *, key: str,
                 line: int, created_at: datetime | None, several: bool) -> None:
        self.b = b
        self.role = role
        self.base = base
        self.first = first
        self.key = key
        self.line = line
        self.created_at = created_at
        self.several = several  # whether the content has more than one block: runs name their first
        self.emitted = 0
        self.run: list[dict[str, Any]] = []
        self.run_from = 0
        self.extras: dict[str, Any] = {}

    def meta(self, index: int | None) -> dict[str, Any]:
        """The meta of the next event, made from block `index` (None: the message as a whole)."""
        m = dict(self.base)
        if index is not None:
            m["block"] = index
        if self.emitted == 0:
            m.update(self.first)
        return m

    def text(self, index: int, block: dict[str, Any], rest: Mapping[str, Any] | None = None) -> None:
        """Add a block that is not a tool block to the current run."""
        if not self.run:
            self.run_from = index
        if rest:
            self.extras[str(index)] = rest
        self.run.append(block)

    def flush(self) -> None:
        """End the current run: its blocks become one `message` event."""
        if not self.run:
            return
        m = self.meta(self.run_from if self.several else None)
        if self.extras:
            m["block_extra"] = self.extras
        self.added(self.b.message(self.role, self.run, m, key=self.key, index=f"m{self.run_from}", line=self.line,
                                  created_at=self.created_at))
        self.run, self.extras = [], {}

    def added(self, version: int | None) -> int | None:
        """Count an event the format added itself (a call, a result): `first` went on it."""
        if version is not None:
            self.emitted += 1
        return version

    def empty(self) -> None:
        """The message had no typed block: still a message in the history (an aborted reply)."""
        self.b.message(self.role, [], self.meta(None), key=self.key, index="m", line=self.line,
                       created_at=self.created_at)


# --------------------------------------------------------------------------- session metadata


def session_metadata(fmt: str, path: str | Any) -> dict[str, Any]:
    """The metadata every imported session starts from: which format, which file."""
    return {"source": fmt, "source_path": str(path)}


def pick(record: Mapping[str, Any], names: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, Any]:
    """The fields of `record` that `names` maps (source name -> our name) and that it has (not None)."""
    pairs = names.items() if isinstance(names, Mapping) else names
    return {dst: record[src] for src, dst in pairs if record.get(src) is not None}


def pick_text(record: Mapping[str, Any], names: Mapping[str, str] | Iterable[tuple[str, str]]) -> dict[str, Any]:
    """`pick` for fields that must be text: only non-empty strings are taken."""
    pairs = names.items() if isinstance(names, Mapping) else names
    return {dst: record[src] for src, dst in pairs if isinstance(record.get(src), str) and record[src]}


# --------------------------------------------------------------------------- sub-agents


def subagent_id(parent: str, agent: str) -> str:
    """A sub-agent's session id, ``<parent session>:<agent>``: found from its parent by prefix,
    and stable however the files move."""
    return f"{parent}:{agent}"


def as_subagent(metadata: dict[str, Any], parent: str | None, agent_id: str, role: str = "subagent") -> None:
    """Mark a sub-agent session's metadata: its ``role`` (``subagent``, or ``compaction`` for an
    agent's summariser), ``agent_id`` and ``parent_session``."""
    metadata.update(role=role, agent_id=agent_id, parent_session=parent)


def subagent_entry(agent_id: str, session_id: str, path: Any, role: str, call_id: str | None) -> dict[str, Any]:
    """One entry of a parent's ``metadata["subagents"]``: the agent, its session, its file, its
    role, and the call that started it (when the transcript says)."""
    entry: dict[str, Any] = {"agent_id": agent_id, "session_id": session_id, "path": str(path), "role": role}
    if call_id is not None:
        entry["call_id"] = call_id
    return entry
