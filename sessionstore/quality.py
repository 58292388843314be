"""What a model can still know after a compaction: deterministic probes over a history. Pure.

A compaction is judged by what the model keeps, not only by its size. The seeds' rule: what
cannot be re-acquired — the user's requirements, the state of the work, what failed — must
survive; what can be re-read (file contents, search results) may go. Each probe is a piece of
text taken from the events before a compaction that a model continuing the work needs, and it
counts as *kept* when that text is in the rendered view (`recall`). The extractors:

- ``user_requests``: every text the user typed (`summarizers.typed.typed_messages`: not tool
  results, not `<system-reminder>` or slash-command wrappers, not an agent's summary); kept when
  its first `NEEDLE_CHARS` characters are in the view (whitespace and case aside);
- ``modified_files``: every path an edit, write or patch call changed, as the tool catalog knows
  them (`compaction.tools`: Claude Code's Edit/Write/MultiEdit, Pi's and OpenCode's edit/write,
  Codex's and OpenCode's patches — each file a patch names —, Gemini CLI's replace/write_file,
  OpenHands' and SWE-agent's str_replace_editor but its view); kept when the path,
  or its last two components, is in the view, or its part under a directory the view names
  (the root a list of relative paths is given under) stands in it as a path of its own, or
  as a name on its folder's line ("Modified in src/app/: main.py, util.py");
- ``todo_items``: the items of the latest call of each todo/plan tool (TodoWrite's todos,
  update_plan's steps); kept like a user request;
- ``last_errors``: the first line of each of the last `ERRORS` failing tool results;
- ``current_work``: the text of the last assistant message.

What a retraction took back (`retract`; Gemini CLI's rewind, where the user edits an earlier
message and the conversation goes on from there) is no probe: the user withdrew it, and a view
that still showed it would have the model follow an instruction that no longer holds.

A view made of only the last few messages scores low on every class (tests/test_quality.py
shows each probe can fail), so the figures mean something.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .compaction.files import modified_paths
from .compaction.policy import CompactionPolicy
from .compaction.tools import ToolCatalog
from .events import StoredEvent
from .projection.fold import in_context
from .repository.base import is_retraction
from .summarizers.typed import typed_messages

__all__ = ["ERRORS", "KINDS", "NEEDLE_CHARS", "Probe", "probes", "recall", "rendered_text"]

KINDS: Final = ("user_requests", "modified_files", "todo_items", "last_errors", "current_work")
NEEDLE_CHARS: Final = 120
ERRORS: Final = 3
_ITEM_KEYS: Final = ("content", "step", "title", "text", "description", "task")


@dataclass(frozen=True, slots=True)
class Probe:
    """One thing the model should still know: its class, where it came from, and its text."""

    kind: str
    version: int
    text: str


def probes(events: Iterable[StoredEvent], tools: ToolCatalog | None = None) -> list[Probe]:
    """The probes of a history (the events before a compaction, with the retractions among them),
    in the order of `KINDS`."""
    catalog = tools or ToolCatalog.default()
    events = list(events)
    retracted = {v for e in events if is_retraction(e) for v in e.payload.get("targets", ())}
    history = [e for e in events if in_context(e) and e.version not in retracted]
    return [*_user_requests(history), *_modified_files(history, catalog), *_todo_items(history, catalog),
            *_last_errors(history), *_current_work(history)]


def _user_requests(events: Sequence[StoredEvent]) -> list[Probe]:
    pairs = ((e.version, e.payload) for e in events if e.kind == "message")
    return [Probe("user_requests", version, text) for version, text in typed_messages(pairs)]


def _modified_files(events: Sequence[StoredEvent], catalog: ToolCatalog) -> list[Probe]:
    policy = CompactionPolicy(tools=catalog)
    last: dict[str, int] = {}
    for call in (e for e in events if e.kind == "tool_call"):  # each path at the latest call that changed it
        for path in modified_paths([call.payload], policy):
            last.pop(path, None)
            last[path] = call.version
    return [Probe("modified_files", version, path) for path, version in last.items()]


def _todo_items(events: Sequence[StoredEvent], catalog: ToolCatalog) -> list[Probe]:
    latest: dict[str, StoredEvent] = {}
    for event in events:
        if event.kind == "tool_call":
            tool_input = event.payload.get("input")
            use = catalog.classify(str(event.payload.get("name", "")),
                                   tool_input if isinstance(tool_input, Mapping) else {})
            if use.category == "critical":
                latest[use.name] = event
    return [Probe("todo_items", event.version, item)
            for event in latest.values() for item in _items(event.payload.get("input"))]


def _items(value: Any) -> list[str]:
    """The item texts of a todo/plan input: each string under a known key of a list of objects."""
    if isinstance(value, Mapping):
        found = [str(value[key]).strip() for key in _ITEM_KEYS if isinstance(value.get(key), str)]
        nested = [item for child in value.values() if isinstance(child, (list, Mapping)) for item in _items(child)]
        return nested or found[:1]
    if isinstance(value, list):
        return [item for child in value for item in _items(child) if item]
    return []


# A line that says only that a command failed, not what failed.
_STATUS_LINE: Final = re.compile(r"^(exit code|exit status|error:?)\s*-?\d*:?$", re.IGNORECASE)


def _last_errors(events: Sequence[StoredEvent]) -> list[Probe]:
    failed = [e for e in events if e.kind == "tool_result" and e.payload.get("is_error")]
    found = []
    for event in failed[-ERRORS:]:
        lines = [ln.strip() for ln in _text(event.payload.get("output")).splitlines() if ln.strip()]
        if len(lines) > 1 and _STATUS_LINE.match(lines[0]):  # Claude Code's "Exit code 2": the error follows
            lines = lines[1:]
        line = lines[0] if lines else ""
        if line:
            found.append(Probe("last_errors", event.version, line))
    return found


def _current_work(events: Sequence[StoredEvent]) -> list[Probe]:
    for event in reversed(events):
        if event.kind == "message" and event.payload.get("role") == "assistant":
            text = _text(event.payload.get("content")).strip()
            if text:
                return [Probe("current_work", event.version, text)]
    return []


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, Mapping) and b.get("type") == "text")
    return ""


# --------------------------------------------------------------------------- scoring


def _normal(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().casefold()


def rendered_text(request: Mapping[str, Any]) -> str:
    """Every string of a rendered request (`view.to_anthropic()`), normalised: what the model reads."""
    parts: list[str] = []

    def walk(value: Any) -> None:
        if isinstance(value, str):
            parts.append(value)
        elif isinstance(value, Mapping):
            for key, child in value.items():
                if key not in ("signature", "data", "encrypted_content", "id", "tool_use_id", "type", "cache_control"):
                    walk(child)
        elif isinstance(value, list):
            for child in value:
                walk(child)

    walk(request)
    return _normal("\n".join(parts))


def kept(probe: Probe, haystack: str) -> bool:
    """Whether the view (its `rendered_text`) still shows the probe (see the module docstring)."""
    if probe.kind == "modified_files":
        return _path_kept(probe.text.replace("\\", "/").rstrip("/"), haystack)
    return _normal(probe.text)[:NEEDLE_CHARS] in haystack


def _path_kept(path: str, haystack: str) -> bool:
    """The path whole, its last two components, or its part under a directory the view names
    (a root that a list of relative paths is given under) standing as a path of its own."""
    parts = path.split("/")
    if _normal(path) in haystack or _normal("/".join(parts[-2:])) in haystack:
        return True
    for depth in range(len(parts) - 1, 0, -1):
        root, rest = "/".join(parts[:depth]), "/".join(parts[depth:])
        if (len(root) > 1 and _normal(root) + "/" in haystack or not root) and _stands(rest, haystack):
            return True
    return False


def _stands(path: str, haystack: str) -> bool:
    """`path` (relative) stands in the view as a path of its own, or its name on the line of
    its folder ("modified in src/app/: main.py, util.py")."""
    if re.search(rf"(?:^|[\s,:(`'\"]){re.escape(_normal(path))}(?:$|[\s,:;)`'\"])", haystack):
        return True
    folder, _, name = path.rpartition("/")
    return bool(folder) and re.search(rf"(?:^|\s)(?:modified|read) in {re.escape(_normal(folder))}/:(?:(?! - ).)"
                                      rf"{{0,4000}}?(?:^|[\s,:(]){re.escape(_normal(name))}(?:$|[\s,:;)])",
                                      haystack) is not None


def recall(found: Sequence[Probe], request: Mapping[str, Any] | str) -> dict[str, tuple[int, int]]:
    """Per class of `KINDS`: (probes kept, probes) for a rendered request (or its `rendered_text`)."""
    haystack = request if isinstance(request, str) else rendered_text(request)
    scores = {kind: [0, 0] for kind in KINDS}
    for probe in found:
        scores[probe.kind][1] += 1
        scores[probe.kind][0] += kept(probe, haystack)
    return {kind: (k, n) for kind, (k, n) in scores.items()}

