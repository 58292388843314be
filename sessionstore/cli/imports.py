"""`sessionstore import`: transcripts of Claude Code, Pi and Codex into the store."""

from __future__ import annotations

from pathlib import Path

import click
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from .app import State, user_errors, err, main, out

@main.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.pass_obj
def import_(state: State, paths: tuple[str, ...]) -> None:
    """Import Claude Code, Pi and Codex transcripts (files or folders); re-importing is safe."""
    from ..importers import FileImport, import_path

    with user_errors():
        store = state.store(create_schema=True)
        with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                      console=err, transient=True) as progress:
            task = progress.add_task("importing", total=None)

            def advance(done: int, total: int, result: FileImport) -> None:
                progress.update(task, completed=done, total=total, description=f"importing {result.path[-50:]}")

            report = import_path(store, *paths, on_progress=advance)
        table = Table(title=f"imported {len(report.files)} file(s) into {store!r} in {report.seconds:.1f} s",
                      title_justify="left")
        columns = {"path": "file", "format": "format", "sessions": "session", "added": "added",
                   "present": "present", "messages": "msgs", "tool_calls": "calls", "tool_results": "results",
                   "compactions": "compact", "issues": "issues"}
        for key, header in columns.items():
            table.add_column(header, justify="left" if key in ("path", "format", "sessions") else "right",
                             no_wrap=True)
        for row in report.rows():
            name = Path(row["path"]).name
            row["path"] = name if len(name) <= 26 else f"{name[:12]}…{name[-13:]}"
            row["sessions"] = ", ".join(sid[:8] for sid in str(row["sessions"]).split(", ") if sid)
            table.add_row(*(str(row[key]) for key in columns))
        out.print(table)
        for issue in report.issues:
            err.print(f"[yellow]warning:[/yellow] {issue}")
        if any(not f.ok for f in report.files):
            raise SystemExit(1)
