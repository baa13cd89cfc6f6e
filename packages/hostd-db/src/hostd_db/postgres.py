"""A PostgreSQL store that many hostd processes share: a pool, one schema per plugin, safe migrations.

Why it is built this way:

- One schema per component (``memory``, ``tasks``, ``deep_thinking``), put first on each
  connection's ``search_path``: plugins write plain table names and never see each other's
  tables.
- Autocommit connections with explicit ``transaction()`` blocks: a block commits when it ends
  and rolls back when it raises, whatever the pool does with the connection afterwards.
- ``run(work)`` retries the whole unit of work on a serialization failure or a deadlock (the
  database rolled it back, so running it again is safe), a bounded number of times with
  jittered backoff. A connection lost during the work or its COMMIT is never retried: a COMMIT
  whose answer was lost may have been applied, so the caller gets ``UNAVAILABLE`` and decides.
- The pool lends connections without checking them first (a check is one more round trip on
  every call). A pooled connection the server has dropped since (a restart, an idle timeout,
  ``pg_terminate_backend``) fails at ``BEGIN``, before anything of the work was sent: ``run``
  then drops the pool's other dead connections and runs the work once more on a fresh one.
- A first call that fails while the pool is opened or the schema checked (a server too busy or
  away) keeps nothing: the pool is closed and forgotten, and the next call starts afresh. A
  write begins read-write whatever a read left on the pooled connection, and a lent connection
  that cannot BEGIN is closed and replaced; a deadlock outside ``run`` is CONFLICT, to retry.
- Migrations run under one transaction-scoped advisory lock and re-read the recorded version
  after taking it, so processes starting together apply each migration exactly once. DDL is
  transactional in PostgreSQL: a failed migration leaves nothing behind.
- A database whose recorded version is newer than the code's list is refused: an older hostd
  must not write rows a newer schema no longer means the same way.

The driver (psycopg 3 and psycopg-pool) is imported on first use: it is the ``postgres``
extra, and a single user on SQLite never installs it.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import random
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from hostd_db.errors import DatabaseError
from hostd_db.urls import describe_url

if TYPE_CHECKING:
    from psycopg import Connection
    from psycopg_pool import ConnectionPool

__all__ = ["MIGRATION_LOCK_KEY", "PostgresDatabase", "SchemaStatus"]

logger = logging.getLogger("hostd.db")

T = TypeVar("T")
PgMigration = str | Callable[["Connection[dict[str, Any]]"], None]

#: The advisory lock every hostd migration takes (one key: migrations are rare and short).
MIGRATION_LOCK_KEY = 0x686F737464  # "hostd"
_VERSIONS_TABLE = "public.hostd_schema_versions"
_COMPONENT = re.compile(r"^[a-z][a-z0-9_-]{0,40}$")
_FIRST_BACKOFF_S = 0.005
_LONGEST_BACKOFF_S = 0.2


#: Server-side codes that mean the session itself ended (admin shutdown, crash, cannot connect now).
_SESSION_ENDED = frozenset({"57P01", "57P02", "57P03"})
#: Server-side codes that mean "not now": insufficient resources (class 53: too many connections,
#: out of memory, disk full) and a lock not available. The call may succeed in a moment.
_NOT_NOW_CLASSES = ("53",)
_NOT_NOW = frozenset({"55P03", "55006"})


def _is_not_now(exc: Exception) -> bool:
    state = getattr(exc, "sqlstate", None)
    return state is not None and (state.startswith(_NOT_NOW_CLASSES) or state in _NOT_NOW)


def _is_connection_failure(exc: Exception) -> bool:
    """A broken link to the server: client-side (no SQLSTATE), class 08, or the session terminated.

    Other operational errors (a word too long for a tsvector, a full disk) are faults of the
    request or the server, not a lost connection, and must not be reported as one.
    """
    state = getattr(exc, "sqlstate", None)
    return state is None or state.startswith("08") or state in _SESSION_ENDED


class _StaleConnection(Exception):
    """A lent connection was found dead at BEGIN: nothing of the work reached the server."""


@dataclass(frozen=True)
class SchemaStatus:
    """Where one component's tables stand against the code's migrations."""

    component: str
    current: int
    known: int

    @property
    def pending(self) -> int:
        return max(self.known - self.current, 0)

    @property
    def too_new(self) -> bool:
        return self.current > self.known


def schema_name(component: str) -> str:
    """The PostgreSQL schema of a component: its name with ``-`` as ``_`` (``deep_thinking``)."""
    if not _COMPONENT.match(component):
        raise ValueError(f"component names are lower-case identifiers, got {component!r}")
    return component.replace("-", "_")


class PostgresDatabase:
    """A pool of connections to one PostgreSQL database, scoped to one component's schema."""

    backend: Literal["postgres"] = "postgres"

    def __init__(
        self,
        url: str,
        component: str,
        migrations: Sequence[PgMigration],
        *,
        max_connections: int = 8,
        connect_timeout_s: float = 5.0,
        statement_timeout_ms: int = 30_000,
        attempts: int = 5,
        auto_migrate: bool = True,
        version_aliases: Mapping[int, int] | None = None,
    ) -> None:
        self.url = url
        self.where = describe_url(url)
        self.component = component
        self.schema = schema_name(component)
        self._migrations = list(migrations)
        self._max_connections = max_connections
        self._connect_timeout_s = connect_timeout_s
        self._statement_timeout_ms = statement_timeout_ms
        self._attempts = attempts
        self._auto_migrate = auto_migrate
        self._version_aliases = dict(version_aliases or {})
        self._reset_process_state()

    def _reset_process_state(self) -> None:
        # A pool's sockets must never cross a fork: the child opens its own.
        self._owner_pid = os.getpid()
        self._pool: ConnectionPool[Any] | None = None
        self._ready = False
        self._lock = threading.RLock()  # pool() holds it while migrate() opens the pool

    # -- connections ---------------------------------------------------------------------------

    def _connection_kwargs(self) -> dict[str, Any]:
        from psycopg.rows import dict_row

        options = (
            f"-c search_path={self.schema},public -c statement_timeout={int(self._statement_timeout_ms)}"
        )
        return {
            "autocommit": True,
            "row_factory": dict_row,
            "options": options,
            "connect_timeout": max(1, round(self._connect_timeout_s)),
            "application_name": f"hostd-{self.component}",
        }

    def _open_pool(self) -> ConnectionPool[Any]:
        from psycopg_pool import ConnectionPool, PoolTimeout

        pool: ConnectionPool[Any] = ConnectionPool(
            self.url,
            min_size=1,
            max_size=self._max_connections,
            kwargs=self._connection_kwargs(),
            timeout=self._connect_timeout_s,
            open=False,
            name=f"hostd-{self.component}",
        )
        try:
            pool.open(wait=True, timeout=self._connect_timeout_s)
        except PoolTimeout as exc:
            pool.close()
            logger.warning("database %s unreachable: %s", self.where, exc)
            raise DatabaseError("unreachable", where=self.where) from None
        return pool

    def pool(self) -> ConnectionPool[Any]:
        """The pool, opened (and the schema checked or migrated) on first use."""
        if self._owner_pid != os.getpid():
            self._reset_process_state()
        if self._ready and self._pool is not None:
            return self._pool
        with self._lock:
            if self._ready and self._pool is not None:
                return self._pool
            try:
                if self._pool is None:
                    self._pool = self._open_pool()
                status = self.migrate() if self._auto_migrate else self.schema_status()
            except Exception as exc:
                # Nothing of a failed start is kept (the pool, its connections, a half-checked
                # schema): the next call opens and checks afresh, so a process that found the
                # database busy or away once is not left answering every later call with it.
                logger.warning(
                    "database %s: opening the %s tables failed (%s: %s); the next call starts afresh",
                    self.where,
                    self.component,
                    type(exc).__name__,
                    exc,
                )
                self._forget_pool()
                raise
            if status.pending:
                raise DatabaseError(
                    "schema_outdated",
                    where=self.where,
                    component=self.component,
                    current=status.current,
                    known=status.known,
                )
            self._ready = True
        return self._pool

    def _forget_pool(self) -> None:
        """Close the pool and forget it (the caller holds ``_lock``); a later call opens a new one."""
        pool, self._pool, self._ready = self._pool, None, False
        if pool is not None:
            with contextlib.suppress(Exception):
                pool.close(timeout=0)

    def pool_stats(self) -> dict[str, int] | None:
        """The pool's counters (psycopg_pool's ``get_stats``: lends, waits, sizes), or None before
        a call opened it: reading them never opens one."""
        pool = self._pool if self._owner_pid == os.getpid() else None
        return None if pool is None else dict(pool.get_stats())

    def close(self) -> None:
        """Close the pool; a later call opens a new one."""
        with self._lock:
            pool, self._pool, self._ready = self._pool, None, False
        if pool is not None and self._owner_pid == os.getpid():
            pool.close()

    def __enter__(self) -> PostgresDatabase:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # -- transactions --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _translated(self, *, retried: bool = False) -> Iterator[None]:
        """Driver failures a person can act on become a ``DatabaseError``.

        A serialization failure or deadlock goes through as it is only when ``retried`` (``run``
        and ``migrate`` run the work again); anywhere else it is CONFLICT, to retry.
        """
        import psycopg
        from psycopg import errors as pg_errors
        from psycopg_pool import PoolTimeout

        try:
            yield
        except PoolTimeout:
            raise DatabaseError("unreachable", where=self.where) from None
        except pg_errors.QueryCanceled:
            raise DatabaseError(
                "statement_timeout", where=self.where, timeout_ms=self._statement_timeout_ms
            ) from None
        except psycopg.InterfaceError as exc:  # the driver's side of a broken link
            logger.warning("database %s: connection lost: %s", self.where, exc)
            raise DatabaseError("connection_lost", where=self.where) from None
        except psycopg.OperationalError as exc:
            if isinstance(exc, pg_errors.SerializationFailure | pg_errors.DeadlockDetected):
                if retried:
                    raise  # run() and migrate() run the work again
                logger.warning("database %s: %s", self.where, exc)
                raise DatabaseError("contention", where=self.where, attempts=1) from None
            if _is_not_now(exc):  # busy, not broken: the caller may retry (never INTERNAL)
                logger.warning("database %s: could not take the call now: %s", self.where, exc)
                raise DatabaseError("refused_now", where=self.where, state=exc.sqlstate) from None
            if not _is_connection_failure(exc):
                raise  # a fault of the request or the server (a word too long to index), not a lost link
            logger.warning("database %s: connection lost: %s", self.where, exc)
            raise DatabaseError("connection_lost", where=self.where) from None

    @contextlib.contextmanager
    def _transaction(
        self, *, write: bool, repeatable: bool, retried: bool
    ) -> Iterator[Connection[dict[str, Any]]]:
        import psycopg
        from psycopg import IsolationLevel

        with (
            self._translated(retried=retried),
            self.pool().connection() as connection,
            contextlib.ExitStack() as stack,
        ):
            read_only = None if write else True
            isolation = IsolationLevel.REPEATABLE_READ if repeatable else None
            try:  # the first use of the lent connection: nothing of the work has been sent yet
                if connection.read_only != read_only or connection.isolation_level != isolation:
                    # Spelled into the BEGIN itself (``BEGIN ISOLATION LEVEL REPEATABLE READ READ
                    # ONLY``): one round trip, where a ``SET TRANSACTION`` after it costs one more
                    # each. Setting them sends nothing; they are cleared before the connection goes
                    # back to the pool, and set here again whenever a clearing failed, so a write
                    # never begins read-only on a connection a read left so.
                    connection.read_only = read_only
                    connection.isolation_level = isolation
                if read_only or isolation is not None:
                    stack.callback(self._plain_begin, connection)
                stack.enter_context(connection.transaction())
            except psycopg.Error as exc:
                if isinstance(exc, psycopg.OperationalError) and not _is_connection_failure(exc):
                    raise  # the server refused the BEGIN itself (a limit): not this connection's fault
                # Dead, or left in a state no BEGIN can start from: closed, so the pool never lends it again.
                with contextlib.suppress(Exception):
                    connection.close()
                raise _StaleConnection from exc
            yield connection

    @staticmethod
    def _plain_begin(connection: Connection[dict[str, Any]]) -> None:
        """The lent connection's next BEGIN as the pool's other users expect it: plain read-write."""
        with contextlib.suppress(Exception):  # a broken connection is discarded by the pool anyway
            connection.read_only = None
            connection.isolation_level = None

    @contextlib.contextmanager
    def _begun(
        self, *, write: bool, repeatable: bool = False, retried: bool = False
    ) -> Iterator[Connection[dict[str, Any]]]:
        """A transaction on a lent connection; one found dead (or unusable) at BEGIN is replaced once."""
        begin = functools.partial(self._transaction, write=write, repeatable=repeatable, retried=retried)
        with contextlib.ExitStack() as stack:
            try:
                connection = stack.enter_context(begin())
            except _StaleConnection as exc:
                logger.info(
                    "database %s: a pooled connection could not begin (%s); using a fresh one",
                    self.where,
                    exc.__cause__,
                )
                self._drop_dead_connections()
                try:
                    connection = stack.enter_context(begin())
                except _StaleConnection as exc:  # a fresh one failed too: the server is gone
                    logger.warning("database %s: connection lost: %s", self.where, exc.__cause__)
                    raise DatabaseError("connection_lost", where=self.where) from None
            yield connection

    def _drop_dead_connections(self) -> None:
        """Check the pool's idle connections (only after one was found dead) and drop the broken ones."""
        if self._pool is not None:
            self._pool.check()

    def write(self) -> contextlib.AbstractContextManager[Connection[dict[str, Any]]]:
        """One read-write transaction (committed at the end, rolled back on an exception)."""
        return self._begun(write=True)

    def read(
        self, *, repeatable: bool = False
    ) -> contextlib.AbstractContextManager[Connection[dict[str, Any]]]:
        """One read-only transaction (REPEATABLE READ when ``repeatable``: one snapshot throughout)."""
        return self._begun(write=False, repeatable=repeatable)

    @contextlib.contextmanager
    def autocommit(self) -> Iterator[Connection[dict[str, Any]]]:
        """A pooled connection outside any transaction block: each statement is its own transaction
        (one round trip instead of three), for reads that need no snapshot across statements."""
        with self._translated(), self.pool().connection() as connection:
            yield connection

    def run(
        self, work: Callable[[Connection[dict[str, Any]]], T], *, write: bool = True, repeatable: bool = False
    ) -> T:
        """``work(connection)`` in one transaction (REPEATABLE READ when ``repeatable``), run again on a
        serialization failure or deadlock."""

        def once() -> T:
            with self._begun(write=write, repeatable=repeatable, retried=True) as connection:
                return work(connection)

        return self._run_again_on_contention(once)

    def _run_again_on_contention(self, once: Callable[[], T]) -> T:
        """``once()``, run again on a serialization failure or a deadlock (the database rolled it
        back, so nothing of it was kept), a bounded number of times with jittered backoff; after the
        last, CONFLICT (``contention``), which asks the caller to retry."""
        from psycopg import errors as pg_errors

        delay = _FIRST_BACKOFF_S
        attempt = 0
        while True:
            attempt += 1
            try:
                return once()
            except (pg_errors.SerializationFailure, pg_errors.DeadlockDetected) as exc:
                if attempt >= self._attempts:
                    logger.warning("database %s: giving up after %d attempts: %s", self.where, attempt, exc)
                    raise DatabaseError("contention", where=self.where, attempts=attempt) from None
            time.sleep(delay * random.uniform(0.5, 1.5))
            delay = min(delay * 2, _LONGEST_BACKOFF_S)

    # -- migrations ----------------------------------------------------------------------------

    def _recorded_version(self, connection: Connection[dict[str, Any]]) -> int:
        exists = connection.execute("SELECT to_regclass(%s) AS name", (_VERSIONS_TABLE,)).fetchone()
        if exists is None or exists["name"] is None:
            return 0
        row = connection.execute(
            f"SELECT version FROM {_VERSIONS_TABLE} WHERE component = %s", (self.component,)
        ).fetchone()
        recorded = int(row["version"]) if row else 0
        # An earlier release's number for the same tables (see ``hostd_db.Schema.postgres_versions``).
        return self._version_aliases.get(recorded, recorded)

    def schema_status(self) -> SchemaStatus:
        """The recorded version against the code's, without changing anything."""
        pool = self._pool if self._pool is not None else self._open_pool_only()
        with self._translated(), pool.connection() as connection:
            current = self._recorded_version(connection)
        return SchemaStatus(self.component, current, len(self._migrations))

    def _open_pool_only(self) -> ConnectionPool[Any]:
        with self._lock:
            if self._pool is None:
                self._pool = self._open_pool()
            return self._pool

    def migrate(self) -> SchemaStatus:
        """Apply the pending migrations once, whoever else is starting; refuse a newer schema.

        Run again on a serialization failure or deadlock (DDL is transactional: nothing was kept).
        """
        return self._run_again_on_contention(self._migrate_once)

    def _migrate_once(self) -> SchemaStatus:
        pool = self._open_pool_only()
        with self._translated(retried=True), pool.connection() as connection, connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            connection.execute(
                f"CREATE TABLE IF NOT EXISTS {_VERSIONS_TABLE} ("
                " component text PRIMARY KEY,"
                " version integer NOT NULL,"
                " updated_at timestamptz NOT NULL DEFAULT now())"
            )
            current = self._recorded_version(connection)
            known = len(self._migrations)
            if current > known:
                raise DatabaseError(
                    "schema_too_new", where=self.where, component=self.component, current=current, known=known
                )
            if current < known:
                connection.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
                connection.execute(f'SET LOCAL search_path = "{self.schema}", public')
                for index in range(current, known):
                    migration = self._migrations[index]
                    if callable(migration):
                        migration(connection)
                    else:
                        connection.execute(migration)
                    logger.info(
                        "database %s: %s schema migrated to version %d", self.where, self.component, index + 1
                    )
                connection.execute(
                    f"INSERT INTO {_VERSIONS_TABLE} (component, version) VALUES (%s, %s)"
                    " ON CONFLICT (component) DO UPDATE SET version = EXCLUDED.version, updated_at = now()",
                    (self.component, known),
                )
        return SchemaStatus(self.component, known, known)
