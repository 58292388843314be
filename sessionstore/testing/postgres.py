"""A throwaway PostgreSQL cluster for tests and benchmarks.

`initdb` refuses to run as root, and CI runs as root: then the cluster is created and run as
the unprivileged `postgres` user (through `runuser`), in a temporary folder it owns, on a
free loopback port. Every failure raises `PostgresUnavailable` with the server's own log, so
a test suite that needs PostgreSQL fails loudly instead of skipping.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path
from types import TracebackType

DEFAULT_USER = "postgres"


class PostgresUnavailable(RuntimeError):
    """The throwaway cluster could not be created or started."""


def _binary(name: str) -> str:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"), reverse=True)
    if candidates:
        return candidates[0]
    raise PostgresUnavailable(f"{name} not found on PATH or in /usr/lib/postgresql/*/bin: install PostgreSQL")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresCluster:
    """``with PostgresCluster() as pg: store = SessionStore(pg.create_database("x"))``.

    `durable=False` (tests) turns off fsync and synchronous commit: the data is thrown away
    anyway. Benchmarks keep PostgreSQL's default durability (`durable=True`). `settings` are
    more server options (`shared_preload_libraries`, for Citus).
    """

    def __init__(self, *, durable: bool = False, os_user: str = DEFAULT_USER,
                 settings: dict[str, str] | None = None) -> None:
        self.durable = durable
        self.settings = dict(settings or {})
        self.os_user = os_user if os.geteuid() == 0 else None
        self.port = 0
        self.root: Path | None = None
        self._started = False

    @property
    def data_dir(self) -> Path:
        assert self.root is not None
        return self.root / "data"

    @property
    def log_file(self) -> Path:
        assert self.root is not None
        return self.root / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        command = list(args)
        if self.os_user is not None:
            command = ["runuser", "-u", self.os_user, "--", *command]
        return subprocess.run(command, capture_output=True, text=True, check=False)

    def start(self) -> PostgresCluster:
        self.root = Path(tempfile.mkdtemp(prefix="sessionstore-pg-"))
        if self.os_user is not None:
            try:
                user = pwd.getpwnam(self.os_user)
            except KeyError:
                raise PostgresUnavailable(f"running as root, but there is no {self.os_user!r} user to run "
                                          "PostgreSQL as (initdb refuses root)") from None
            os.chown(self.root, user.pw_uid, user.pw_gid)
        init = self._run(_binary("initdb"), "-D", str(self.data_dir), "-U", "postgres", "--auth=trust",
                         "--encoding=UTF8", "--locale=C", "--no-instructions")
        if init.returncode != 0:
            self._cleanup()
            raise PostgresUnavailable(f"initdb failed ({init.returncode}):\n{init.stdout}\n{init.stderr}")
        options = ["-p {port}", f"-k {self.root}", "-c listen_addresses=127.0.0.1", "-c max_connections=200"]
        if not self.durable:
            options += ["-c fsync=off", "-c synchronous_commit=off", "-c full_page_writes=off"]
        options += [f"-c {name}={value}" for name, value in self.settings.items()]
        last_error = ""
        for _ in range(5):  # the free port can be taken between probing and binding: try another
            self.port = _free_port()
            started = self._run(_binary("pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_file), "-w",
                                "-t", "60", "-o", " ".join(options).format(port=self.port), "start")
            if started.returncode == 0:
                self._started = True
                return self
            last_error = f"{started.stdout}\n{started.stderr}\n{self._server_log()}"
        self._cleanup()
        raise PostgresUnavailable(f"pg_ctl start failed:\n{last_error}")

    def _server_log(self) -> str:
        try:
            return self.log_file.read_text(errors="replace")[-4000:]
        except OSError:
            return ""

    def create_database(self, name: str, template: str | None = None) -> str:
        """Create an empty database (a copy of `template` if given) and return its SQLAlchemy URL."""
        self.execute(f'DROP DATABASE IF EXISTS "{name}"')
        self.execute(f'CREATE DATABASE "{name}"' + (f' TEMPLATE "{template}"' if template else ""))
        return self.url(name)

    def execute(self, sql: str, database: str = "postgres") -> list[tuple[object, ...]]:
        """Run one statement as the superuser, outside a transaction; its rows, if any."""
        import psycopg

        with psycopg.connect(host="127.0.0.1", port=self.port, user="postgres", dbname=database,
                             autocommit=True) as conn:
            cursor = conn.execute(sql)  # type: ignore[arg-type]
            return list(cursor.fetchall()) if cursor.description else []

    def restart(self) -> None:
        """Restart the server (fast shutdown: open connections are terminated), same port."""
        restarted = self._run(_binary("pg_ctl"), "-D", str(self.data_dir), "-l", str(self.log_file), "-m", "fast",
                              "-w", "-t", "60", "restart")
        if restarted.returncode != 0:
            raise PostgresUnavailable(f"pg_ctl restart failed:\n{restarted.stdout}\n{restarted.stderr}\n"
                                      f"{self._server_log()}")

    def stop(self) -> None:
        if self._started:
            # A throwaway cluster's data is deleted next: no shutdown checkpoint to write first.
            mode = "fast" if self.durable else "immediate"
            self._run(_binary("pg_ctl"), "-D", str(self.data_dir), "-m", mode, "-w", "stop")
            self._started = False
        if not self.durable and self.root is not None:
            # A suite's cluster holds hundreds of databases (seconds to delete): they go while
            # the next thing runs.
            subprocess.Popen(["rm", "-rf", str(self.root)], start_new_session=True,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            self.root = None
        self._cleanup()

    def _cleanup(self) -> None:
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def __enter__(self) -> PostgresCluster:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
