"""The loop that runs a repository program, for blocking I/O and for asyncio.

The two functions are the same loop; one awaits. Everything they run is decided by the
program (see `ops`); the doors only say how to execute a statement and ask a summariser.
A statement that fails inside a transaction rolls the transaction back before the program
sees the error (PostgreSQL refuses every statement after an error until then), and a program
that ends inside a transaction has it rolled back.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from .ops import ROLLBACK, Execute, Program, Summarize, Transaction, translate

T = TypeVar("T")


def drive(program: Program[T], execute: Callable[[Execute | Transaction], list[Any]],
          summarize: Callable[[Summarize], list[Any]], dbapi: Any) -> T:
    """Run `program` to its end with blocking I/O."""
    in_transaction = False
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                op = program.send(value) if error is None else program.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            value, error = None, None
            try:
                if type(op) is Summarize:
                    value = summarize(op)
                else:
                    value = execute(op)  # type: ignore[arg-type]
                    if type(op) is Transaction:
                        in_transaction = op.action == "begin"
            except Exception as exc:
                if in_transaction:
                    in_transaction = False
                    execute(ROLLBACK)
                error = translate(exc, dbapi)
    finally:
        if in_transaction:
            execute(ROLLBACK)


async def adrive(program: Program[T], execute: Callable[[Execute | Transaction], Awaitable[list[Any]]],
                 summarize: Callable[[Summarize], Awaitable[list[Any]]], dbapi: Any) -> T:
    """Run `program` to its end with asyncio I/O (the same loop as `drive`)."""
    in_transaction = False
    value: Any = None
    error: BaseException | None = None
    try:
        while True:
            try:
                op = program.send(value) if error is None else program.throw(error)
            except StopIteration as stop:
                return stop.value  # type: ignore[no-any-return]
            value, error = None, None
            try:
                if type(op) is Summarize:
                    value = await summarize(op)
                else:
                    value = await execute(op)  # type: ignore[arg-type]
                    if type(op) is Transaction:
                        in_transaction = op.action == "begin"
            except Exception as exc:
                if in_transaction:
                    in_transaction = False
                    await execute(ROLLBACK)
                error = translate(exc, dbapi)
    finally:
        if in_transaction:
            await execute(ROLLBACK)
