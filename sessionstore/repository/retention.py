"""Retention: a `RetentionPolicy` applied with the erasure that exists, one conversation at a time."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from ..errors import SessionNotFound
from ..retention import Candidate, Expired, RetentionPolicy, RetentionReport, choose, newest, space_text
from .base import PAGE, Part, check_lookup_id, log, utc_now
from .ops import Execute, Program
from .results import Conversation, SessionInfo


class RetentionPart(Part):
    # ------------------------------------------------------------------ retention

    def retain(self, policy: RetentionPolicy, *, vacuum: bool = False,
               now: datetime | None = None) -> Program[RetentionReport]:
        """Erase the sessions `policy` names (see `sessionstore.retention`), each whole with the
        sessions that are part of it, as `erase` erases a conversation; forks keep their own events.

        The sessions are chosen once, at `now`, through `sessions()` (the policy's `where` is its
        metadata filter); then each conversation is erased in a transaction of its own, and only
        if no session of it was appended to since it was chosen (its head gates the erasure): a
        running agent, `watch` or compaction that writes to it in the meantime keeps it, and the
        report says so (`kept_active`). A compaction that was planning on a session erased under
        it has its append refused (`SessionErased`): nothing is ever half-erased. An interrupted
        run leaves whole conversations erased up to where it stopped; running it again finishes.

        Space: SQLite's file is rebuilt once at the end (as `erase` does after each conversation);
        PostgreSQL runs a plain VACUUM of the tables (space reusable, files kept), or with
        `vacuum=True` VACUUM FULL (files shrink; an exclusive lock while it runs). A dry run
        reads only, and lists exactly what the run would erase in the same store.
        """
        now = now or utc_now()
        reason = policy.reason or policy.describe()
        candidates, kept_newest = yield from self._retention_selection(policy, now)
        going = choose(candidates, kept_newest, policy, now)
        if policy.dry_run:
            talks = []
            for candidate in going:
                talks.append(_expired(candidate, (yield from self.conversation(candidate.session_id))))
            return RetentionReport(policy, now, tuple(talks), reason=reason)
        if not going:
            return RetentionReport(policy, now, (), reason=reason, space="nothing was erased")
        distributed = yield from self._shape()
        size = self.sql.database_bytes_citus if distributed else self.sql.database_bytes
        before = int((yield Execute(size))[0][0] or 0)
        for statement in self.sql.erase_before:
            yield Execute(statement)
        erased: list[Expired] = []
        kept: list[str] = []
        for candidate in going:
            talk = yield from self.conversation(candidate.session_id)  # its parts as they are now
            live = [info for info in talk.parts if info.erased_at is None]
            if not live:  # erased by someone else since it was chosen
                continue
            # The session as chosen, its parts as just read: any append since refuses the erasure.
            heads = {info.id: info.head for info in live} | {candidate.session_id: candidate.head}
            if (yield from self._erase_together([info.id for info in live], reason, heads)):
                erased.append(_expired(candidate, talk))
            else:
                kept.append(candidate.session_id)
        for statement in (*self.sql.erase_after, *(self.sql.vacuum if vacuum else self.sql.reclaim)):
            yield Execute(statement)
        after = int((yield Execute(size))[0][0] or 0)
        log.warning("retention applied", policy=reason, erased=len(erased), kept_active=len(kept))
        return RetentionReport(policy, now, tuple(erased), tuple(kept), space_text(self.sql.postgres, vacuum),
                               before, after, reason)

    def _retention_selection(self, policy: RetentionPolicy, now: datetime
                             ) -> Program[tuple[list[Candidate], set[str]]]:
        """What `choose` chooses from, read through `sessions()` (no listing of its own): the live,
        top-level sessions `policy.where` selects that were last active by the cutoff, and the ids
        of the newest `keep_last` of the whole selection."""
        newest_first: list[Candidate] = []
        after = None
        while policy.keep_last and len(newest_first) < policy.keep_last:
            page = yield from self.sessions(where=policy.where, limit=PAGE, after=after)
            newest_first += yield from self._candidates(page)
            if page.cursor is None:
                break
            after = page.cursor
        candidates: list[Candidate] = []
        after = None
        while True:
            page = yield from self.sessions(where=policy.where, until=policy.cutoff(now), limit=PAGE, after=after)
            candidates += yield from self._candidates(page)
            if page.cursor is None:
                return candidates, newest(newest_first, policy)
            after = page.cursor

    def _candidates(self, page: Sequence[SessionInfo]) -> Program[list[Candidate]]:
        """The live, top-level sessions of a page of `sessions()`. A session that is part of
        another (its metadata names a live session as its `parent_session`: a subagent, a
        summariser's transcript) goes with that one, never on its own age or count."""
        found = []
        for info in page:
            if info.erased_at is not None:
                continue
            parent = info.metadata.get("parent_session")
            if isinstance(parent, str) and parent and (yield from self._live(parent)):
                continue
            found.append(Candidate(info.id, info.head, info.last_event_at or info.created_at, info.metadata))
        return found

    def _live(self, session_id: str) -> Program[bool]:
        """Is there such a session, not erased? (The parts an ``erase(only_this=True)`` left
        behind have no live session to go with: they are judged on their own.)"""
        try:
            check_lookup_id(session_id)
        except SessionNotFound:
            return False
        rows = yield Execute(self.sql.head, {"sid": session_id})
        return bool(rows) and rows[0][2] is None


def _expired(candidate: Candidate, talk: Conversation) -> Expired:
    parts = tuple(info.id for info in talk.parts[1:] if info.erased_at is None)
    return Expired(candidate.session_id, candidate.last_event_at, dict(candidate.metadata), parts,
                   tuple(info.id for info in talk.forks),
                   sum(info.head - (info.fork_version or 0) for info in talk.parts if info.erased_at is None))
