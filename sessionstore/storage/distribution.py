"""What `migrate()` runs when the database is a Citus coordinator: the tables distributed by
session, and the append as a function that runs on the node holding the session.

Migration 0005 made the schema distributable on every PostgreSQL; this step distributes it,
and only where the `citus` extension is present (plain PostgreSQL is left alone). It runs after
the migrations, in their transaction, on every `migrate()`: each step checks Citus's catalog
first, so a second run does nothing and says so. What it does:

- `sessions` by `id`; `events` and `event_search` (the search index) by `session_id`, colocated
  with `sessions`: a session's row, events and index rows share one shard, so every operation
  on one session is a single-node transaction.
- the re-index trigger of migration 0004 is dropped (erasure deletes a session's index rows).
- the global `uq_events_event_id` is dropped (Citus enforces uniqueness only within a shard);
  UNIQUE (session_id, event_id) keeps retries exact, as (event_id, session_id): an index that
  finds an id in every shard. An event id reused in another session is refused through
  `event_ids` (`REGISTRY`), distributed by event id: the append registers there the ids its
  caller chose, and every id stored before is registered; ids the store made register nothing
  (`events.claim`; `docs/scaling.md`, "Event ids across sessions").
- `sessionstore_append(...)`: the gated append (head compare-and-set, rows, chain head) as a
  PL/pgSQL function distributed by its session argument, so that Citus delegates each call to
  the node holding the session's shard: one round trip, executed there. It stamps each event
  with that node's transaction id tagged with the node's group (`txid`: group << 52 | xid), the
  key of the per-node global feed (`docs/scaling.md`, `repository/feed.py`). With it, the form an
  earlier version's process calls, and `sessionstore_stored_elsewhere` (an id in another session?).
- the search text functions of migration 0003 are created on every node, and the search
  indexer (migration 0004) gets a place in each node group's feed (`search_feed.places`).

A Citus coordinator with no worker registered keeps the shards itself (Citus allows it); the
report says so.
"""

from __future__ import annotations

from typing import Any, Final

from sqlalchemy import Connection, text

from ..errors import SchemaNotReady
from ..events import MAX_EVENT_ID, MAX_ID

# bits of `events.txid` below the node group on Citus (see `sessionstore_append`)
GROUP_SHIFT: Final = 52
# The global feed's cursor on Citus: "nodes:" then group:txid:position per group (`repository/feed.py`).
PLACES_PREFIX: Final = "nodes:"
# One statement, valid on any PostgreSQL: is this store's schema distributed (Citus)?
DISTRIBUTED_PROBE: Final = "SELECT count(*) FROM pg_proc WHERE proname = 'sessionstore_append'"
# (name, arguments) of the search functions (migrations 0003, 0012), created on every node in this order
_SEARCH_FUNCTIONS: Final = (("sessionstore_blocks_text", "json"), ("sessionstore_json_leaves", "json"),
                            ("sessionstore_search_text", "text, json"), ("sessionstore_search_words", "text"),
                            ("sessionstore_search_stats", "tsvector"))
_TABLES: Final = (("sessions", "id", None), ("events", "session_id", "sessions"),
                  ("event_search", "session_id", "sessions"))
APPEND_ARGUMENTS: Final = ("varchar, integer, integer, varchar, integer[], text[], text[], text[], text[], text[], "
                           "integer[], timestamptz[], text[], text[], text[]")
# The function's parameters up to `registered`: all an earlier version's call passes.
_EARLIER_PARAMETERS: Final = """sid varchar, known integer, last integer, last_link varchar, versions integer[],
    event_ids text[], kinds text[], call_ids text[], payloads text[], metas text[], token_counts integer[],
    times timestamptz[], content_hashes text[], links text[]"""
_RETURNS: Final = "RETURNS TABLE (stored_position bigint, stored_version integer)"
# The store-wide registry of the event ids callers chose, distributed by event id.
REGISTRY: Final = "event_ids"

# Where the session's shards are this node's own, the function writes them directly: the same
# rows, without Citus planning each statement again for a shard it has already found (0.27 ms
# of the node's CPU an append instead of 0.42). It holds the shards' metadata lock as Citus's own
# writes do, so a shard move that is finishing waits for it, and one that has finished sends it
# the other way: through the distributed tables, which Citus routes (as on the coordinator
# inside a transaction block, where Citus runs the function itself).
#
# Every commit of its rows is written to the WAL before the lock is let go, whatever
# `synchronous_commit` says: an online move takes the lock, waits until the new node has
# replayed the old one's WAL up to `pg_current_wal_lsn()` (the WAL *written* so far), then
# switches over. With `synchronous_commit = off` a commit is only queued for the WAL writer (up
# to `wal_writer_delay`, 200 ms): an append that committed just before the lock was not waited
# for, stayed on the old shard, acknowledged and lost, and the next append took its versions
# (`tests/test_citus_add_node.py` caught it). So `off` becomes `local` for the transaction (the
# commit written and flushed, no standby waited for; a stronger setting is left alone), and
# through the distributed tables Citus sends the node holding the rows the same setting, in a
# transaction block (the coordinator's locked append). Outside one (a call that waited for a
# move to finish and found the shard gone) Citus sends none: those rows commit on the new node
# as Citus's own routed writes do (`docs/scaling.md`, "Adding a node").
APPEND_FUNCTION: Final = f"""
CREATE OR REPLACE FUNCTION sessionstore_append({_EARLIER_PARAMETERS}, registered text[])
{_RETURNS} LANGUAGE plpgsql AS $$
DECLARE
  stamp bigint := ((SELECT groupid FROM pg_dist_local_group)::bigint << {GROUP_SHIFT})
                  | pg_current_xact_id()::text::bigint;
  session_shard bigint := get_shard_id_for_distribution_column('sessions', sid);
  event_shard bigint;
  own boolean;
  gated integer;
  taken integer;
  row_position bigint;
  latest timestamptz := (SELECT max(t) FROM unnest(times) AS t);  -- the session's last activity (0008)
  lazy boolean := current_setting('synchronous_commit') = 'off';
BEGIN
  IF lazy THEN
    PERFORM set_config('synchronous_commit', 'local', true);  -- until the commit (see above)
  END IF;
  PERFORM lock_shard_metadata(5, ARRAY[session_shard]);  -- ShareLock: what Citus's writes take
  own := EXISTS (SELECT 1 FROM pg_dist_placement WHERE shardid = session_shard
                 AND groupid = (SELECT groupid FROM pg_dist_local_group));
  IF own THEN
    EXECUTE format('UPDATE %s SET head = $1, head_link = $2, last_event_at = GREATEST(last_event_at, $5) '
                   'WHERE id = $3 AND head = $4 AND erased_at IS NULL',
                   shard_name('sessions'::regclass, session_shard)) USING last, last_link, sid, known, latest;
  ELSE
    IF lazy THEN  -- the node holding the session commits the rows: Citus sends it the setting too
      PERFORM set_config('citus.propagate_set_commands', 'local', true);
      SET LOCAL synchronous_commit TO local;
    END IF;
    UPDATE sessions SET head = last, head_link = last_link, last_event_at = GREATEST(last_event_at, latest)
     WHERE id = sid AND head = known AND erased_at IS NULL;
  END IF;
  GET DIAGNOSTICS gated = ROW_COUNT;
  IF gated = 0 THEN
    RETURN;  -- the gate refused: another writer got there first, or the session is erased
  END IF;
  IF cardinality(registered) > 0 THEN
    -- the ids the caller chose, each on its shard: one VALUES list, which Citus sends to each node
    -- at once (an INSERT … SELECT goes through intermediate results: ten times slower for 50
    -- ids); a conflict is raised here, as Citus would report another node's as XX000
    EXECUTE 'INSERT INTO {REGISTRY} (event_id, session_id) VALUES '
            || (SELECT string_agg(format('(%L, %L)', id, sid), ', ') FROM unnest(registered) AS id)
            || ' ON CONFLICT DO NOTHING';
    GET DIAGNOSTICS taken = ROW_COUNT;
    IF taken < cardinality(registered) THEN
      RAISE unique_violation USING MESSAGE = 'an event id of the batch is stored already ({REGISTRY})';
    END IF;
  END IF;
  IF own THEN
    event_shard := get_shard_id_for_distribution_column('events', sid);
    FOR i IN 1 .. array_length(versions, 1) LOOP
      EXECUTE format('INSERT INTO %s (position, session_id, version, event_id, kind, call_id, payload, meta, tokens, '
                     'created_at, content_hash, link, txid) VALUES (nextval(''events_position_seq''), $1, $2, $3, $4, '
                     '$5, $6::json, $7::jsonb, $8, $9, $10, $11, $12) RETURNING position',
                     shard_name('events'::regclass, event_shard))
        INTO row_position USING sid, versions[i], event_ids[i], kinds[i], call_ids[i], payloads[i], metas[i],
                                token_counts[i], times[i], content_hashes[i], links[i], stamp;
      stored_position := row_position;
      stored_version := versions[i];
      RETURN NEXT;
    END LOOP;
    RETURN;
  END IF;
  FOR i IN 1 .. array_length(versions, 1) LOOP
    INSERT INTO events (session_id, version, event_id, kind, call_id, payload, meta, tokens, created_at,
                        content_hash, link, txid)
    VALUES (sid, versions[i], event_ids[i], kinds[i], call_ids[i], payloads[i]::json, metas[i]::jsonb,
            token_counts[i], times[i], content_hashes[i], links[i], stamp)
    RETURNING position INTO row_position;
    stored_position := row_position;
    stored_version := versions[i];
    RETURN NEXT;
  END LOOP;
END
$$"""

# What a process of an earlier version calls (Citus does not delegate a function that has a
# default argument): this version's append, every id registered.
EARLIER_APPEND: Final = f"""
CREATE OR REPLACE FUNCTION sessionstore_append({_EARLIER_PARAMETERS})
{_RETURNS} LANGUAGE sql AS $$
  SELECT * FROM sessionstore_append(sid, known, last, last_link, versions, event_ids, kinds, call_ids, payloads,
                                    metas, token_counts, times, content_hashes, links, event_ids)
$$"""

# One of `ids` stored in a session other than `sid`, if any (`Statements.stored_elsewhere`). Every
# shard is asked, through its (event_id, session_id) index, over the one connection to each node
# that Citus keeps for the caller: with a pool of them opened for each call, eight writers asking
# at once waited a third of a second each.
ELSEWHERE_FUNCTION: Final = """
CREATE OR REPLACE FUNCTION sessionstore_stored_elsewhere(ids text[], sid varchar)
RETURNS TABLE (event_id varchar, session_id varchar) LANGUAGE plpgsql STABLE
SET citus.max_adaptive_executor_pool_size = 1 AS $$
BEGIN  -- PL/pgSQL: Citus plans no SQL function's query that uses its parameters
  RETURN QUERY SELECT e.event_id, e.session_id FROM events e WHERE e.event_id = ANY(ids) AND e.session_id <> sid
                LIMIT 1;
END
$$"""

_APPENDS: Final = ((APPEND_FUNCTION, APPEND_ARGUMENTS), (EARLIER_APPEND, APPEND_ARGUMENTS.rsplit(",", 1)[0]))
# The functions' bodies as the catalog keeps them (`pg_proc.prosrc`): a database whose functions
# differ (made by an earlier version) gets these.
_BODIES: Final = [definition.split("$$")[1] for definition in (APPEND_FUNCTION, EARLIER_APPEND, ELSEWHERE_FUNCTION)]


def citus_present(connection: Connection) -> bool:
    return bool(_count(connection, "SELECT count(*) FROM pg_extension WHERE extname = 'citus'"))


def distribute(connection: Connection) -> list[str]:
    """Distribute the schema if `connection` is to a Citus coordinator; what was done, one line
    each (nothing on plain PostgreSQL or SQLite, and nothing on a second run)."""
    if connection.dialect.name != "postgresql" or not citus_present(connection):
        return []
    # One connection per node for the rest of the transaction, so that the functions can be
    # created after a table was distributed in it (Citus refuses DDL after parallel work).
    connection.execute(text("SET LOCAL citus.multi_shard_modify_mode TO 'sequential'"))
    steps = (_shards_on_the_coordinator, _drop_global_event_ids, _event_id_first, _drop_reindex_trigger,
             _distribute_tables, _registry, _search_functions, _search_places, _append_functions)
    return [line for step in steps for line in step(connection)]


def _shards_on_the_coordinator(connection: Connection) -> list[str]:
    """No worker yet: Citus can keep the shards on the coordinator, once it may hold some."""
    if _distributed(connection, "sessions") or _count(connection, "SELECT count(*) FROM pg_dist_node WHERE "
                                                                  "groupid <> 0 AND isactive AND noderole = 'primary'"):
        return []
    if not _count(connection, "SELECT count(*) FROM pg_dist_node WHERE groupid = 0"):
        connection.execute(text("SELECT citus_set_coordinator_host(coalesce(host(inet_server_addr()), "
                                "'localhost'), inet_server_port())"))
    connection.execute(text("SELECT citus_set_node_property(nodename, nodeport, 'shouldhaveshards', true) "
                            "FROM pg_dist_node WHERE groupid = 0"))
    return ["no Citus worker is registered: the shards stay on the coordinator itself "
            "(add workers, then citus_rebalance_start() moves them)"]


def _drop_global_event_ids(connection: Connection) -> list[str]:
    return _change(connection, "SELECT count(*) FROM pg_constraint WHERE conname = 'uq_events_event_id'",
                   "dropped uq_events_event_id (a distributed table enforces uniqueness per session; the ids "
                   f"callers choose are registered across sessions in {REGISTRY})",
                   "ALTER TABLE events DROP CONSTRAINT uq_events_event_id")


def _event_id_first(connection: Connection) -> list[str]:
    """The same guard within a session, and an index that finds an id in every shard without its
    session: where an id the caller passes may be one the store made (`events.claim`)."""
    return _change(connection, "SELECT count(*) FROM pg_constraint WHERE conname = 'uq_events_session_id_event_id'",
                   "UNIQUE (session_id, event_id) is now (event_id, session_id): an id is found in every shard "
                   "by its index",
                   "ALTER TABLE events DROP CONSTRAINT uq_events_session_id_event_id",
                   "ALTER TABLE events ADD CONSTRAINT uq_events_event_id_session_id UNIQUE (event_id, session_id)")


def _drop_reindex_trigger(connection: Connection) -> list[str]:
    return _change(connection, "SELECT count(*) FROM pg_trigger WHERE tgname = 'events_search_reindex'",
                   "dropped the trigger events_search_reindex (Citus runs no trigger on a distributed table "
                   "by default; erasure deletes a session's index rows itself)",
                   "DROP TRIGGER events_search_reindex ON events")


def _change(connection: Connection, present: str, said: str, *statements: str) -> list[str]:
    """`statements` when `present` counts the object (a second run finds nothing to do and says nothing)."""
    if not _count(connection, present):
        return []
    for statement in statements:
        connection.execute(text(statement))
    return [said]


def _distribute_tables(connection: Connection) -> list[str]:
    """Each table by session, colocated; Citus's refusal becomes `SchemaNotReady`, naming why."""
    done = []
    for table, column, colocate in _TABLES:
        if _distributed(connection, table):
            continue
        colocation = f", colocate_with => '{colocate}'" if colocate else ""
        try:
            with connection.begin_nested():
                connection.execute(text(f"SELECT create_distributed_table('{table}', '{column}'{colocation})"))
        except Exception as exc:  # the database's own reason, named for the user
            raise SchemaNotReady(f"cannot distribute table {table!r} by {column!r} on Citus: "
                                 f"{_first_line(exc)} (the database is left at its previous revision)") from exc
        done.append(f"distributed {table} by {column}" + (f", colocated with {colocate}" if colocate else ""))
    return done


def _registry(connection: Connection) -> list[str]:
    """The event ids callers chose, each with its session, distributed by event id: the append
    registers them (`sessionstore_append`), and a second session's insert of one fails on the
    id's shard. Every id stored so far is registered."""
    if _distributed(connection, REGISTRY):
        return []
    connection.execute(text(f"CREATE TABLE {REGISTRY} (event_id varchar({MAX_EVENT_ID}) PRIMARY KEY, "
                            f"session_id varchar({MAX_ID}) NOT NULL)"))
    connection.execute(text(f"SELECT create_distributed_table('{REGISTRY}', 'event_id', colocate_with => 'none')"))
    connection.execute(text(f"INSERT INTO {REGISTRY} (event_id, session_id) SELECT event_id, session_id FROM events "
                            "ON CONFLICT DO NOTHING"))
    registered = _count(connection, f"SELECT count(*) FROM {REGISTRY}")  # (Citus counts an INSERT … SELECT's input)
    stored = _count(connection, "SELECT count(*) FROM events")
    said = [f"created {REGISTRY}, distributed by event_id: an id a caller chose is refused in a second session "
            f"({registered:,} stored ids registered)"]
    if registered < stored:
        said.append(f"{stored - registered:,} stored events repeat an id of another session's (stored before this "
                    "upgrade): each such id is registered to one of its sessions")
    return said


def _search_functions(connection: Connection) -> list[str]:
    done = []
    for name, arguments in _SEARCH_FUNCTIONS:
        if not _function_distributed(connection, f"{name}({arguments})"):
            connection.execute(text(f"SELECT create_distributed_function('{name}({arguments})')"))
            done.append(f"created {name}() on every node")
    return done


def _search_places(connection: Connection) -> list[str]:
    """The indexer's place so far is in the coordinator's transaction ids: node group 0's."""
    if _count(connection, "SELECT count(*) FROM information_schema.columns WHERE table_name = 'search_feed' "
                          "AND column_name = 'places'"):
        return []
    connection.execute(text("ALTER TABLE search_feed ADD COLUMN places text NOT NULL DEFAULT ''"))
    connection.execute(text(f"UPDATE search_feed SET places = '{PLACES_PREFIX}0:' || txid || ':' || position "
                            "WHERE id = 1"))
    return ["the search index follows each node's feed (search_feed.places)"]


def _append_functions(connection: Connection) -> list[str]:
    """This version's append and the one an earlier version's process calls, each run on the node
    holding the session, and the question `stored_elsewhere`; made, or replaced where the catalog
    holds other bodies."""
    earlier = _count(connection, "SELECT count(*) FROM pg_proc WHERE proname = 'sessionstore_append'")
    if _count(connection, "SELECT count(*) FROM pg_proc WHERE proname IN ('sessionstore_append', "
                          "'sessionstore_stored_elsewhere') AND prosrc = ANY(:b)", {"b": _BODIES}) == len(_BODIES):
        return []
    connection.execute(text(ELSEWHERE_FUNCTION))
    for definition, arguments in _APPENDS:
        connection.execute(text(definition))  # Citus replaces a distributed one on every node
        if not _function_distributed(connection, f"sessionstore_append({arguments})", by_argument=True):
            connection.execute(text(f"SELECT create_distributed_function('sessionstore_append({arguments})', "
                                    f"'sid', colocate_with => 'sessions')"))
    return ["updated sessionstore_append() to this version's" if earlier
            else "created sessionstore_append(), run on the node holding the session"]


def _count(connection: Connection, sql: str, params: dict[str, Any] | None = None) -> int:
    return int(connection.scalar(text(sql), params or {}) or 0)


def _distributed(connection: Connection, table: str) -> bool:
    return bool(_count(connection, "SELECT count(*) FROM pg_dist_partition WHERE logicalrelid = to_regclass(:t)",
                       {"t": table}))


def _function_distributed(connection: Connection, signature: str, *, by_argument: bool = False) -> bool:
    """Is the function on every node (Citus puts one made after it was loaded there too) — and,
    `by_argument`, are its calls sent to the node holding their first argument's session?"""
    delegated = " AND distribution_argument_index IS NOT NULL" if by_argument else ""
    return bool(_count(connection, "SELECT count(*) FROM pg_dist_object WHERE classid = 'pg_proc'::regclass "
                                   f"AND objid = to_regprocedure(:f){delegated}", {"f": signature}))


def _first_line(exc: BaseException) -> str:
    """The database's message, and its detail where it names the object (Citus puts it there)."""
    origin = getattr(exc, "orig", None) or exc
    message = str(origin).strip().splitlines()[0] if str(origin).strip() else type(origin).__name__
    detail = getattr(getattr(origin, "diag", None), "message_detail", None)
    return f"{message} ({detail})" if detail else message
