"""The strategy lab as a command: `replay` re-lives a stored session under compaction policies
side by side and prints what each did and what the session would have cost (`lab.replay`)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from pathlib import Path
import click
from rich.table import Table

from ..compaction.policy import STRATEGIES, CompactionPolicy
from ..errors import ConfigurationError
from ..lab import ReplayRow, replay
from ..store import SessionStore
from .app import State, main, out, user_errors
from .summarizer_choice import summarizer_named, summarizer_options

_POLICY_FIELDS = frozenset(f.name for f in dataclasses.fields(CompactionPolicy)) - {"tools"}


def policies_from_json(path: Path) -> list[tuple[str, CompactionPolicy]]:
    """(label, policy) for each object in the file (one object or a list): CompactionPolicy's
    fields, plus an optional ``label``."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ConfigurationError(f"--policy-json {path}: cannot read a JSON policy: {exc}") from None
    found = []
    for n, entry in enumerate(data if isinstance(data, list) else [data], 1):
        if not isinstance(entry, dict):
            raise ConfigurationError(f"--policy-json {path}: policy {n} is not a JSON object")
        fields = {k: v for k, v in entry.items() if k != "label"}
        unknown = sorted(set(fields) - _POLICY_FIELDS)
        if unknown:
            raise ConfigurationError(f"--policy-json {path}: policy {n} has unknown fields {unknown}; "
                                     f"known: {', '.join(sorted(_POLICY_FIELDS))}")
        if isinstance(fields.get("rules"), list):
            fields["rules"] = tuple(fields["rules"])
        policy = CompactionPolicy(**fields)
        found.append((str(entry.get("label") or f"{path.stem}#{n}"), policy))
    return found


def _label(window: int, strategy: str) -> str:
    return f"{window // 1000}k {strategy}" if window % 1000 == 0 else f"{window:,} {strategy}"


def _row(row: ReplayRow) -> list[str]:
    steps = ", ".join(f"{before:,}→{after:,}" for before, after in row.compactions) or "—"
    return [row.label, str(len(row.compactions)), steps, str(row.summarizer_calls), f"{row.peak_view:,}",
            f"{row.user_messages[0]}/{row.user_messages[1]}", f"{row.modified_files[0]}/{row.modified_files[1]}",
            str(row.invalid_requests), str(row.calls_over_window), f"{row.input_tokens:,}", f"{row.billed_cached:,}"]


@main.command(name="replay")
@click.argument("session_id")
@click.option("--window", "windows", type=int, multiple=True, metavar="N",
              help="Context window in tokens (repeat to compare; default 200,000).")
@click.option("--strategy", "strategies", type=click.Choice(STRATEGIES), multiple=True,
              help="Summarisation strategy (repeat to compare; default single).")
@click.option("--policy-json", "policy_files", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              multiple=True, help="CompactionPolicy fields as JSON (an object or a list, each with an optional "
                                  "\"label\"); repeatable, added to the --window × --strategy grid.")
@summarizer_options
@click.option("--json", "as_json", is_flag=True, help="One JSON object per policy.")
@click.pass_obj
def replay_command(state: State, session_id: str, windows: tuple[int, ...], strategies: tuple[str, ...],
                   policy_files: tuple[Path, ...], summarizer: str, model: str | None, base_url: str | None,
                   as_json: bool) -> None:
    """Re-live a stored session under compaction policies, side by side, in a scratch store.

    The session is appended again as an agent on this library would, with `maybe_compact`
    before each model call; the stored session is only read. One row per policy: compactions
    (tokens before→after each), summariser calls, peak view, user messages and modified files
    still in the final view, invalid requests (must be 0), calls over the window, and the input
    bill: tokens sent over the session, plain and with prompt caching (cache reads at a tenth,
    the cache broken by every prune, rewrite or summary). Provider counts are simulated from the
    session's own usage reports (the overhead and ratio they show).
    """
    with user_errors():
        store = state.store()
        events = store.transcript(session_id)
        grid = [(_label(w, s), CompactionPolicy.for_window(w, strategy=s))
                for w in (windows or (200_000,)) for s in (strategies or ("single",))]
        if policy_files and not (windows or strategies):
            grid = []
        grid += [entry for path in policy_files for entry in policies_from_json(path)]
        rows: list[ReplayRow] = []
        with tempfile.TemporaryDirectory(prefix="sessionstore-replay-") as scratch_dir:
            scratch = SessionStore(f"sqlite:///{Path(scratch_dir) / 'replay.db'}", token_counter=store.token_counter)
            try:
                scratch.migrate()
                for label, policy in grid:
                    chosen = summarizer_named(summarizer, model, base_url=base_url)
                    rows.append(replay(scratch, session_id, events, policy, chosen, label=label))
            finally:
                scratch.close()
    if as_json:
        for row in rows:
            click.echo(json.dumps(row.as_json()))
        return
    table = Table(title=f"replay of {session_id} ({len(events):,} events)", title_justify="left")
    for column in ("policy", "compactions", "view before→after (ours)", "summariser calls", "peak view", "user msgs",
                   "modified files", "invalid", "over window", "input tokens", "with caching"):
        table.add_column(column)
    for row in rows:
        table.add_row(*_row(row))
    out.print(table)
