"""The `sessionstore` command line. With demo.py, the only modules that print.

click parses, rich draws tables and progress bars, structlog writes logs to stderr
(human-readable on a terminal, JSON with ``--log-format json``).
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click
import structlog
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from . import display
from .compaction.policy import STRATEGIES, CompactionPolicy
from .errors import SessionStoreError
from .storage.engine import resolve_url
from .storage.migrate import current_revision, head_revision
from .store import SessionStore

# Piped output gets room for the tables (rich would assume 80 columns).
out = Console(highlight=False, soft_wrap=True, width=None if sys.stdout.isatty() else 160)
err = Console(stderr=True, highlight=False)


def configure_logging(fmt: str, verbose: bool) -> None:
    """structlog to stderr: human-readable (in colour on a terminal), JSON lines when asked."""
    renderer: Any = (structlog.processors.JSONRenderer() if fmt == "json"
                     else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty()))
    structlog.configure(
        processors=[structlog.processors.add_log_level, structlog.processors.TimeStamper(fmt="iso"), renderer],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG if verbose else logging.INFO),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
        cache_logger_on_first_use=False,
    )


class _Context:
    def __init__(self, url: str | None) -> None:
        self.url = resolve_url(url)
        self._store: SessionStore | None = None

    def store(self, *, create_schema: bool = False) -> SessionStore:
        """The store; with `create_schema`, an empty database gets the schema first (an existing
        but older schema is never upgraded behind the user's back: that is `db upgrade`)."""
        if self._store is None:
            self._store = SessionStore(self.url)
        if create_schema and current_revision(self._store.engine) is None:
            self._store.migrate()
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


@contextmanager
def _errors() -> Iterator[None]:
    """Typed errors become one clear line and exit status 2, not a traceback."""
    try:
        yield
    except SessionStoreError as exc:
        err.print(f"[red]error:[/red] {type(exc).__name__}: {exc}")
        raise SystemExit(2) from None


def _table(title: str, rows: list[tuple[str, str]]) -> Table:
    table = Table(title=title, show_header=False, title_justify="left")
    table.add_column(style="bold")
    table.add_column()
    for key, value in rows:
        table.add_row(key, value)
    return table


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--db", "url", envvar="SESSIONSTORE_URL", metavar="URL",
              help="Database URL (default: $SESSIONSTORE_URL, else sqlite:///./sessionstore.db).")
@click.option("--log-format", type=click.Choice(["console", "json"]), default="console", show_default=True,
              help="Logs (on stderr): human-readable, or JSON lines.")
@click.option("-v", "--verbose", is_flag=True, help="Debug logs.")
@click.pass_context
def main(ctx: click.Context, url: str | None, log_format: str, verbose: bool) -> None:
    """An event-sourced store for LLM agent sessions."""
    configure_logging(log_format, verbose)
    state = _Context(url)
    ctx.obj = state
    ctx.call_on_close(state.close)


# --------------------------------------------------------------------------- db


@main.group()
def db() -> None:
    """Schema management (Alembic migrations)."""


@db.command("upgrade")
@click.pass_obj
def db_upgrade(state: _Context) -> None:
    """Create or upgrade the schema to the latest revision."""
    with _errors():
        store = state.store()
        store.migrate()
        out.print(f"{store!r} is at revision {current_revision(store.engine)}")


@db.command("current")
@click.pass_obj
def db_current(state: _Context) -> None:
    """Show the schema revision of the database and the latest one."""
    with _errors():
        revision = current_revision(state.store().engine)
        out.print(f"database: {revision or '(no schema)'}; latest: {head_revision()}")


# --------------------------------------------------------------------------- import


@main.command("import")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True))
@click.pass_obj
def import_(state: _Context, paths: tuple[str, ...]) -> None:
    """Import Claude Code, Pi and Codex transcripts (files or folders); re-importing is safe."""
    from .importers import FileImport, import_path

    with _errors():
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


# --------------------------------------------------------------------------- reading


@main.command()
@click.option("--limit", type=int, default=None, help="At most this many sessions.")
@click.pass_obj
def sessions(state: _Context, limit: int | None) -> None:
    """List the sessions."""
    with _errors():
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
def log(state: _Context, session_id: str, as_json: bool, brief: bool, after: int, upto: int | None) -> None:
    """The full transcript: every event, nothing pruned or summarised."""
    with _errors():
        events = state.store().events(session_id, after=after, upto=upto)
        for line in (map(display.event_json, events) if as_json else display.log_lines(events, brief=brief)):
            click.echo(line)


@main.command()
@click.argument("session_id")
@click.option("--at", type=int, default=None, help="The view as it was at this version.")
@click.option("--format", "fmt", type=click.Choice(["text", "anthropic", "openai", "json"]), default="text",
              show_default=True)
@click.pass_obj
def show(state: _Context, session_id: str, at: int | None, fmt: str) -> None:
    """The context view: what the model sees (now, or at a past version)."""
    with _errors():
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
def stats(state: _Context, session_id: str) -> None:
    """Tokens of the transcript against the view; compactions, prunes, rewrites."""
    with _errors():
        out.print(_table(f"session {session_id}", display.stats_rows(state.store().stats(session_id))))


# --------------------------------------------------------------------------- changing


def _summarizer(name: str, model: str | None) -> Any:
    if name == "anthropic":
        from .summarizers.anthropic import AnthropicSummarizer

        return AnthropicSummarizer(model=model) if model else AnthropicSummarizer()
    from .summarizers.offline import OfflineSummarizer

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
def compact(state: _Context, session_id: str, summarizer: str, model: str | None, instructions: str | None,
            dry_run: bool, context_window: int | None, keep_recent_tokens: int | None, strategy: str) -> None:
    """Compact a session now: prune, rewrite, summarise; the transcript keeps everything."""
    overrides: dict[str, Any] = {"strategy": strategy}
    if context_window is not None:
        overrides["context_window"] = context_window
    if keep_recent_tokens is not None:
        overrides["keep_recent_tokens"] = keep_recent_tokens
    with _errors():
        policy = CompactionPolicy(**overrides)
        result = state.store().compact(session_id, policy, _summarizer(summarizer, model), instructions,
                                       dry_run=dry_run)
        if result is None:
            out.print("nothing to compact")
            return
        out.print(_table(f"compaction of {session_id}", display.compaction_rows(result)))


@main.command()
@click.argument("session_id")
@click.option("--at", type=int, default=None, help="Fork at this version (default: the head).")
@click.pass_obj
def fork(state: _Context, session_id: str, at: int | None) -> None:
    """A new session sharing this one's history up to --at (nothing is copied)."""
    with _errors():
        child = state.store().fork(session_id, at=at)
        click.echo(child)


@main.command()
@click.option("--context-window", type=int, default=None, help="The demo agent's context window (small, so "
                                                                 "that it compacts).")
@click.pass_obj
def demo(state: _Context, context_window: int | None) -> None:
    """Record a scripted agent session over this repository's own files, compacting as it goes."""
    from .demo import run_demo

    with _errors():
        run_demo(state.store(create_schema=True), out, context_window=context_window)


if __name__ == "__main__":  # pragma: no cover
    main()
