"""Reading commands: `sessions`, `log`, `show`, `stats`."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Final

import click
from rich.table import Table

from .. import display
from ..events import KINDS
from .app import SID, SINCE, State, kv_table, main, out, page


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON array of sessions, every field in full.")
@click.option("--source", default=None, metavar="FORMAT",
              help="Only sessions imported from this format (claude-code, pi, codex, …).")
@click.option("--since", type=SINCE, default=None,
              help="Only sessions started at or after this (2025-10-30, 2025-10-30T12:00, or an age: 36h, 7d).")
@click.option("--limit", type=int, default=None, help="At most this many (the newest).")
@click.pass_obj
def sessions(state: State, as_json: bool, source: str | None, since: datetime | None, limit: int | None) -> None:
    """List the sessions, newest first: when each happened, title, project, model, links.

    "started" is when the session happened (the source's timestamps for an imported one),
    not when it was imported. TOKENS is the transcript's token figure, our estimate (see `sessionstore --help`).
    A narrow terminal gets short ids (unique prefixes) and leaves columns out; --json has everything.
    """
    store = state.store()
    rows = display.session_rows(store.sessions(), store.transcript_tokens(), store.first_event_times(),
                                first_prompt=lambda sid: _first_prompt(state, sid))
    every_id = [r.id for r in rows]  # a shown prefix must be unique among all, not only the listed
    rows = [r for r in rows if (source is None or r.source == source) and (since is None or r.started_at >= since)]
    rows = rows[:limit] if limit is not None else rows
    if as_json:
        click.echo(json.dumps([r.as_json() for r in rows], ensure_ascii=False, indent=2))
        return
    out.print(_sessions_table(rows, f"{len(rows)} session(s) in {store!r}, newest first", out.width, every_id))


# Columns of `sessions`, least needed last: on a narrow terminal they go from the end of this
# list first, so that the title and project keep a readable width (never zero).
_DROPPED_FIRST: Final = ("links", "events", "source", "model")
_MIN_WIDTH: Final = {"title": 24, "project": 10, "links": 16, "model": 8}


def _sessions_table(rows: list[display.SessionRow], title: str, width: int, every_id: list[str]) -> Table:
    """The session list at `width` columns: ids cut to a unique prefix (every command takes
    one), then whole columns dropped (`_DROPPED_FIRST`) before any is squeezed to nothing."""
    id_width = max((len(r.id) for r in rows), default=2)
    if width < 160:
        id_width = min(id_width, display.unique_prefix_length(every_id, minimum=8))
    # An id longer than that (no short unique prefix) folds onto lines; a wide terminal shows it whole.
    id_cap = max(12, width // 5) if width < 160 else max(id_width, 12)
    started = "%Y-%m-%d %H:%M" if width >= 100 else "%m-%d %H:%M"
    cells = {
        "id": [r.id[:id_width] for r in rows], "started": [f"{r.started_at:{started}}" for r in rows],
        "events": [str(r.events) for r in rows], "tokens": [f"{r.tokens:,}" for r in rows],
        "source": [r.source for r in rows], "model": [r.model for r in rows], "project": [r.project for r in rows],
        "title": [display.short(r.title, 80) for r in rows], "links": [r.links for r in rows],
    }
    order = ["id", "started", "events", "tokens", "source", "model", "project", "title", "links"]

    def needed(column: str) -> int:
        widest = max((len(c) for c in cells[column]), default=0)
        if column == "id":
            return min(widest, id_cap)
        return max(len(column), min(widest, _MIN_WIDTH.get(column, widest)))

    shown = list(order)
    for column in _DROPPED_FIRST:
        if sum(needed(c) + 3 for c in shown) + 1 <= width:
            break
        shown.remove(column)
    dropped = [c for c in order if c not in shown]
    caption = f"(narrow terminal: {', '.join(dropped)} left out; --json has everything)" if dropped else None
    table = Table(title=title, title_justify="left", caption=caption, caption_justify="left")
    for column in shown:
        wide = column in ("title", "links", "project", "id")
        table.add_column(column, min_width=needed(column), no_wrap=not wide, overflow="fold" if wide else "ellipsis",
                         justify="right" if column in ("events", "tokens") else "left",
                         max_width=id_cap if column == "id" else 60 if wide else needed(column),
                         ratio=1 if column == "title" else None)
    for n in range(len(rows)):
        table.add_row(*(cells[column][n] for column in shown))
    return table


def _first_prompt(state: State, session_id: str) -> str:
    """The title the session's first user messages give it: the page's rule (`viewer.digest`)."""
    from ..viewer.digest import PREFIX_EVENTS, session_digest

    events = list(state.store().events(session_id, upto=PREFIX_EVENTS, kinds=["message"]))
    return session_digest(session_id, {}, 0, None, None, events).first_prompt or ""


@main.command()
@click.argument("session_id", type=SID)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
@click.option("--brief", is_flag=True, help="One line per event.")
@click.option("--after", type=int, default=0, help="Only versions after this one.")
@click.option("--upto", type=int, default=None, help="Only versions up to this one.")
@click.option("--kind", "kinds", multiple=True, type=click.Choice(sorted(KINDS)),
              help="Only events of this kind; repeatable.")
@click.option("--role", "roles", multiple=True, help="Only messages of this role (user, assistant); repeatable.")
@click.option("--tool", "tools", multiple=True, help="Only calls of this tool and their results; repeatable.")
@click.option("--since", type=SINCE, default=None, help="Only events at or after this time (date, or an age: 2h).")
@click.option("--all", "show_all", is_flag=True, help="Also the import records hidden by default (custom events "
                                                      "the model never sees: progress, file-history snapshots…).")
@click.pass_obj
def log(state: State, session_id: str, as_json: bool, brief: bool, after: int, upto: int | None,
        kinds: tuple[str, ...], roles: tuple[str, ...], tools: tuple[str, ...], since: datetime | None,
        show_all: bool) -> None:
    """The full transcript: every event, nothing pruned or summarised (through a pager on a terminal)."""
    store = state.store()
    wanted = display.LogFilter(kinds=frozenset(kinds), roles=frozenset(roles), tools=frozenset(tools), since=since,
                               include_noise=show_all)
    wanted.include_noise = show_all or as_json  # --json is for programs: every event unless filtered
    events = wanted.apply(store.events(session_id, after=after, upto=upto, kinds=kinds or None))
    lines = map(display.event_json, events) if as_json else display.log_lines(events, brief=brief)
    page(lines)
    if wanted.hidden and not as_json:
        click.echo(f"({wanted.hidden} import record(s) hidden: --all shows them)", err=True)


@main.command()
@click.argument("session_id", type=SID)
@click.option("--at", type=int, default=None, help="The view as it was at this version.")
@click.option("--format", "fmt", type=click.Choice(["text", "anthropic", "openai", "json"]), default="text",
              show_default=True)
@click.option("--full", is_flag=True, help="Nothing shortened: the whole summary, every long block in full.")
@click.pass_obj
def show(state: State, session_id: str, at: int | None, fmt: str, full: bool) -> None:
    """The context view: what the model sees (now, or at a past version)."""
    store = state.store()
    view = store.context(session_id, at=at)
    if fmt == "text":
        tokens = store.transcript_tokens([session_id])[session_id]
        page(display.view_text(view, limit=None if full else display.SHOW_LIMIT, transcript_tokens=tokens)
             .split("\n"))
    else:
        data = {"anthropic": view.to_anthropic, "openai": view.to_openai,
                "json": lambda: display.view_json(view)}[fmt]()
        click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@main.command()
@click.argument("session_id", type=SID)
@click.pass_obj
def stats(state: State, session_id: str) -> None:
    """Tokens of the transcript against the view; compactions, prunes, rewrites."""
    out.print(kv_table(f"session {session_id}", display.stats_rows(state.store().stats(session_id))))
