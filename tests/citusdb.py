"""Databases on the suite's Citus cluster, cheap enough to give every test its own.

A Citus database costs seconds to make (the extension on every node, the nodes registered, the
migrations, the tables distributed) and about a second to copy from a template (every node copies
its own part: the extension's catalog is large). So a test's migrated database is, when one is
free, one that an earlier test of this process used and that was emptied again: every table
truncated and the rows the migrations wrote (the search index's place, the revision) put back,
a tenth of a second. A database whose schema the test changed (not only rows), or that cannot
be emptied (a lock left behind), is dropped instead; an unmigrated database is always a fresh
copy (its test migrates it).
"""

from __future__ import annotations

import itertools
from typing import Any

import psycopg
from psycopg import sql

from sessionstore import SessionStore
from sessionstore.testing import CitusCluster

# Everything of the schema a test could change besides rows, in one digest (the coordinator's catalog).
_SCHEMA = """
SELECT md5(coalesce(string_agg(item, ',' ORDER BY item), '')) FROM (
  SELECT c.relname || '.' || a.attname || ' ' || format_type(a.atttypid, a.atttypmod) AS item
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
   WHERE n.nspname = 'public' AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT 'index ' || indexdef FROM pg_indexes WHERE schemaname = 'public'
  UNION ALL SELECT 'trigger ' || tgname FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL SELECT 'function ' || p.oid::regprocedure::text
    FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'
  UNION ALL SELECT 'distributed ' || logicalrelid::text || ' ' || colocationid FROM pg_dist_partition
) AS schema"""


class CitusDatabases:
    """``take()`` a database for a test, ``give_back(name)`` when it is over."""

    def __init__(self, cluster: CitusCluster) -> None:
        self.cluster = cluster
        self._numbers = itertools.count()
        self._free: list[str] = []
        self._empty = "citus_template_empty"  # the extension created, the nodes registered
        cluster.create_database(self._empty)
        self._migrated = "citus_template"  # and migrated: the tables distributed
        store = SessionStore(cluster.create_database(self._migrated, template=self._empty))
        store.migrate()
        store.close()
        with self._connect(self._migrated) as conn:
            self._schema = conn.execute(_SCHEMA).fetchone()
            tables = [row[0] for row in conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' "
                                                     "ORDER BY tablename")]
            self._rows = {table: conn.execute(sql.SQL("SELECT * FROM {}").format(sql.Identifier(table))).fetchall()
                          for table in tables}

    def _connect(self, database: str) -> psycopg.Connection[Any]:
        return psycopg.connect(host="127.0.0.1", port=self.cluster.port, user="postgres", dbname=database)

    def take(self, *, migrated: bool = True) -> str:
        """The name of an empty database: migrated (as `SessionStore.migrate` leaves it) or not."""
        if migrated and self._free:
            return self._free.pop()
        name = f"c{next(self._numbers)}"
        self.cluster.create_database(name, template=self._migrated if migrated else self._empty)
        return name

    def give_back(self, name: str, *, migrated: bool = True) -> None:
        if migrated and self._emptied(name):
            self._free.append(name)
        else:
            self.cluster.drop_database(name)

    def _emptied(self, name: str) -> bool:
        """Is `name` as the migrated template again (only rows changed, and they are reset)?"""
        try:
            with self._connect(name) as conn:
                conn.execute("SET LOCAL lock_timeout = '5s'")
                if conn.execute(_SCHEMA).fetchone() != self._schema:
                    return False
                conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(map(sql.Identifier, self._rows))))
                for table, rows in self._rows.items():
                    if rows:
                        marks = sql.SQL(", ").join(sql.Placeholder() * len(rows[0]))
                        conn.cursor().executemany(
                            sql.SQL("INSERT INTO {} VALUES ({})").format(sql.Identifier(table), marks), rows)
            return True
        except psycopg.Error:
            return False
