"""Audit commands: `verify` checks the hash chain, `erase` destroys a session's content, `retain` erases by policy."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from .. import display
from ..finding import parse_age
from .app import EXIT_ERROR, EXIT_NOT_DONE, SID, CliError, State, main, out

if TYPE_CHECKING:
    from ..retention import RetentionPolicy


@main.command()
@click.argument("session_ids", nargs=-1, type=SID, metavar="[SID]...")
@click.option("--all", "every", is_flag=True, help="Every session in the database.")
@click.pass_obj
def verify(state: State, session_ids: tuple[str, ...], every: bool) -> None:
    """Check the hash chain: that no event was edited, deleted, inserted or reordered.

    Prints one line per session; exits 1 when any is broken, naming its first bad version.
    A fork is checked with the history it inherits. Erased sessions verify too (their
    content is gone, their hashes are kept).
    """
    if bool(session_ids) == every:
        raise CliError("name the sessions to verify (SID…) or pass --all, not both"
                       if every else "name the sessions to verify (SID…), or pass --all for every session")
    reports = state.store().verify(None if every else session_ids)
    for line in display.verify_lines(reports):
        click.echo(line)
    broken = sum(not r.ok for r in reports)
    if broken:
        click.echo(f"{broken} of {len(reports)} session(s) broken", err=True)
        raise SystemExit(EXIT_NOT_DONE)
    click.echo(f"{len(reports)} session(s) intact", err=True)


@main.command()
@click.argument("session_id", type=SID)
@click.option("--reason", required=True, help="Why (kept in every tombstone and shown by `log`).")
@click.option("--only-this", is_flag=True, help="Erase this session alone, not the sessions that are part of it.")
@click.option("--vacuum", is_flag=True,
              help="PostgreSQL: VACUUM FULL the tables afterwards, so that no old row version is left (locks them "
                   "while it runs). SQLite always vacuums.")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_obj
def erase(state: State, session_id: str, reason: str, only_this: bool, vacuum: bool, yes: bool) -> None:
    """Destroy the content of a conversation: the session and every session that is part of it.

    The parts are the sessions that name it as their main session (an imported agent's
    subagents, its compaction summariser's transcript), which quote it. Irreversible. The chain
    still verifies, the erased sessions take no new events, and forks keep their own events
    (their inherited history shows the tombstones): they are listed, not erased. On SQLite the
    file is vacuumed so that no copy is left in it; on PostgreSQL pass --vacuum for the same.
    """
    store = state.store()
    talk = store.conversation(session_id)
    parts = talk.parts[:1] if only_this else talk.parts
    live = [info for info in parts if info.erased_at is None]
    if not live:
        info = talk.parts[0]
        out.print(f"{session_id} was already erased at {info.erased_at:%Y-%m-%d %H:%M:%S}: {info.erase_reason}")
        if vacuum:
            store.erase(session_id, reason, only_this=only_this, vacuum=True)
        return
    for line in display.conversation_lines(talk, parts):
        click.echo(line, err=True)
    if not yes and not sys.stdin.isatty():
        raise CliError(f"not erased: erasing {session_id} cannot be undone and there is no terminal to ask on; "
                       "use --yes to confirm", code=EXIT_ERROR)
    events = sum(info.head for info in live)
    if not yes and not click.confirm(f"Erase the content of {len(live)} session(s) ({events} event(s))? This cannot "
                                     "be undone", err=True):
        raise CliError("not erased: not confirmed (pass --yes to skip the question)", code=EXIT_NOT_DONE)
    erased = store.erase(session_id, reason, only_this=only_this, vacuum=vacuum)
    out.print(f"erased {len(live)} session(s) at {erased.erased_at:%Y-%m-%d %H:%M:%S}: {events} event(s) are "
              "tombstones")
    for line in display.erase_aftermath(talk, store.backend == "postgresql", vacuum):
        out.print(line)


@main.command()
@click.option("--older-than", "older_than", metavar="AGE",
              help="Erase the sessions whose last event is older than this (90d, 12w, 36h, 90m, 45s).")
@click.option("--where", "where", multiple=True, metavar="KEY=VALUE",
              help="Only the sessions whose metadata holds this (repeatable: all must hold), as `sessions --where` "
                   "reads it.")
@click.option("--keep-last", "keep_last", metavar="N",
              help="Keep the newest N sessions of the selection however old; alone, erase the rest.")
@click.option("--reason", help="Kept in every tombstone (default: the policy, e.g. 'retention: older than 90d').")
@click.option("--vacuum", is_flag=True,
              help="PostgreSQL: VACUUM FULL afterwards (files shrink; locks the tables while it runs) instead of a "
                   "plain VACUUM. SQLite always rebuilds its file.")
@click.option("--dry-run", is_flag=True, help="Erase nothing: list exactly the sessions that would go.")
@click.option("--json", "as_json", is_flag=True, help="The report as one JSON object.")
@click.pass_obj
def retain(state: State, older_than: str | None, where: tuple[str, ...], keep_last: str | None, reason: str | None,
           vacuum: bool, dry_run: bool, as_json: bool) -> None:
    """Erase the sessions past a retention policy, each with the sessions that are part of it.

    A session's age is its last event's. --where narrows the selection to sessions whose
    metadata holds each KEY=VALUE; --keep-last N always keeps the newest N of that selection.
    Each expired session is erased as `erase` erases it (its subagents and summariser's
    transcript with it, forks keep their own events), in a transaction of its own; one that is
    appended to while the run goes is kept. Nothing is erased that the policy does not name: an
    age or --keep-last is required. Irreversible: try --dry-run first (it prints the same list).
    """
    policy = retention_policy(older_than, where, keep_last, reason, dry_run)
    store = state.store()
    report = store.retain(policy, vacuum=vacuum)
    if as_json:
        click.echo(json.dumps(report.to_json(), ensure_ascii=False))
        return
    for line in display.retention_lines(report):
        out.print(line)


def retention_policy(older_than: str | None, where: tuple[str, ...], keep_last: str | None, reason: str | None,
                     dry_run: bool) -> RetentionPolicy:
    """The policy the options name; a bad option is one line and exit 2 (`CliError`, or the
    `InvalidQuery` / `InvalidPolicy` of a malformed --where), before the database is opened."""
    from ..finding import where_option
    from ..retention import RetentionPolicy

    if older_than is None and keep_last is None:
        raise CliError("retain needs a policy: --older-than AGE (e.g. 90d) and/or --keep-last N; it never erases "
                       "every session")
    age = None
    if older_than is not None:
        age = parse_age(older_than)
        if age is None:
            raise CliError(f"--older-than {older_than!r} is not an age: a whole number and a unit, s m h d or w "
                           "(90d, 12w, 36h)")
    count = None
    if keep_last is not None:
        if not keep_last.strip().isdigit():
            raise CliError(f"--keep-last {keep_last!r} is not a number of sessions (0 or more)")
        count = int(keep_last)
    return RetentionPolicy(older_than=age, where=where_option(where) or None, keep_last=count, dry_run=dry_run,
                           reason=reason)
