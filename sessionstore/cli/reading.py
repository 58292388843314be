"""Reading commands: `sessions`, `log`, `show`, `stats`."""

from __future__ import annotations

import json

import click
from rich.table import Table

from .. import display
from .app import State, user_errors, kv_table, main, out

@main.command()
@click.option("--limit", type=int, default=None, help="At most this many sessions.")
@click.pass_obj
def sessions(state: State, limit: int | None) -> None:
    """List the sessions."""
    with user_errors():
        store = state.store()
        tokens = store.token_totals()
        table = Table(title=f"sessions in {store!r}", title_justify="left")
        for column in ("id", "created", "events", "tokens", "parent", "source"):
            table.add_column(column)
        for info in store.sessions(limit=limit):
            source = info.metadata.get("source") or info.metadata.get("format") or ""
            title = info.metadata.get("title") or ""
            parent = f"{info.parent_id}@v{info.fork_version}" if info.parent_id else ""
            table.add_row(info.id, f"{info.created_at:%Y-%m-%d %H:%M}", str(info.head),
                          f"{tokens.get(info.id, 0):,}", parent, " ".join(p for p in (str(source), title) if p))
        out.print(table)


@main.command()
@click.argument("session_id")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per event.")
@click.option("--brief", is_flag=True, help="One line per event.")
@click.option("--after", type=int, default=0, help="Only versions after this one.")
@click.option("--upto", type=int, default=None, help="Only versions up to this one.")
@click.pass_obj
def log(state: State, session_id: str, as_json: bool, brief: bool, after: int, upto: int | None) -> None:
    """The full transcript: every event, nothing pruned or summarised."""
    with user_errors():
        events = state.store().events(session_id, after=after, upto=upto)
        for line in (map(display.event_json, events) if as_json else display.log_lines(events, brief=brief)):
            click.echo(line)


@main.command()
@click.argument("session_id")
@click.option("--at", type=int, default=None, help="The view as it was at this version.")
@click.option("--format", "fmt", type=click.Choice(["text", "anthropic", "openai", "json"]), default="text",
              show_default=True)
@click.pass_obj
def show(state: State, session_id: str, at: int | None, fmt: str) -> None:
    """The context view: what the model sees (now, or at a past version)."""
    with user_errors():
        view = state.store().context(session_id, at=at)
        if fmt == "text":
            click.echo(display.view_text(view))
        else:
            data = {"anthropic": view.to_anthropic, "openai": view.to_openai,
                    "json": lambda: display.view_json(view)}[fmt]()
            click.echo(json.dumps(data, ensure_ascii=False, indent=2))


@main.command()
@click.argument("session_id")
@click.pass_obj
def stats(state: State, session_id: str) -> None:
    """Tokens of the transcript against the view; compactions, prunes, rewrites."""
    with user_errors():
        out.print(kv_table(f"session {session_id}", display.stats_rows(state.store().stats(session_id))))
