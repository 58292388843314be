"""`sessionstore watch [DIR…]`: import agents' sessions as they are written.

A door like `serve` and `mcp`: it follows folders (``watchfiles``, the file-system
notifications of the OS, polling where there are none) and calls the importers, which hold
every format rule. Importing is idempotent and incremental, so a restart resumes from what is
stored, and a grown file adds only its new events.
"""

from __future__ import annotations

import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

import click

from .app import CliError, State, err, main, out

if TYPE_CHECKING:
    from ..importers import FileImport

# Changes are gathered this long (ms) before importing: a burst of writes is one import, and a
# written event is stored well within a second.
DEBOUNCE_MS: Final = 150
STEP_MS: Final = 50
WAKE_MS: Final = 100  # the watcher's first (empty) report, once it follows the folders


@main.command()
@click.argument("dirs", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--force-polling", is_flag=True,
              help="Poll for changes (network file systems, containers without file notifications).")
@click.pass_obj
def watch(state: State, dirs: tuple[Path, ...], force_polling: bool) -> None:
    """Import agents' sessions now, then follow new and growing transcripts until Ctrl-C.

    DIRs default to every known agent's folder that exists (~/.claude/projects,
    ~/.pi/agent/sessions, ~/.codex/sessions, ~/.gemini/tmp, ~/.local/share/opencode).
    One line per session that got new events: its id, format, events added and stored, file.
    Restarting resumes from what is stored: nothing is imported twice.

    Ctrl-C is how watch ends, so it exits with status 0, not the 130 of an interrupted command:
    nothing is cut short (an import stops between two batches, keeps what it wrote, and the
    next watch resumes from it). SIGTERM (`kill`, a service manager stopping it) ends it the same
    way.
    """
    import watchfiles

    from ..importers import agent_folders, import_file, import_path, transcript_of
    from ..importers.rules import QUIET_SECONDS

    folders = list(dirs) or agent_folders()
    if not folders:
        raise CliError("nothing to watch: no agent folder exists here (~/.claude/projects, ~/.pi/agent/sessions, "
                       "~/.codex/sessions, ~/.gemini/tmp, ~/.local/share/opencode); name the folders")
    store = state.store(create_schema=True)
    err.print(f"watching {', '.join(str(f) for f in folders)} into {store!r}; Ctrl-C stops", soft_wrap=True)
    added = 0
    # The watcher starts first (its first, empty, yield): what is written while the folders are
    # imported is a change it reports next, so nothing falls between the import and the watch.
    changes_of = watchfiles.watch(*folders, debounce=DEBOUNCE_MS, step=STEP_MS, force_polling=force_polling,
                                  raise_interrupt=True, yield_on_timeout=True, rust_timeout=WAKE_MS)
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        next(changes_of)
        report = import_path(store, *folders)
        waiting: dict[Path, float] = {}  # transcripts with events waiting for the agent -> their mtime
        for result in report.files:
            added += _status(result, quiet_when_unchanged=True)
            _note_waiting(waiting, Path(result.path), result)
        err.print(f"imported {report.events_added:,} new event(s) from {len(report.files)} file(s); following "
                  "changes", soft_wrap=True)
        sys.stderr.flush()
        for changes in changes_of:
            changed = {t for change, p in changes if change != watchfiles.Change.deleted
                       for t in [transcript_of(p)] if t is not None}
            # A file left alone long enough is finished: what waited in it is imported once, whole.
            quiet = {p for p, mtime in waiting.items() if time.time() - mtime >= QUIET_SECONDS} - changed
            for path in sorted(changed | quiet):
                waiting.pop(path, None)
                result = _import(import_file, store, path)
                if result is not None:
                    added += _status(result, quiet_when_unchanged=True)
                    for sub in result.subagents:
                        added += _status(sub, quiet_when_unchanged=True)
                    if path in changed:
                        _note_waiting(waiting, path, result)
    except KeyboardInterrupt:
        pass  # its normal end: status 0 (see the docstring)
    finally:
        signal.signal(signal.SIGTERM, previous)
    err.print(f"stopped: {added:,} event(s) added while watching")


def _interrupt(signum: int, frame: Any) -> None:
    """SIGTERM as Ctrl-C: raised where the watch loop is, it stops between two imports (or two
    batches of one) and the summary is printed."""
    raise KeyboardInterrupt


def _note_waiting(waiting: dict[Path, float], path: Path, result: FileImport) -> None:
    """Remember `path` while some of its events wait for the agent's next lines (`InFlight`):
    if none come, it is imported again once it has been quiet for `QUIET_SECONDS`."""
    from ..importers import InFlight

    if any(isinstance(i, InFlight) for r in (result, *result.subagents) for i in r.issues):
        try:
            waiting[path] = path.stat().st_mtime
        except OSError:
            pass


def _import(import_file: Any, store: Any, path: Path) -> FileImport | None:
    """One changed transcript imported; None when it is gone or no format reads it (yet)."""
    from ..errors import UnknownFormat

    try:
        return import_file(store, path)  # type: ignore[no-any-return]
    except (UnknownFormat, OSError):
        return None


def _status(result: FileImport, *, quiet_when_unchanged: bool) -> int:
    """One line per session of `result` that got events (or whose file has a problem); the events added."""
    for session in result.sessions:
        if quiet_when_unchanged and session.added == 0 and not result.failures:
            continue
        stored = session.present + session.added
        issues = f"  ({len(result.failures)} line(s) not imported: {result.failures[0]})" if result.failures else ""
        out.print(f"{time.strftime('%H:%M:%S')}  {session.session_id}  {result.format}  +{session.added} "
                  f"event(s), {stored} stored  {result.path}{issues}", soft_wrap=True, highlight=False, markup=False)
    sys.stdout.flush()
    return result.events_added
