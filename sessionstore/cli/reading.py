"""Reading commands: `sessions`, `log`, `show`, `stats`."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Final

import click
from rich.table import Table

from .. import display
from ..events import KINDS
from .app import SID, SINCE, State, err, fitted_width, kv_table, main, out, page
from .tables import Column, shown_ids, table


@main.command()
@click.option("--json", "as_json", is_flag=True, help="One JSON array of sessions, every field in full.")
@click.option("--where", "wheres", multiple=True, metavar="KEY=VALUE",
              help="Only sessions whose metadata has this value (user=ann; a nested key: adk.user_id=u1; "
                   "a number, true, false or null is JSON, quote it to mean text: n='\"3\"'); repeatable.")
@click.option("--agent", default=None, metavar="NAME",
              help="Only sessions of this agent or framework (claude-code, codex, pi, langgraph, …).")
@click.option("--source", default=None, metavar="FORMAT", help="The same as --agent (the importers' format name).")
@click.option("--project", default=None, metavar="DIR",
              help="Only sessions of this project (the metadata's project, else its cwd).")
@click.option("--since", default=None, metavar="WHEN",
              help="Only sessions started at or after this (2025-10-30, 2025-10-30T12:00, or an age: 36h, 7d).")
@click.option("--until", default=None, metavar="WHEN", help="Only sessions last active at or before this.")
@click.option("--limit", type=int, default=None, help="At most this many (the newest); the next page's --after is "
                                                      "printed on stderr.")
@click.option("--after", default=None, metavar="CURSOR", help="The page after this cursor (a --limit run prints it).")
@click.pass_obj
def sessions(state: State, as_json: bool, wheres: tuple[str, ...], agent: str | None, source: str | None,
             project: str | None, since: str | None, until: str | None, limit: int | None,
             after: str | None) -> None:
    """List the sessions, newest first: when each happened, title, project, model, links.

    "started" is when the session happened (the source's timestamps for an imported one),
    not when it was imported. TOKENS is the transcript's token figure, our estimate (see `sessionstore --help`).
    A narrow terminal gets short ids (unique prefixes) and leaves columns out; --json has everything.
    """
    from ..errors import InvalidQuery
    from ..finding import where_option

    if agent is not None and source is not None and agent != source:
        raise InvalidQuery(f"--agent {agent!r} and --source {source!r} name different agents", field="agent")
    store = state.store()
    found = store.sessions(where=where_option(wheres) if wheres else None, agent=agent or source, project=project,
                           since=since, until=until, limit=limit, after=after)
    ids = [info.id for info in found]
    rows = display.session_rows(found, store.transcript_tokens(ids), first_prompt=lambda sid: _first_prompt(state, sid),
                                lookup=store.session)
    if as_json:
        click.echo(json.dumps([r.as_json() for r in rows], ensure_ascii=False, indent=2))
    else:
        # a shown prefix must be unique among every session, not only the listed (read only when
        # a narrow terminal shortens ids)
        every_id = (info.id for info in store.sessions())
        out.print(_sessions_table(rows, f"{len(rows)} session(s) in {store!r}, newest first", out.width, every_id))
    if found.cursor is not None:
        err.print(f"(more: --after {found.cursor})", soft_wrap=True)


# Columns of `sessions` left out first on a narrow terminal, so that the title and the project
# keep a readable width (never none).
_DROPPED_FIRST: Final = ("links", "events", "source", "model")


def _sessions_table(rows: list[display.SessionRow], title: str, width: int, every_id: Iterable[str]) -> Table:
    """The session list at `width` columns: each id at its shortest form (every command takes it),
    then whole columns left out (`_DROPPED_FIRST`) before the title or the project is cut short."""
    ids = shown_ids([*(r.id for r in rows), *(r.parent for r in rows if r.parent)], every_id, width)
    started = "%Y-%m-%d %H:%M" if width >= 100 else "%m-%d %H:%M"
    links = [r.links.replace(r.parent, ids[r.parent]) if r.parent else r.links for r in rows]
    columns = [
        Column("id", [ids[r.id] for r in rows], whole=True, wrap=True, minimum=17),  # folds when no short form
        Column("started", [f"{r.started_at:{started}}" for r in rows], whole=True),
        Column("events", [str(r.events) for r in rows], whole=True, numeric=True),
        Column("tokens", [f"{r.tokens:,}" for r in rows], whole=True, numeric=True),
        Column("source", [r.source for r in rows], minimum=6),
        Column("model", [r.model for r in rows], minimum=8),
        Column("project", [r.project for r in rows], minimum=10),
        Column("title", [display.short(r.title, 80) for r in rows], minimum=20),
        Column("links", links, minimum=16),
    ]
    return table(columns, width, drop=_DROPPED_FIRST, title=title, dropped_note="; --json has everything")


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
@click.option("--all", "show_all", is_flag=True, help="Also the records hidden by default: custom events the model "
                                                      "never sees (an import's progress records and file-history "
                                                      "snapshots, LangGraph's checkpoints…).")
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
    lines = map(display.event_json, events) if as_json else display.log_lines(events, brief=brief, width=fitted_width())
    page(lines)
    if wanted.hidden and not as_json:
        err.print(f"({display.hidden_note(wanted.hidden_types)}: --all shows them)")


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
        text = display.view_text(view, limit=None if full else display.SHOW_LIMIT, transcript_tokens=tokens)
        page(display.terminal_text(text).split("\n"))
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
