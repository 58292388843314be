"""Tables that fit the terminal: every table the CLI prints is laid out here.

A figure or an id cut short is a wrong figure or an id that names nothing, so those columns
are never cut; text is cut with an ellipsis (or wrapped, where the column says so); when even
the narrowest text does not leave room, whole columns go, the least needed first, and the
caption says which. `layout` decides (pure: cells and a width in, widths out); `table` draws.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from rich.cells import cell_len
from rich.table import Table

from ..display import terminal_text


@dataclass(frozen=True)
class Column:
    """One column: its header (lines split on ``\\n``) and its cells, one per row.

    whole: a number or an id — never cut: shown in full (folded onto more lines if also
        `wrap`: an id longer than `minimum`), or the column is left out. numeric: right-justified.
    wrap: text that wraps onto more lines (between words) rather than being cut with an ellipsis.
    minimum: the narrowest it gets before other columns are left out.
    """

    header: str
    cells: Sequence[str]
    whole: bool = False
    numeric: bool = False
    wrap: bool = False
    minimum: int = 10
    style: str | None = None

    @property
    def natural(self) -> int:
        """The width that shows every cell and the header whole."""
        return max([self.header_width, *(cell_len(line) for cell in self.cells for line in cell.split("\n"))])

    @property
    def header_width(self) -> int:
        return max(cell_len(line) for line in self.header.split("\n"))

    @property
    def floor(self) -> int:
        """The narrowest it may be before columns are left out (its header is never cut)."""
        if self.whole and not self.wrap:
            return self.natural
        # wrapped text breaks between words, never inside one (an id folds anywhere)
        words = 0 if self.whole or not self.wrap else max(
            (cell_len(word) for cell in self.cells for word in cell.split()), default=0)
        return max(self.header_width, min(self.natural, max(self.minimum, words)))

    @property
    def blank(self) -> bool:
        """A figure that is 0 on every row: it says the least (re-imported files: nothing added)."""
        return self.numeric and bool(self.cells) and all(cell == "0" for cell in self.cells)

    @property
    def fixed(self) -> bool:
        """Never narrower or wider than all of it (a number)."""
        return self.whole and not self.wrap


def chrome(table: Table, columns: int) -> int:
    """Columns of `table` that are not cells: its edges, the rules between columns, the padding."""
    if columns == 0:
        return 0
    _top, right, _bottom, left = table.padding
    padding = columns * (left + right) - (0 if table.pad_edge else left + right)
    edges = 2 if table.box is not None and table.show_edge else 0
    rules = columns - 1 if table.box is not None else 0
    return padding + edges + rules


def layout(columns: Sequence[Column], width: int, extra: Callable[[int], int], drop: Sequence[str] = ()
           ) -> tuple[list[tuple[Column, int]], list[str]]:
    """The columns shown and the width of each, and the headers of those left out.

    `extra(n)` is what the table takes besides its cells with n columns (`chrome`). Columns are
    left out in the order of `drop` (headers), figures that are all 0 (`Column.blank`) first,
    while the narrowest text and the whole columns do not fit; then text gives way below its
    floor, and when even that is not enough (a long id) text columns go, the last first, then
    the whole columns after the first (the id): a whole column is never cut or folded. The width left goes to the text columns, evenly, up
    to what each needs.
    """
    shown = list(columns)
    dropped: list[str] = []
    blank = {c.header for c in columns if c.blank}
    for header in sorted(drop, key=lambda header: header not in blank):  # (a stable sort)
        if sum(c.floor for c in shown) + extra(len(shown)) <= width:
            break
        found = next((c for c in shown if c.header == header), None)
        if found is not None:
            shown.remove(found)
            dropped.append(header.replace("\n", " ") + (" (all 0)" if header in blank else ""))
    widths = {id(c): c.floor for c in shown}
    spare = width - extra(len(shown)) - sum(widths.values())
    if spare < 0:  # still too wide: text gives way below its floor (never a whole column)
        for column in sorted((c for c in shown if not c.whole), key=lambda c: -widths[id(c)]):
            give = min(-spare, widths[id(column)] - max(1, column.header_width))
            widths[id(column)] -= max(0, give)
            spare += max(0, give)
    while spare < 0:  # and still: text columns go, the last first, rather than an id or a figure be cut
        last = next((c for c in reversed(shown) if not c.whole), None)
        if last is None:
            break
        shown.remove(last)
        dropped.append(last.header.replace("\n", " "))
        spare = width - extra(len(shown)) - sum(widths[id(c)] for c in shown)
    while spare < 0 and len(shown) > 1:  # an id longer than the rest leave room for: the figures after it go
        last = shown.pop()
        dropped.append(last.header.replace("\n", " "))
        spare = width - extra(len(shown)) - sum(widths[id(c)] for c in shown)
    growing = [c for c in shown if not c.fixed and widths[id(c)] < c.natural]
    while spare > 0 and growing:
        share = max(1, spare // len(growing))
        for column in list(growing):
            add = min(share, column.natural - widths[id(column)], spare)
            widths[id(column)] += add
            spare -= add
            if widths[id(column)] >= column.natural:
                growing.remove(column)
            if spare == 0:
                break
    return [(c, widths[id(c)]) for c in shown], dropped


def table(columns: Sequence[Column], width: int, *, drop: Sequence[str] = (), title: str | None = None,
          caption: str | None = None, dropped_note: str = "", **options: Any) -> Table:
    """A rich Table of `columns` that fits `width` (see `layout`); the caption names the columns
    left out, followed by `dropped_note`."""
    shown = Table(title=title, title_justify="default", caption_justify="default", **options)  # no trailing spaces
    columns = [replace(c, cells=[terminal_text(cell) for cell in c.cells]) for c in columns]  # cells from the data
    placed, dropped = layout(columns, width, lambda n: chrome(shown, n), drop)
    if dropped:
        left_out = f"(narrow terminal: {', '.join(dropped)} left out{dropped_note})"
        caption = f"{caption}\n{left_out}" if caption else left_out
    shown.caption = caption
    for column, size in placed:
        shown.add_column(column.header, width=size, min_width=size, max_width=size,
                         justify="right" if column.numeric else "left",
                         no_wrap=not column.wrap, overflow="fold" if column.wrap else "ellipsis", style=column.style)
    for row in range(max((len(c.cells) for c, _ in placed), default=0)):
        shown.add_row(*(column.cells[row] for column, _ in placed))
    return shown


# From this width on, a listing shows ids whole; narrower, each at its shortest form.
WHOLE_IDS: Final = 160


def shown_ids(ids: Iterable[str], every: Iterable[str], width: int) -> dict[str, str]:
    """How a listing `width` columns wide shows each of `ids` (`display.short_ids` among `every`)."""
    from ..display import short_ids

    wanted = list(ids)
    return {i: i for i in wanted} if width >= WHOLE_IDS else short_ids(wanted, every)
