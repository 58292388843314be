"""The inline SVG chart: view tokens against transcript tokens over the versions, compactions marked.

Pure: a `Series` in, SVG text out. Every value drawn is a number formatted here, so nothing
from a transcript reaches the SVG. Colours come from the page's stylesheet (classes), so the
chart follows the light and dark themes; the page's script moves the cursor line and turns
a click into a version (it reads the plot's extent from the ``data-*`` attributes).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Final

from .timeline import CompactionSpan, Series

WIDTH: Final = 960
HEIGHT: Final = 260
# More points than pixels draws nothing more; every boundary is kept so that each drop stays sharp.
MAX_DRAWN: Final = 1200
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 14, 24, 30


def compact_number(n: float) -> str:
    """12,345 → 12.3k; 1,234,567 → 1.23M (axis labels)."""
    if n >= 1_000_000:
        return f"{n / 1_000_000:.3g}M"
    if n >= 1_000:
        return f"{n / 1_000:.3g}k"
    return f"{n:.0f}"


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `top` (1, 2 or 5 times a power of ten apart)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    return [i * step for i in range(int(math.ceil(top / step - 1e-9)) + 1)]


def token_chart(series: Series, compactions: Sequence[CompactionSpan], markers: Sequence[int],
                keep: Iterable[int] = ()) -> str:
    """The chart as an ``<svg>`` element; `markers` are the versions of prune and rewrite events,
    `keep` the versions always drawn (both sides of every boundary)."""
    head = len(series.view)
    if head < 1:
        return '<p class="empty">No events yet: nothing to chart.</p>'
    drawn = _drawn(head, keep)
    yticks = nice_ticks(max(max(series.transcript), max(series.view), 1))
    ymax = yticks[-1]
    x0, x1 = _LEFT, WIDTH - _RIGHT
    y0, y1 = HEIGHT - _BOTTOM, _TOP
    span = max(head - 1, 1)

    def x(version: float) -> float:
        return x0 + (version - 1) / span * (x1 - x0) if head > 1 else (x0 + x1) / 2

    def y(tokens: float) -> float:
        return y0 - tokens / ymax * (y0 - y1)

    def path(values: Sequence[int]) -> str:
        return "M" + " L".join(f"{x(v):.1f},{y(values[v - 1]):.1f}" for v in drawn)

    parts = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" preserveAspectRatio="xMidYMid meet" '
             f'data-x0="{x0}" data-x1="{x1}" data-head="{head}" aria-label="View tokens against transcript tokens '
             f'over {head} versions, {len(compactions)} compaction(s)">']
    for t in yticks:
        parts.append(f'<line class="grid" x1="{x0}" x2="{x1}" y1="{y(t):.1f}" y2="{y(t):.1f}"/>'
                     f'<text class="ylabel" x="{x0 - 8}" y="{y(t) + 4:.1f}">{compact_number(t)}</text>')
    ticks = _version_ticks(head)
    for v in ticks:
        last = " last" if v == ticks[-1] and len(ticks) > 1 else ""
        parts.append(f'<text class="xlabel{last}" x="{x(v):.1f}" y="{y0 + 20}">v{v:,}</text>')
    area = f"{path(series.transcript)} L{x(head):.1f},{y0} L{x(1):.1f},{y0} Z"
    parts.append(f'<path class="transcript-area" d="{area}"/>')
    parts.append(f'<path class="transcript-line" d="{path(series.transcript)}"/>')
    parts.append(f'<path class="view-line" d="{path(series.view)}"/>')
    for v in sorted(set(markers)):
        parts.append(f'<line class="marker-tick" x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{y0}" y2="{y0 - 7}"/>')
    for c in compactions:
        cx = x(c.version)
        before = f"{c.tokens_before:,}" if isinstance(c.tokens_before, int) else "?"
        after = f"{c.tokens_after:,}" if isinstance(c.tokens_after, int) else "?"
        parts.append(f'<g class="compaction-mark"><title>compaction {c.number} at v{c.version:,}: {before} → {after} '
                     f'tokens, kept from v{c.first_kept:,}</title>'
                     f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y1 - 6}" y2="{y0}"/>'
                     f'<text x="{cx:.1f}" y="{y1 - 10}">C{c.number}</text></g>')
    parts.append(f'<line id="cursor" class="cursor" x1="{x(head):.1f}" x2="{x(head):.1f}" y1="{y1}" y2="{y0}"/>')
    parts.append(f'<line class="axis" x1="{x0}" x2="{x1}" y1="{y0}" y2="{y0}"/></svg>')
    return "".join(parts)


def _drawn(head: int, keep: Iterable[int]) -> list[int]:
    if head <= MAX_DRAWN:
        return list(range(1, head + 1))
    step = head / MAX_DRAWN
    return sorted({1, head, *(round(1 + i * step) for i in range(MAX_DRAWN)), *(v for v in keep if 1 <= v <= head)})


def _version_ticks(head: int, count: int = 7) -> list[int]:
    if head <= 1:
        return [1]
    step = max(1, int(nice_ticks(head, count)[1]))
    ticks = [1, *range(step, head + 1, step)]
    return ticks if ticks[-1] == head or head - ticks[-1] < step / 2 else [*ticks, head]
