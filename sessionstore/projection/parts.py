"""What rendering builds and what a rendered run of items leaves to the next one.

A view is rendered as a run of parts (`render.render_part`) whose joined result is the whole
view rendered at once. This module holds the shapes that travel between them: the provider
messages being built (`Group`), the repairs found so far (`Diagnostics`, and `Repairs` of the
parts closed for good), what the items before a boundary leave to those after it (`Carried`),
one rendered part (`Part`) and the closed parts joined (`Closed`); `render` holds the steps.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from .view import Diagnostic

# What each repair says when its step gave no text of its own.
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
class Group:
    """One provider message being built: a role and its blocks, each with the version it came from."""

    role: str
    blocks: list[dict[str, Any]]
    origins: list[int]  # parallel to blocks; 0 for blocks the renderer adds
    preamble: bool = False
    messages: int = 0  # message events merged into this group (for the merge diagnostic)

    @property
    def first_version(self) -> int | None:
        return next((v for v in self.origins if v), None)

    def extend(self, other: Group) -> None:
        self.blocks.extend(other.blocks)
        self.origins.extend(other.origins)
        self.messages += other.messages


@dataclass(slots=True)
class Rendered:
    messages: list[dict[str, Any]]
    groups: list[Group]  # a whole render's (`render_anthropic`); parts joined (`join`) keep none
    diagnostics: list[Diagnostic]
    dropped: set[int]
    acks: int = 0
    synthetic: int = 0
    # Items some of whose blocks were left out: version → the share of its text that is sent.
    shares: dict[int, float] = field(default_factory=dict)


@dataclass(slots=True)
class Diagnostics:
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
class Repairs:
    """The repairs of closed parts: each code's versions, in order."""

    versions: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)

    def then(self, later: Diagnostics) -> Repairs:
        """With a later part's repairs (whose texts, like the later blocks', win). A later
        part's versions come after these, but for a repair of the request's end."""
        if not later.by_code:
            return self
        versions = dict(self.versions)
        for code, added in later.by_code.items():
            mine, new = versions.get(code, ()), tuple(sorted(set(added)))
            versions[code] = (mine + new if not (mine and new) or new[0] > mine[-1]
                              else tuple(sorted({*mine, *new})))
        return Repairs(versions, {**self.texts, **later.texts})

    def build(self) -> list[Diagnostic]:
        """As `Diagnostics.build`."""
        return [Diagnostic(code, self.texts.get(code) or _MESSAGES.get(code, code), self.versions[code])
                for code in sorted(self.versions)]


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

    groups: list[Group]
    diags: Diagnostics
    dropped: set[int]
    shares: dict[int, float]
    acks: int
    synthetic: int
    carried: Carried  # what this part and those before it leave to the next
    first_entry: Side | None  # the first and last blocks' messages before merging (`render._group_by_role`)
    last_entry: Side | None
    conflict: bool  # a repair would reach back across the boundary: render the whole instead
    bad_ids: bool  # some tool id must be renamed (`render._rename_tool_ids` renames across the whole)


@dataclass(frozen=True, slots=True)
class Closed:
    """Parts rendered for good and joined: what the items after them carry on from."""

    count: int = 0  # items
    messages: tuple[dict[str, Any], ...] = ()
    last_group: Group | None = None
    repairs: Repairs = Repairs()
    acks: int = 0
    synthetic: int = 0
    carried: Carried = Carried()

    def then(self, part: Part, items: int) -> Closed:
        return Closed(self.count + items, self.messages + tuple(messages_of(part.groups)),
                      part.groups[-1] if part.groups else self.last_group, self.repairs.then(part.diags),
                      self.acks + part.acks, self.synthetic + part.synthetic, part.carried)


def messages_of(groups: Sequence[Group]) -> list[dict[str, Any]]:
    return [{"role": g.role, "content": g.blocks} for g in groups]
