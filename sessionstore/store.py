"""SessionStore: the blocking front door of the repository.

The logic lives in `repository/` as programs (generators that yield statements to run);
this door runs them on blocking drivers (sqlite3, psycopg), and `aio.AsyncSessionStore` runs
the same programs on asyncio drivers. Each thread keeps one driver connection in autocommit
mode: checking one out of the pool for every append would cost more than the append, and
an append is a single statement that commits on its own.
"""

from __future__ import annotations

import os
import threading
import time
import weakref
from contextlib import suppress
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import date, datetime, tzinfo
from typing import Any, TypeVar, cast

from sqlalchemy import Engine

from .accounting import UsageGroup, UsageRow
from .compaction.policy import CompactionPolicy
from .events import NewEvent, StoredEvent, new_event_id, once
from .pricing import PriceTable, price_table
from .projection import ContextView
from .retention import RetentionPolicy, RetentionReport
from .repository import (AppendResult, CompactionResult, Program, Repository, SessionInfo, SessionStats, Summarize,
                         VerifyReport)
from .repository.drive import Run, retrying, step_through
from .repository.faults import Attempts, RetryPolicy, connection_kept, describe
from .repository.core import PAGE, SEARCH_LIMIT, Pages
from .repository.results import Conversation, SearchHit, SessionPage
from .repository.feed import FeedPage
from .repository.views import Fold
from .repository.ops import Atomically, Execute, Transaction, connection_errors
from .storage import engine as engines
from .storage import migrate as migrations
from .storage.placement import PLACEMENT_SQL, Node, Routes
from .storage.statements import Statements
from .summarizers.base import Summarizer
from .summarizers.drive import answer
from .tokens import TokenCounter, default_counter

T = TypeVar("T")
S = TypeVar("S")

__all__ = ["AppendResult", "CompactionResult", "SessionInfo", "SessionStats", "SessionStore", "VerifyReport"]


class SessionStore:
    """The event store: append events to sessions, read them back, fork, and rebuild context.

    ``SessionStore()`` opens ``$SESSIONSTORE_URL``, else ``sqlite:///./sessionstore.db``.
    Run `migrate()` once per database (or ``sessionstore db upgrade``) to create the schema.
    A lost connection is replaced and the call retried for up to `retry_timeout` seconds
    (default 30; a `RetryPolicy` for finer control; 0 turns it off): see `repository.faults`.
    `AsyncSessionStore` is the same store for asyncio code.
    """

    def __init__(self, url: str | None = None, *, token_counter: TokenCounter | None = None,
                 sqlite_synchronous: str = "NORMAL", engine: Engine | None = None, echo: bool = False,
                 retry_timeout: RetryPolicy | float | None = None, route_to_nodes: bool = True) -> None:
        self.url = engines.resolve_url(url) if engine is None else str(engine.url)
        self.engine = engine or engines.make_engine(self.url, sqlite_synchronous=sqlite_synchronous, echo=echo)
        self.backend = self.engine.dialect.name
        self._token_counter = token_counter
        self._repo = Repository(Statements(self.engine.dialect), lambda: self.token_counter)
        self._dbapi = self.engine.dialect.loaded_dbapi
        self._broken = connection_errors(self._dbapi)
        self.retry = RetryPolicy.of(retry_timeout)
        self._where = describe(self.engine.url)
        self._pid = os.getpid()
        self._local = threading.local()
        self._connections: list[Any] = []
        self._lock = threading.Lock()
        # Citus: appends go straight to the node holding their session (`storage/placement.py`).
        self._routes = Routes() if route_to_nodes and self.backend == "postgresql" else None
        self._node_engines: dict[Node, Engine] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def token_counter(self) -> TokenCounter:
        if self._token_counter is None:
            self._token_counter = default_counter()
        return self._token_counter

    def migrate(self) -> list[str]:
        """Create or upgrade the schema (``alembic upgrade head``); safe to run every start.

        On a Citus coordinator it also distributes the tables by session (`storage.distribution`);
        returns what that did, one line each (empty elsewhere, and once done)."""
        done = migrations.upgrade(self.engine)
        self._repo.sql.forget_shape()  # asked again: the schema may have just been distributed
        return done

    def close(self) -> None:
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            _release(connection, self.backend)
        self._local = threading.local()
        self.engine.dispose()
        with self._lock:
            nodes, self._node_engines = self._node_engines, {}
        for engine in nodes.values():
            engine.dispose()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionStore({self.engine.url.render_as_string(hide_password=True)!r})"

    # ------------------------------------------------------------------ running programs

    def _connection(self) -> Any:
        if self._pid != os.getpid():  # after os.fork() the child must not touch the parent's connections
            self._pid = os.getpid()
            self._local = threading.local()
            self._connections = []
            self.engine.dispose(close=False)
            for engine in self._node_engines.values():
                engine.dispose(close=False)
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = self._local.connection = self._open(self.engine)
        return connection

    def _open(self, engine: Engine) -> Any:
        """A connection of `engine` for this thread, in autocommit mode."""
        connection = engine.raw_connection()
        if self.backend == "postgresql":
            connection.driver_connection.autocommit = True
        # A thread's locals go when it ends: its connections go back to their pools then, so that
        # frameworks that run each call on a fresh worker thread do not exhaust the pool.
        if getattr(self._local, "end", None) is None:
            self._local.end = _ThreadEnd()
        weakref.finalize(self._local.end, _thread_ended, weakref.ref(self), connection)
        with self._lock:
            self._connections.append(connection)
        return connection

    def _routed(self, op: Execute | Atomically | Transaction, pinned: Node | None,
                cursor: Any) -> tuple[Node | None, Node | None]:
        """Citus: `Routes.route` for `op`, the placement read on `cursor` (the coordinator's) first when stale."""
        routes, now = self._routes, time.monotonic()
        assert routes is not None
        if pinned is None and op.session is not None and routes.stale(now):
            try:
                cursor.execute(PLACEMENT_SQL)
                routes.load(cursor.fetchall(), now)
            except self._dbapi.ProgrammingError:  # no placement to read (no right to Citus's tables): the coordinator
                routes.load((), now)
        return routes.route(op.session, type(op) is Transaction, pinned, now)

    def _node_connection(self, node: Node) -> Any | None:
        """Citus: this thread's connection to `node`; None (and the node left alone for a while)
        when it cannot be reached from here: the coordinator forwards, as it would anyway."""
        assert self._routes is not None
        nodes = self._local.__dict__.setdefault("nodes", {})
        if node not in nodes:
            with self._lock:
                engine = self._node_engines.get(node)
                if engine is None:
                    engine = self._node_engines[node] = engines.make_engine(
                        node.url(self.engine.url).render_as_string(hide_password=False), echo=self.engine.echo)
            try:
                nodes[node] = self._open(engine)
            except Exception:
                self._routes.failed(node, time.monotonic())
                return None
        return nodes[node]

    def _run(self, make: Callable[..., Program[T]], *args: Any, **kwargs: Any) -> T:
        """Run the repository program `make(*args, **kwargs)` (see `repository.ops`); a lost
        connection is replaced and the call tried again with a fresh program (`repository.faults`)."""
        return retrying(lambda attempts: self._attempt(make(*args, **kwargs), attempts),
                        Attempts(self.retry, self._dbapi, self._where))

    def _attempt(self, program: Program[T], attempts: Attempts) -> T:
        """One try of a call, on this thread's connection."""
        def summarize(op: Summarize) -> list[str | Exception]:
            key = attempts.summary_key(op)
            if key not in attempts.summaries:
                attempts.summaries[key] = answer(op.batch, op.summarizer)
            return attempts.summaries[key]

        return cast(T, self.step(Run(program, self._dbapi), summarize)[1])

    def step(self, run: Run, summarize: Callable[[Summarize], list[Any]] | None = None) -> tuple[bool, Any]:
        """Run a program on this thread's connection (`drive.step_through`): to its end, or with no
        `summarize` to its next summary request. `AsyncSessionStore` runs SQLite programs this way
        on its worker threads, one hop per program."""
        connection = self._connection()
        cursor = connection.cursor()
        begin = self._repo.sql.begin

        pinned: list[tuple[Node, Any]] = []  # the node a transaction was begun on, and its connection
        from_node: list[BaseException] = []  # errors of statements run on a node (`_on_node` dropped that one)

        def execute(op: Execute | Atomically | Transaction) -> list[Any]:
            if self._routes is None:
                return _run_op(cursor, op, begin)
            node, pin = self._routed(op, pinned[0][0] if pinned else None, cursor)
            if pinned:  # the transaction's connection, even one that broke: its end fails there, not elsewhere
                held = pinned[0][1]
                if pin is None:
                    pinned.clear()
            else:
                held = self._node_connection(node) if node is not None else None
                if held is not None and pin is not None:
                    pinned.append((pin, held))
            if node is None or held is None:
                return _run_op(cursor, op, begin)
            try:
                return self._on_node(node, held, op, begin)
            except BaseException as exc:
                from_node.append(exc)
                raise

        try:
            return step_through(run, execute, summarize)
        except self._broken as exc:
            if not connection_kept(exc, self._dbapi) and not any(exc is e for e in from_node):
                with suppress(Exception):
                    cursor.close()
                self._discard(connection)  # a broken connection is not reused
            raise
        finally:
            with suppress(Exception):  # closed already when the connection was discarded
                cursor.close()

    def _on_node(self, node: Node, connection: Any, op: Execute | Atomically | Transaction, begin: str) -> list[Any]:
        """Run `op` on a node's connection. One that breaks is dropped, and the node left alone for
        a while: the call's retry goes to the coordinator (`repository.faults`)."""
        cursor = connection.cursor()
        try:
            return _run_op(cursor, op, begin)
        except self._broken as exc:
            if not connection_kept(exc, self._dbapi):
                self._local.nodes.pop(node, None)
                self._forget(connection)
                assert self._routes is not None
                self._routes.failed(node, time.monotonic())
            raise
        finally:
            with suppress(Exception):
                cursor.close()

    def _discard(self, connection: Any) -> None:
        self._local.connection = None
        self._forget(connection)

    def _forget(self, connection: Any) -> None:
        with self._lock:
            if connection in self._connections:
                self._connections.remove(connection)
        connection.invalidate()

    def _pages(self, page: Callable[[Any], Program[Any]], start: Any, key: Callable[[Any], Any] | None,
               limit: int | None = None) -> Iterator[Any]:
        pages = Pages(start, key, limit)
        while not pages.done:
            yield from pages.take(self._run(page, pages.after))

    # ------------------------------------------------------------------ sessions

    def create_session(self, session_id: str | None = None, metadata: Mapping[str, Any] | None = None,
                       events: Iterable[NewEvent] | None = None, *, strict: bool = True) -> str:
        """Create an empty session (version 0) and return its id (a uuid4 hex unless given).

        With `events`, the session is created holding them (versions 1…n) in one transaction:
        nobody ever sees it empty, and an import interrupted at any point leaves no empty
        session behind. `strict` is `append`'s.
        """
        return self._run(self._repo.create_session, session_id, metadata, once(events), strict=strict,
                         fresh_id=new_event_id())  # one id for every try of this call

    def ensure_session(self, session_id: str, metadata: Mapping[str, Any] | None = None) -> bool:
        """Create `session_id` unless it exists; True when it was created (importers re-run safely)."""
        return self._run(self._repo.ensure_session, session_id, metadata)

    def update_metadata(self, session_id: str, changes: Mapping[str, Any]) -> dict[str, Any]:
        """Merge `changes` into the session's metadata (their keys replaced, the others kept) and
        return the metadata now; `SessionErased` for an erased session."""
        return self._run(self._repo.update_metadata, session_id, changes)

    def session(self, session_id: str) -> SessionInfo:
        return self._run(self._repo.session, session_id)

    def sessions(self, *, where: Mapping[str, Any] | None = None, since: datetime | str | None = None,
                 until: datetime | str | None = None, agent: str | None = None, project: str | None = None,
                 limit: int | None = None, after: str | None = None) -> SessionPage:
        """The sessions whose metadata has `where`'s values (``{"user": "ann"}``; nested keys as
        ``{"adk.user_id": "u1"}`` or nested mappings), of an `agent` (metadata ``source`` or
        ``integration``) or `project` (``project``, else ``cwd``), started at or after `since`
        and last active at or before `until` (datetimes, ISO text, or ages such as ``"7d"``),
        newest first (by their start). With `limit`, a page: its `cursor`, passed as `after`,
        gives the next one (None at the end); a walk returns each session once, whatever is
        created meanwhile. Without any argument, every session. Bad input is `InvalidQuery`.
        The rules are `sessionstore.finding`'s; the indexes behind them `storage/listing.py`'s."""
        return self._run(self._repo.sessions, where=where, since=since, until=until, agent=agent, project=project,
                         limit=limit, after=after)

    def version(self, session_id: str) -> int:
        """The session's head: the version of its last event, 0 when it has none."""
        return self._run(self._repo.version, session_id)

    def fork(self, session_id: str, at: int | None = None, *, new_session_id: str | None = None,
             metadata: Mapping[str, Any] | None = None) -> str:
        """A new session whose history is `session_id`'s up to version `at` (default: its head).

        Nothing is copied: the child reads the parent's events up to `at` and appends its own
        from `at + 1` on. Use it to rewind before a compaction, or to branch an experiment.
        """
        return self._run(self._repo.fork, session_id, at, new_session_id=new_session_id, metadata=metadata)

    # ------------------------------------------------------------------ reading

    def events(self, session_id: str, after: int = 0, upto: int | None = None,
               kinds: Iterable[str] | None = None) -> Iterator[StoredEvent]:
        """The session's events with version in (after, upto], in version order, streamed page by
        page (memory stays constant however long the session is). `kinds` restricts to some kinds."""
        self._run(self._repo.lineage, session_id)  # an unknown session fails here, not at the first next()
        wanted = list(kinds) if kinds is not None else None
        return self._pages(lambda a: self._repo.events_page(session_id, a, upto, wanted, PAGE), after,
                           lambda e: e.version)

    def transcript(self, session_id: str) -> list[StoredEvent]:
        """Every event of the session, nothing pruned or summarised: the recoverable history."""
        return self._run(self._repo.transcript, session_id)

    def latest_events(self, session_ids: Iterable[str], kind: str) -> dict[str, StoredEvent]:
        """The last event of `kind` of each of `session_ids` that has one (absent: none, or no such session),
        in one query: the latest state an application keeps in an event, for a whole listing."""
        return self._run(self._repo.latest_events, once(session_ids), kind)

    def read_all(self, after_position: int | str = 0, limit: int | None = None) -> Iterator[StoredEvent]:
        """Every event of every session in the global feed's order, for catch-up readers.

        Resume with the position of the last event you saw: the feed never returns an event
        before one it has returned already (on PostgreSQL it waits for transactions still
        running below it instead; see `Repository.feed_page`, in `repository.reading`). On a
        Citus cluster a position cannot say where every node stands: resume from a `feed()`
        page's cursor (accepted here too; it is the position itself elsewhere).
        """
        return self._pages(lambda a: self._repo.feed_page(a, PAGE), after_position, None, limit)

    def feed(self, after: int | str = 0, limit: int = PAGE) -> FeedPage:
        """One page of the global feed after the cursor `after` (0: the start), and the cursor to
        resume from (`page.cursor`: a position, or an opaque string on Citus): for a reader that
        stores where it stands."""
        return self._run(self._repo.feed_page, after, limit)

    # ------------------------------------------------------------------ appending

    def append(self, session_id: str, events: NewEvent | Iterable[NewEvent | Iterable[NewEvent]],
               expected_version: int | None = None, *, strict: bool = True) -> AppendResult:
        """Append a batch of events atomically, after version `expected_version` if given.

        Raises `ConcurrencyError` when the head is not `expected_version` (nothing written),
        `InvalidEvent` for a bad event (nothing written), `SessionNotFound`. Re-appending a
        batch whose event ids are already stored returns the original result.

        `strict` (the default, for agents) also rejects a tool result whose call is unknown,
        markers that point at the future, and a compaction whose first kept version moves
        backwards. Importers pass ``strict=False``: recorded history may hold orphans, and the
        projection repairs the view instead.
        """
        return self._run(self._repo.append, session_id, once(events), expected_version, strict=strict)

    def retract(self, session_id: str, versions: Sequence[int], *, reason: str,
                expected_version: int | None = None) -> AppendResult:
        """Take events out of the view (a `drop` prune); the transcript keeps them."""
        return self._run(self._repo.retract, session_id, versions, reason=reason, expected_version=expected_version)

    def reset(self, session_id: str, *, reason: str, expected_version: int | None = None) -> AppendResult:
        """Start the view afresh (nothing before this point is in it); the transcript keeps everything."""
        return self._run(self._repo.reset, session_id, reason=reason, expected_version=expected_version)

    def record_provider_compaction(self, session_id: str, provider: str, items: Sequence[Mapping[str, Any]], *,
                                   first_kept_version: int | None = None, summarizer: str = "external",
                                   trigger: str = "auto", expected_version: int | None = None,
                                   reason: str | None = None) -> AppendResult:
        """Record a provider's compaction made outside the store (a framework that replaced its
        history with ``responses.compact``'s window): one compaction event carrying `items` verbatim,
        which stand for everything before `first_kept_version` (default: all of the view). The next
        view starts from them; the transcript keeps everything."""
        return self._run(self._repo.record_provider_compaction, session_id,
                         {"provider": provider, "items": [dict(i) for i in items]},
                         first_kept_version=first_kept_version, summarizer=summarizer, trigger=trigger,
                         expected_version=expected_version, reason=reason)

    # ------------------------------------------------------------------ the context view

    def follow(self, session_id: str, fold: Fold[S]) -> S:
        """Your own view of the session, kept by the store and brought up to date like `context()`:
        after the first call only the events since are read and folded (`repository.views.Fold`:
        `start()`, a pure `step(view, events)`). What the framework sessions read on every turn."""
        return cast(S, self._run(self._repo.follow, session_id, fold))

    def context(self, session_id: str, at: int | None = None) -> ContextView:
        """The context to send to the model: system prompt, summary, kept tail, markers applied.

        `at` rebuilds the view as it was at that version (time travel). Only the latest
        compaction, the events from its first kept version on, and the few events it names
        are read, so the cost follows the size of the view, not of the history.
        """
        return self._run(self._repo.context, session_id, at)

    # ------------------------------------------------------------------ compaction

    def compact(self, session_id: str, policy: CompactionPolicy | None = None, summarizer: Summarizer | None = None,
                instructions: str | None = None, *, trigger: str = "manual", dry_run: bool = False
                ) -> CompactionResult | None:
        """Prune, rewrite and summarise the session's current view; append the decisions as events.

        Returns None when there is nothing to do. The transcript is never changed: the new
        events only change what `context()` shows.
        """
        return self._run(self._repo.compact, session_id, policy, summarizer, instructions, trigger=trigger,
                         dry_run=dry_run)

    def maybe_compact(self, session_id: str, policy: CompactionPolicy | None = None,
                      summarizer: Summarizer | None = None) -> CompactionResult | None:
        """Compact only when the view is past the policy's threshold (call it before each model call)."""
        return self._run(self._repo.maybe_compact, session_id, policy, summarizer)

    # ------------------------------------------------------------------ audit
    def verify(self, session_ids: Iterable[str] | None = None) -> list[VerifyReport]:
        """Check each session's hash chain (default: every session): one report per session,
        naming its first bad version when an event was edited, deleted, inserted or reordered."""
        return self._run(self._repo.verify, session_ids)

    def conversation(self, session_id: str) -> Conversation:
        """What `erase` reaches: the session, the sessions that are part of it (imported subagents,
        the agent's own summariser), and the forks it leaves (see `Conversation`)."""
        return self._run(self._repo.conversation, session_id)

    def erase(self, session_id: str, reason: str, *, only_this: bool = False, vacuum: bool = False) -> SessionInfo:
        """Destroy the content of a conversation's events and metadata — the session and every
        session that is part of it, or with `only_this` the session alone — leaving tombstones
        that keep the chain verifiable; an erased session takes no events (`SessionErased`). On
        SQLite no copy is left in the file (it is vacuumed: this rewrites the whole file); on
        PostgreSQL `vacuum=True` rewrites the tables without the old row versions (VACUUM FULL)."""
        return self._run(self._repo.erase, session_id, reason, only_this=only_this, vacuum=vacuum)

    def retain(self, policy: RetentionPolicy, *, vacuum: bool = False) -> RetentionReport:
        """Erase the sessions past `policy` (an age, a metadata selection, the newest N kept), each
        whole with its parts as `erase` erases it, and give their space back; with
        ``policy.dry_run``, erase nothing and list exactly what would go. A session appended to
        while the run goes is kept (it is no longer old). See `sessionstore.retention`."""
        return self._run(self._repo.retain, policy, vacuum=vacuum)

    # ------------------------------------------------------------------ statistics

    def stats(self, session_id: str) -> SessionStats:
        """Tokens of the whole transcript against the view, per kind; compactions, prunes, rewrites."""
        return self._run(self._repo.stats, session_id)

    def count_tokens(self, session_id: str | None = None) -> int:
        """Write the token counts of the events stored uncounted (every session's, or one's);
        returns how many it counted.

        Appends do not count tokens (that costs more than storing the event): an event read
        before this ran is counted as it is read, and the figures summed in the database
        (`token_totals`, `transcript_tokens`) and `erase` run this first, so every figure is
        exact either way. Call it from a background task (or after an import) to take that work
        off the first read."""
        return self._run(self._repo.count_tokens, session_id)

    def token_totals(self) -> dict[str, int]:
        """Tokens stored per session (its own events, not those inherited from a fork parent)."""
        return self._run(self._repo.token_totals)

    def transcript_tokens(self, session_ids: Iterable[str] | None = None) -> dict[str, int]:
        """Each session's token figure (`sessionstore.tokens.transcript_tokens`), computed in the
        database. A fork counts the history it inherits from its parent up to its fork version."""
        return self._run(self._repo.transcript_tokens, session_ids)

    def usage(self, *, by: UsageGroup = "day", since: date | datetime | None = None,
              until: date | datetime | None = None, session_ids: Iterable[str] | None = None,
              prices: PriceTable | str | os.PathLike[str] | Mapping[str, Any] | None = None,
              timezone: tzinfo | str | None = None) -> list[UsageRow]:
        """What the recorded requests used and cost, one `UsageRow` per day (YYYY-MM-DD in
        `timezone`, default the local zone), session, model or project (`by`).

        Read from the provider usage importers keep on assistant events, each request counted
        once as its message and request ids say (`sessionstore.accounting`), priced with the dated
        table shipped with the package, or `prices` (a `PriceTable`, a JSON file's path, or its
        JSON) or ``$SESSIONSTORE_PRICES`` laid over it (`sessionstore.pricing`). `since` and
        `until` are dates (whole days, both included) or datetimes; `session_ids` limits the
        report to those sessions. A bad argument raises `InvalidUsageQuery`."""
        return self._run(self._repo.usage, by, since, until, session_ids, prices=price_table(prices), zone=timezone)

    # ------------------------------------------------------------------ finding and listing

    def find_sessions(self, prefix: str, *, limit: int | None = None) -> list[str]:
        """The ids that start with `prefix` (taken literally: ``%`` and ``_`` are no wildcards), sorted."""
        return self._run(self._repo.find_sessions, prefix, limit=limit)

    def first_event_times(self) -> dict[str, datetime]:
        """When each session's own first event happened (for imported events: the source's timestamp)."""
        return self._run(self._repo.first_event_times)

    def first_message(self, session_id: str, role: str = "user") -> StoredEvent | None:
        """The first message of `role` in the session's history (a fork's inherited history included)."""
        return self._run(self._repo.first_message, session_id, role)

    # ------------------------------------------------------------------ search

    def index_search(self) -> int:
        """Bring the search index up to the latest event; returns how many events it took.

        Appends do not index (that would slow every one of them): `search` brings the index up
        to date first, so its results are always exact. Call this from a background task (or
        after an import) to take that work off the first search."""
        return self._run(self._repo.index_feed)

    def search(self, query: str, session_id: str | Sequence[str] | None = None, *, kind: str | None = None,
               tool: str | None = None, limit: int = SEARCH_LIMIT, meta: bool = True) -> list[SearchHit]:
        """Events whose text — message text, a tool call's name and input, a tool result's output —
        matches `query`, best first, each with a highlighted snippet.

        The query language (words, ``"a phrase"``, ``prefix*``, ``OR``, ``-excluded``) and what is
        searched are in `sessionstore.search`. `session_id` searches that session's history (a
        fork's inherited events included) — several ids, their histories together (each event
        once) —, `kind` one kind, `tool` one tool's calls and results. With ``meta=False`` each
        hit's event comes without its meta (an empty mapping): what a list of hits shows does not
        need what importers kept beside each event, which is most of what a search reads on
        PostgreSQL. A query that cannot be run raises `InvalidSearch`.
        """
        return self._run(self._repo.search, query, session_id, kind, tool, limit, meta)


def _run_op(cursor: Any, op: Execute | Atomically | Transaction, begin: str) -> list[Any]:
    """A statement's rows (empty for none), a transaction's step, or the last rows of statements
    run in a transaction of their own (`Atomically`), on a DB-API cursor."""
    if type(op) is Execute:
        cursor.execute(op.statement.sql, op.statement.params(op.params))
        return cursor.fetchall() if cursor.description is not None else []
    if type(op) is Atomically:
        cursor.execute(begin)
        try:
            for statement, params in op.steps:
                cursor.execute(statement.sql, statement.params(params))
            rows = cursor.fetchall() if cursor.description is not None else []
            cursor.execute("COMMIT")
        except BaseException:
            with suppress(Exception):  # the error on its way is what the program must see
                cursor.execute("ROLLBACK")
            raise
        return rows
    cursor.execute(begin if op.action == "begin" else op.action.upper())
    return []


class _ThreadEnd:
    """Held in a thread's locals only: collected when the thread ends."""


def _thread_ended(store_ref: weakref.ref[SessionStore], connection: Any) -> None:
    """Give the connection of a thread that ended back to the pool (unless closed or discarded since)."""
    store = store_ref()
    if store is None:
        return
    with store._lock:
        if connection not in store._connections:
            return
        store._connections.remove(connection)
    _release(connection, store.backend)


def _release(connection: Any, backend: str) -> None:
    """Give a connection back to the pool as SQLAlchemy handed it out."""
    try:
        if backend == "postgresql":
            connection.driver_connection.autocommit = False
        connection.close()
    except Exception:  # a connection that broke is dropped by the pool
        pass
