"""Level 2: big file reads and writes become tree-sitter skeletons, no model (DESIGN §6.2). Pure.

A 1,500-line file read an hour ago costs as much as the newest work; its outline (imports,
classes, signatures, with line numbers to read a range again) usually serves as well. Only
the latest read of a path may stay verbatim, and only inside the protected recent window;
an older read's skeleton says that it is older, so a stale outline is never taken for the
file as it is now. Text formats (markdown, JSON, YAML, …) are never rewritten.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from ..events import recall_hint
from ..projection.view import ViewItem
from .numbered import split_trailer, strip_line_numbers
from .pairs import ToolPair, fresh_versions, output_text, protected_from, tool_pairs
from .policy import CompactionPolicy
from .skeleton import skeleton

# A skeleton that keeps more than this share of the characters is not worth the rewrite.
_MAX_KEPT_SHARE = 0.8


@dataclass(frozen=True, slots=True)
class RewriteDecision:
    target_version: int
    field: str  # "output" | "input"
    content: str
    original_lines: int
    language: str
    input_key: str | None = None
    saved_chars: int = 0


def tag(original_lines: int) -> str:
    return f"[COMPRESSED: {original_lines} lines → summarized]"


def plan_rewrites(items: Sequence[ViewItem], policy: CompactionPolicy, claimed: Collection[int] = ()
                  ) -> list[RewriteDecision]:
    """Rewrite decisions for code reads and writes over `policy.rewrite_min_lines` lines; never
    of what the model has not seen yet (`fresh_versions`)."""
    if not policy.rewrite:
        return []
    claimed = {*claimed, *fresh_versions(items)}
    pairs = tool_pairs(items, policy.tools)
    protected = protected_from(items, policy.prune_protect_tokens)
    latest_read = _latest_reads(pairs)
    decisions = []
    for pair in pairs:
        if policy.tools.is_excluded(pair.name) or any(v in claimed for v in pair.versions):
            continue
        decision = None
        if pair.use.category == "read":
            decision = _rewrite_read(pair, latest_read.get(pair.use.path or ""), protected, policy)
        elif pair.use.category == "write" and pair.use.content_key:
            decision = _rewrite_write(pair, protected, policy)
        if decision is not None:
            decisions.append(decision)
    return decisions


def _latest_reads(pairs: Sequence[ToolPair]) -> dict[str, ToolPair]:
    latest: dict[str, ToolPair] = {}
    for pair in pairs:
        if pair.use.category == "read" and pair.use.path and pair.result is not None:
            latest[pair.use.path] = pair
    return latest


def _rewrite_read(pair: ToolPair, latest: ToolPair | None, protected: int, policy: CompactionPolicy
                  ) -> RewriteDecision | None:
    result = pair.result
    if result is None or result.cleared or result.rewritten or result.payload.get("is_error"):
        return None
    is_latest = latest is pair
    if is_latest and pair.result_index is not None and pair.result_index >= protected:
        return None  # the file as the agent last saw it, in the recent window: verbatim
    text = output_text(result.payload)
    if text is None or text.count("\n") + 1 < policy.rewrite_min_lines:
        return None
    numbered = strip_line_numbers(text)
    if numbered.numbered:
        source, trailer, first_line = numbered.source, numbered.trailer, numbered.first_line
    else:  # unnumbered output (Pi's read, `sed -n`): the call's own range says where it starts
        (source, trailer), first_line = split_trailer(text), pair.use.start or 1
    outline = skeleton(source, path=pair.use.path, first_line=first_line)
    if outline is None or outline.original_lines < policy.rewrite_min_lines:
        return None
    note = "" if is_latest else (f"\nThis is an OLDER read of {pair.use.path}: it was read again later "
                                 f"(version {latest.result.version if latest and latest.result else '?'}); "
                                 "that later read shows the current content.")
    content = _content(result.version, outline.original_lines, pair.use.path, outline.language, outline.text, note,
                       trailer)
    if len(content) > _MAX_KEPT_SHARE * len(text):
        return None
    return RewriteDecision(result.version, "output", content, outline.original_lines, outline.language,
                           saved_chars=len(text) - len(content))


def _rewrite_write(pair: ToolPair, protected: int, policy: CompactionPolicy) -> RewriteDecision | None:
    call = pair.call
    if call.rewritten or call.cleared or pair.call_index >= protected:
        return None
    key = pair.use.content_key or "content"
    text = (call.payload.get("input") or {}).get(key)
    if not isinstance(text, str) or text.count("\n") + 1 < policy.rewrite_min_lines:
        return None
    outline = skeleton(text, path=pair.use.path)
    if outline is None:
        return None
    content = _content(call.version, outline.original_lines, pair.use.path, outline.language, outline.text,
                       "\nThe file was written with this content (outline shown).", "")
    if len(content) > _MAX_KEPT_SHARE * len(text):
        return None
    return RewriteDecision(call.version, "input", content, outline.original_lines, outline.language, key,
                           saved_chars=len(text) - len(content))


def _content(version: int, lines: int, path: str | None, language: str, outline: str, note: str, trailer: str) -> str:
    head = f"{tag(lines)} {path or 'file'} ({language}): outline with original line numbers; " \
           f"read the file again for any range you need ({recall_hint(version)}: the original).{note}"
    parts = [head, outline.rstrip("\n")]
    if trailer.strip():
        parts.append(trailer.strip())
    return "\n".join(parts)
