"""The embedded default: a SQLite file safe for many threads and several processes (WAL, busy
timeout, migrations), beside the PostgreSQL layer in ``hostd_db.postgres``.

Why it is built this way:

- One connection per thread. A sqlite3 connection carries one transaction at a time; sharing
  it between worker threads would interleave their statements inside each other's
  transactions. A connection per thread keeps every tool call's transaction its own, and WAL
  mode lets those connections (and other processes') read while one of them writes.
- `BEGIN IMMEDIATE` for writes. A deferred transaction that reads first and writes later must
  upgrade its shared lock to a write lock; when two processes do that at once, SQLite cannot
  wait its way out and one gets SQLITE_BUSY at once, losing the read-modify-write. Taking the
  write lock at BEGIN makes the second writer wait (busy timeout) before it reads anything, so
  read-modify-write sequences are serialised and nothing is lost.
- Migrations run inside `BEGIN IMMEDIATE` and re-read `PRAGMA user_version` after taking the
  lock, so two processes starting together apply each migration exactly once.
"""

from __future__ import annotations

import contextlib
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import cast

from hostd_db.spans import TracedConnection, active_tracer

__all__ = ["SqliteDatabase", "SqliteMigration"]

SqliteMigration = str | Callable[[sqlite3.Connection], None]

_SQLITE_BUSY = 5
_SQLITE_LOCKED = 6
_FIRST_BACKOFF_S = 0.002
_LONGEST_BACKOFF_S = 0.1


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return code & 0xFF in (_SQLITE_BUSY, _SQLITE_LOCKED)
    return "locked" in str(exc) or "busy" in str(exc)


def _statements(script: str) -> Iterator[str]:
    """Split an SQL script into complete statements (triggers with inner `;` stay whole).

    `executescript` would COMMIT the surrounding transaction first, so migrations run their
    statements one by one instead.
    """
    pending = ""
    for piece in script.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statement = pending.strip()
            pending = ""
            if statement != ";":
                yield statement


class _ThreadConnection(threading.local):
    connection: sqlite3.Connection | None = None
    generation: int = -1


class SqliteDatabase:
    """A SQLite database file with per-thread connections, WAL and versioned migrations.

    `migrations[i]` is SQL (one or more statements) or a callable taking the connection; it
    runs inside the migration transaction, so it must not COMMIT or change PRAGMAs that are
    fixed inside transactions. `PRAGMA user_version` counts the applied migrations.
    """

    def __init__(
        self,
        path: Path,
        migrations: Sequence[SqliteMigration],
        *,
        busy_timeout_ms: int = 10_000,
        on_connect: Callable[[sqlite3.Connection], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self._migrations = list(migrations)
        self._busy_timeout_ms = busy_timeout_ms
        self._on_connect = on_connect
        self._reset_process_state()

    def _reset_process_state(self) -> None:
        # Connections must never cross a fork: a child starts with none and does not close the
        # parent's (closing could checkpoint or release locks the parent relies on).
        self._owner_pid = os.getpid()
        self._local = _ThreadConnection()
        self._open_connections: list[sqlite3.Connection] = []
        self._registry_lock = threading.Lock()
        self._migration_lock = threading.Lock()
        self._migrated = False
        self._generation = 0

    # -- connections ---------------------------------------------------------------------------

    def connection(self) -> sqlite3.Connection:
        """This thread's connection, opened (and the schema migrated) on first use; while
        OpenTelemetry tracing is on, wrapped so each statement is a span (``hostd_db.spans``)."""
        connection = self._thread_connection()
        tracer = active_tracer()
        if tracer is None:
            return connection
        return cast("sqlite3.Connection", TracedConnection(connection, tracer, self.path.name))

    def _thread_connection(self) -> sqlite3.Connection:
        if self._owner_pid != os.getpid():
            self._reset_process_state()
        local = self._local
        if local.connection is None or local.generation != self._generation:
            connection = self._open()
            try:
                self._migrate_once(connection)
            except BaseException:
                self._discard(connection)
                raise
            local.connection, local.generation = connection, self._generation
        return local.connection

    def _open(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        connection = sqlite3.connect(
            self.path,
            timeout=self._busy_timeout_ms / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            connection.row_factory = sqlite3.Row
            connection.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout_ms)}")
            # Switching to WAL needs a moment of exclusive access, which another process
            # opening the same file may briefly hold.
            self._retry_while_busy(lambda: connection.execute("PRAGMA journal_mode = WAL"))
            connection.execute("PRAGMA foreign_keys = ON")
            connection.execute("PRAGMA synchronous = NORMAL")
            if self._on_connect is not None:
                self._on_connect(connection)
        except BaseException:
            connection.close()
            raise
        with self._registry_lock:
            self._open_connections.append(connection)
        return connection

    def _discard(self, connection: sqlite3.Connection) -> None:
        with self._registry_lock:
            if connection in self._open_connections:
                self._open_connections.remove(connection)
        connection.close()

    def close(self) -> None:
        """Close every thread's connection; a later call to `connection()` opens a fresh one."""
        with self._registry_lock:
            connections, self._open_connections = self._open_connections, []
            self._generation += 1
        for connection in connections:
            connection.close()

    def __enter__(self) -> SqliteDatabase:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------

    def _retry_while_busy(self, attempt: Callable[[], object]) -> None:
        """Run `attempt`, retrying with jittered backoff while the database is locked.

        The busy timeout already makes SQLite wait, but some paths (WAL recovery, journal mode
        changes) report SQLITE_BUSY without waiting; this keeps the same total budget for them.
        """
        deadline = time.monotonic() + self._busy_timeout_ms / 1000
        delay = _FIRST_BACKOFF_S
        while True:
            try:
                attempt()
                return
            except sqlite3.OperationalError as exc:
                if not _is_busy(exc) or time.monotonic() >= deadline:
                    raise
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, _LONGEST_BACKOFF_S)

    @contextlib.contextmanager
    def _transaction(self, connection: sqlite3.Connection, begin: str) -> Iterator[sqlite3.Connection]:
        if connection.in_transaction:
            raise RuntimeError("Database transactions do not nest: this thread is already inside one")
        self._retry_while_busy(lambda: connection.execute(begin))
        try:
            yield connection
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        try:
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise

    def write(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A write transaction (`BEGIN IMMEDIATE` ... `COMMIT`, rolled back on an exception)."""
        return self._transaction(self.connection(), "BEGIN IMMEDIATE")

    def read(self) -> contextlib.AbstractContextManager[sqlite3.Connection]:
        """A read transaction: every query inside sees the same consistent snapshot."""
        return self._transaction(self.connection(), "BEGIN")

    # -- migrations ----------------------------------------------------------------------------

    def _migrate_once(self, connection: sqlite3.Connection) -> None:
        with self._migration_lock:
            if self._migrated:
                return
            if self._user_version(connection) < len(self._migrations):
                self._apply_missing_migrations(connection)
            self._migrated = True

    def schema_version(self) -> int:
        """The number of migrations the file has applied (0 for a file not made yet), changing nothing."""
        if not self.path.exists():
            return 0
        connection = sqlite3.connect(self.path, timeout=self._busy_timeout_ms / 1000)
        try:
            return self._user_version(connection)
        finally:
            connection.close()

    @staticmethod
    def _user_version(connection: sqlite3.Connection) -> int:
        return int(connection.execute("PRAGMA user_version").fetchone()[0])

    def _apply_missing_migrations(self, connection: sqlite3.Connection) -> None:
        with self._transaction(connection, "BEGIN IMMEDIATE"):
            # Another process may have migrated while this one waited for the lock.
            for migration in self._migrations[self._user_version(connection) :]:
                if callable(migration):
                    migration(connection)
                else:
                    for statement in _statements(migration):
                        connection.execute(statement)
            connection.execute(f"PRAGMA user_version = {len(self._migrations)}")
