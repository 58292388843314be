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


class CitusCluster:
    """``with CitusCluster() as citus: store = SessionStore(citus.create_database("x"))``.

    Every node is a plain PostgreSQL server; the coordinator reaches the workers over TCP on
    127.0.0.1 as the `postgres` superuser (trust authentication: a throwaway cluster).
    """

    def __init__(self, *, workers: int = 2, durable: bool = False) -> None:
        self.durable = durable
        self.coordinator = PostgresCluster(durable=durable, settings=CITUS_SETTINGS)
        self.workers = [PostgresCluster(durable=durable, settings=CITUS_SETTINGS) for _ in range(workers)]
        self.databases: list[str] = []

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
            for node in (self.coordinator, *self.workers):
                node.start()
        except BaseException:
            self.stop()
            raise
        return self

    def create_database(self, name: str) -> str:
        """A new database on every node with the extension, its nodes registered; the coordinator's URL."""
        for node in (self.coordinator, *self.workers):
            node.create_database(name)
            node.execute("CREATE EXTENSION citus", name)
        self.coordinator.execute(f"SELECT citus_set_coordinator_host('127.0.0.1', {self.coordinator.port})", name)
        for worker in self.workers:
            self.coordinator.execute(f"SELECT citus_add_node('127.0.0.1', {worker.port})", name)
        self.databases.append(name)
        return self.url(name)

    def add_worker(self) -> PostgresCluster:
        """Start one more worker and register it in every database made so far (no shards move
        until a rebalance: `citus_rebalance_start()`)."""
        worker = PostgresCluster(durable=self.durable, settings=CITUS_SETTINGS).start()
        self.workers.append(worker)
        for name in self.databases:
            worker.create_database(name)
            worker.execute("CREATE EXTENSION citus", name)
            self.coordinator.execute(f"SELECT citus_add_node('127.0.0.1', {worker.port})", name)
        return worker

    def execute(self, sql: str, database: str = "postgres") -> list[tuple[object, ...]]:
        """One statement on the coordinator."""
        return self.coordinator.execute(sql, database)

    def stop(self) -> None:
        for node in (*self.workers, self.coordinator):
            node.stop()

    def __enter__(self) -> CitusCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
