"""`sessionstore search`: find events by what they say, across every session or in one."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING

import click
from rich.text import Text

from ..display import visible
from ..repository.core import SEARCH_LIMIT
from ..search import SEARCHED_KINDS
from .app import SID, State, main, out
from .tables import shown_ids

if TYPE_CHECKING:
    from ..repository.results import SearchHit


_INDENT = 4  # a hit's snippet, under its heading


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
    日本語). A QUERY that starts with "-" goes after "--": search -- "-foo bar".
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
    styled = out.is_terminal and not os.environ.get("NO_COLOR")
    ids = shown_ids({hit.session_id for hit in hits}, [info.id for info in state.store().sessions()], out.width)
    for hit in hits:
        where = visible(f"{ids[hit.session_id]}  v{hit.version}  {hit.kind}" + (f" {hit.tool}" if hit.tool else ""))
        out.print(Text(where, style="cyan" if styled else ""))
        for line in _snippet(hit, styled).wrap(out, max(20, out.width - _INDENT)):
            line.rstrip()
            out.print(Text(" " * _INDENT) + line)


def _snippet(hit: SearchHit, styled: bool) -> Text:
    """The hit's snippet (control characters drawn, one for one: the matches' offsets hold), its
    matches in bold on a terminal, else between [ and ]."""
    if not styled:
        return Text(visible(hit.marked()))
    text = Text(visible(hit.snippet))
    for start, end in hit.highlights:
        text.stylize("bold yellow", start, end)
    return text
