"""Writing a parsed transcript idempotently: the only part of the importers that touches a store.

A session whose stored events are a prefix of the parsed ones gets only the missing tail (a
grown file); identical ones get nothing; anything else is reported and left untouched (or,
with ``on_divergence="fork"``, continued in a fork).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import replace
from typing import Any, Final

from .. import events as ev
from ..errors import ConcurrencyError, DuplicateEvent, InvalidEvent, SessionExists, SessionNotFound, TranscriptError
from ..events import NewEvent, StoredEvent
from ..projection.calibration import calibration_details
from ..repository.base import check_session_id
from ..repository.results import SessionInfo
from .calibrating import WrittenHistory
from .reports import ON_DIVERGENCE, WHOLE_FILE, ParsedSession, ParsedTranscript, SessionImport, TranscriptWarning
from .rules import NAMESPACE, safe_metadata

# Events per `append` call: large enough that a 1,000-line file is one or two transactions.
BATCH_SIZE: Final = 2000


def _batches(items: Sequence[NewEvent], size: int = BATCH_SIZE) -> Iterator[Sequence[NewEvent]]:
    for i in range(0, len(items), size):
        yield items[i:i + size]


def store_parsed(store: Any, parsed: ParsedTranscript, *,
                 on_divergence: str = "fail") -> tuple[list[SessionImport], list[TranscriptError]]:
    """Write a parsed transcript's sessions; (what each got, issues found while writing).

    `on_divergence` says what happens when a session already holds events that are not a
    prefix of the file's (a line skipped as broken then corrected, a rewritten file):
    ``"fail"`` reports it and writes nothing for that session; ``"fork"`` continues the file
    in a new session forked at the last common version, sharing the common prefix (nothing
    stored is changed or deleted), and names it in the report.
    """
    if on_divergence not in ON_DIVERGENCE:
        raise ValueError(f"on_divergence must be one of {', '.join(ON_DIVERGENCE)}, not {on_divergence!r}")
    results: list[SessionImport] = []
    issues: list[TranscriptError] = []
    written: set[str] = set()
    for session in parsed.sessions:
        if session.fork_of is not None and session.fork_of not in written:
            issues.append(TranscriptError(parsed.path, WHOLE_FILE, f"branch {session.session_id} not written: its "
                                                                   f"parent session {session.fork_of} was not"))
            continue
        result, ok = _store_session(store, parsed.path, session, issues, on_divergence)
        if result is not None:
            results.append(result)
        if ok:
            written.add(session.session_id)
    return results, issues


# Tries of one session's write when another writer of the same session (a `watch` beside an
# `import`, two copies of one file) got there between our read and our write: each try reads
# what is stored again, and each lost race means the other writer stored events, so a few suffice.
WRITE_TRIES: Final = 8


def _store_session(store: Any, path: str, session: ParsedSession, issues: list[TranscriptError],
                   on_divergence: str = "fail") -> tuple[SessionImport | None, bool]:
    """Write one session; (what it got, whether it now holds exactly the parsed events).

    Another writer of the same session is no error: a write that loses the race to it (the head
    moved, an event id or the session is stored already) reads again and writes what is still
    missing, so that both succeed and each event is stored once."""
    sid = session.session_id
    if not session.events:
        return None, False
    try:
        check_session_id(sid)
    except InvalidEvent as exc:  # an id the file gives (a NUL, 300 characters): the store could not hold it
        shown = repr(sid) if len(repr(sid)) <= 80 else f"{repr(sid)[:60]}…"
        issues.append(TranscriptError(path, WHOLE_FILE, f"session {shown} not written: {exc.reason}"))
        return None, False
    added = 0
    seen: int | None = None  # the head at the last lost race
    for attempt in range(WRITE_TRIES):
        progress: list[int] = []
        try:
            result, ok = _write_session(store, path, session, issues, on_divergence, progress)
        except (ConcurrencyError, DuplicateEvent, SessionExists) as exc:
            added += sum(progress)
            head = _head(store, sid)
            if head == seen and not progress:  # nobody moved: not a race but a real conflict (an id stored elsewhere)
                issues.append(TranscriptError(path, WHOLE_FILE, f"session {sid} not written: {exc}"))
                return None, False
            if attempt + 1 == WRITE_TRIES:
                issues.append(TranscriptError(path, WHOLE_FILE, f"session {sid} not written in full: other writers "
                                                                f"kept changing it ({exc}); importing again resumes"))
                return None, False
            seen = head
            continue
        if result is not None:
            result.added += added
            result.present = max(0, result.present - added)
        return result, ok
    raise AssertionError("unreachable")


def _head(store: Any, sid: str) -> int:
    try:
        return int(store.version(sid))
    except SessionNotFound:
        return -1


def _write_session(store: Any, path: str, session: ParsedSession, issues: list[TranscriptError],
                   on_divergence: str, progress: list[int]) -> tuple[SessionImport | None, bool]:
    """One try of `_store_session`: read what is stored, write what is missing (`progress`
    collects the events written before a lost race, which the next try finds stored)."""
    sid = session.session_id
    events = session.events
    metadata = safe_metadata(session.metadata)
    base = (session.fork_at or 0) if session.fork_of is not None else 0
    try:
        info = store.session(sid)
    except SessionNotFound:
        info = None
    if info is None and session.fork_of is None:
        # Created with its first batch in one transaction: an interrupted import leaves no empty session.
        first = events[:max(1, min(BATCH_SIZE, _first_compaction(events)))]
        store.create_session(sid, metadata, events=first, strict=False)
        progress.append(len(first))
        # What it holds is kept to calibrate an agent's compaction after the first batch; with none, never read.
        later = any(e.kind == "compaction" for e in events[len(first):])
        history = _history(store, sid, first) if later else None
        added = len(first) + _append_from(store, sid, events, len(first), len(first), progress, history)
        return SessionImport(sid, len(events), added, 0, session.counts, True, None, None), True
    if info is None:
        store.fork(session.fork_of, at=base, new_session_id=sid, metadata=metadata)
        created = True
    else:
        created = False
        if session.fork_of is not None and (info.parent_id != session.fork_of or info.fork_version != base):
            reason = f"session {sid} exists but is not a fork of {session.fork_of} at version {base}"
            issues.append(TranscriptError(path, WHOLE_FILE, f"{reason}; nothing written"))
            return SessionImport(sid, len(events), 0, 0, session.counts, False, session.fork_of, base), False
    if info is not None and info.erased_at is not None:
        reason = info.erase_reason or "no reason given"
        issues.append(TranscriptError(path, WHOLE_FILE, f"session {sid} was erased ({reason}): its transcript is "
                                                        "not imported again"))
        return SessionImport(sid, len(events), 0, 0, session.counts, False, session.fork_of, session.fork_at), False
    head = store.version(sid)
    stored = _from_the_file(store.events(sid, after=base), events) if head > base else []
    present = len(stored)
    if present > 0:
        common = _common_prefix(stored, events)
        if common == len(events) < present:
            # An older, shorter copy of the file (a backup, a copy taken while the agent wrote): all
            # of it is stored already, and what the store holds beyond it is the file's later lines,
            # which know more than it does: it adds only what the store does not say at all.
            _learn_metadata(store, sid, info, metadata, only_new=True)
            return SessionImport(sid, len(events), 0, len(events), session.counts, created, session.fork_of,
                                 session.fork_at), True
        if common < present:
            mismatch = _prefix_mismatch(stored, events) or "it holds more events than the file"
            at = stored[common - 1].version if common else base  # the last event both hold
            if on_divergence == "fork" and common < len(events):
                return _fork_at_divergence(store, path, session, at, common, issues)
            hint = ("" if on_divergence == "fork" else
                    f"; `import --on-divergence fork` continues the file in a new session forked at version "
                    f"{at}")
            issues.append(TranscriptError(path, WHOLE_FILE, f"session {sid} already holds {present} event(s) that "
                                                            f"are not a prefix of this file's {len(events)} "
                                                            f"({mismatch}); nothing written for it{hint}"))
            return SessionImport(sid, len(events), 0, present, session.counts, created, session.fork_of,
                                 session.fork_at), False
    added = _append_from(store, sid, events, present, head, progress)
    _learn_metadata(store, sid, info, metadata)
    return SessionImport(sid, len(events), added, present, session.counts, created, session.fork_of,
                         session.fork_at), True


def _learn_metadata(store: Any, sid: str, info: SessionInfo | None, metadata: dict[str, Any], *,
                    only_new: bool = False) -> None:
    """What the file says about its session now, over what was stored (a grown file names its
    model, its subagents; a re-import repairs an import that lacked them): only the keys that
    changed are written (with `only_new`, only those the store lacks), and a key the file no
    longer gives is kept. A session this write created (`info` None) holds the file's already."""
    if info is None:
        return
    known = info.metadata
    changes = {k: v for k, v in metadata.items() if k not in known or (known[k] != v and not only_new)}
    if changes:
        store.update_metadata(sid, changes)


def _from_the_file(stored: Iterable[StoredEvent], parsed: Sequence[NewEvent]) -> list[StoredEvent]:
    """The stored events an import made (its ids, or a source line or item in meta), without those
    the store added since — compactions, prune and rewrite markers, an agent's own appends — so
    that re-importing a grown file appends only its new lines whatever happened in between."""
    ids = {e.event_id for e in parsed}
    return [e for e in stored if e.event_id in ids or "line" in e.meta or "item" in e.meta]


def _append_from(store: Any, sid: str, events: Sequence[NewEvent], start: int, head: int,
                 progress: list[int] | None = None, history: WrittenHistory | None = None) -> int:
    """Append events[start:] to `sid`, whose head is `head`; how many were appended (each batch
    also noted in `progress`, for a write that loses a race halfway). An agent's compaction is
    appended on its own, calibrated (`_calibrated`) by what was stored before it: `history`, when
    this write made the whole session, or else the store."""
    added = 0
    for chunk in _batches(events[start:]):
        for part in _split_at_compactions(chunk):
            if part[0].kind == "compaction":
                part = [_calibrated(store, sid, part[0], history), *part[1:]]
            head = store.append(sid, part, expected_version=head, strict=False).version
            added += len(part)
            if progress is not None:
                progress.append(len(part))
            if history is not None:
                history.appended(part)
                if len(history.events) != head:  # the store added events of its own (a provider's compaction)
                    history = None
    return added


def _history(store: Any, sid: str, first: Sequence[NewEvent]) -> WrittenHistory | None:
    """What a new session holds after its first batch, to calibrate its compactions without reading
    it back (`calibrating`); None for a store that does not name its counter."""
    counter = getattr(store, "token_counter", None)
    if counter is None:
        return None
    history = WrittenHistory(sid, counter)
    history.appended(first)
    return history


def _first_compaction(events: Sequence[NewEvent]) -> int:
    return next((i for i, e in enumerate(events) if e.kind == "compaction"), len(events))


def _split_at_compactions(chunk: Sequence[NewEvent]) -> Iterator[Sequence[NewEvent]]:
    """`chunk` in parts that each start with a compaction (but the first)."""
    start = 0
    for i, event in enumerate(chunk):
        if event.kind == "compaction" and i > start:
            yield chunk[start:i]
            start = i
    if start < len(chunk):
        yield chunk[start:]


def _calibrated(store: Any, sid: str, compaction: NewEvent, history: WrittenHistory | None = None) -> NewEvent:
    """An agent's compaction with what our planner records in its own: the token calibration
    learned from the usage reports before it (`projection.calibration`), so that the first
    estimate after it knows the agent's system prompt and tools. In `meta`, not the payload:
    the payload stays the file's, so that a re-import still matches it."""
    learned = history.calibration() if history is not None else calibration_details(store.context(sid))
    if not learned or not isinstance(compaction.meta, dict):
        return compaction
    return replace(compaction, meta={**compaction.meta, **learned})


def diverged_session_id(session_id: str, at: int, first_new: NewEvent) -> str:
    """The id of the session that continues `session_id` from version `at` with `first_new`.

    Derived from what diverges, so that importing the same corrected file again finds the
    same fork (and adds only what it lacks) instead of forking once more.
    """
    suffix = uuid.uuid5(NAMESPACE, f"diverged:{session_id}:{at}:{first_new.event_id}").hex[:12]
    return f"{session_id[:ev.MAX_ID - 13]}~{suffix}"


def _fork_at_divergence(store: Any, path: str, session: ParsedSession, at: int, common: int,
                        issues: list[TranscriptError]) -> tuple[SessionImport | None, bool]:
    """Continue a diverging file in a fork of its session at the last common version `at`."""
    events = session.events
    fork_sid = diverged_session_id(session.session_id, at, events[common])
    # Event ids are unique store-wide and the original keeps its own: the fork's get ids of their own.
    tail = [replace(e, event_id=uuid.uuid5(NAMESPACE, f"{fork_sid}:{e.event_id}").hex) for e in events[common:]]
    metadata = {**session.metadata, "diverged_from": session.session_id, "diverged_at": at}
    branch = ParsedSession(fork_sid, metadata, tail, fork_of=session.session_id, fork_at=at)
    result, ok = _store_session(store, path, branch, issues, "fail")
    if result is not None:
        issues.append(TranscriptWarning(path, WHOLE_FILE, f"session {session.session_id} holds events that "
                                                          f"diverge from this file after version {at}: the file "
                                                          f"continues in session {fork_sid}, forked at version "
                                                          f"{at} (nothing stored was changed)"))
        result.diverged_from = session.session_id
    return result, ok


def _common_prefix(stored: Sequence[Any], parsed: Sequence[NewEvent]) -> int:
    """How many leading events the store and the file share (same id, kind and payload)."""
    n = 0
    for have, want in zip(stored, parsed):
        if have.event_id != want.event_id or have.kind != want.kind or have.payload != want.payload:
            break
        n += 1
    return n


def _prefix_mismatch(stored: Sequence[Any], parsed: Sequence[NewEvent]) -> str | None:
    if len(stored) > len(parsed):
        return f"the store has {len(stored)} events, the file {len(parsed)}"
    for i, (have, want) in enumerate(zip(stored, parsed)):
        if have.event_id != want.event_id:
            return f"event {i + 1} has id {have.event_id} in the store, {want.event_id} in the file"
        if have.kind != want.kind or have.payload != want.payload:
            return f"event {i + 1} ({want.kind}) differs"
    return None
