"""Commands that append: `compact`, `fork`, and the `demo` session."""

from __future__ import annotations

import json
from typing import Any

import click

from .. import display
from ..compaction.policy import STRATEGIES, CompactionPolicy
from .app import SID, State, fitted_width, kv_table, main, out
from .reach import check_reachable
from .summarizer_choice import WouldSend, summarizer_named, summarizer_options


@main.command()
@click.argument("session_id", type=SID)
@summarizer_options
@click.option("--instructions", default=None, help="What the summary must focus on.")
@click.option("--dry-run", is_flag=True, help="Plan and show, write nothing and call no model: prints the summary "
                                              "it would write (offline) or the request it would send (anthropic, openai).")
@click.option("--context-window", type=int, default=None, help="The session's model's window in tokens (default "
                                                                 "200,000); the summariser's is --summarizer-window.")
@click.option("--keep-recent-tokens", type=int, default=None, help="Tokens kept verbatim (default 20,000).")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="single", show_default=True)
@click.pass_obj
def compact(state: State, session_id: str, summarizer: str, model: str | None, base_url: str | None,
            summarizer_window: int | None, instructions: str | None, dry_run: bool, context_window: int | None,
            keep_recent_tokens: int | None, strategy: str) -> None:
    """Compact a session now: prune, rewrite, summarise; the transcript keeps everything."""
    overrides: dict[str, Any] = {"strategy": strategy}
    if keep_recent_tokens is not None:
        overrides["keep_recent_tokens"] = keep_recent_tokens
    # a window of the session's model scales every default to it (a 16,000-token reserve would not fit 16,000)
    policy = CompactionPolicy.for_window(context_window, **overrides) if context_window is not None else \
        CompactionPolicy(**overrides)
    chosen = summarizer_named(summarizer, model, base_url=base_url, dry_run=dry_run, window=summarizer_window)
    if not dry_run:
        check_reachable(chosen)
    result = state.store().compact(session_id, policy, chosen, instructions, dry_run=dry_run)
    if result is None:
        out.print("nothing to compact")
        return
    out.print(kv_table(f"compaction of {session_id}", display.compaction_rows(result)))
    if not dry_run:
        return
    if isinstance(chosen, WouldSend):
        click.echo(f"\n{len(chosen.requests)} request(s) it would send to {chosen.name} (none was sent):")
        for request in chosen.requests:
            click.echo(json.dumps(request, ensure_ascii=False, indent=2))
    elif result.compaction is not None:
        click.echo(f"\nthe summary it would write:\n\n{result.compaction.payload['summary']}")


@main.command()
@click.argument("session_id", type=SID)
@click.option("--at", type=int, default=None, help="Fork at this version (default: the head).")
@click.pass_obj
def fork(state: State, session_id: str, at: int | None) -> None:
    """A new session sharing this one's history up to --at (nothing is copied); prints its id."""
    click.echo(state.store().fork(session_id, at=at))


@main.command()
@click.option("--context-window", type=int, default=None, help="The demo agent's context window (small, so "
                                                                 "that it compacts).")
@click.pass_obj
def demo(state: State, context_window: int | None) -> None:
    """Record a scripted agent session over this repository's own files, compacting as it goes."""
    from ..demo import run_demo

    run_demo(state.store(create_schema=True), out, context_window=context_window, command=state.command(),
             width=fitted_width())
