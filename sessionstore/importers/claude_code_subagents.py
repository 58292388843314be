"""Where Claude Code keeps a session's subagents and how the sessions link up: the files
(``<session>/subagents/agent-<id>.jsonl`` with ``agent-<id>.meta.json``; older ``agent-<id>.jsonl``
beside the main file), the main file a subagent file belongs to (a watcher re-imports that one),
and the links both ways once both are parsed (`link_subagents`, `link_to_parent`), made with the
shared sub-agent steps (`steps.subagent_id`, `steps.subagent_entry`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .reports import ParsedTranscript
from .rules import parse_time
from .steps import subagent_entry, subagent_id

# A compaction: its version, its (mutable) meta and its line's timestamp (`link_subagents` ties the
# summariser's ``agent-acompact-*`` file to it).
Compaction = tuple[int, dict[str, Any], "str | None"]


def is_subagent_path(path: str | Path) -> bool:
    name = Path(path).name
    return name.startswith("agent-") and name.endswith(".jsonl")


def agent_id_of(path: str | Path) -> str:
    return Path(path).name[len("agent-"):-len(".jsonl")]


def first_value(path: Path, key: str) -> Any:
    """`key` of the first line that has it, reading as little of the file as possible."""
    try:
        with open(path, "rb") as fh:
            for raw in fh:
                try:
                    obj = json.loads(raw)
                except ValueError:
                    continue
                if isinstance(obj, dict) and obj.get(key) is not None:
                    return obj[key]
    except OSError:
        return None
    return None


def subagent_files(main_path: str | Path, session_id: str) -> list[Path]:
    """The subagent transcripts of a main session file, newer layout first."""
    main = Path(main_path)
    found: list[Path] = []
    nested = main.parent / main.stem / "subagents"
    if nested.is_dir():
        found.extend(sorted(nested.glob("agent-*.jsonl")))
    for candidate in sorted(main.parent.glob("agent-*.jsonl")):
        if first_value(candidate, "sessionId") == session_id:
            found.append(candidate)
    return found


def parent_path_of(agent_path: str | Path, parent_session: str | None) -> Path | None:
    """Where the main transcript of a subagent file is, if it is there."""
    agent = Path(agent_path)
    if agent.parent.name == "subagents":
        candidate = agent.parent.parent.with_suffix(".jsonl")
    elif parent_session:
        candidate = agent.parent / f"{parent_session}.jsonl"
    else:
        return None
    return candidate if candidate.is_file() else None


def main_file_of(path: Path) -> Path | None:
    """The main transcript a subagent file belongs to (it imports its subagent files), if it is there."""
    if not is_subagent_path(path):
        return None
    parent_sid = first_value(path, "sessionId")
    return parent_path_of(path, parent_sid if isinstance(parent_sid, str) else None)


def agent_meta(agent_path: Path) -> dict[str, Any]:
    meta_path = agent_path.with_name(agent_path.name[:-len(".jsonl")] + ".meta.json")
    try:
        value = json.loads(meta_path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return {}
    return value if isinstance(value, dict) else {}


def last_timestamp(path: Path) -> str | None:
    try:
        lines = path.read_bytes().splitlines()
    except OSError:
        return None
    for raw in reversed(lines):
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict) and isinstance(obj.get("timestamp"), str):
            return obj["timestamp"]
    return None


def role_of(agent_id: str) -> str:
    """``compaction`` for the summariser Claude Code runs to compact (``agent-acompact-*``), else ``subagent``."""
    return "compaction" if agent_id.startswith("acompact") else "subagent"


def link_subagents(parsed: ParsedTranscript, agent_calls: dict[str, str], compactions: list[Compaction]) -> None:
    """List the subagent files beside a main file in its metadata; tie acompact files to compactions."""
    entries: list[dict[str, Any]] = []
    taken: set[int] = set()
    for sub_path in subagent_files(parsed.path, parsed.session_id):
        agent_id = first_value(sub_path, "agentId") or agent_id_of(sub_path)
        sub_sid = subagent_id(parsed.session_id, f"agent-{agent_id}")
        entry = subagent_entry(agent_id, sub_sid, sub_path, role_of(str(agent_id)),
                               agent_calls.get(agent_id) or None)
        if entry["role"] == "compaction":
            last = parse_time(last_timestamp(sub_path))
            for n, (version, meta, stamp) in enumerate(compactions):
                when = parse_time(stamp)
                if n not in taken and last is not None and when is not None and when >= last:
                    taken.add(n)
                    entry["compaction_version"] = version
                    meta["summarizer_session"] = sub_sid
                    break
        entries.append(entry)
    if entries:
        parsed.metadata["subagents"] = entries


def link_to_parent(parsed: ParsedTranscript, parent: ParsedTranscript | None) -> None:
    if parent is None:
        return
    meta = parsed.metadata
    agent_id = meta.get("agent_id")
    calls = parent.metadata.get("agent_calls") or {}
    if agent_id in calls:
        meta["parent_call_id"] = calls[agent_id]
    for entry in parent.metadata.get("subagents") or []:
        if entry.get("session_id") == parsed.session_id and "compaction_version" in entry:
            meta["parent_compaction_version"] = entry["compaction_version"]
    meta["parent_session"] = parent.session_id
