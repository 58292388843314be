"""Rendering: view items → provider messages, repaired until the request is valid.

Recorded history is messy (interrupted calls, results whose call is elsewhere, thinking
from another provider, two user messages in a row), and one invalid block makes a provider
reject the whole request. So rendering guarantees validity: every tool_use is answered in
the very next user message (results moved there, a placeholder result for an unanswered
call), no result without its call, roles alternate, the first message is the user's. Each
repair is reported as a `Diagnostic`; the events themselves are never changed.

**Parts.** A view is rendered as a run of parts (`render_part`) whose joined result is the
whole view rendered at once, so that a view brought up to date re-renders only its last part
(`Closed`, `join`). The repairs reach across the whole request in four ways only — a repeated
tool id, a result whose call came earlier, a call whose result came earlier (an orphan until
then), and neighbours of one role merged — so a part takes from the parts before it what they
leave (`Carried`), and `closing` accepts a boundary only where no repair crosses it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Final

from ..events import content_blocks
from ..tokens import text_weight
from .view import Diagnostic, ViewItem

if TYPE_CHECKING:
    from .context import ContextView

ACK_TEXT: Final = "Understood. I have the summary of the earlier work and will continue from there."
ACK_TOKENS: Final = 17
SYNTHETIC_RESULT_TEXT: Final = "[No result was recorded for this tool call.]"
SYNTHETIC_RESULT_TOKENS: Final = 10
LEADING_USER_TEXT: Final = "[The recorded conversation continues below.]"

# Block types the Messages API accepts in requests. Anything else (another provider's
# native blocks, e.g. OpenAI reasoning items) stays in the transcript but not in the request.
_ANTHROPIC_BLOCKS: Final = frozenset({
    "text", "image", "document", "search_result", "thinking", "redacted_thinking", "tool_use", "tool_result",
    "compaction",
    "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result",
    "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "mcp_tool_use",
    "mcp_tool_result", "container_upload",
})
_ASSISTANT_ONLY: Final = frozenset({"thinking", "redacted_thinking", "server_tool_use", "mcp_tool_use",
                                    "compaction"})
_OPENAI_BLOCKS: Final = frozenset({"text", "image", "tool_use", "tool_result"})
_TOOL_ID: Final = re.compile(r"^[a-zA-Z0-9_-]+$")

_MESSAGES: Final = {
    "orphan_tool_result": "tool results whose call is not in the view were left out",
    "orphan_tool_call": "tool calls without a recorded result were given a placeholder result",
    "moved_tool_result": "tool results were moved right after the message holding their call",
    "duplicate_tool_use": "repeated tool_use ids were left out (the first call with an id is kept)",
    "duplicate_tool_result": "repeated results for one call were left out (the first is kept)",
    "merged_consecutive": "consecutive messages of the same role were merged into one",
    "first_message_not_user": "the view began with an assistant turn: a short user message was put first",
    "empty_message": "messages left with no content were left out",
    "renamed_tool_ids": "tool ids with characters the provider rejects were renamed consistently",
    "trimmed_final_whitespace": "trailing whitespace was trimmed from the final assistant message",
    "portable_summary": "another provider's compaction is sent as its portable summary (its opaque artefact is "
                        "valid only for the provider that made it)",
}


@dataclass(slots=True)
class _Group:
    """One provider message being built: a role and its blocks, each with the version it came from."""

    role: str
    blocks: list[dict[str, Any]]
    origins: list[int]  # parallel to blocks; 0 for blocks the renderer adds
    preamble: bool = False
    messages: int = 0  # message events merged into this group (for the merge diagnostic)

    @property
    def first_version(self) -> int | None:
        return next((v for v in self.origins if v), None)

    def extend(self, other: _Group) -> None:
        self.blocks.extend(other.blocks)
        self.origins.extend(other.origins)
        self.messages += other.messages


@dataclass(slots=True)
class Rendered:
    messages: list[dict[str, Any]]
    groups: list[_Group]  # a whole render's (`render_anthropic`); parts joined (`join`) keep none
    diagnostics: list[Diagnostic]
    dropped: set[int]
    acks: int = 0
    synthetic: int = 0
    # Items some of whose blocks were left out: version → the share of its text that is sent.
    shares: dict[int, float] = field(default_factory=dict)


@dataclass(slots=True)
class _Diagnostics:
    by_code: dict[str, list[int]] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)

    def add(self, code: str, version: int | None = None, text: str | None = None) -> None:
        versions = self.by_code.setdefault(code, [])
        if version and version not in versions:
            versions.append(version)
        if text:
            self.texts[code] = text

    def build(self) -> list[Diagnostic]:
        """The repairs, one per code, in the order of their codes (so that parts joined give
        what the whole rendered at once gives), each naming its versions in order."""
        return [Diagnostic(code, self.texts.get(code) or _MESSAGES.get(code, code), tuple(sorted(self.by_code[code])))
                for code in sorted(self.by_code)]



@dataclass(frozen=True, slots=True)
class _Repairs:
    """The repairs of closed parts: each code's versions, in order."""

    versions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)

    def then(self, later: _Diagnostics) -> _Repairs:
        """With a later part's repairs (whose texts, like the later blocks', win). A later
        part's versions come after these, but for a repair of the request's end."""
        if not later.by_code:
            return self
        versions = dict(self.versions)
        for code, added in later.by_code.items():
            mine, new = versions.get(code, ()), tuple(sorted(set(added)))
            versions[code] = (mine + new if not (mine and new) or new[0] > mine[-1]
                              else tuple(sorted({*mine, *new})))
        return _Repairs(versions, {**self.texts, **later.texts})

    def build(self) -> list[Diagnostic]:
        """As `_Diagnostics.build`."""
        return [Diagnostic(code, self.texts.get(code) or _MESSAGES.get(code, code), self.versions[code])
                for code in sorted(self.versions)]


@dataclass(frozen=True, slots=True)
class _Target:
    name: str
    accepts: Callable[[dict[str, Any], str], str | None]  # None = keep; else the reason it is dropped
    # The provider whose own compaction artefacts this target sends as they are (None: none).
    native: str | None = None


def _anthropic_accepts(block: dict[str, Any], role: str) -> str | None:
    btype = block.get("type")
    if btype not in _ANTHROPIC_BLOCKS:
        return f"{btype} blocks are not accepted by the Messages API"
    if btype in _ASSISTANT_ONLY and role != "assistant":
        return f"{btype} blocks are accepted only in assistant messages"
    if btype == "thinking" and not block.get("signature"):
        return "thinking blocks without a signature (recorded from another provider) are rejected"
    if btype == "text" and not str(block.get("text", "")).strip():
        return "empty text blocks are rejected"
    return None


def _openai_accepts(block: dict[str, Any], role: str) -> str | None:
    btype = block.get("type")
    if btype not in _OPENAI_BLOCKS:
        return f"{btype} blocks have no Chat Completions equivalent"
    if btype == "text" and not str(block.get("text", "")).strip():
        return "empty text blocks are left out"
    return None


ANTHROPIC: Final = _Target("anthropic", _anthropic_accepts, native="anthropic")
OPENAI: Final = _Target("openai", _openai_accepts)


# --------------------------------------------------------------------------- parts


@dataclass(frozen=True, slots=True)
class Carried:
    """What the items before a boundary leave to the rendering of those after it: the tool ids
    they used (a later call with one is a repeat, left out), the calls among them that got a
    placeholder result (a later result for one would be moved back across the boundary), and
    the call ids of their results left out for want of a call (a later call would take one
    back). Answered calls are `seen` less `unanswered`: a later result for one is a repeat.

    Each part adds its own few ids in front of the earlier parts' (`earlier`), so that closing a
    part does not copy the session's ids; every `_FLATTEN` parts they are folded into one set."""

    seen: frozenset[str] = frozenset()
    unanswered: frozenset[str] = frozenset()
    orphans: frozenset[str] = frozenset()
    earlier: Carried | None = None
    depth: int = 0

    def saw(self, call_id: Any) -> bool:
        return call_id in self.seen or (self.earlier is not None and self.earlier.saw(call_id))

    def left_unanswered(self, call_id: Any) -> bool:
        return call_id in self.unanswered or (self.earlier is not None and self.earlier.left_unanswered(call_id))

    def orphaned(self, call_id: Any) -> bool:
        return call_id in self.orphans or (self.earlier is not None and self.earlier.orphaned(call_id))

    def then(self, seen: set[str], unanswered: set[str], orphans: set[str]) -> Carried:
        if not (seen or unanswered or orphans):
            return self
        if self.depth < _FLATTEN:
            return Carried(frozenset(seen), frozenset(unanswered), frozenset(orphans), self, self.depth + 1)
        flat = self._flat()
        return Carried(flat.seen | seen, flat.unanswered | unanswered, flat.orphans | orphans)

    def _flat(self) -> Carried:
        if self.earlier is None:
            return self
        earlier = self.earlier._flat()
        return Carried(earlier.seen | self.seen, earlier.unanswered | self.unanswered, earlier.orphans | self.orphans)


_FLATTEN: Final = 16


Side = tuple[str, bool]  # (role, preamble): what decides whether two neighbours merge


@dataclass(slots=True)
class Part:
    """A run of items rendered on what the parts before it carried (`render_part`)."""

    groups: list[_Group]
    diags: _Diagnostics
    dropped: set[int]
    shares: dict[int, float]
    acks: int
    synthetic: int
    carried: Carried  # what this part and those before it leave to the next
    first_entry: Side | None  # the first and last blocks' messages before merging (`_group_by_role`)
    last_entry: Side | None
    conflict: bool  # a repair would reach back across the boundary: render the whole instead
    bad_ids: bool  # some tool id must be renamed (`_rename_tool_ids` renames across the whole)


@dataclass(frozen=True, slots=True)
class Closed:
    """Parts rendered for good and joined: what the items after them carry on from."""

    count: int = 0  # items
    messages: tuple[dict[str, Any], ...] = ()
    last_group: _Group | None = None
    repairs: _Repairs = _Repairs()
    acks: int = 0
    synthetic: int = 0
    carried: Carried = Carried()

    def then(self, part: Part, items: int) -> Closed:
        return Closed(self.count + items, self.messages + tuple(_messages(part.groups)),
                      part.groups[-1] if part.groups else self.last_group, self.repairs.then(part.diags),
                      self.acks + part.acks, self.synthetic + part.synthetic, part.carried)


def _messages(groups: Sequence[_Group]) -> list[dict[str, Any]]:
    return [{"role": g.role, "content": g.blocks} for g in groups]


def render_part(items: Sequence[ViewItem], closed: Closed = Closed(), target: _Target | None = None) -> Part:
    """`items`, following the parts `closed` joined (the first part when it is empty), rendered
    as the whole would render them — unless `conflict` says a repair reaches back into them."""
    return _render_part(items, target or ANTHROPIC, closed.carried, first=not closed.count)


def closing(closed: Closed, items: Sequence[ViewItem], at: int) -> tuple[Part, Part] | None:
    """`items` (after `closed`) rendered as two parts split before `items[at]` — the first to be
    closed — or None when a repair would cross that boundary: a merge of its neighbours (same
    role on both sides, before or after the results are paired), a placeholder's preamble
    acknowledgement, a renamed tool id, or what `Carried` cannot carry."""
    before = render_part(items[:at], closed)
    if before.conflict or before.bad_ids or not before.groups or before.groups[-1].preamble:
        return None
    after = _render_part(items[at:], ANTHROPIC, before.carried, first=False)
    if after.conflict or after.bad_ids or not after.groups:
        return None
    last, first = before.groups[-1], after.groups[0]
    if before.last_entry is None or before.last_entry == after.first_entry \
            or (last.role, last.preamble) == (first.role, first.preamble):
        return None
    return before, after


def join(closed: Closed, part: Part) -> Rendered:
    """The request of the closed parts and the last one: what `render_anthropic` gives for
    all their items (the final assistant message trimmed; tool ids need no renaming here)."""
    messages = list(closed.messages)
    messages += _messages(part.groups)
    diags = _Diagnostics({code: list(versions) for code, versions in part.diags.by_code.items()},
                         dict(part.diags.texts))
    _trim_final_assistant(messages, part.groups[-1] if part.groups else closed.last_group, diags)
    return Rendered(messages, [], closed.repairs.then(diags).build(), part.dropped, closed.acks + part.acks,
                    closed.synthetic + part.synthetic, part.shares)


# --------------------------------------------------------------------------- entry points


def render_anthropic(items: Sequence[ViewItem], system: str | None = None) -> Rendered:
    part = _render_part(items, ANTHROPIC, Carried(), first=True)
    rendered = Rendered([], part.groups, [], part.dropped, part.acks, part.synthetic, part.shares)
    if part.bad_ids:
        _rename_tool_ids(rendered, part.diags)
    rendered.messages = _messages(rendered.groups)
    if _trim_final_assistant(rendered.messages, rendered.groups[-1] if rendered.groups else None, part.diags):
        rendered.groups[-1] = replace(rendered.groups[-1], blocks=rendered.messages[-1]["content"])
    rendered.diagnostics = part.diags.build()
    return rendered


def _trim_final_assistant(messages: list[dict[str, Any]], last: _Group | None, diags: _Diagnostics) -> bool:
    """The Messages API rejects a final assistant message that ends with whitespace. The last
    message (`last`'s) is replaced, not changed: a closed part's groups are shared."""
    if last is None or last.role != "assistant":
        return False
    block = last.blocks[-1]
    if block.get("type") != "text" or block["text"] == block["text"].rstrip():
        return False
    messages[-1] = {"role": last.role, "content": [*last.blocks[:-1], {**block, "text": block["text"].rstrip()}]}
    for version in last.origins[-1:]:
        diags.add("trimmed_final_whitespace", version)
    diags.by_code.setdefault("trimmed_final_whitespace", [])
    return True


def render_openai(view: ContextView) -> list[dict[str, Any]]:
    """Chat Completions messages: tool results become ``role: tool`` messages after their call."""
    rendered = _render_part(view.items, OPENAI, Carried(), first=True)
    out: list[dict[str, Any]] = [{"role": "system", "content": view.system}] if view.system else []
    for group in rendered.groups:
        out.extend(_openai_assistant(group) if group.role == "assistant" else _openai_user(group))
    return out


# --------------------------------------------------------------------------- the steps


def _render_part(items: Sequence[ViewItem], target: _Target, carried: Carried, *, first: bool) -> Part:
    diags = _Diagnostics()
    dropped: set[int] = set()
    shares: dict[int, float] = {}
    entries = [g for item in items for g in _native_entries(item, target, diags)
               or filter(None, [_entry(item, target, diags, dropped, shares)])]
    seen: set[str] = set()
    entries, conflict = _dedupe_tool_uses(entries, diags, dropped, carried, seen)
    sides = [(e.role, e.preamble) for e in entries[:1] + entries[-1:]]
    groups = _group_by_role(entries, diags)
    pairing = _Pairing(carried)
    groups, synthetic = _pair_results(groups, diags, dropped, pairing)
    groups = _tidy(groups, diags)
    acks = _acknowledge_preamble(groups) if first else 0
    if first:
        _user_first(groups, diags)
    bad_ids = any(not _TOOL_ID.match(str(b.get("id") if b.get("type") == "tool_use" else b.get("tool_use_id")))
                  for g in groups for b in g.blocks if b.get("type") in ("tool_use", "tool_result"))
    return Part(groups, diags, dropped, shares, acks, synthetic,
                carried.then(seen, pairing.unanswered, pairing.orphans), sides[0] if sides else None,
                sides[-1] if sides else None, conflict or pairing.conflict, bad_ids)


def _native_entries(item: ViewItem, target: _Target, diags: _Diagnostics) -> list[_Group]:
    """A provider's compaction for the provider that made it: its blocks verbatim, as the
    assistant turn they came in (after a short user message, since a request starts with
    one; the provider ignores whatever comes before its artefact). For another provider,
    nothing here: the item renders as its portable summary, and the view says so."""
    native = item.payload.get("native") if item.kind == "summary" else None
    if not native:
        return []
    if native["provider"] != target.native:
        diags.add("portable_summary", item.version)
        return []
    return [_Group("user", [{"type": "text", "text": LEADING_USER_TEXT}], [0], preamble=True),
            _Group("assistant", [dict(b) for b in native["items"]], [item.version] * len(native["items"]))]


def _entry(item: ViewItem, target: _Target, diags: _Diagnostics, dropped: set[int],
           shares: dict[int, float]) -> _Group | None:
    """One item as a single-message group of provider blocks, filtered for the target.

    An item sent in part gets its share in `shares`, so that the view counts only what is sent
    (its stored count split by characters: no tokenizer at projection time)."""
    blocks = _item_blocks(item)
    kept = []
    for block in blocks:
        reason = target.accepts(block, item.role)
        if reason is None:
            kept.append(block)
        else:
            diags.add(f"dropped_block:{block.get('type')}", item.version, reason)
    if not kept:
        if blocks or item.kind != "message" or item.role != "assistant":
            diags.add("empty_message", item.version)
        dropped.add(item.version)
        return None
    if len(kept) < len(blocks):
        whole = text_weight(blocks)
        shares[item.version] = text_weight(kept) / whole if whole else 1.0
    return _Group(item.role, kept, [item.version] * len(kept), preamble=item.origin in ("summary", "scratchpad"),
                  messages=1 if item.kind == "message" else 0)


def _item_blocks(item: ViewItem) -> list[dict[str, Any]]:
    payload = item.payload
    if item.kind == "message":
        return content_blocks(payload["content"])  # shared, never mutated: repairs build new dicts
    if item.kind == "tool_call":
        return [{"type": "tool_use", "id": payload["call_id"], "name": payload["name"], "input": payload["input"]}]
    if item.kind == "tool_result":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": payload["call_id"]}
        content = _result_content(payload["output"])
        if content:
            block["content"] = content
        if payload.get("is_error"):
            block["is_error"] = True
        return [block]
    return [{"type": "text", "text": note_text(item) or ""}]  # summary, scratchpad, custom


def note_text(item: ViewItem) -> str | None:
    """What a provider is sent for a view item that is no conversation event — a summary, a
    scratchpad, an in-context custom event — as the text of a user message; None for the others."""
    if item.kind in ("summary", "scratchpad"):
        return str(item.payload["text"])
    if item.kind == "custom":
        data = item.payload.get("data")
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return f"<{item.payload['type']}>\n{text}\n</{item.payload['type']}>"
    return None


def _result_content(output: Any) -> str | list[dict[str, Any]]:
    """Tool result content as providers take it: a string, or text and image blocks."""
    if isinstance(output, str):
        return output
    blocks: list[dict[str, Any]] = []
    for block in output:
        btype = block.get("type")
        if btype == "text":
            if str(block.get("text", "")).strip():
                blocks.append({"type": "text", "text": block["text"]})
        elif btype == "image":
            blocks.append(dict(block))
        else:
            blocks.append({"type": "text", "text": json.dumps(block, ensure_ascii=False)})
    return blocks


def _dedupe_tool_uses(entries: list[_Group], diags: _Diagnostics, dropped: set[int], carried: Carried,
                      seen: set[str]) -> tuple[list[_Group], bool]:
    """Tool ids must be unique in a request; the first call with an id keeps it. `seen` gets
    the ids of this part's calls; True when one of them would take back an earlier part's
    orphan result."""
    conflict = False
    kept = []
    for entry in entries:
        if entry.role == "assistant":
            pairs = []
            for block, origin in zip(entry.blocks, entry.origins):
                if block.get("type") == "tool_use":
                    if block.get("id") in seen or carried.saw(block.get("id")):
                        diags.add("duplicate_tool_use", origin)
                        continue
                    conflict = conflict or carried.orphaned(block.get("id"))
                    seen.add(block["id"])
                pairs.append((block, origin))
            if not pairs:
                dropped.update(entry.origins)
                continue
            entry.blocks, entry.origins = [b for b, _ in pairs], [o for _, o in pairs]
        kept.append(entry)
    return kept, conflict


def _group_by_role(entries: Iterable[_Group], diags: _Diagnostics) -> list[_Group]:
    groups: list[_Group] = []
    for entry in entries:
        last = groups[-1] if groups else None
        if last is not None and last.role == entry.role and last.preamble == entry.preamble:
            if last.messages and entry.messages:
                diags.add("merged_consecutive", entry.first_version)
            last.extend(entry)
        else:
            groups.append(entry)
    return groups


@dataclass(slots=True)
class _Pairing:
    """What pairing learns that a later part needs (`Carried`), and whether a result reaches
    back into an earlier part."""

    carried: Carried
    unanswered: set[str] = field(default_factory=set)
    orphans: set[str] = field(default_factory=set)
    conflict: bool = False


def _pair_results(groups: list[_Group], diags: _Diagnostics, dropped: set[int],
                  pairing: _Pairing) -> tuple[list[_Group], int]:
    """Put every call's result first in the user message right after it; drop orphan results."""
    call_group: dict[str, int] = {}
    for index, group in enumerate(groups):
        if group.role == "assistant":
            for block in group.blocks:
                if block.get("type") == "tool_use":
                    call_group.setdefault(block["id"], index)
    results: dict[str, tuple[dict[str, Any], int, int]] = {}
    for index, group in enumerate(groups):
        if group.role == "user":
            _take_results(group, index, call_group, results, diags, dropped, pairing)
    paired: list[_Group] = []
    synthetic = 0
    carry = _Group("user", [], [])
    for index, group in enumerate(groups):
        if carry.blocks:
            if group.role == "user" and not group.preamble:
                group.blocks[:0], group.origins[:0] = carry.blocks, carry.origins
            else:
                paired.append(carry)
            carry = _Group("user", [], [])
        paired.append(group)
        if group.role != "assistant":
            continue
        for block, call_version in zip(group.blocks, group.origins):
            if block.get("type") != "tool_use":
                continue
            found = results.pop(block["id"], None)
            if found is None:
                synthetic += 1
                pairing.unanswered.add(block["id"])
                diags.add("orphan_tool_call", call_version)
                carry.blocks.append({"type": "tool_result", "tool_use_id": block["id"],
                                     "content": SYNTHETIC_RESULT_TEXT, "is_error": True})
                carry.origins.append(0)
            else:
                result, origin_group, version = found
                if origin_group != index + 1:
                    diags.add("moved_tool_result", version)
                carry.blocks.append(result)
                carry.origins.append(version)
    if carry.blocks:
        paired.append(carry)
    return paired, synthetic


def _take_results(group: _Group, index: int, call_group: dict[str, int],
                  results: dict[str, tuple[dict[str, Any], int, int]], diags: _Diagnostics,
                  dropped: set[int], pairing: _Pairing) -> None:
    """Take the tool_result blocks out of a user group (they are put back next to their calls).
    A result for an earlier part's call repeats the one that part paired with it — or, when
    that call got a placeholder, would be moved back there: a conflict."""
    blocks: list[dict[str, Any]] = []
    origins: list[int] = []
    earlier = pairing.carried
    for block, version in zip(group.blocks, group.origins):
        if block.get("type") != "tool_result":
            blocks.append(block)
            origins.append(version)
            continue
        call_id = block.get("tool_use_id")
        if call_id not in call_group and earlier.saw(call_id):
            pairing.conflict = pairing.conflict or earlier.left_unanswered(call_id)
            diags.add("duplicate_tool_result", version)
            dropped.add(version)
        elif call_id not in call_group:
            pairing.orphans.add(str(call_id))
            diags.add("orphan_tool_result", version)
            dropped.add(version)
        elif call_id in results:
            diags.add("duplicate_tool_result", version)
            dropped.add(version)
        else:
            results[call_id] = (block, index, version)
    group.blocks, group.origins = blocks, origins


def _tidy(groups: list[_Group], diags: _Diagnostics) -> list[_Group]:
    """Remove emptied messages and merge the neighbours that removal made adjacent."""
    tidy: list[_Group] = []
    for group in groups:
        if not group.blocks:
            continue
        last = tidy[-1] if tidy else None
        if last is not None and last.role == group.role and last.preamble == group.preamble:
            diags.add("merged_consecutive", group.first_version)
            last.extend(group)
        else:
            tidy.append(group)
    return tidy


def _acknowledge_preamble(groups: list[_Group]) -> int:
    """The summary is a user message; when a user message follows, an assistant
    acknowledgement keeps roles alternating without merging the summary into the user's words."""
    for index, group in enumerate(groups):
        if group.preamble and index + 1 < len(groups) and groups[index + 1].role == "user" \
                and not groups[index + 1].preamble:
            groups.insert(index + 1, _Group("assistant", [{"type": "text", "text": ACK_TEXT}], [0]))
            return 1
    return 0


def _user_first(groups: list[_Group], diags: _Diagnostics) -> None:
    if groups and groups[0].role != "user":
        groups.insert(0, _Group("user", [{"type": "text", "text": LEADING_USER_TEXT}], [0]))
        diags.add("first_message_not_user", groups[1].first_version)


def _rename_tool_ids(rendered: Rendered, diags: _Diagnostics) -> None:
    """Anthropic accepts tool ids matching [a-zA-Z0-9_-]+ only (Pi records `call_x|fc_y` for OpenAI)."""
    renamed: dict[str, str] = {}
    taken: set[str] = set()

    def fix(value: str) -> str:
        if value in renamed:
            return renamed[value]
        if _TOOL_ID.match(value):
            return value
        base = re.sub(r"[^a-zA-Z0-9_-]", "_", value)[:60] or "tool"
        candidate, n = base, 1
        while candidate in taken:
            n += 1
            candidate = f"{base}_{n}"
        taken.add(candidate)
        renamed[value] = candidate
        return candidate

    for group in rendered.groups:
        for block in group.blocks:
            if block.get("type") == "tool_use":
                taken.add(block["id"])
    for group in rendered.groups:
        for i, block in enumerate(group.blocks):
            if block.get("type") == "tool_use" and not _TOOL_ID.match(block["id"]):
                group.blocks[i] = {**block, "id": fix(block["id"])}
            elif block.get("type") == "tool_result" and not _TOOL_ID.match(str(block.get("tool_use_id", ""))):
                group.blocks[i] = {**block, "tool_use_id": fix(str(block["tool_use_id"]))}
    if renamed:
        diags.by_code.setdefault("renamed_tool_ids", [])


# --------------------------------------------------------------------------- OpenAI shapes


def _text_of(blocks: Iterable[dict[str, Any]]) -> str:
    return "\n\n".join(b["text"] for b in blocks if b.get("type") == "text")


def _openai_assistant(group: _Group) -> list[dict[str, Any]]:
    text = _text_of(group.blocks)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls = [{"id": b["id"], "type": "function",
              "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}}
             for b in group.blocks if b.get("type") == "tool_use"]
    if calls:
        message["tool_calls"] = calls
    return [message]


def _openai_user(group: _Group) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for block in group.blocks:
        if block.get("type") == "tool_result":
            content = block.get("content", "")
            text = content if isinstance(content, str) else _text_of(content) or json.dumps(content)
            out.append({"role": "tool", "tool_call_id": block["tool_use_id"], "content": text})
        elif block.get("type") == "text":
            parts.append({"type": "text", "text": block["text"]})
        elif block.get("type") == "image":
            parts.append({"type": "image_url", "image_url": {"url": image_url(block.get("source") or {})}})
    if parts:
        only_text = all(p["type"] == "text" for p in parts)
        out.append({"role": "user", "content": "\n\n".join(p["text"] for p in parts) if only_text else parts})
    return out


def image_url(source: Mapping[str, Any]) -> str:
    """An image block's source as the URL OpenAI takes: its own, or a data URL of its bytes."""
    if source.get("type") == "url":
        return str(source.get("url", ""))
    return f"data:{source.get('media_type', 'image/png')};base64,{source.get('data', '')}"
