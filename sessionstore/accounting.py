"""What the recorded requests cost: usage reports added up by day, session, model or project.

Pure planning for `Repository.usage` (`repository/accounting.py`): the window a report covers,
which reports count, and the rows. Every imported assistant message keeps its provider's usage
in ``meta["usage"]``; some agents write one request's report more than once, and a report counts
once, as its ids say:

- Claude Code writes a line per content block, each repeating the message's usage, and a resumed
  session's file copies earlier lines: a report is known by its ``message_id`` and ``request_id``
  together (as ccusage knows it), and the first one met counts (in the order the events happened);
- OpenHands gives each tool call of one response the response's usage: known by ``response_id``;
- reports with neither (Pi, Gemini CLI, OpenCode's steps, Codex's counts) are each a request.

Days are calendar days in one time zone: the local one by default, as ccusage's are.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from typing import Any, Final, Literal, TypeAlias
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from .errors import InvalidUsageQuery
from .pricing import Price, PriceTable
from .projection.usage import Billed, billed

UsageGroup: TypeAlias = Literal["day", "session", "model", "project"]
GROUPS: Final[tuple[str, ...]] = ("day", "session", "model", "project")


@dataclass(frozen=True, slots=True)
class UsageRecord:
    """One usage report as stored: the event's session, time and meta fields that matter."""

    session_id: str
    at: datetime
    usage: Any
    model: str | None
    message_id: str | None
    request_id: str | None
    response_id: str | None
    project: str | None
    recorded_cost: float | None  # what the agent itself said the request cost (Pi, OpenCode), if it did

    def key(self) -> str | None:
        """What makes two reports one request's; None: this report is a request of its own."""
        if self.message_id and self.request_id:
            return f"m:{self.message_id}:{self.request_id}"
        if self.response_id:
            return f"r:{self.response_id}"
        return None


@dataclass(frozen=True, slots=True)
class UsageRow:
    """The tokens and cost of one group: a day (YYYY-MM-DD), a session, a model or a project.

    `input_tokens` are the fresh input (cache reads and writes apart); `cost_usd` prices each
    request by its model (`pricing`); `unpriced` names the models whose requests had tokens but
    no price, counted at no cost (or at what the agent recorded, where it did)."""

    by: str
    key: str | None
    input_tokens: int
    output_tokens: int
    cache_creation_tokens: int
    cache_read_tokens: int
    cost_usd: float
    requests: int
    unpriced: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The row as its JSON: the group under its own name (``day``, ``session``, …), the four
        token figures and the cost."""
        return {self.by: self.key, "input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_creation_tokens": self.cache_creation_tokens, "cache_read_tokens": self.cache_read_tokens,
                "cost_usd": self.cost_usd}


def check_group(by: Any) -> str:
    if by not in GROUPS:
        raise InvalidUsageQuery(f"usage is grouped by {', '.join(GROUPS)}; got {by!r}", field="by")
    return str(by)


def zone_of(zone: tzinfo | str | None) -> tzinfo | None:
    """The zone days are counted in: `zone` (a tzinfo or an IANA name); None for the local one,
    which is then asked of the system for each instant (its offset changes with daylight saving,
    as ccusage's days follow it)."""
    if zone is None or isinstance(zone, tzinfo):
        return zone
    try:
        return ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        raise InvalidUsageQuery(f"unknown time zone {zone!r} (an IANA name such as Europe/Paris or UTC)",
                                field="timezone") from None


def _in_zone(moment: datetime, zone: tzinfo | None) -> datetime:
    """An aware `moment` in `zone`; a naive one taken as a wall time there (None: the local zone)."""
    if moment.tzinfo is None:
        return moment.replace(tzinfo=zone) if zone is not None else moment.astimezone()
    return moment.astimezone(zone)


def window(since: date | datetime | None, until: date | datetime | None, zone: tzinfo | None,
           now: datetime) -> tuple[datetime | None, datetime | None]:
    """The instants [start, end) a report covers: a date is its whole day in `zone` (`until`'s
    included), a datetime itself (naive: in `zone`; `until` included). A start after `now` asks
    about the future: `InvalidUsageQuery`, as is an end before the start."""
    start = _instant(since, zone, "since", 0)
    end = _instant(until, zone, "until", 1)
    if start is not None and start > now:
        raise InvalidUsageQuery(f"since {since} is in the future: nothing can have been used yet", field="since")
    if start is not None and end is not None and end <= start:
        raise InvalidUsageQuery(f"until {until} is before since {since}", field="until")
    return start, end


def _instant(value: date | datetime | None, zone: tzinfo | None, name: str, after: int) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return _in_zone(value, zone) + timedelta(microseconds=after)
    if isinstance(value, date):
        return _in_zone(datetime.combine(value + timedelta(days=after), time()), zone)
    raise InvalidUsageQuery(f"{name} must be a date or a datetime, got {type(value).__name__} {value!r:.40}",
                            field=name)


def counted(records: Iterable[UsageRecord]) -> list[UsageRecord]:
    """Each request once: the first of the reports sharing a key (`UsageRecord.key`), in the
    order given (the order the events happened)."""
    seen: set[str] = set()
    kept = []
    for record in records:
        key = record.key()
        if key is not None:
            if key in seen:
                continue
            seen.add(key)
        kept.append(record)
    return kept


class _Sum:
    __slots__ = ("tokens", "cost", "requests", "unpriced")

    def __init__(self) -> None:
        self.tokens = [0, 0, 0, 0]
        self.cost = 0.0
        self.requests = 0
        self.unpriced: dict[str, None] = {}


def rows(records: Iterable[UsageRecord], by: str, zone: tzinfo | None, prices: PriceTable) -> list[UsageRow]:
    """The report: `records` counted once each (`counted`), grouped `by`, priced with `prices`.
    Days and sessions in order, models and projects by cost, highest first."""
    sums: dict[str | None, _Sum] = {}
    found: dict[str | None, Price | None] = {}  # each model looked up once
    for record in counted(records):
        tokens = billed(record.usage)
        group = _group(record, by, zone)
        total = sums.get(group)
        if total is None:
            total = sums[group] = _Sum()
        for i, value in enumerate(tokens):
            total.tokens[i] += value
        total.requests += 1
        if record.model not in found:
            found[record.model] = prices.price(record.model)
        total.cost += _cost(record, tokens, found[record.model], total)
    made = [UsageRow(by, group, *s.tokens, cost_usd=s.cost, requests=s.requests, unpriced=tuple(s.unpriced))
            for group, s in sums.items()]
    if by in ("day", "session"):
        return sorted(made, key=lambda row: row.key or "")
    return sorted(made, key=lambda row: (-row.cost_usd, row.key or ""))


def _group(record: UsageRecord, by: str, zone: tzinfo | None) -> str | None:
    if by == "day":
        return _in_zone(record.at, zone).date().isoformat()
    if by == "session":
        return record.session_id
    return record.model if by == "model" else record.project


def _cost(record: UsageRecord, tokens: Billed, price: Price | None, total: _Sum) -> float:
    if price is not None:
        fast = isinstance(record.usage, Mapping) and record.usage.get("speed") == "fast"
        return price.cost(tokens.input, tokens.output, tokens.cache_creation, tokens.cache_read, fast=fast)
    if any(tokens):
        total.unpriced[record.model or "(no model)"] = None
    cost = record.recorded_cost
    return cost if cost is not None and math.isfinite(cost) and cost >= 0 else 0.0


def recorded_cost(usage: Any, cost: Any) -> float | None:
    """What the agent recorded the request cost: OpenCode's step ``cost``, Pi's ``usage.cost.total``."""
    if isinstance(usage, Mapping) and isinstance(usage.get("cost"), Mapping):
        cost = usage["cost"].get("total")
    return float(cost) if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None


__all__ = ["GROUPS", "UsageGroup", "UsageRecord", "UsageRow", "check_group", "counted", "recorded_cost", "rows",
           "window", "zone_of"]
