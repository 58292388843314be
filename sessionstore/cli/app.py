"""The `sessionstore` command line: the group, its shared options, and how every command ends.

With demo.py, the CLI is the only part of sessionstore that prints. click parses, rich draws
tables and progress bars, and the library's logs (the ``sessionstore`` stdlib logger, see
`sessionstore.logs`) go to stderr, human-readable or JSON lines. Each command group lives in
its own module of this package and registers itself on `main`.

One exit-status rule holds for every command (`EXIT_STATUS`, printed in every ``--help``):
errors a user can act on — a typed `SessionStoreError`, an unreachable or unwritable
database, missing credentials, an ambiguous session id — end with one line saying what to
do and status 2, never a traceback; Ctrl-C ends with 130, except for the commands that run
until Ctrl-C (`serve`, `watch`), for which it is the normal end: 0.
"""

from __future__ import annotations

import gc
import logging
import os
import sqlite3
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Final

from importlib import import_module
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .. import __version__
from ..errors import DatabaseError, MissingExtra, SessionNotFound, SessionStoreError

if TYPE_CHECKING:
    from ..store import SessionStore

# `sessionstore --version` and `--help` must start fast: the database drivers, SQLAlchemy,
# structlog and the store are imported where a command first needs them, never at module level.

EXIT_DONE: Final = 0
EXIT_NOT_DONE: Final = 1
EXIT_ERROR: Final = 2
EXIT_INTERRUPTED: Final = 130
EXIT_STATUS: Final = ("Exit status: 0 done (warnings allowed); 1 something was not done (each item listed); "
                      "2 usage or operational error (one line says what to do); 130 interrupted (what was "
                      "done before is reported, and kept).")

# Text from the user or the data (a model named `m`, a transcript's "[bold]") is printed as it is:
# neither console reads markup or emoji codes unless a call asks for markup (and escapes the data).
out = Console(highlight=False, markup=False, emoji=False)
err = Console(stderr=True, highlight=False, markup=False, emoji=False)
# Piped output is never cut to a terminal's width (ids and tables come out whole) unless
# $COLUMNS says how wide it is.
PIPED_WIDTH: Final = 10_000


def size_consoles() -> None:
    """Each run measures again: $COLUMNS when set, else the terminal's width, else (piped) no limit."""
    columns = os.environ.get("COLUMNS", "")
    width = int(columns) if columns.isdigit() and int(columns) > 0 else None
    for console in (out, err):
        console.width = width or (None if console.file.isatty() else PIPED_WIDTH)  # type: ignore[assignment]


def fitted_width() -> int | None:
    """The width lines must fit on stdout: the terminal's, or $COLUMNS; None when piped without it."""
    return out.width if out.width < PIPED_WIDTH else None


# The program's name as the user typed it: ./scripts/sessionstore says so (it sets this), a console
# script on the PATH is `sessionstore`, `python -m sessionstore.cli` is that. Every command the CLI
# prints for the user to run next starts with it, so that it works as printed.
PROG_ENV: Final = "SESSIONSTORE_PROG"
# The garbage collector's thresholds in a run of the CLI, a process of ours. Python's default
# (700, 10, 10) collects after every 700 new containers, and importing or compacting a large
# session makes millions that live on (events, their payloads): measured, the collector took
# about 40% of a 100,000-event compaction and of the largest tests, 10% of an import. Nothing
# the CLI makes depends on when cycles are collected.
GC_THRESHOLDS: Final = (50_000, 20, 20)


def program_name() -> str:
    ctx = click.get_current_context(silent=True)
    if ctx is not None:
        return ctx.find_root().info_name or "sessionstore"
    return os.environ.get(PROG_ENV) or "sessionstore"


def as_typed(text: str) -> str:
    """`text` with the commands it names (`` `sessionstore …` ``, as library messages spell them)
    spelled as this run was invoked: the program, and the --db the user gave."""
    ctx = click.get_current_context(silent=True)
    state = ctx.find_object(State) if ctx is not None else None
    command = state.command() if state is not None else program_name()
    return text if command == "sessionstore" else text.replace("`sessionstore ", f"`{command} ")


class CliError(Exception):
    """A failure the user can act on: printed as one line, ending the command with `code`."""

    def __init__(self, message: str, code: int = EXIT_ERROR) -> None:
        super().__init__(message)
        self.code = code


# --------------------------------------------------------------------------- logging


def _from_record(_logger: Any, _method: str, event_dict: dict[str, Any]) -> dict[str, Any]:
    """Restore the key-value pairs a `sessionstore.logs` logger put on the record."""
    from ..logs import EVENT_ATTRIBUTE

    record = event_dict.get("_record")
    data = getattr(record, EVENT_ATTRIBUTE, None)
    if isinstance(data, dict):
        event_dict.update(data)
    if record is not None:
        event_dict.setdefault("logger", record.name)
    return event_dict


def configure_logging(fmt: str, verbose: bool) -> None:
    """The library's logs to stderr: readable (coloured on a terminal unless NO_COLOR), or JSON lines."""
    import structlog

    from ..logs import ROOT

    colors = sys.stderr.isatty() and not os.environ.get("NO_COLOR")
    renderer: Any = (structlog.processors.JSONRenderer() if fmt == "json"
                     else structlog.dev.ConsoleRenderer(colors=colors))
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(structlog.stdlib.ProcessorFormatter(
        foreign_pre_chain=[structlog.stdlib.add_log_level, structlog.processors.TimeStamper(fmt="iso"),
                           _from_record],
        processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer]))
    logger = logging.getLogger(ROOT)
    for old in [h for h in logger.handlers if getattr(h, "_sessionstore_cli", False)]:
        logger.removeHandler(old)
    handler._sessionstore_cli = True  # type: ignore[attr-defined]
    logger.addHandler(handler)
    # Silent by default (docs/cli.md's promise, "Logs"): progress is the commands' own output; warnings still show.
    logger.setLevel(logging.DEBUG if verbose else logging.WARNING)
    logger.propagate = False


# --------------------------------------------------------------------------- the store


def sqlite_file(url: str) -> Path | None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        parsed = make_url(url)
    except ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def shown_url(url: str) -> str:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        return make_url(url).render_as_string(hide_password=True)
    except ArgumentError:
        return url


class State:
    def __init__(self, url: str | None) -> None:
        from ..storage.engine import database_url

        self.url = database_url(url)
        self.given: str | None = None  # --db as typed on the command line, if it was
        self._store: SessionStore | None = None

    def command(self) -> str:
        """How to run another command on this database, as typed: the program and this run's --db."""
        import shlex

        prog = program_name()
        return f"{prog} --db {shlex.quote(self.given)}" if self.given else prog

    def store(self, *, create_schema: bool = False, create: bool | None = None) -> SessionStore:
        """The store; with `create_schema`, an empty database gets the schema first (an existing
        but older schema is never upgraded behind the user's back: that is `db upgrade`).

        A SQLite file that does not exist is an error rather than a new empty file unless
        `create` (default: `create_schema`): reading commands never create a database.
        """
        from ..storage.migrate import current_revision
        from ..store import SessionStore

        if self._store is None:
            path = sqlite_file(self.url)
            if path is not None and not (create_schema if create is None else create) and not path.exists():
                raise CliError(f"no database at {path}: create one with `sessionstore import PATH…` or "
                               "`sessionstore db upgrade`, or point --db / $SESSIONSTORE_URL at yours")
            # A command fails fast on a database it cannot reach (a user is waiting), unless
            # $SESSIONSTORE_RETRY_TIMEOUT says otherwise; a library store retries for 30 s.
            retry = None if "SESSIONSTORE_RETRY_TIMEOUT" in os.environ else CLI_RETRY_TIMEOUT
            self._store = SessionStore(self.url, retry_timeout=retry)
        if create_schema and current_revision(self._store.engine) is None:
            self._store.migrate()
        return self._store

    def close(self) -> None:
        if self._store is not None:
            self._store.close()


# --------------------------------------------------------------------------- session ids


SESSIONS_LISTED: Final = "`sessionstore sessions` lists them"


def resolve_session(store: SessionStore, text: str, *, among: Collection[str] | None = None,
                    scope: str = "the scope", listed: str = SESSIONS_LISTED) -> str:
    """The full id of the session that `text` names: the id itself, or a unique prefix (git-style).

    A prefix shared only by a session and its subagents (whose ids extend it: ``<id>:agent-…``)
    names the session. ``<a>:<b>`` also names the one id whose part before its first ``:``
    starts with ``<a>`` and whose part after it starts with ``<b>``: the short form listings
    show for a subagent (`display.short_ids`). With `among` (the ids a caller may show, such as
    an MCP server's `scope`), a prefix names one of those, and an id or a prefix of other
    sessions only is refused as outside the scope; the ids of other sessions are never listed.
    `listed` says where the ids are listed.
    """
    try:
        store.session(text)
    except SessionNotFound:
        pass
    else:
        if among is not None and text not in among:
            raise CliError(f"session {text!r} is outside {scope}")
        return text

    def starting(prefix: str, limit: int | None = None) -> list[str]:
        """The ids that start with `prefix`, within the scope when there is one."""
        if among is None:
            return store.find_sessions(prefix, limit=limit)
        return sorted(sid for sid in among if sid.startswith(prefix))[:limit]

    found = starting(text, 11)
    if len(found) > 10 and _family(found) != found:  # a session with many subagents: all of them
        found = starting(text)
    found = _family(found)
    head, colon, tail = text.partition(":")
    if not found and colon:
        found = _family([i for i in starting(head, _SPLIT_LIMIT) if i.partition(":")[2].startswith(tail)])
    if not found and among is not None and store.find_sessions(text, limit=1):
        raise CliError(f"session id prefix {text!r} names only sessions outside {scope}")
    if len(found) == 1:
        return found[0]
    if not found:
        raise CliError(f"no session {text!r}: no id is or starts with it ({listed})")
    more = " …" if len(found) > 10 else ""
    raise CliError(f"session id prefix {text!r} is ambiguous; it starts {'more than 10' if more else len(found)} "
                   f"ids: {', '.join(found[:10])}{more}. Give more characters.")


_SPLIT_LIMIT: Final = 10_000  # ids an ``<a>:<b>`` form looks through


def _family(found: list[str]) -> list[str]:
    """`found`, or its shortest id alone when the others are that id's subagents (``<id>:…``)."""
    stem = min(found, key=len, default="")
    return [stem] if len(found) > 1 and all(f == stem or f.startswith(stem + ":") for f in found) else found


class SessionId(click.ParamType):
    """A session id argument: the full id or a unique prefix, resolved against the store."""

    name = "SID"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        state = ctx.find_object(State) if ctx is not None else None
        if state is None:
            return str(value)
        return resolve_session(state.store(), str(value))


SID: Final = SessionId()


# --------------------------------------------------------------------------- how commands end


def driver_errors() -> tuple[type[Exception], ...]:
    """What the database layers raise of their own (the doors run statements on the driver itself)."""
    import psycopg
    from sqlalchemy.exc import SQLAlchemyError

    return (SQLAlchemyError, sqlite3.Error, psycopg.Error)


CLI_RETRY_TIMEOUT = 2.0


def _operational(exc: BaseException, url: str) -> str:
    """One line for a database that cannot be used, saying what to do."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
    lower = str(orig).lower()
    where = shown_url(url)
    path = sqlite_file(url)
    if path is not None and ("unable to open" in lower or "readonly" in lower or "disk i/o" in lower):
        return (f"cannot write the SQLite database {path} ({text}): its folder must exist and be writable; "
                "choose another path with --db sqlite:///PATH")
    if any(s in lower for s in ("connection refused", "could not connect", "connection failed", "timeout expired",
                                "name or service not known", "could not translate host", "no such host")):
        return (f"cannot connect to {where} ({text}): is the server running and reachable? "
                "Point --db or $SESSIONSTORE_URL at it")
    if "password authentication failed" in lower or "authentication" in lower:
        return f"the database refused the login for {where} ({text}): check the user and password in the URL"
    if "does not exist" in lower and "database" in lower:
        return f"{text}: create that database first, or point --db at an existing one"
    return f"database error on {where}: {text}"


def error_line(message: str) -> None:
    styled_line(err, "red", "error:", as_typed(message))


def styled_line(console: Console, style: str, label: str, text: str) -> None:
    """`label` in `style`, then `text` as it is (never read as markup), on one line."""
    console.print(f"[{style}]{escape(label)}[/{style}] {escape(text)}", markup=True, soft_wrap=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """Typed errors become one clear line and exit status 2, not a traceback.

    Every command is covered by the group already; this stays for commands that want to
    end a block early with the same rule.
    """
    try:
        yield
    except SessionStoreError as exc:
        error_line(f"{type(exc).__name__}: {exc}")
        raise SystemExit(EXIT_ERROR) from None


class Command(click.Command):
    """A command whose ``--help`` states the exit-status rule."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("epilog", EXIT_STATUS)
        super().__init__(*args, **kwargs)


class Group(click.Group):
    """A group whose commands (and sub-groups) state the exit-status rule; the root ends every
    command by that rule."""

    command_class = Command
    group_class = type  # sub-groups are Groups too

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("epilog", EXIT_STATUS)
        super().__init__(*args, **kwargs)

    def resolve_command(self, ctx: click.Context, args: list[str]
                        ) -> tuple[str | None, click.Command | None, list[str]]:
        """click's, suggesting the nearest command among all of them (not only those loaded yet)."""
        try:
            return super().resolve_command(ctx, args)
        except click.exceptions.NoSuchCommand as exc:
            raise click.exceptions.NoSuchCommand(exc.command_name, possibilities=self.list_commands(ctx),
                                                 ctx=ctx) from None

    def invoke(self, ctx: click.Context) -> Any:
        if ctx.parent is not None:
            return super().invoke(ctx)
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            err.print("interrupted: nothing more was done (what was written before stays stored)")
            ctx.exit(EXIT_INTERRUPTED)
        except CliError as exc:
            error_line(str(exc))
            ctx.exit(exc.code)
        except MissingExtra as exc:  # what installs it, from a checkout (sessionstore.extras)
            error_line(str(exc))
            ctx.exit(EXIT_ERROR)
        except DatabaseError as exc:  # what to do about it, as for the driver's own errors below
            state = ctx.find_object(State)
            advice = _operational(exc.__cause__, state.url if state else "") if exc.__cause__ else ""
            error_line(advice if advice and not advice.startswith("database error on") else
                       f"{type(exc).__name__}: {exc}")
            ctx.exit(EXIT_ERROR)
        except SessionStoreError as exc:
            error_line(f"{type(exc).__name__}: {exc}")
            ctx.exit(EXIT_ERROR)
        except BrokenPipeError:
            raise  # `… | head` closed our stdout: click ends quietly
        except OSError as exc:
            error_line(f"{exc.strerror or exc}{f': {exc.filename}' if exc.filename else ''}")
            ctx.exit(EXIT_ERROR)
        except Exception as exc:
            if not isinstance(exc, driver_errors()):
                raise
            state = ctx.find_object(State)
            error_line(_operational(exc, state.url if state else ""))
            ctx.exit(EXIT_ERROR)


# Each command's module and the first paragraph of its help: `sessionstore --help` lists them without importing
# a module (tests/test_startup.py checks the lines against the commands' own docstrings); a
# module is imported, registering its commands on `main`, when one of them runs.
COMMANDS: Final = {
    "compact": ("changing", "Compact a session now: prune, rewrite, summarise; the transcript keeps everything."),
    "db": ("db", "Schema management (Alembic migrations)."),
    "demo": ("changing", "Record a scripted agent session over this repository's own files, compacting as it goes."),
    "erase": ("audit", "Destroy the content of a conversation: the session and every session that is part of it."),
    "export": ("viewer", "Export a session as jsonl, markdown or html."),
    "fork": ("changing", "A new session sharing this one's history up to --at (nothing is copied); prints its id."),
    "html": ("viewer", "Write a session as one self-contained HTML page."),
    "import": ("imports", "Import Claude Code, Pi, Codex, Gemini CLI, OpenCode, OpenHands, SWE-agent, Copilot CLI, "
                          "Qwen Code, Cline (Roo Code, Kilo Code), Aider, Cursor and mini-SWE-agent transcripts "
                          "(files or folders); re-importing is safe."),
    "log": ("reading",
            "The full transcript: every event, nothing pruned or summarised (through a pager on a terminal)."),
    "mcp": ("mcp", "Serve the store to coding agents over MCP (read-only): search, sessions, log, show, recall."),
    "replay": ("replay", "Re-live a stored session under compaction policies, side by side, in a scratch store."),
    "retain": ("audit", "Erase the sessions past a retention policy, each with the sessions that are part of it."),
    "search": ("search", "Find events whose text matches QUERY: messages, tool calls (name and input) and results."),
    "serve": ("viewer", "Serve the session list and every session's page, read-only, until Ctrl-C."),
    "sessions": ("reading", "List the sessions, newest first: when each happened, title, project, model, links."),
    "show": ("reading", "The context view: what the model sees (now, or at a past version)."),
    "stats": ("reading", "Tokens of the transcript against the view; compactions, prunes, rewrites."),
    "usage": ("usage", "What the recorded requests used and cost, by day, session, model or project."),
    "verify": ("audit", "Check the hash chain: that no event was edited, deleted, inserted or reordered."),
    "watch": ("watch", "Import agents' sessions now, then follow new and growing transcripts until Ctrl-C."),
}


class Root(Group):
    """The root group: commands load on first use (see `COMMANDS`)."""

    group_class = Group

    def main(self, *args: Any, prog_name: str | None = None, **kwargs: Any) -> Any:
        import shlex

        typed = os.environ.get(PROG_ENV)
        if typed:
            prog_name = prog_name or shlex.quote(typed)
        elif prog_name is None and os.path.basename(sys.argv[0]) in ("-c", ""):  # `python -c` names no program
            prog_name = "sessionstore"
        return super().main(*args, prog_name=prog_name, **kwargs)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        if name not in self.commands and name in COMMANDS:
            import_module(f"{__package__}.{COMMANDS[name][0]}")
        return self.commands.get(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        limit = formatter.width - 6 - max(map(len, self.list_commands(ctx)))
        rows = [(name, (self.commands.get(name) or click.Command(name, help=COMMANDS[name][1]))
                 .get_short_help_str(limit)) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


# --------------------------------------------------------------------------- output helpers


def kv_table(title: str, rows: Sequence[tuple[str, str]]) -> Table:
    """Keys and values, fitted to the output's width: a value too long for it wraps (at spaces)."""
    from .tables import Column, table

    keys = Column("", [k for k, _ in rows], whole=True, style="bold")
    return table([keys, Column("", [v for _, v in rows], wrap=True)], out.width, title=title, show_header=False)


def page(lines: Iterable[str]) -> None:
    """Lines to stdout, through the user's pager ($PAGER, else less) when stdout is a terminal."""
    if sys.stdout.isatty():
        click.echo_via_pager(line + "\n" for line in lines)
    else:
        for line in lines:
            click.echo(line)


def parse_since(text: str) -> datetime:
    """A point in time: ISO 8601 (``2025-10-30``, ``2025-10-30T12:00``) or an age (``90m``, ``36h``, ``7d``)."""
    from ..errors import InvalidQuery
    from ..finding import parse_when

    try:
        return parse_when(text)
    except InvalidQuery:
        raise click.BadParameter(f"{text!r} is not a date (2025-10-30, 2025-10-30T12:00) or an age (90m, 36h, "
                                 "7d, 2w)") from None


class Since(click.ParamType):
    name = "WHEN"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> datetime:
        return value if isinstance(value, datetime) else parse_since(str(value))


SINCE: Final = Since()


@click.group(name="sessionstore", cls=Root, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="sessionstore")
@click.option("--db", "url", envvar="SESSIONSTORE_URL", metavar="URL",
              help="Database URL or a SQLite file's path (default: $SESSIONSTORE_URL, else "
                   "sqlite:///./sessionstore.db).")
@click.option("--log-format", type=click.Choice(["console", "json"]), default="console", show_default=True,
              help="Logs (on stderr): human-readable, or JSON lines.")
@click.option("-v", "--verbose", is_flag=True, help="Logs (info and debug); without it only warnings.")
@click.pass_context
def main(ctx: click.Context, url: str | None, log_format: str, verbose: bool) -> None:
    """An event-sourced store for LLM agent sessions.

    A SID is a session id or any unique prefix of one (like git's commit ids). Tokens are
    the stored counts of what a model would read without compaction: messages, tool calls
    and results, system prompts, scratchpads and in-context custom events, a fork's
    inherited history included (`sessionstore.tokens.transcript_tokens`).
    """
    gc.set_threshold(*GC_THRESHOLDS)
    configure_logging(log_format, verbose)
    size_consoles()
    state = State(url)
    if ctx.get_parameter_source("url") == click.core.ParameterSource.COMMANDLINE:
        state.given = url
    ctx.obj = state
    ctx.call_on_close(state.close)
