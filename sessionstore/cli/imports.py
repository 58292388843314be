"""`sessionstore import`: agents' transcripts, of every format `sessionstore.importers` knows, into the store."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Final

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .app import EXIT_INTERRUPTED, EXIT_NOT_DONE, CliError, State, err, main, out, styled_line
from .tables import Column, shown_ids, table

if TYPE_CHECKING:
    from ..importers import FileImport


@main.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.option("--on-divergence", type=click.Choice(["fail", "fork"]), default="fail", show_default=True,
              help="When a session already holds events that are not a prefix of the file's (a corrected line, "
                   "a rewritten file): fail = report it and write nothing for that session; fork = continue the "
                   "file in a new session forked at the last common version (nothing stored is changed).")
@click.pass_obj
def import_(state: State, paths: tuple[str, ...], on_divergence: str) -> None:
    """Import Claude Code, Pi, Codex, Gemini CLI, OpenCode, OpenHands, SWE-agent, Copilot CLI, Qwen
    Code, Cline (Roo Code, Kilo Code), Aider, Cursor and mini-SWE-agent transcripts (files or
    folders); re-importing is safe.

    Each file's format is told by its content. Folders are searched for *.jsonl files, for
    the *.json and *.traj files an agent writes (an OpenCode storage folder, OpenHands and
    SWE-agent trajectories, Gemini CLI chats, Cline tasks, mini-SWE-agent trajectories) and for
    Aider's *.md chat history. Every file that could not be imported, and
    every line that could not, is listed as FILE:LINE (line 0: the whole file); lines read
    despite a defect (two JSON objects on one line) are warnings. Interrupted, it keeps what it
    wrote: the same command resumes.
    """
    from ..importers import find_transcripts, formats, import_path

    files = find_transcripts(*paths)
    if not any(formats.recognised(f) for f in files):  # the first one recognised will do: the import reads them
        suffixes = ", ".join(f"*{s}" for s in formats.TRANSCRIPT_SUFFIXES)
        what = (f"{len(files)} file(s), none of them a {formats.agents()} transcript" if files else
                f"no transcript file ({suffixes})")
        raise CliError(f"nothing to import: {what} in {', '.join(paths)} (no database was created or changed)",
                       EXIT_NOT_DONE)
    store = state.store(create_schema=True)
    done: list[FileImport] = []
    try:
        with Progress(TextColumn("{task.description}", markup=False), BarColumn(), MofNCompleteColumn(),
                      TimeElapsedColumn(), console=err, transient=True) as progress:  # a path is text, not markup
            task = progress.add_task("importing", total=len(files))

            def advance(count: int, total: int, result: FileImport) -> None:
                done.append(result)
                done.extend(result.subagents)
                progress.update(task, completed=count, total=total, description=f"importing {result.path[-50:]}")

            report = import_path(store, *paths, on_progress=advance, on_divergence=on_divergence)
    except KeyboardInterrupt:
        added = sum(f.events_added for f in done)
        err.print(f"interrupted after {len(done)} of {len(files)} file(s): {added:,} event(s) were added and "
                  "stay stored; the file being imported kept what it had written (no empty session). Run the "
                  "same command again to resume.")
        raise SystemExit(EXIT_INTERRUPTED) from None
    complete = [f for f in report.files if f.imported and f.ok]
    partly = sum(1 for f in report.files if f.imported and not f.ok)
    title = f"{len(complete)} of {len(report.files)} file(s) imported in full"
    title += f", {partly} in part" if partly else ""
    out.print(_files_table(report.files, f"{title} into {store!r} in {report.seconds:.1f} s",
                           [info.id for info in store.sessions()]))
    for issue in report.warnings:
        styled_line(err, "yellow", "warning:", str(issue))
    for issue in report.failures:
        styled_line(err, "red", "not imported:", str(issue))
    if not report.ok:
        failed = {Path(i.path) for i in report.failures}
        err.print(f"{len(report.failures)} item(s) in {len(failed)} file(s) were not imported (listed above as "
                  "FILE:LINE; line 0 is the whole file)")
        raise SystemExit(EXIT_NOT_DONE)


# Columns of the report left out first on a narrow terminal (every issue is listed below it anyway);
# a column of zeros goes before the others (`tables.layout`). When nothing was added (a re-import),
# "present" is the figure that tells, and takes the place of "added".
_DROPPED_FIRST: Final = ("issues", "present", "results", "calls", "compact", "format", "msgs", "added")
_DROPPED_FIRST_NOTHING_ADDED: Final = tuple({"present": "added", "added": "present"}.get(h, h) for h in _DROPPED_FIRST)


def _files_table(files: list[FileImport], title: str, every_id: list[str]) -> Table:
    """One row per file: its name (cut at the end when narrow), format, sessions (each id at its
    shortest form), and counts, which are never cut."""
    ids = shown_ids([sid for f in files for sid in f.session_ids], every_id, out.width)
    rows = [f.as_row() for f in files]

    def figures(header: str, key: str) -> Column:
        return Column(header, [f"{row[key]:,}" for row in rows], whole=True, numeric=True)

    columns = [
        Column("file", [Path(f.path).name for f in files], minimum=12),
        Column("format", [row["format"] if f.imported else "not imported" for f, row in zip(files, rows)], minimum=6),
        Column("sessions", ["\n".join(ids[sid] for sid in f.session_ids) for f in files], whole=True),  # an id a line
        figures("added", "added"), figures("present", "present"), figures("msgs", "messages"),
        figures("calls", "tool_calls"), figures("results", "tool_results"), figures("compact", "compactions"),
        figures("issues", "issues"),
    ]
    drop = _DROPPED_FIRST_NOTHING_ADDED if not any(f.events_added for f in files) else _DROPPED_FIRST
    return table(columns, out.width, drop=drop, title=title)
