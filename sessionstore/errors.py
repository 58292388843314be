"""Typed errors.

Every error a caller can act on has its own class and carries the facts needed to act
(which session, which version, which event, which file and line), so that an agent can
retry on `ConcurrencyError`, fix its input on `InvalidEvent` and report `SessionNotFound`
without parsing messages. All of them derive from `SessionStoreError`.
"""

from __future__ import annotations


class SessionStoreError(Exception):
    """Base class of every error raised by sessionstore."""


class SessionNotFound(SessionStoreError, LookupError):
    """The session id names no session in this store."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} does not exist")


class SessionErased(SessionStoreError):
    """The session's content was erased (`store.erase`): it keeps its tombstones, takes no new
    events and cannot be forked."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} was erased: it takes no new events and cannot be forked")


class SessionExists(SessionStoreError):
    """`create_session` was given an id that is already taken."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        super().__init__(f"session {session_id!r} already exists")


class CheckpointNotFound(SessionStoreError, LookupError):
    """A framework's checkpoint id (LangGraph's ``checkpoint_id``) names no checkpoint of the session
    it was given for: one from another thread, or taken out of this one. Nothing was written."""

    def __init__(self, session_id: str, checkpoint_id: str) -> None:
        self.session_id = session_id
        self.checkpoint_id = checkpoint_id
        super().__init__(f"session {session_id!r} has no checkpoint {checkpoint_id!r}; nothing was written")


class ConcurrencyError(SessionStoreError):
    """`expected_version` did not match the session's head: another writer got there first.

    Nothing was written. Re-read the session, decide again, and retry with the new version.
    """

    def __init__(self, session_id: str, expected: int, actual: int) -> None:
        self.session_id = session_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"session {session_id!r} is at version {actual}, not the expected {expected}; nothing was written"
        )


class InvalidEvent(SessionStoreError, ValueError):
    """An event's kind or payload is not valid. Nothing of its batch was written.

    `index` is the event's position in the batch given to `append` (None outside a batch),
    `field` the payload path that is wrong (e.g. ``payload.content[2].text``).
    """

    def __init__(self, reason: str, *, index: int | None = None, field: str | None = None) -> None:
        self.reason = reason
        self.index = index
        self.field = field
        where = []
        if index is not None:
            where.append(f"event {index}")
        if field:
            where.append(field)
        prefix = f"{', '.join(where)}: " if where else ""
        super().__init__(f"{prefix}{reason}")


class DuplicateEvent(SessionStoreError):
    """An event id is already stored with a different payload (a real conflict, not a retry)."""

    def __init__(self, event_id: str, reason: str = "is already stored with a different content") -> None:
        self.event_id = event_id
        super().__init__(f"event id {event_id!r} {reason}; nothing was written")


class VersionOutOfRange(SessionStoreError, ValueError):
    """A version argument (`at=`, `upto=`) lies outside the session's history."""

    def __init__(self, session_id: str, version: int, head: int) -> None:
        self.session_id = session_id
        self.version = version
        self.head = head
        super().__init__(f"session {session_id!r} has versions 1..{head}; {version} is out of range")


class CompactionFailed(SessionStoreError):
    """No compaction could bring the view under the policy's threshold; nothing was recorded.

    Raised instead of recording a compaction that would leave a view the model cannot take:
    the agent learns at once, with the figures, rather than from every later request failing.
    """

    def __init__(self, session_id: str, reason: str, *, tokens: int | None = None,
                 threshold: int | None = None) -> None:
        self.session_id = session_id
        self.reason = reason
        self.tokens = tokens
        self.threshold = threshold
        figures = f" (view {tokens:,} tokens, threshold {threshold:,})" if tokens is not None and threshold else ""
        super().__init__(f"session {session_id!r} could not be compacted under the threshold{figures}: {reason}; "
                         "nothing was recorded")


class ConfigurationError(SessionStoreError, ValueError):
    """The store was configured wrongly (a bad URL, an unknown option value)."""


class SchemaNotReady(SessionStoreError):
    """The database has no sessionstore schema, or an older one: run `sessionstore db upgrade`."""


class TranscriptError(SessionStoreError, ValueError):
    """A transcript line could not be read. Importers collect these and go on with the next line."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        super().__init__(f"{path}:{line}: {reason}")


class UnknownFormat(SessionStoreError, ValueError):
    """A file is not a transcript format any importer recognises."""

    def __init__(self, path: str, reason: str = "is not a transcript of any known agent", *, line: int = 0) -> None:
        self.path = path
        self.line = line  # where the file stops being readable (a JSON document that does not parse); 0: the file
        super().__init__(f"{path}: {reason}")


class InvalidSearch(SessionStoreError, ValueError):
    """A search query or filter that cannot be run: empty, only exclusions, an unsearched kind."""

    def __init__(self, message: str, *, query: str | None = None) -> None:
        self.query = query
        super().__init__(message)


class InvalidQuery(SessionStoreError, ValueError):
    """A `sessions()` filter that cannot be run: a malformed `where`, a date that is not one or
    is in the future, a cursor the store did not hand out. `field` names the argument."""

    def __init__(self, message: str, *, field: str) -> None:
        self.field = field
        super().__init__(message)


class DatabaseError(SessionStoreError):
    """The database failed in a way the store could not hide: the driver's exception is the
    cause (``raise … from``). `retryable` says whether the same call may succeed later without
    anything changed on the caller's side (a server coming back, space freed, a lock released);
    `where` names the database (host, port and name, or the SQLite file; never a password)."""

    retryable: bool = False
    advice: str = ""

    def __init__(self, where: str, detail: str) -> None:
        self.where = where
        self.detail = detail
        later = "retrying later can help" if self.retryable else "retrying will not help"
        advice = f"; {self.advice}" if self.advice else ""
        super().__init__(f"{self.summary} ({where}): {detail}{advice} [{later}]")

    summary = "the database failed"


class DatabaseUnavailable(DatabaseError):
    """The database cannot be reached, or the connection kept failing for longer than the
    store's retry bound (`SessionStore(retry_timeout=…)`). What was acknowledged is stored; an
    append that raised this may or may not be stored: re-send the same events (same event ids)
    and the store returns the original result if it was."""

    retryable = True
    summary = "the database is unreachable"
    advice = "check that the server is running and accepts connections at that address"


class FeedUnavailable(DatabaseUnavailable):
    """A Citus node did not say where its part of the global feed ends (its horizon): reading on
    would risk handing out events of transactions it may still be running, so the read stops.
    Nothing was consumed; read again from the same cursor once the node answers."""

    summary = "a Citus node did not answer the global feed"
    advice = "check that every node in pg_dist_node is up, then read again from the same cursor"


class StorageFull(DatabaseError):
    """The disk (or SQLite's `max_page_count`, or PostgreSQL's tablespace) is full. Nothing of
    the failed call was written; every acknowledged event is intact. Free space, then retry."""

    retryable = True
    summary = "the database or its disk is full"
    advice = "free disk space, then retry"


class DatabaseReadOnly(DatabaseError):
    """The database only allows reads (a read-only file or mount, a standby server, a
    read-only transaction setting). Reads keep working; writes need a writable database."""

    retryable = False
    summary = "the database is read-only"
    advice = "open a writable database (file permissions, mount options, or the primary server)"


class StatementTimeout(DatabaseError):
    """A statement ran past the database's time limit, or waited too long for a lock
    (PostgreSQL's ``statement_timeout``/``lock_timeout``, SQLite's busy timeout). Nothing of the
    failed call was written."""

    retryable = True
    summary = "the database took too long"
    advice = "retry later, or raise the database's timeout"


class ToolInputError(SessionStoreError, ValueError):
    """A tool call the store cannot answer as asked — a bad argument, a page or a range that does
    not exist: its message is what the model reads (an error result)."""


class RecallError(ToolInputError):
    """A recall tool input that cannot be run (its message is what the model reads)."""
