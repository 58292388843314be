"""The repository: the store's logic, written once, run by both front doors.

`core.Repository` holds every operation as a *program* (see `ops`): a generator that yields
the statements to run and the summaries to ask for. `drive` feeds a program its
results; the doors give them their way of executing a statement.
"""

from __future__ import annotations

from .core import Repository
from .drive import drive
from .ops import BEGIN, COMMIT, ROLLBACK, Atomically, Conflict, Execute, Op, Program, Summarize, Transaction, translate
from .results import AppendResult, CompactionResult, SessionInfo, SessionStats, VerifyReport

__all__ = ["BEGIN", "COMMIT", "ROLLBACK", "AppendResult", "Atomically", "CompactionResult", "Conflict", "Execute",
           "Op", "Program", "Repository", "SessionInfo", "SessionStats", "Summarize", "Transaction", "VerifyReport",
           "drive", "translate"]
