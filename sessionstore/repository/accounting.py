"""Usage and cost: the usage reports stored on imported assistant events, added up (`accounting`)."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import date, datetime, tzinfo
from typing import Any

from .. import accounting
from ..accounting import UsageRecord, UsageRow
from ..pricing import PriceTable
from .base import Part, session_id_list, utc_now
from .ops import Execute, Program


class AccountingPart(Part):
    def usage(self, by: str = "day", since: date | datetime | None = None, until: date | datetime | None = None,
              session_ids: Iterable[str] | None = None, *, prices: PriceTable,
              zone: tzinfo | str | None = None) -> Program[list[UsageRow]]:
        """Tokens and cost grouped `by` day, session, model or project (see `accounting`): one
        statement reads the reports in the window, in the order they happened; a request is counted
        once, in the session that stores it (a fork's inherited history is its parent's)."""
        by = accounting.check_group(by)
        tz = accounting.zone_of(zone)
        start, end = accounting.window(since, until, tz, utc_now())
        params: dict[str, Any] = {}
        if start is not None:
            params["since"] = self.sql.bind_time(start)
        if end is not None:
            params["until"] = self.sql.bind_time(end)
        if session_ids is not None:
            ids = session_id_list(session_ids)
            if not ids:
                return []
            params["ids"] = self.sql.list_param(ids)
        statement = self.sql.usage_reports(since=start is not None, until=end is not None, ids=session_ids is not None)
        decode = self.sql.decode
        records = []
        for sid, at, usage, model, message, request, response, project, cost in (yield Execute(statement, params)):
            usage = decode.json(usage)
            records.append(UsageRecord(sid, decode.time(at), usage, _text(model), _text(message),  # type: ignore[arg-type]
                                       _text(request), _text(response), _text(project),
                                       accounting.recorded_cost(usage, _number(cost))))
        return accounting.rows(records, by, tz, prices)


def _number(value: Any) -> float | None:
    """A JSON number read back as a value (SQLite) or as text (PostgreSQL's ``->>``)."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
