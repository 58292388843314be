"""Audit: the hash chain verified, erasure of a conversation, statistics and token totals."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .. import chain
from .. import events as ev
from ..errors import InvalidEvent, SessionNotFound
from ..finding import FORK_KEEPS
from ..tokens import counts_in_transcript
from .base import PAGE, Part, check_lookup_id, log, session_id_list, utc_now
from .ops import BEGIN, COMMIT, ROLLBACK, Execute, Program
from .results import Conversation, SessionInfo, SessionStats, VerifyReport


class AuditPart(Part):
    # ------------------------------------------------------------------ audit: the chain and erasure

    def verify(self, session_ids: Iterable[str] | None = None) -> Program[list[VerifyReport]]:
        """Check the chain of each session (default: every session, in id order; see `chain`).

        Each session is checked over its whole lineage, so a fork's inherited history is checked
        from the start and the fork's own events from the parent's link at the fork version.
        Reads page by page: memory stays constant however long the sessions.
        """
        if session_ids is None:
            ids = sorted(row[0] for row in (yield Execute(self.sql.session_ids)))
        else:  # one id alone too (DESIGN §9 writes `verify(session_id)`)
            ids = list(dict.fromkeys(session_id_list(session_ids)))
        reports = []
        for sid in ids:
            reports.append((yield from self._verify_one(sid)))
        broken = [r for r in reports if not r.ok]
        (log.warning if broken else log.info)("chain verified", sessions=len(reports), broken=len(broken))
        return reports

    def _verify_one(self, session_id: str) -> Program[VerifyReport]:
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.head, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        head, head_link, erased_at = int(rows[0][0]), rows[0][1], rows[0][2]
        lineage = yield from self.lineage(session_id)
        erased = yield from self._erased_owners(session_id)
        check = chain.ChainCheck(session_id, chain.genesis(lineage[0].session_id))
        decode = self.sql.decode
        after = 0
        while check.broken is None:
            params = self.sql.lineage_params(lineage, after)
            if params is None:
                break
            params["limit"] = PAGE
            page = yield Execute(self.sql.chain_rows(params.pop("_n")), params)
            for owner, version, event_id, kind, created, tokens, content, link, payload, meta, erased_row in page:
                if not check.add(chain.Link(version, event_id, kind, decode.time(created), tokens,  # type: ignore[arg-type]
                                            content, link, payload, decode.json(meta), erased_row is not None,
                                            owner in erased)):
                    break
            if len(page) < PAGE:
                break
            after = page[-1][1]
        return VerifyReport(session_id, head, head_link, check.checked, erased_at is not None,
                            check.finish(head, head_link))

    def conversation(self, session_id: str) -> Program[Conversation]:
        """The session, the sessions that are part of it, and the forks of any of them (see
        `Conversation`): what `erase` reaches, and what it leaves."""
        check_lookup_id(session_id)
        rows = yield Execute(self.sql.session, {"sid": session_id})
        if not rows:
            raise SessionNotFound(session_id)
        parts = {session_id: self._info(rows[0])}
        frontier = [session_id]
        while frontier:  # parts of parts: a subagent's own subagents
            found = []
            for sid in frontier:
                for row in (yield Execute(self.sql.parts_of, {"sid": sid})):
                    if row[0] not in parts:
                        parts[row[0]] = self._info(row)
                        found.append(row[0])
            frontier = found
        forks: dict[str, SessionInfo] = {}
        frontier = list(parts)
        while frontier:  # forks of forks inherit the same history
            rows = yield Execute(self.sql.forks_of, {"ids": self.sql.list_param(frontier)})
            new = {row[0]: self._info(row) for row in rows if row[0] not in parts and row[0] not in forks}
            forks.update(new)
            frontier = list(new)
        return Conversation(session_id, tuple(parts.values()), tuple(forks.values()))

    def erase(self, session_id: str, reason: str, *, only_this: bool = False,
              vacuum: bool = False) -> Program[SessionInfo]:
        """Destroy the content of a conversation's events and metadata, in one transaction: the
        session and every session that is part of it (`conversation`), or with `only_this` the
        session alone. A user asking to be forgotten means the whole conversation: an imported
        Claude Code session's subagents and its summariser's transcript quote it.

        Each event keeps its kind, version, ids, token count, content hash and link, so that the
        chain still verifies (`chain`); its payload and meta become a tombstone naming `reason`.
        An erased session then takes no events, has no context and cannot be forked
        (`SessionErased`); forks keep their own events, their inherited history is tombstones
        too, and the metadata they copied from it to be listed with it (`finding.FORK_KEEPS`:
        user, agent, project) is removed from theirs. Erasing an erased session changes nothing.

        On SQLite nothing is left in the file either (secure delete, VACUUM, WAL checkpoint; the
        VACUUM rewrites the whole file). On PostgreSQL the old row versions stay in the tables
        until they are vacuumed — `vacuum=True` runs VACUUM FULL on both tables now, which locks
        them while it rewrites them — and in the server's WAL and backups, as with any UPDATE:
        the operator's retention of those decides when they are gone.
        """
        if not isinstance(reason, str) or not reason.strip():
            raise InvalidEvent("an erasure needs a reason (a non-empty string): it is kept in every tombstone",
                               field="reason")
        if only_this:
            check_lookup_id(session_id)
            rows = yield Execute(self.sql.session, {"sid": session_id})
            if not rows:
                raise SessionNotFound(session_id)
            targets = [self._info(rows[0])]
        else:
            targets = list((yield from self.conversation(session_id)).parts)
        live = [info.id for info in targets if info.erased_at is None]
        if live:
            for statement in self.sql.erase_before:
                yield Execute(statement)
            yield from self._erase_together(live, reason)
            for statement in self.sql.erase_after:
                yield Execute(statement)
            log.warning("session erased", session_id=session_id, parts=len(live), reason=reason)
        if vacuum:
            for statement in self.sql.vacuum:
                yield Execute(statement)
        return (yield from self.session(session_id))

    def _erase_together(self, live: list[str], reason: str, heads: Mapping[str, int] | None = None) -> Program[bool]:
        """Erase the sessions `live` in one transaction (the caller runs `erase_before` and
        `erase_after` around one or many of these). With `heads`, only if each session's head is
        still the one given: else nothing is erased (rolled back) and the answer is False. Without,
        a session another erasure got to first is left as it is."""
        payload, meta = chain.tombstone(reason)
        now = self.sql.bind_time(utc_now())
        yield BEGIN
        copies = yield from self._copied_into_forks(live)
        for sid in live:
            params = {"sid": sid, "metadata": "{}", "now": now, "reason": reason}
            if heads is None:
                done = yield Execute(self.sql.erase_session, params)
            else:
                done = yield Execute(self.sql.erase_session_at, {**params, "head": heads[sid]})
                if not done:
                    yield ROLLBACK
                    return False
            if done:  # else another erase got there first
                # the counts of events still uncounted are made before the text goes (the erased
                # session takes no more appends: its row is written, and on PostgreSQL locked)
                yield from self.count_tokens(sid)
                for statement in self.sql.erase_search:  # first: the re-index trigger then finds nothing to redo
                    yield Execute(statement, {"sid": sid})
                yield Execute(self.sql.erase_events, {"sid": sid, "payload": payload,
                                                      "meta": ev.encode_json(meta), "now": now})
        for fork, metadata in copies.items():
            yield Execute(self.sql.set_metadata, {"sid": fork, "metadata": ev.encode_json(metadata)})
        yield COMMIT
        for sid in live:
            self._heads.pop(sid, None)
            self.views.forget(sid)
        return True

    def _copied_into_forks(self, live: list[str]) -> Program[dict[str, dict[str, Any]]]:
        """The metadata of each fork descending from `live` without the values a fork copied from
        them (`finding.FORK_KEEPS`: a user's name is what an erasure must not leave behind), for
        the forks that hold any; read inside the erasure's transaction."""
        copied: set[tuple[str, str]] = set()
        for sid in live:
            rows = yield Execute(self.sql.metadata_for_update, {"sid": sid})
            metadata = self.sql.decode.json(rows[0][0]) if rows else None
            if isinstance(metadata, dict):
                copied |= {(key, ev.encode_json(metadata[key])) for key in FORK_KEEPS if key in metadata}
        changed: dict[str, dict[str, Any]] = {}
        seen, frontier = set(live), list(live)
        while copied and frontier:
            rows = yield Execute(self.sql.forks_of, {"ids": self.sql.list_param(frontier)})
            forks = [self._info(row) for row in rows if row[0] not in seen]
            seen |= {info.id for info in forks}
            frontier = [info.id for info in forks]
            for info in forks:
                kept = {key: value for key, value in info.metadata.items()
                        if (key, ev.encode_json(value)) not in copied}
                if info.erased_at is None and kept != info.metadata:
                    changed[info.id] = kept
        return changed

    # ------------------------------------------------------------------ statistics

    def stats(self, session_id: str) -> Program[SessionStats]:
        """Tokens of the whole transcript against the view, per kind; compactions and markers."""
        by_kind: dict[str, list[int]] = {}
        events = compactions = pruned = rewritten = transcript_tokens = 0
        after = 0
        while True:
            page = yield from self.events_page(session_id, after=after, limit=PAGE)
            for event in page:
                events += 1
                counts = by_kind.setdefault(event.kind, [0, 0])
                counts[0] += 1
                counts[1] += event.tokens
                if event.erased_at is not None:  # a tombstone (a fork's history erased with its ancestor)
                    continue
                if counts_in_transcript(event.kind, event.payload):
                    transcript_tokens += event.tokens
                compactions += event.kind == "compaction"
                pruned += len(event.payload["targets"]) if event.kind == "prune" else 0
                rewritten += event.kind == "rewrite"
            if len(page) < PAGE:
                break
            after = page[-1].version
        view = yield from self._current_view(session_id)
        estimate = view.window_estimate()
        reported = estimate.basis != "ratio"  # "ratio": no usage report, only our count scaled
        return SessionStats(session_id, view.version, events, transcript_tokens, view.tokens,
                            {k: (v[0], v[1]) for k, v in by_kind.items()}, compactions, pruned, rewritten,
                            len(view.messages), len(view.diagnostics),
                            estimate.tokens if reported else None, estimate.basis if reported else None)

    def token_totals(self) -> Program[dict[str, int]]:
        """Tokens stored per session (its own events, not those inherited from a fork parent)."""
        yield from self.count_tokens()
        rows = yield Execute(self.sql.token_totals)
        return {sid: int(total or 0) for sid, total in rows}

    def transcript_tokens(self, session_ids: Iterable[str] | None = None) -> Program[dict[str, int]]:
        """Each session's token figure (`tokens.transcript_tokens`), summed in the database; a fork
        counts the history it inherits up to its fork version."""
        yield from self.count_tokens()
        totals = {sid: int(total or 0) for sid, total in (yield Execute(self.sql.transcript_totals))}
        if session_ids is None:
            wanted = {row[0] for row in (yield Execute(self.sql.session_ids))}
        else:
            wanted = set(session_id_list(session_ids))
        for (fork,) in (yield Execute(self.sql.forks)):
            if fork not in wanted:
                continue
            rows = yield from self._over_lineage(fork, self.sql.transcript_sum)
            totals[fork] = int(rows[0][0] or 0) if rows else 0
        return {sid: totals.get(sid, 0) for sid in wanted}
