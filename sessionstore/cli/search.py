"""`sessionstore search`: find events by what they say, across every session or in one."""

from __future__ import annotations

import json
import os
import sys

import click
from rich.markup import escape

from ..repository.core import SEARCH_LIMIT
from ..search import SEARCHED_KINDS
from .app import SID, State, main, out


@main.command()
@click.argument("query")
@click.option("--session", "session_id", type=SID, default=None,
              help="Only this session's history (a fork's inherited events included).")
@click.option("--kind", type=click.Choice(SEARCHED_KINDS), default=None, help="Only events of this kind.")
@click.option("--tool", default=None, metavar="NAME", help="Only calls of this tool and their results.")
@click.option("--limit", type=click.IntRange(min=1), default=SEARCH_LIMIT, show_default=True,
              help="At most this many hits, best first.")
@click.option("--json", "as_json", is_flag=True, help="One JSON array of hits (highlights as [start, end] offsets).")
@click.pass_obj
def search(state: State, query: str, session_id: str | None, kind: str | None, tool: str | None, limit: int,
           as_json: bool) -> None:
    """Find events whose text matches QUERY: messages, tool calls (name and input) and results.

    QUERY: words that must all occur, "a phrase", prefix*, OR between alternatives, -word
    to exclude; case-insensitive, no stemming. Emoji and CJK match as substrings (日本 finds
    日本語). A QUERY that starts with "-" goes after "--": sessionstore search -- "-foo bar".
    Each hit shows its session, version, kind (and tool) and the matching words in context.
    No hit is not an error (exit status 0).
    """
    hits = state.store().search(query, session_id, kind=kind, tool=tool, limit=limit)
    if as_json:
        click.echo(json.dumps([hit.as_json() for hit in hits], ensure_ascii=False, indent=2))
        return
    if not hits:
        click.echo(f"no event matches {query!r}", err=True)
        return
    styled = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    for hit in hits:
        where = f"{hit.session_id}  v{hit.version}  {hit.kind}" + (f" {hit.tool}" if hit.tool else "")
        if styled:
            text = hit.marked("\0", "\1")  # escape the text first, then style the matches
            text = escape(text).replace("\0", "[bold yellow]").replace("\1", "[/bold yellow]")
            out.print(f"[cyan]{escape(where)}[/cyan]\n    {text}", markup=True)
        else:
            out.print(f"{where}\n    {hit.marked()}", markup=False)
