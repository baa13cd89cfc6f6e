"""What every class of the memory store builds on: the database, reads, the write transaction,
and the lookups of a memory by URI or alias that run inside them.

``Access`` is the base of the store's parts (``MemoryWrites``, ``MemoryListings``,
``MemoryRanking``, ``MemoryImports``), which ``MemoryStore`` joins: each of their methods is
one unit of work, a ``work(conn)`` run by ``read`` or ``write``. It runs on the
``hostd_db.Database`` the host opened from the plugin's schema, one class for both engines, so
the SQL is written once: what an engine does its own way is a part it holds, ``engine``
(``sqlite.SqliteEngine``, ``postgres.PostgresEngine``): the write transaction and its locks,
the full-text indexes, upkeep. On the SQLite file, writes run in ``BEGIN IMMEDIATE``
transactions, so threads and processes sharing the file serialise their read-modify-write
steps and version numbers never collide; on the team database, advisory locks per URI do
(``postgres``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hostd_db import Connection, Database

from hostd_memory.store import refusals
from hostd_memory.store.postgres import PostgresEngine
from hostd_memory.store.rows import MemoryRow
from hostd_memory.store.schema import MEMORY_COLUMNS
from hostd_memory.store.sqlite import SqliteEngine

T = TypeVar("T")


class Access:
    """The database, its engine, and the reads, writes and lookups every part of the store uses:
    the base its classes build on, never used alone."""

    def __init__(self, database: Database) -> None:
        self.database = database
        #: What the engine does its own way: transactions and locks, full text, upkeep.
        self.engine: SqliteEngine | PostgresEngine
        if database.dialect.is_postgres:
            self.engine = PostgresEngine(database)
        else:
            self.engine = SqliteEngine(database)
        #: Tokens in many memories, and how many (a lower bound: ``ranking``; ``purge`` forgets them).
        self.large_counts: dict[str, int] = {}
        #: Tokens too common to relate memories by (``MemoryRanking.related``).
        self.common_tokens: set[str] = set()
        self._reading = threading.local()  # the connection of this thread's read in progress

    def close(self) -> None:
        self.database.close()

    # --- connections --------------------------------------------------------------------

    def read(self, work: Callable[[Connection], T]) -> T:
        """``work`` outside a transaction, each statement on its own (a read that needs no snapshot).

        A read inside another read of the same thread runs on its connection: one connection per
        call from the team database's pool, however the store's reads nest."""
        current: Connection | None = getattr(self._reading, "conn", None)
        if current is not None:
            return work(current)

        def outermost(conn: Connection) -> T:
            self._reading.conn = conn
            try:
                return work(conn)
            finally:
                self._reading.conn = None

        return self.database.read(outermost, snapshot=False)

    def rows(self, sql: str, parameters: Sequence[Any] = ()) -> list[Any]:
        """Every row of one query."""
        return self.read(lambda conn: list(conn.execute(sql, parameters).fetchall()))

    def write(self, work: Callable[[Connection], T], *uris: str, exclusive: bool = False) -> T:
        """``work`` in one write transaction of ``Database.write``, run again when the database
        asks (a deadlock or serialization failure on the team database), so ``work`` changes
        nothing outside the transaction. ``uris`` are the memories and aliases the write creates,
        changes or claims; ``exclusive`` is for writes over the whole store (an import). SQLite's
        write transaction holds the whole file; the team database locks them (``Database.write``'s
        ``locks``), and the engine finishes the write before it commits (``finish_write``)."""

        def whole(conn: Connection) -> T:
            result = work(conn)
            self.engine.finish_write(conn)
            return result

        return self.database.write(whole, locks=uris, exclusive=exclusive)

    def hold(self, conn: Connection, *uris: str) -> None:
        """Inside a write: hold the locks of more ``uris`` until it ends (``Database.hold``)."""
        self.database.hold(conn, uris)

    def resolve_locked(
        self, conn: Connection, uri: str, *, include_deleted: bool = False
    ) -> tuple[MemoryRow, str | None]:
        """``resolve_in`` inside a write that will change the memory: its row held until the end."""
        memory, via = self.resolve_in(conn, uri, include_deleted=include_deleted)
        if not self.database.dialect.locks_rows:
            return memory, via  # SQLite's write transaction already holds everything
        conn.execute("SELECT 1 FROM memories WHERE id = ? FOR NO KEY UPDATE", (memory.id,))
        # As it is now: another writer may have made a version while this one waited for the row.
        return self.resolve_in(conn, uri, include_deleted=include_deleted)

    # --- lookups ------------------------------------------------------------------------

    def memory_by_uri(self, conn: Connection, uri: str) -> MemoryRow | None:
        row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.uri = ?", (uri,)).fetchone()
        return MemoryRow.from_row(row) if row else None

    def memory_by_id(self, conn: Connection, memory_id: int) -> MemoryRow:
        row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = ?", (memory_id,)).fetchone()
        return MemoryRow.from_row(row)

    def alias_target(self, conn: Connection, uri: str) -> int | None:
        row = conn.execute("SELECT memory_id FROM aliases WHERE alias_uri = ?", (uri,)).fetchone()
        return int(row[0]) if row else None

    def memory_id_of(self, conn: Connection, uri: str) -> int | None:
        """The id of the memory ``uri`` names, directly or as an alias (deleted ones too)."""
        row = conn.execute("SELECT id FROM memories WHERE uri = ?", (uri,)).fetchone()
        return int(row[0]) if row else self.alias_target(conn, uri)

    def aliases_of(self, conn: Connection, memory_id: int) -> list[str]:
        rows = conn.execute(
            "SELECT alias_uri FROM aliases WHERE memory_id = ? ORDER BY alias_uri", (memory_id,)
        )
        return [r[0] for r in rows]

    def resolve_in(
        self, conn: Connection, uri: str, *, include_deleted: bool = False
    ) -> tuple[MemoryRow, str | None]:
        """The memory ``uri`` names, directly or through an alias, and the alias used if any."""
        memory = self.memory_by_uri(conn, uri)
        via: str | None = None
        if memory is None:
            target = self.alias_target(conn, uri)
            if target is None:
                raise refusals.not_found(uri)
            memory = self.memory_by_id(conn, target)
            via = uri
        if memory.status == "deleted" and not include_deleted:
            raise refusals.not_found(uri, deleted=True)
        memory.aliases = self.aliases_of(conn, memory.id)
        return memory, via

    def taken(self, conn: Connection, uri: str) -> bool:
        """Whether ``uri`` names a memory (deleted ones too) or an alias."""
        return self.memory_by_uri(conn, uri) is not None or self.alias_target(conn, uri) is not None

    def ensure_free(self, conn: Connection, uri: str) -> None:
        existing = self.memory_by_uri(conn, uri)
        if existing is not None:
            raise refusals.already_exists(uri, "deleted" if existing.status == "deleted" else "memory")
        target = self.alias_target(conn, uri)
        if target is not None:
            raise refusals.already_exists(uri, "alias", self.memory_by_id(conn, target).uri)
