"""A throw-away PostgreSQL server for tests: Debian's binaries, a temporary folder, loopback only.

The server is started once per test session (``initdb`` then ``pg_ctl start``) and each test
gets a database of its own, so tests never see each other's tables. Under pytest-xdist each
worker is a test session of its own, with its own server (folder, port and databases), started
when the worker's first PostgreSQL test asks for it. ``initdb`` refuses to run
as root; as root the server runs as the ``postgres`` user the Debian package creates.

Where PostgreSQL is not installed the fixtures skip with a message saying how to install it;
with ``HOSTD_REQUIRE_POSTGRES=1`` (CI) they fail instead, so a missing install step cannot
turn the PostgreSQL suites into silent skips.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from hostd_testing.processes import free_port

INSTALL_HINT = "install Debian's PostgreSQL server: apt-get install postgresql"
REQUIRE_ENV = "HOSTD_REQUIRE_POSTGRES"


def find_bindir() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on PATH, else Debian's newest version folder."""
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(os.path.realpath(on_path)).parent
    candidates = sorted(
        Path("/usr/lib/postgresql").glob("*/bin/initdb"),
        key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit() else 0,
    )
    return candidates[-1].parent if candidates else None


class PortTakenError(RuntimeError):
    """The server could not bind its port: something else took it first."""


@dataclass
class PostgresServer:
    """One running server: where it lives, how to reach it, and how to make and drop databases."""

    bindir: Path
    folder: Path
    port: int
    user: str = "postgres"
    #: More server settings (``-c name=value`` at start), e.g. a benchmark's
    #: ``shared_preload_libraries=pg_stat_statements``.
    settings: Mapping[str, str] = field(default_factory=dict)
    _names: Iterator[int] = field(default_factory=lambda: itertools.count(1), repr=False)

    @property
    def data(self) -> Path:
        return self.folder / "data"

    def url(self, database: str = "postgres") -> str:
        """A libpq URL for ``database`` (trust auth on loopback: no password)."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def _run_as_owner(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        command = list(argv)
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)

    def start(self) -> None:
        """initdb (trust auth, UTF-8, C.UTF-8 collation) and start on 127.0.0.1:port.

        The port was free when picked, but another process (a parallel test worker starting its
        own server) may take it before the server binds it: then start again on a new port.
        """
        init = self._run_as_owner(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            self.user,
            "--auth=trust",
            "--encoding=UTF8",
            "--locale=C.UTF-8",
            "--no-sync",
        )
        if init.returncode != 0:
            raise RuntimeError(f"initdb failed ({init.returncode}): {init.stderr.strip()}")
        for attempt in range(3):
            try:
                self._start_server()
                return
            except PortTakenError:
                if attempt == 2:
                    raise
                self.port = free_port()

    def _start_server(self) -> None:
        # Durability of the test server's own disk is not under test (hostd processes are what
        # get killed), so skip fsync; connections are generous for the multi-process suites.
        options = (
            f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.folder}"
            " -c fsync=off -c full_page_writes=off -c max_connections=300 -c shared_buffers=64MB"
        )
        options += "".join(f" -c {name}={value}" for name, value in self.settings.items())
        started = self._run_as_owner(
            str(self.bindir / "pg_ctl"),
            "-D",
            str(self.data),
            "-l",
            str(self.folder / "server.log"),
            "-o",
            options,
            "-w",
            "-t",
            "60",
            "start",
        )
        if started.returncode != 0:
            log = (self.folder / "server.log").read_text(errors="replace")[-2000:]
            error = PortTakenError if "Address already in use" in log else RuntimeError
            raise error(f"pg_ctl start failed ({started.returncode}): {started.stderr.strip()}\n{log}")

    def stop(self) -> None:
        self._run_as_owner(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "stop")

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Run SQL with the server's own psql client; raises with psql's message on failure."""
        result = subprocess.run(
            [str(self.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", self.url(database)],
            input=sql,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        if result.returncode != 0:
            raise RuntimeError(f"psql failed: {result.stderr.strip()}")
        return result.stdout

    def create_database(self, prefix: str = "test") -> str:
        """A new empty database; returns its URL."""
        name = f"{prefix}_{os.getpid()}_{next(self._names)}"
        self.psql(f"CREATE DATABASE \"{name}\" TEMPLATE template0 ENCODING 'UTF8'")
        return self.url(name)


def _unavailable(reason: str) -> None:
    if os.environ.get(REQUIRE_ENV) == "1":
        pytest.fail(f"PostgreSQL is required here ({REQUIRE_ENV}=1) but {reason}: {INSTALL_HINT}")
    pytest.skip(f"PostgreSQL tests skipped: {reason}; {INSTALL_HINT}")


OWNER_FILE = "owner.pid"
FOLDER_PREFIX = "hostd-pg-"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def reap_abandoned(bindir: Path) -> list[Path]:
    """Stop the servers of test runs that were killed before their teardown, and remove their folders.

    ``pg_ctl`` detaches the server, so a test process killed by a timeout or a signal leaves it
    running; each folder names the process that owns it, and a folder whose owner is gone is
    abandoned. Returns the folders removed.
    """
    removed = []
    for folder in Path(tempfile.gettempdir()).glob(f"{FOLDER_PREFIX}*"):
        try:
            owner = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue  # not ours, or still being set up
        if _alive(owner):
            continue
        server = PostgresServer(bindir=bindir, folder=folder, port=0)
        if (server.data / "postmaster.pid").exists():
            server.stop()
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@contextlib.contextmanager
def running_postgres(settings: Mapping[str, str] | None = None) -> Iterator[PostgresServer]:
    """Start a server in a fresh temporary folder (with ``settings`` added to its start options);
    stop it and remove the folder afterwards."""
    bindir = find_bindir()
    if bindir is None:
        _unavailable("initdb and pg_ctl were not found")
        raise AssertionError("unreachable")  # pytest.skip/fail raise
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        _unavailable("running as root needs runuser to start the server as the postgres user")
    # A folder the postgres user can enter: pytest's tmp_path is private to root.
    reap_abandoned(bindir)
    folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
    (folder / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
    if os.geteuid() == 0:
        shutil.chown(folder, user="postgres", group="postgres")
    server = PostgresServer(bindir=bindir, folder=folder, port=free_port(), settings=dict(settings or {}))
    try:
        server.start()
        yield server
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole test session."""
    with running_postgres() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> str:
    """The URL of a fresh, empty database on the session's server."""
    return postgres_server.create_database()
