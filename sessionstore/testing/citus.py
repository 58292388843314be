"""A throwaway Citus cluster (distributed PostgreSQL) for tests and benchmarks.

A coordinator and `workers` workers, each a `PostgresCluster` started with
``shared_preload_libraries = 'citus'`` on its own free loopback port (as the unprivileged
`postgres` user when run as root). Citus keeps its node list per database, so
`create_database` creates the database on every node, runs ``CREATE EXTENSION citus`` in each,
and registers the coordinator and the workers in the coordinator's copy; the URL it returns is
the coordinator's, the only node an application talks to.

`citus_installed()` says whether the extension is installed for the PostgreSQL on the PATH
(`../shared/citus/install` builds it): the suite runs its Citus tests when it is, and reports
them as skipped, with that reason, when it is not.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType

from .postgres import PostgresCluster, PostgresUnavailable, _binary

CITUS_SETTINGS = {"shared_preload_libraries": "citus", "max_prepared_transactions": "100",
                  # a throwaway cluster: the workers' connections back to each other stay few
                  "citus.max_shared_pool_size": "100"}


def citus_installed() -> bool:
    """Is `citus.so` in the library folder of the PostgreSQL whose `pg_config` is found?"""
    try:
        pkglibdir = subprocess.run([_binary("pg_config"), "--pkglibdir"], capture_output=True, text=True,
                                   check=True).stdout.strip()
    except (PostgresUnavailable, subprocess.CalledProcessError, OSError):
        return False
    return (Path(pkglibdir) / "citus.so").is_file()


def _on_every(nodes: Iterable[PostgresCluster], action: Callable[[PostgresCluster], object]) -> None:
    """`action` on every node at once (threads: each waits on its own server); the first error raised."""
    with ThreadPoolExecutor() as pool:
        for done in [pool.submit(action, node) for node in nodes]:
            done.result()


def _with_citus(node: PostgresCluster, name: str) -> None:
    """A new database `name` on `node`, with the extension in it."""
    node.create_database(name)
    node.execute("CREATE EXTENSION citus", name)


class CitusCluster:
    """``with CitusCluster() as citus: store = SessionStore(citus.create_database("x"))``.

    Every node is a plain PostgreSQL server; the coordinator reaches the workers over TCP on
    127.0.0.1 as the `postgres` superuser (trust authentication: a throwaway cluster).
    """

    def __init__(self, *, workers: int = 2, durable: bool = False, settings: dict[str, str] | None = None) -> None:
        """`settings`: more server options for every node (``wal_level = logical`` for online shard moves)."""
        self.durable = durable
        self.settings = {**CITUS_SETTINGS, **(settings or {})}
        self.coordinator = PostgresCluster(durable=durable, settings=self.settings)
        self.workers = [PostgresCluster(durable=durable, settings=self.settings) for _ in range(workers)]
        self.databases: list[str] = []
        self.templates: set[str] = set()  # copied from, closed to connections

    @property
    def port(self) -> int:
        return self.coordinator.port

    def url(self, database: str = "postgres") -> str:
        return self.coordinator.url(database)

    def start(self) -> CitusCluster:
        if not citus_installed():
            raise PostgresUnavailable("the citus extension is not installed for this PostgreSQL "
                                      "(../shared/citus/install builds it)")
        try:
            _on_every(self.nodes, lambda node: node.start())  # side by side: initdb and start take seconds each
        except BaseException:
            self.stop()
            raise
        return self

    @property
    def nodes(self) -> tuple[PostgresCluster, ...]:
        return (self.coordinator, *self.workers)

    def create_database(self, name: str, template: str | None = None) -> str:
        """A new database on every node with the extension, its nodes registered; the coordinator's URL.

        With `template` (a database made here before), every node copies its own part of it
        instead: the coordinator's metadata (nodes, distributed tables, shard placements) and each
        worker's shards stay consistent, because every node copies the same moment of the same
        database. A copy costs a fraction of a second; a new database several (the extension is
        created on every node). The template is closed to connections for good (Citus keeps a
        maintenance daemon and cached connections in every database, and PostgreSQL copies only
        a database nobody is connected to): it is there to be copied, not used.
        """
        if template is not None:
            if template not in self.templates:
                self._close(template)
                self.templates.add(template)
            _on_every(self.nodes, lambda node: node.create_database(name, template=template))
        else:
            _on_every(self.nodes, lambda node: _with_citus(node, name))
            self.coordinator.execute(f"SELECT citus_set_coordinator_host('127.0.0.1', {self.coordinator.port})", name)
            for worker in self.workers:
                self._register(worker, name)
        self.databases.append(name)
        return self.url(name)

    def _close(self, name: str) -> None:
        """No connection to `name` on any node, and none allowed any more."""
        for node in self.nodes:
            node.execute(f'ALTER DATABASE "{name}" WITH ALLOW_CONNECTIONS false')
            node.execute(f"SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{name}'")

    def drop_database(self, name: str) -> None:
        """Drop `name` on every node (its open connections are ended): a test's database is gone
        with its maintenance daemons and connections, so that many tests in a row never exhaust
        the nodes' connections or background workers."""
        import psycopg

        for attempt in range(3):
            self._close(name)  # on every node first: the nodes' daemons connect to each other
            try:
                for node in self.nodes:
                    node.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                break
            except psycopg.errors.ObjectInUse as error:  # a maintenance daemon Citus started again
                if attempt == 2:
                    sessions = [row for node in self.nodes for row in node.execute(
                        "SELECT backend_type, application_name FROM pg_stat_activity "
                        f"WHERE datname = '{name}'")]
                    raise PostgresUnavailable(f"cannot drop {name}: {error}; still there: {sessions}") from error
        if name in self.databases:
            self.databases.remove(name)

    def add_worker(self) -> PostgresCluster:
        """Start one more worker and register it in every database made so far (no shards move
        until a rebalance: `citus_rebalance_start()`)."""
        worker = PostgresCluster(durable=self.durable, settings=self.settings).start()
        self.workers.append(worker)
        for name in self.databases:
            if name in self.templates:
                continue  # closed: a later copy of it would not know the new node (a test adds one to its own cluster)
            _with_citus(worker, name)
            self._register(worker, name)
        return worker

    def _register(self, worker: PostgresCluster, name: str) -> None:
        self.coordinator.execute(f"SELECT citus_add_node('127.0.0.1', {worker.port})", name)

    def execute(self, sql: str, database: str = "postgres") -> list[tuple[object, ...]]:
        """One statement on the coordinator."""
        return self.coordinator.execute(sql, database)

    def stop(self) -> None:
        _on_every(reversed(self.nodes), lambda node: node.stop())

    def __enter__(self) -> CitusCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
