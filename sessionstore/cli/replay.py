"""The strategy lab as a command: `replay` re-lives a stored session under compaction policies
side by side and prints what each did and what the session would have cost (`lab.replay`)."""

from __future__ import annotations

import dataclasses
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
import click
from rich import box

from ..compaction.policy import STRATEGIES, CompactionPolicy
from ..errors import ConfigurationError
from ..lab import ReplayRow, replay
from ..quality import KINDS
from ..store import SessionStore
from .app import State, err, main, out, user_errors
from .summarizer_choice import summarizer_named, summarizer_options
from .reach import check_reachable
from .tables import Column, table
from .app import SID  # noqa: I001  (the one SID resolver; kept apart from the line above for merges)

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


def _step(step: tuple[int, int] | None) -> str:
    return f"{step[0]:,}→{step[1]:,}" if step else "—"


def _survived(row: ReplayRow) -> str:
    """Per probe class (user requests, modified files, todo items, last errors, current work):
    the share the final view still shows, in percent ("-" where the session has none)."""
    cells = []
    for kind in KINDS:
        kept, total = row.survived.get(kind, (0, 0))
        cells.append(f"{100 * kept // total}" if total else "-")
    return " ".join(cells)


# (header, cell) of the summary table: fixed-width cells whatever the number of compactions
# (each one's figures are in --detail and --json).
_COLUMNS: tuple[tuple[str, Callable[[ReplayRow], str]], ...] = (
    ("policy", lambda r: r.label),
    ("compac-\ntions", lambda r: str(len(r.compactions))),
    ("median\nbefore→after", lambda r: _step(r.median_compaction)),
    ("summar.\ncalls", lambda r: str(r.summarizer_calls)),
    ("peak\nview", lambda r: f"{r.peak_view:,}"),
    ("kept %\nu f t e w", _survived),
    ("invalid/\nover", lambda r: f"{r.invalid_requests}/{r.calls_over_window}"),
    ("input\ntokens", lambda r: f"{r.input_tokens:,}"),
    ("with\ncaching", lambda r: f"{r.billed_cached:,}"),
)


# Columns left out first on a narrow terminal (the figures are never cut).
_DROPPED_FIRST: tuple[str, ...] = ("summar.\ncalls", "peak\nview", "median\nbefore→after", "input\ntokens")


def warnings(rows: list[ReplayRow], windows: dict[str, int]) -> list[str]:
    """A policy that thrashes, or that costs more with caching than a policy with a larger window."""
    found = []
    for row in rows:
        if row.thrashing():
            found.append(f"{row.label}: {len(row.compactions)} compactions in {row.model_calls} model calls — the "
                         "policy thrashes (raise the window or lower keep_recent_tokens' share)")
        cheaper = [other for other in rows if windows.get(other.label, 0) > windows.get(row.label, 0)
                   and other.billed_cached < row.billed_cached]
        if cheaper and row.compactions:
            found.append(f"{row.label}: costs more with caching ({row.billed_cached:,}) than {cheaper[0].label} "
                         f"({cheaper[0].billed_cached:,}): each compaction breaks the cache")
    return found


@main.command(name="replay")
@click.argument("session_id", type=SID)
@click.option("--window", "windows", type=int, multiple=True, metavar="N",
              help="Context window in tokens (repeat to compare; default 200,000).")
@click.option("--strategy", "strategies", type=click.Choice(STRATEGIES), multiple=True,
              help="Summarisation strategy (repeat to compare; default single).")
@click.option("--policy-json", "policy_files", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              multiple=True, help="CompactionPolicy fields as JSON (an object or a list, each with an optional "
                                  "\"label\"); repeatable, added to the --window × --strategy grid.")
@summarizer_options(multiple=True)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per policy (every compaction included).")
@click.option("--detail", is_flag=True, help="Also list every compaction's tokens before→after, per policy.")
@click.pass_obj
def replay_command(state: State, session_id: str, windows: tuple[int, ...], strategies: tuple[str, ...],
                   policy_files: tuple[Path, ...], summarizers: tuple[str, ...], model: str | None,
                   base_url: str | None, summarizer_window: int | None,
                   as_json: bool, detail: bool) -> None:
    """Re-live a stored session under compaction policies, side by side, in a scratch store.

    The session is appended again as an agent on this library would, with `maybe_compact`
    before each model call; the stored session is only read. One row per policy: compactions
    (how many, the median's tokens before→after, the largest view one left; each one with
    --detail), summariser calls, peak view, what the final view still shows of the session
    (user requests, modified files, todo items, last errors, current work: `sessionstore.quality`,
    in percent, in that order under "kept % u f t e w"), invalid requests (must be 0), calls
    over the window, and the input bill: tokens sent over the
    session, plain and with prompt caching (cache reads at a tenth, the cache broken by every
    prune, rewrite or summary). Provider counts are simulated from the session's own usage
    reports (the overhead and ratio they show). A policy that thrashes is warned about.
    With several --summarizer, one row per policy and summariser (offline, openai,
    openai-compact, anthropic-compact: --base-url serves the model ones).
    """
    with user_errors():
        store = state.store()
        events = store.transcript(session_id)
        grid = [(_label(w, s), CompactionPolicy.for_window(w, strategy=s))
                for w in (windows or (200_000,)) for s in (strategies or ("single",))]
        if policy_files and not (windows or strategies):
            grid = []
        grid += [entry for path in policy_files for entry in policies_from_json(path)]
        windows_of = {label: policy.context_window for label, policy in grid}
        rows: list[ReplayRow] = []
        with tempfile.TemporaryDirectory(prefix="sessionstore-replay-") as scratch_dir:
            scratch = SessionStore(f"sqlite:///{Path(scratch_dir) / 'replay.db'}", token_counter=store.token_counter)
            try:
                scratch.migrate()
                names = summarizers or ("offline",)
                for label, policy in grid:
                    for name in names:
                        chosen = summarizer_named(name, model, base_url=base_url, window=summarizer_window)
                        check_reachable(chosen)
                        row_label = label if len(names) == 1 else f"{label} {name}"
                        windows_of[row_label] = policy.context_window
                        rows.append(replay(scratch, session_id, events, policy, chosen, label=row_label))
            finally:
                scratch.close()
    if as_json:
        for row in rows:
            click.echo(json.dumps(row.as_json()))
        return
    (label, cells), *figures = _COLUMNS
    columns = [Column(label, [cells(row) for row in rows], wrap=True, minimum=10),
               *(Column(header, [cell(row) for row in rows], whole=True, numeric=True) for header, cell in figures)]
    out.print(table(columns, out.width, drop=_DROPPED_FIRST, title=f"replay of {session_id} ({len(events):,} events)",
                    dropped_note="; --json has everything", box=box.SIMPLE_HEAD, pad_edge=False))
    if detail:
        for row in rows:
            out.print(f"{row.label}: " + (", ".join(_step(c) for c in row.compactions) or "no compaction"))
    for warning in warnings(rows, windows_of):
        err.print(f"warning: {warning}")
