"""Commands that append: `compact`, `fork`, and the `demo` session."""

from __future__ import annotations

from typing import Any

import click

from .. import display
from ..compaction.policy import STRATEGIES, CompactionPolicy
from .app import State, user_errors, kv_table, main, out

def _summarizer(name: str, model: str | None) -> Any:
    if name == "anthropic":
        from ..summarizers.anthropic import AnthropicSummarizer

        return AnthropicSummarizer(model=model) if model else AnthropicSummarizer()
    from ..summarizers.offline import OfflineSummarizer

    return OfflineSummarizer()


@main.command()
@click.argument("session_id")
@click.option("--summarizer", type=click.Choice(["offline", "anthropic"]), default="offline", show_default=True)
@click.option("--model", default=None, help="Model for the anthropic summariser.")
@click.option("--instructions", default=None, help="What the summary must focus on.")
@click.option("--dry-run", is_flag=True, help="Plan and show, append nothing.")
@click.option("--context-window", type=int, default=None, help="Tokens (default 200,000).")
@click.option("--keep-recent-tokens", type=int, default=None, help="Tokens kept verbatim (default 20,000).")
@click.option("--strategy", type=click.Choice(STRATEGIES), default="single", show_default=True)
@click.pass_obj
def compact(state: State, session_id: str, summarizer: str, model: str | None, instructions: str | None,
            dry_run: bool, context_window: int | None, keep_recent_tokens: int | None, strategy: str) -> None:
    """Compact a session now: prune, rewrite, summarise; the transcript keeps everything."""
    overrides: dict[str, Any] = {"strategy": strategy}
    if context_window is not None:
        overrides["context_window"] = context_window
    if keep_recent_tokens is not None:
        overrides["keep_recent_tokens"] = keep_recent_tokens
    with user_errors():
        policy = CompactionPolicy(**overrides)
        result = state.store().compact(session_id, policy, _summarizer(summarizer, model), instructions,
                                       dry_run=dry_run)
        if result is None:
            out.print("nothing to compact")
            return
        out.print(kv_table(f"compaction of {session_id}", display.compaction_rows(result)))


@main.command()
@click.argument("session_id")
@click.option("--at", type=int, default=None, help="Fork at this version (default: the head).")
@click.pass_obj
def fork(state: State, session_id: str, at: int | None) -> None:
    """A new session sharing this one's history up to --at (nothing is copied)."""
    with user_errors():
        child = state.store().fork(session_id, at=at)
        click.echo(child)


@main.command()
@click.option("--context-window", type=int, default=None, help="The demo agent's context window (small, so "
                                                                 "that it compacts).")
@click.pass_obj
def demo(state: State, context_window: int | None) -> None:
    """Record a scripted agent session over this repository's own files, compacting as it goes."""
    from ..demo import run_demo

    with user_errors():
        run_demo(state.store(create_schema=True), out, context_window=context_window)
