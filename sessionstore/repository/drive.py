"""The loop that runs a repository program on blocking I/O, and the retries around a call.

Everything it runs is decided by the program (see `ops`); a door only says how to execute a
statement and ask a summariser. Both doors step programs with it: `SessionStore` on the
caller's thread, `AsyncSessionStore` on its own threads (`sessionstore.lanes`), a summary
request coming back to the loop between two steps. A statement that fails inside a
transaction rolls the transaction back before the program sees the error (PostgreSQL refuses
every statement after an error until then), and a program that ends inside a transaction has
it rolled back.

`retrying`/`aretrying` wrap a whole call (a fresh program on a fresh connection per try) in
the fault policy of `faults`: written once here, where both doors meet the database; the
second sleeps between tries on the caller's event loop.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, TypeVar, cast

from .faults import Attempts, is_driver_error
from .ops import ROLLBACK, Atomically, Execute, Program, Summarize, Transaction, translate

T = TypeVar("T")


class Run:
    """The state of one run, shared by both loops: what the program is sent next (a value or an
    error), and whether a transaction is open (it must be rolled back when a statement fails)."""

    __slots__ = ("program", "dbapi", "value", "error", "in_transaction")

    def __init__(self, program: Program[Any], dbapi: Any) -> None:
        self.program = program
        self.dbapi = dbapi
        self.value: Any = None
        self.error: BaseException | None = None
        self.in_transaction = False

    def next_op(self) -> Any:
        """The program's next op; `StopIteration` (carrying its result) when it has ended."""
        value, error, self.value, self.error = self.value, self.error, None, None
        return self.program.send(value) if error is None else self.program.throw(error)

    def answered(self, op: Any, value: Any) -> None:
        self.value = value
        if type(op) is Transaction:
            self.in_transaction = op.action == "begin"

    def failed(self, exc: Exception) -> bool:
        """Record the error for the program; True when the open transaction must be rolled back."""
        self.error = translate(exc, self.dbapi)
        rollback, self.in_transaction = self.in_transaction, False
        return rollback


def _quietly(execute: Callable[[Execute | Atomically | Transaction], Any]) -> None:
    """Roll back on the way out of an error. The error on its way (a constraint, Ctrl-C) is what
    the caller must see: a rollback that fails too (the database already ended the transaction,
    or the interrupt came between COMMIT and our bookkeeping) must not replace it."""
    with suppress(Exception):
        execute(ROLLBACK)


def drive(program: Program[T], execute: Callable[[Execute | Atomically | Transaction], list[Any]],
          summarize: Callable[[Summarize], list[Any]], dbapi: Any) -> T:
    """Run `program` to its end with blocking I/O."""
    return cast(T, step_through(Run(program, dbapi), execute, summarize)[1])


def step_through(run: Run, execute: Callable[[Execute | Atomically | Transaction], list[Any]],
                 summarize: Callable[[Summarize], list[Any]] | None) -> tuple[bool, Any]:
    """Run the program's ops with blocking I/O until it ends: (True, its result). With no
    `summarize`, stop instead where it asks for a summary: (False, the `Summarize` op), which
    the caller answers elsewhere (`Run.answered`, e.g. on an event loop) before stepping on —
    so that a program can run on a worker thread in one hop between two summaries.

    A program that fails, or ends, inside a transaction has it rolled back; none asks for a
    summary inside one (a transaction never waits on a model)."""
    try:
        while True:
            try:
                op = run.next_op()
            except StopIteration as stop:
                return True, stop.value
            if summarize is None and type(op) is Summarize:
                if run.in_transaction:
                    raise RuntimeError("a repository program asked for a summary inside a transaction")
                return False, op
            try:
                run.answered(op, summarize(op) if type(op) is Summarize else execute(op))  # type: ignore[misc]
            except Exception as exc:
                if run.failed(exc):
                    _quietly(execute)
    finally:
        if run.in_transaction:
            _quietly(execute)


def retrying(attempt: Callable[[Attempts], T], attempts: Attempts) -> T:
    """Run `attempt` until it returns, retrying what `attempts` says is safe (see `faults`)."""
    while True:
        try:
            return attempt(attempts)
        except Exception as exc:
            if not is_driver_error(exc, attempts.dbapi):
                raise
            time.sleep(attempts.delay(exc))


async def aretrying(attempt: Callable[[Attempts], Awaitable[T]], attempts: Attempts) -> T:
    """`retrying` on an event loop."""
    while True:
        try:
            return await attempt(attempts)
        except Exception as exc:
            if not is_driver_error(exc, attempts.dbapi):
                raise
            await asyncio.sleep(attempts.delay(exc))
