"""The context view: what a projection returns, and `project`, which builds it.

`project` runs the fold's steps (`fold`) and the renderer (`render`) over a `ProjectionInput`
(`view`); the view's token estimates come from `calibration`, which reads the fold's kept tail.
This module sits above all of them, so that the arrows go one way. Bottom to top, each layer
importing only from those below it (docs/design.md; tests/test_layers.py checks it):
view, texts, usage, native → blocks, parts → fold, render, responses → calibration → progress
→ context. The steps read a view through small protocols (`render.Conversation`,
`calibration.Viewed`), never through this module.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import cached_property
from collections.abc import Sequence
from typing import Any

from ..events import StoredEvent
from .calibration import Calibration, Scan, for_model, learn_view, resent_tokens
from .fold import (anchored_items, apply_marker, collect_markers, count_view_tokens, drop_marked_pairs, kept_tail,
                   last_change, lends, opaque_window, preamble_items, tail_items, tool_names, usage_anchor)
from .progress import Progress, advanced, start
from .render import render_openai
from .responses import render_responses
from .view import Diagnostic, ProjectionInput, UsageAnchor, ViewItem, WindowEstimate
from .view import advanced as advanced_input


def project(source: ProjectionInput) -> ContextView:
    """The context view of `source` (see DESIGN §5 for the rules)."""
    markers = collect_markers(source.tail)
    names = tool_names(source)
    items = [
        *preamble_items(source),
        *(apply_marker(item, markers, names) for item in anchored_items(source)),
        *(apply_marker(item, markers, names) for item in tail_items(source)),
    ]
    items = drop_marked_pairs(items, markers)
    return _view(source, start(source, items, markers, last_change(source), lends(source), kept_tail(source)))


def advance(view: ContextView, events: Sequence[StoredEvent]) -> ContextView | None:
    """`view` brought up to date with the events appended after it (see `view.advanced`): the
    view a full rebuild would return, or None when only a rebuild can give it. Pure, like
    `project`: no row before the view's version is read again, and, when the events only add
    to the view's end, only its last part is rendered again (`progress`)."""
    source = advanced_input(view.source, events)
    if source is None:
        return None
    progress = advanced(view._progress, events) if view._progress is not None else None
    return project(source) if progress is None else _view(source, progress)


def _view(source: ProjectionInput, progress: Progress) -> ContextView:
    rendered, items = progress.rendered, progress.items
    open_tokens = sum(item.tokens for item in items[len(progress.closed_items):])
    tokens = count_view_tokens(source, progress.closed_tokens + open_tokens, len(rendered.messages), rendered.acks,
                               rendered.synthetic)
    return ContextView(
        session_id=source.session_id,
        version=source.version,
        system=_system_text(source),
        messages=rendered.messages,
        items=items,
        tokens=tokens,
        diagnostics=(*rendered.diagnostics, *_estimated_window(source)),
        compaction=source.compaction,
        usage=usage_anchor(items, progress.tail_start, progress.report, progress.last_change),
        source=source,
        _progress=progress,
    )


def _estimated_window(source: ProjectionInput) -> list[Diagnostic]:
    """A note that `tokens` counts OpenAI's opaque compaction item at our estimate (`fold.opaque_window`)."""
    window = opaque_window(source.compaction)
    if window is None or window[1] != "estimate" or source.compaction is None:
        return []
    return [Diagnostic("estimated_window", "OpenAI's compaction item is opaque and its size was not reported: the "
                       "view counts it at our count of the portable summary of the same range, an estimate",
                       (source.compaction.version,))]


def _system_text(source: ProjectionInput) -> str | None:
    return source.system.payload["text"] if source.system is not None else None


@dataclass(frozen=True)
class ContextView:
    """The context an agent sends to its model now: a pure function of the session's events.

    `messages` are Anthropic-shaped (role + content blocks) and already valid: every
    tool_use answered, roles alternating, the first message from the user. `to_anthropic()`,
    `to_openai()` and `to_responses()` give ready request bodies. `items` say where each part
    comes from.
    """

    session_id: str
    version: int
    system: str | None
    messages: list[dict[str, Any]]
    items: tuple[ViewItem, ...]
    tokens: int
    diagnostics: tuple[Diagnostic, ...]
    compaction: StoredEvent | None
    usage: UsageAnchor | None
    source: ProjectionInput = field(repr=False)
    # What `advance` folds the next events into (not part of what the view is: never compared).
    _progress: Progress | None = field(default=None, repr=False, compare=False)

    def __repr__(self) -> str:
        """Short: where the view stands, not its messages (`messages`, `to_anthropic()` have them)."""
        compacted = f", compaction v{self.compaction.version}" if self.compaction is not None else ""
        return (f"ContextView({self.session_id!r}, v{self.version}, {len(self.messages)} message(s), "
                f"{self.tokens:,} tokens{compacted}, {len(self.diagnostics)} repair(s))")

    @property
    def effective_tokens(self) -> int:
        """The best figure for "how full is the window": `window_estimate()` for the session's model."""
        return self.window_estimate().tokens

    def scan(self) -> Scan:
        """The forward pass over the view's kept tail: its usage reports against our counts."""
        if self._progress is None:  # a view not made by `project`
            return project(self.source).scan()
        return self._progress.whole_scan()

    @cached_property
    def calibrations(self) -> dict[str | None, Calibration]:
        """Per model, the overhead and ratio learned from the session's usage reports: those the
        latest compaction recorded, updated with the reports still in the view."""
        return learn_view(self)

    @property
    def model(self) -> str | None:
        """The model that answered last, as far as the view knows (the latest usage report)."""
        if self.usage is not None:
            return self.usage.model
        latest = max(self.calibrations.values(), key=lambda c: c.version, default=None)
        return latest.model if latest is not None else None

    def window_estimate(self, model: str | None = None, *, fallback_ratio: float = 1.0) -> WindowEstimate:
        """The provider's count of this view for `model` (default: the model that answered last).

        Anchored on the last usage report of that model while the view still holds its context;
        else the overhead and ratio learned from the session's reports (the model's own, or those
        of the model of the same family it switched from): the latest overhead + ratio × `tokens`,
        and, before the first report after a compaction, the session's first overhead + ratio ×
        (`tokens` + what the agent sent again besides the view: `calibration.after_compaction`);
        else `tokens` × `fallback_ratio` (a session that never reported usage for such a model).
        Pure: the stored counts, never a tokenizer.
        """
        model = self.model if model is None else model
        calibration = for_model(self.calibrations, model)
        ratio = calibration.ratio(fallback_ratio) if calibration is not None else fallback_ratio
        if self.usage is not None and self.usage.model == model:
            return WindowEstimate(self.usage.scaled(ratio), "usage", model)
        if calibration is not None and self.compaction is not None and calibration.version < self.compaction.version:
            tokens = calibration.after_compaction(self.tokens + resent_tokens(self), fallback_ratio)
            return WindowEstimate(tokens, "calibration", model)
        if calibration is not None:
            return WindowEstimate(calibration.predict(self.tokens, fallback_ratio), "calibration", model)
        return WindowEstimate(math.ceil(self.tokens * fallback_ratio), "ratio", model)

    def to_anthropic(self) -> dict[str, Any]:
        """``{"system": …, "messages": […]}``, to unpack into ``client.messages.create(model=…, max_tokens=…, **)``.

        Under Anthropic's own compaction the messages hold its ``compaction`` block verbatim: send
        them with ``client.beta.messages.create(betas=["compact-2026-01-12"], …)``."""
        request: dict[str, Any] = {"messages": self.messages}
        if self.system:
            request["system"] = self.system
        return request

    def to_openai(self) -> list[dict[str, Any]]:
        """A Chat Completions ``messages`` list (system first, tool results as ``role: tool``)."""
        return render_openai(self)

    def to_responses(self) -> list[dict[str, Any]]:
        """A Responses API ``input`` list, for ``client.responses.create(model=…, input=…)``:
        OpenAI's own compaction as the items it returned, byte for byte; items added through the
        Agents SDK integration as they were added; every call with its output."""
        return render_responses(self.items, self.system)
