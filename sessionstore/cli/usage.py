"""`sessionstore usage`: tokens and cost of the recorded requests, by day, session, model or project."""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from typing import Final

import click

from .app import CliError, State, err, main, out, styled_line

_DAY: Final = re.compile(r"^(\d{4})-?(\d{2})-?(\d{2})$")  # 2026-11-30, or ccusage's 20261130
_AGE: Final = re.compile(r"^(\d+)([mhdw])$", re.IGNORECASE)


def parse_when(name: str, text: str | None) -> date | datetime | None:
    """A --since/--until value: a day (2026-11-30 or 20261130: the whole day, in the report's zone),
    an ISO time (2026-11-30T12:00, in that zone unless it says its own), or an age (36h, 7d, 2w)."""
    if text is None:
        return None
    value = text.strip()
    day = _DAY.match(value)
    try:
        if day:
            return date(*(int(part) for part in day.groups()))
        age = _AGE.match(value)
        if age:
            from .app import parse_since

            return parse_since(value)
        return datetime.fromisoformat(value)
    except (ValueError, OverflowError):
        raise CliError(f"--{name} {text!r} is not a day (2026-11-30), a time (2026-11-30T12:00) or an age "
                       "(36h, 7d, 2w)") from None


@main.command()
@click.option("--by", "by", default="day", show_default=True, metavar="day|session|model|project",
              help="What a row adds up: a calendar day, a session, a model or a project (the session's cwd).")
@click.option("--since", default=None, metavar="WHEN",
              help="Only requests at or after this: a day (2026-11-30, whole), a time, or an age (7d).")
@click.option("--until", default=None, metavar="WHEN", help="Only requests up to this (a day: to its end).")
@click.option("--timezone", "zone", default=None, metavar="ZONE",
              help="The zone days are counted in (an IANA name such as UTC); default: the local one, as ccusage.")
@click.option("--prices", default=None, metavar="FILE", type=click.Path(dir_okay=False),
              help="Your own price table (JSON, the shipped table's shape), laid over the shipped one "
                   "(default: $SESSIONSTORE_PRICES).")
@click.option("--json", "as_json", is_flag=True,
              help="A JSON list of rows: the group (day, session, model or project), input_tokens, output_tokens, "
                   "cache_creation_tokens, cache_read_tokens, cost_usd.")
@click.pass_obj
def usage(state: State, by: str, since: str | None, until: str | None, zone: str | None, prices: str | None,
          as_json: bool) -> None:
    """What the recorded requests used and cost, by day, session, model or project.

    Read from the usage importers keep on assistant events. Each request is counted once, as its message and request ids say (Claude Code repeats a
    message's usage on every line of it). INPUT is the fresh input; cache writes and reads are
    counted and priced apart. Costs use the price table shipped with sessionstore (its date is
    under the table) or yours; a model without a price is named on stderr and counted at no cost.
    """
    from ..accounting import check_group, zone_of
    from ..pricing import price_table

    check_group(by)  # before the database is opened: a typo is named first
    zone_of(zone)
    table = price_table(prices)
    rows = state.store().usage(by=by, since=parse_when("since", since), until=parse_when("until", until),  # type: ignore[arg-type]
                               prices=table, timezone=zone)
    unpriced = sorted({model for row in rows for model in row.unpriced})
    if unpriced:
        styled_line(err, "yellow", "warning:", f"no price for {', '.join(unpriced)}: counted at no cost (give "
                                               "your own with --prices)")
    if as_json:
        click.echo(json.dumps([row.to_dict() for row in rows], ensure_ascii=False, indent=2))
        return
    from .tables import Column, table as fitted

    figures = [[row.input_tokens, row.output_tokens, row.cache_creation_tokens, row.cache_read_tokens]
               for row in rows]
    totals = [sum(column) for column in zip(*figures)] if figures else [0, 0, 0, 0]
    keys = [row.key if row.key is not None else "(none)" for row in rows] + ["total"]
    costs = [row.cost_usd for row in rows] + [sum(row.cost_usd for row in rows)]
    columns = [Column(by.upper(), keys, whole=by == "day", wrap=by != "day", style="bold")]
    for i, header in enumerate(("INPUT", "OUTPUT", "CACHE WRITE", "CACHE READ")):
        columns.append(Column(header, [f"{f[i]:,}" for f in figures] + [f"{totals[i]:,}"], whole=True, numeric=True))
    columns.append(Column("COST (USD)", [f"{c:,.2f}" for c in costs], whole=True, numeric=True))
    columns.append(Column("REQUESTS", [f"{row.requests:,}" for row in rows] + [f"{sum(r.requests for r in rows):,}"],
                          whole=True, numeric=True))
    out.print(fitted(columns, out.width, caption=f"prices of {table.date}: {table.source}"))
