"""The `sessionstore` command line: the group, its shared options, and how errors end a command.

With demo.py, the CLI is the only part of sessionstore that prints. click parses, rich draws
tables and progress bars, structlog writes logs to stderr (human-readable on a terminal, JSON
with ``--log-format json``). Each command group lives in its own module of this package and
registers itself on `main`.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import click
import structlog
from rich.console import Console
from rich.table import Table

from ..errors import SessionStoreError
from ..storage.engine import resolve_url
from ..storage.migrate import current_revision
from ..store import SessionStore

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


class State:
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
def user_errors() -> Iterator[None]:
    """Typed errors become one clear line and exit status 2, not a traceback."""
    try:
        yield
    except SessionStoreError as exc:
        err.print(f"[red]error:[/red] {type(exc).__name__}: {exc}")
        raise SystemExit(2) from None


def kv_table(title: str, rows: list[tuple[str, str]]) -> Table:
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
    state = State(url)
    ctx.obj = state
    ctx.call_on_close(state.close)
