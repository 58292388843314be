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

Below it: `blocks` (an item as provider blocks, what each provider takes), `parts` (the shapes
a part is made of), `texts` (what the renderer adds: acknowledgement, placeholder, first message).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Final, Protocol

from ..tokens import text_weight
from .blocks import ANTHROPIC, OPENAI, Target, image_url, item_blocks
from .parts import Carried, Closed, Diagnostics, Group, Part, Rendered, messages_of
from .texts import ACK_TEXT, LEADING_USER_TEXT, SYNTHETIC_RESULT_TEXT
from .view import ViewItem

# The tool ids the Messages API accepts.
_TOOL_ID: Final = re.compile(r"^[a-zA-Z0-9_-]+$")


class Conversation(Protocol):
    """What `render_openai` reads of a view: a `ContextView` (`context`, which sits above this
    module and calls it) or anything else with the items and the system prompt."""

    @property
    def items(self) -> Sequence[ViewItem]: ...

    @property
    def system(self) -> str | None: ...


# --------------------------------------------------------------------------- parts


def render_part(items: Sequence[ViewItem], closed: Closed = Closed(), target: Target | None = None) -> Part:
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
    messages += messages_of(part.groups)
    diags = Diagnostics({code: list(versions) for code, versions in part.diags.by_code.items()},
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
    rendered.messages = messages_of(rendered.groups)
    if _trim_final_assistant(rendered.messages, rendered.groups[-1] if rendered.groups else None, part.diags):
        rendered.groups[-1] = replace(rendered.groups[-1], blocks=rendered.messages[-1]["content"])
    rendered.diagnostics = part.diags.build()
    return rendered


def _trim_final_assistant(messages: list[dict[str, Any]], last: Group | None, diags: Diagnostics) -> bool:
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


def render_openai(view: Conversation) -> list[dict[str, Any]]:
    """Chat Completions messages: tool results become ``role: tool`` messages after their call."""
    rendered = _render_part(view.items, OPENAI, Carried(), first=True)
    out: list[dict[str, Any]] = [{"role": "system", "content": view.system}] if view.system else []
    for group in rendered.groups:
        out.extend(_openai_assistant(group) if group.role == "assistant" else _openai_user(group))
    return out


# --------------------------------------------------------------------------- the steps


def _render_part(items: Sequence[ViewItem], target: Target, carried: Carried, *, first: bool) -> Part:
    diags = Diagnostics()
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


def _native_entries(item: ViewItem, target: Target, diags: Diagnostics) -> list[Group]:
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
    return [Group("user", [{"type": "text", "text": LEADING_USER_TEXT}], [0], preamble=True),
            Group("assistant", [dict(b) for b in native["items"]], [item.version] * len(native["items"]))]


def _entry(item: ViewItem, target: Target, diags: Diagnostics, dropped: set[int],
           shares: dict[int, float]) -> Group | None:
    """One item as a single-message group of provider blocks, filtered for the target.

    An item sent in part gets its share in `shares`, so that the view counts only what is sent
    (its stored count split by characters: no tokenizer at projection time)."""
    blocks = item_blocks(item)
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
    return Group(item.role, kept, [item.version] * len(kept), preamble=item.origin in ("summary", "scratchpad"),
                  messages=1 if item.kind == "message" else 0)


def _dedupe_tool_uses(entries: list[Group], diags: Diagnostics, dropped: set[int], carried: Carried,
                      seen: set[str]) -> tuple[list[Group], bool]:
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


def _group_by_role(entries: Iterable[Group], diags: Diagnostics) -> list[Group]:
    groups: list[Group] = []
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


def _pair_results(groups: list[Group], diags: Diagnostics, dropped: set[int],
                  pairing: _Pairing) -> tuple[list[Group], int]:
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
    paired: list[Group] = []
    synthetic = 0
    carry = Group("user", [], [])
    for index, group in enumerate(groups):
        if carry.blocks:
            if group.role == "user" and not group.preamble:
                group.blocks[:0], group.origins[:0] = carry.blocks, carry.origins
            else:
                paired.append(carry)
            carry = Group("user", [], [])
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


def _take_results(group: Group, index: int, call_group: dict[str, int],
                  results: dict[str, tuple[dict[str, Any], int, int]], diags: Diagnostics,
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


def _tidy(groups: list[Group], diags: Diagnostics) -> list[Group]:
    """Remove emptied messages and merge the neighbours that removal made adjacent."""
    tidy: list[Group] = []
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


def _acknowledge_preamble(groups: list[Group]) -> int:
    """The summary is a user message; when a user message follows, an assistant
    acknowledgement keeps roles alternating without merging the summary into the user's words."""
    for index, group in enumerate(groups):
        if group.preamble and index + 1 < len(groups) and groups[index + 1].role == "user" \
                and not groups[index + 1].preamble:
            groups.insert(index + 1, Group("assistant", [{"type": "text", "text": ACK_TEXT}], [0]))
            return 1
    return 0


def _user_first(groups: list[Group], diags: Diagnostics) -> None:
    if groups and groups[0].role != "user":
        groups.insert(0, Group("user", [{"type": "text", "text": LEADING_USER_TEXT}], [0]))
        diags.add("first_message_not_user", groups[1].first_version)


def _rename_tool_ids(rendered: Rendered, diags: Diagnostics) -> None:
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


def _openai_assistant(group: Group) -> list[dict[str, Any]]:
    text = _text_of(group.blocks)
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    calls = [{"id": b["id"], "type": "function",
              "function": {"name": b["name"], "arguments": json.dumps(b["input"], ensure_ascii=False)}}
             for b in group.blocks if b.get("type") == "tool_use"]
    if calls:
        message["tool_calls"] = calls
    return [message]


def _openai_user(group: Group) -> list[dict[str, Any]]:
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

