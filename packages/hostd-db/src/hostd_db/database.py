"""One database interface for both engines: ``read(work)`` and ``write(work, lock=)``.

A store is written once against ``Database``: its unit of work receives a ``Connection`` that
takes SQLite's ``?`` placeholders and returns rows as tuples on either engine, NUL-safe on
PostgreSQL (``hostd_db.pgtext``). The few spellings that differ are the ``Dialect``'s helpers,
written here once. ``SqliteBackend`` is a file in the plugin's data folder (a lock held by
another process past the busy timeout is FILE_LOCKED); ``PostgresBackend`` is the plugin's
schema in the team database (serialization failures and deadlocks run the work again, a lost
connection is UNAVAILABLE). Both are opened and migrated by the host from the plugin's
``Schema`` (``open_database``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from hostd_db.dialect import POSTGRES, SQLITE, Connection, Cursor, Dialect
from hostd_db.errors import DatabaseError
from hostd_db.postgres import PostgresDatabase, SchemaStatus
from hostd_db.schema import Schema, Step, render

if TYPE_CHECKING:
    import sqlite3

    from hostd_db.sqlite import SqliteDatabase

__all__ = [
    "POSTGRES",
    "SQLITE",
    "Connection",
    "Cursor",
    "Database",
    "Dialect",
    "PostgresBackend",
    "SqliteBackend",
    "TeamDatabaseSettings",
    "open_database",
    "store_lock_key",
]

T = TypeVar("T")

#: How long a SQLite write waits for another process's write lock before the call is FILE_LOCKED.
SQLITE_BUSY_TIMEOUT_MS = 10_000


class Database(ABC):
    """A plugin's tables, opened and migrated by the host: the one interface stores are written against."""

    dialect: Dialect
    #: Where the data lives, for messages: a file path, or ``host:port/database``.
    where: str
    component: str

    @abstractmethod
    def read(self, work: Callable[[Connection], T], *, snapshot: bool = True) -> T:
        """``work`` in a read-only transaction (one snapshot; on PostgreSQL a BEGIN and a COMMIT
        around the work's statements); ``snapshot=False`` runs each statement on its own, with no
        transaction (one round trip each on PostgreSQL): for work of one statement, or of
        statements that need not agree with each other."""

    @abstractmethod
    def write(
        self,
        work: Callable[[Connection], T],
        *,
        lock: str | None = None,
        locks: Sequence[str] | None = None,
        exclusive: bool = False,
    ) -> T:
        """``work`` in one write transaction, run again when the database asks for it (so ``work``
        must not change anything outside the transaction before it returns).

        ``lock`` names what the write changes (a URI, ``"list"``): writes naming the same lock
        follow each other, others do not wait (PostgreSQL: a transaction-scoped advisory lock;
        SQLite's write transaction already holds the whole file).

        ``locks`` is the store-wide form: the write holds the component's store lock shared
        (alone when ``exclusive``, which implies ``locks=()``), then each name's lock in sorted
        order, all in one round trip before ``work`` runs; more names are taken inside the work
        with ``hold``. Two writes naming one name follow each other, an exclusive write follows
        every other write that takes the store lock, and locks taken in one order never deadlock.
        """

    def hold(self, connection: Connection, names: Sequence[str] = (), *, exclusive: bool = False) -> None:
        """Inside a write: take the locks of more ``names`` until the write ends, after the store
        lock alone when ``exclusive`` (for a write that did not take it: a copy into the store).
        Nothing on SQLite, whose write transaction already holds the whole file."""
        return None

    @abstractmethod
    def migrate(self) -> SchemaStatus:
        """Apply the pending migrations (once, whoever else is starting)."""

    @abstractmethod
    def schema_status(self) -> SchemaStatus:
        """Where the tables stand against the schema's migrations, changing nothing."""

    @abstractmethod
    def close(self) -> None:
        """Release connections; a later call opens new ones."""


def _sqlite_step(step: str | Step) -> Callable[[sqlite3.Connection], None]:
    def run(connection: sqlite3.Connection) -> None:
        if isinstance(step, str):
            connection.execute(step)
        else:
            step(connection, SQLITE)

    return run


def _sqlite_migration(statements: list[str | Step]) -> Callable[[sqlite3.Connection], None]:
    steps = [_sqlite_step(step) for step in statements]

    def run(connection: sqlite3.Connection) -> None:
        for step in steps:
            step(connection)

    return run


class SqliteBackend(Database):
    """A SQLite file (``hostd_db.SqliteDatabase``: WAL, a connection per thread, ``BEGIN IMMEDIATE``)."""

    dialect = SQLITE

    def __init__(
        self, path: Path, component: str, schema: Schema, *, busy_timeout_ms: int | None = None
    ) -> None:
        from hostd_db.sqlite import SqliteDatabase

        if busy_timeout_ms is None:
            busy_timeout_ms = SQLITE_BUSY_TIMEOUT_MS

        self.path = Path(path)
        self.where = str(self.path)
        self.component = component
        self.busy_timeout_ms = busy_timeout_ms
        functions = dict(schema.sqlite_functions)

        def register(connection: sqlite3.Connection) -> None:
            for name, function in functions.items():
                connection.create_function(name, 1, function, deterministic=True)

        self._known = len(schema.migrations)
        self.db: SqliteDatabase = SqliteDatabase(
            self.path,
            [_sqlite_migration(render(migration, "sqlite")) for migration in schema.migrations],
            busy_timeout_ms=busy_timeout_ms,
            on_connect=register if functions else None,
        )

    def read(self, work: Callable[[Connection], T], *, snapshot: bool = True) -> T:
        from hostd_db.errors import busy_as_file_locked

        with busy_as_file_locked(self.where, self.busy_timeout_ms):
            if not snapshot:
                return work(self.db.connection())
            with self.db.read() as connection:
                return work(connection)

    def write(
        self,
        work: Callable[[Connection], T],
        *,
        lock: str | None = None,
        locks: Sequence[str] | None = None,
        exclusive: bool = False,
    ) -> T:
        from hostd_db.errors import busy_as_file_locked

        with busy_as_file_locked(self.where, self.busy_timeout_ms), self.db.write() as connection:
            return work(connection)

    def migrate(self) -> SchemaStatus:
        self.db.connection()
        return self.schema_status()

    def schema_status(self) -> SchemaStatus:
        return SchemaStatus(self.component, self.db.schema_version(), self._known)

    def close(self) -> None:
        self.db.close()


def _postgres_step(step: str | Step) -> Callable[[Any], None]:
    def run(connection: Any) -> None:
        from hostd_db.pgtext import QmarkConnection

        if isinstance(step, str):
            connection.execute(step)
        else:
            step(QmarkConnection(connection), POSTGRES)

    return run


def _postgres_migration(statements: list[str | Step]) -> Callable[[Any], None]:
    steps = [_postgres_step(step) for step in statements]

    def run(connection: Any) -> None:
        for step in steps:
            step(connection)

    return run


@dataclass(frozen=True)
class TeamDatabaseSettings:
    """The ``storage`` section as the database layer needs it."""

    url: str
    pool_size: int = 8
    connect_timeout_seconds: float = 5.0
    statement_timeout_ms: int = 30_000
    migrate: bool = True


class PostgresBackend(Database):
    """The plugin's schema in the team database (``hostd_db.PostgresDatabase``: a pool, retries)."""

    dialect = POSTGRES

    def __init__(self, settings: TeamDatabaseSettings, component: str, schema: Schema) -> None:
        self.database = PostgresDatabase(
            settings.url,
            component,
            [_postgres_migration(render(migration, "postgres")) for migration in schema.migrations],
            max_connections=settings.pool_size,
            connect_timeout_s=settings.connect_timeout_seconds,
            statement_timeout_ms=settings.statement_timeout_ms,
            auto_migrate=settings.migrate,
            version_aliases=schema.postgres_versions,
        )
        self.where = self.database.where
        self.component = component
        self._component_key = f"{component}:"
        self.store_lock_key = store_lock_key(component)
        #: A name's lock is the pair (this, hashtext(name)): the component's first four letters.
        self.name_lock_space = int.from_bytes(component.encode("ascii")[:4], "big")

    def read(self, work: Callable[[Connection], T], *, snapshot: bool = True) -> T:
        from hostd_db.pgtext import QmarkConnection

        if not snapshot:
            try:
                with self.database.autocommit() as connection:
                    return work(QmarkConnection(connection))
            except DatabaseError as exc:
                # A read changes nothing, so it may always run again: once, on a fresh connection.
                if exc.reason != "connection_lost":
                    raise
                self.database._drop_dead_connections()
                with self.database.autocommit() as connection:
                    return work(QmarkConnection(connection))

        # ``BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY``: the snapshot costs no round trip of its own.
        return self.database.run(
            lambda connection: work(QmarkConnection(connection)), write=False, repeatable=True
        )

    def write(
        self,
        work: Callable[[Connection], T],
        *,
        lock: str | None = None,
        locks: Sequence[str] | None = None,
        exclusive: bool = False,
    ) -> T:
        from hostd_db.pgtext import QmarkConnection

        key = None if lock is None else self._component_key + lock
        if exclusive and locks is None:
            locks = ()
        store_lock = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"

        def locked(connection: Any) -> T:
            if key is not None:
                connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (key,))
            if locks is not None:
                # One round trip: the store lock first, then each name's in sorted order (Append
                # runs its parts in order), so two writes never take the same locks in other orders.
                connection.execute(
                    f"SELECT count(*) FROM (SELECT 1 FROM (SELECT {store_lock}(%s::bigint)) AS store "
                    "UNION ALL SELECT 1 FROM (SELECT DISTINCT unnest(%s::text[]) AS u ORDER BY 1) AS named, "
                    "LATERAL (SELECT pg_advisory_xact_lock(%s::int, hashtext(named.u))) AS name) AS held",
                    (self.store_lock_key, list(locks), self.name_lock_space),
                )
            return work(QmarkConnection(connection))

        return self.database.run(locked, write=True)

    def hold(self, connection: Connection, names: Sequence[str] = (), *, exclusive: bool = False) -> None:
        if exclusive:
            connection.execute("SELECT pg_advisory_xact_lock(?::bigint)", (self.store_lock_key,))
        if names:
            connection.execute(
                "SELECT count(pg_advisory_xact_lock(?::int, hashtext(u))) FROM unnest(?::text[]) AS u",
                (self.name_lock_space, list(names)),
            )

    def migrate(self) -> SchemaStatus:
        return self.database.migrate()

    def schema_status(self) -> SchemaStatus:
        return self.database.schema_status()

    def pool_stats(self) -> dict[str, int] | None:
        """The connection pool's counters, or None before a call opened it (``PostgresDatabase``)."""
        return self.database.pool_stats()

    def close(self) -> None:
        self.database.close()


def store_lock_key(component: str) -> int:
    """The advisory lock key of a component's store lock on PostgreSQL (``Database.write``'s
    ``locks``): its first six letters read as a number (``memory``: 0x6D656D6F7279)."""
    return int.from_bytes(component.encode("ascii")[:6], "big")


def open_database(
    schema: Schema,
    component: str,
    *,
    data_dir: Path,
    team: TeamDatabaseSettings | None,
) -> Database:
    """The plugin's database: its schema in the team database when ``team`` is given, else its
    SQLite file in ``data_dir`` (nothing is opened before the first call)."""
    if team is not None:
        return PostgresBackend(team, component, schema)
    if schema.sqlite_file is None:
        raise ValueError(f"{component}: the schema keeps no local SQLite file; only a team database")
    return SqliteBackend(data_dir / schema.sqlite_file, component, schema)
