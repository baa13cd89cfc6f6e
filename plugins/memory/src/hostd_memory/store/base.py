"""The store's connections and lookups, which every other part of the store builds on.

The store runs on the ``hostd_db.Database`` the host opened from the plugin's schema. On the
SQLite file, writes run in ``BEGIN IMMEDIATE`` transactions (``hostd_db.SqliteDatabase``), so
threads and processes sharing the file serialise their read-modify-write steps and version
numbers never collide; reads use the thread's connection. The team database's store
(``postgres.py``) supplies its own connections, locks and full-text parts.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from hostd_db import Database, SqliteBackend

from hostd_memory.store import refusals
from hostd_memory.store.rows import (
    Connection,
    MemoryRow,
)
from hostd_memory.store.schema import MEMORY_COLUMNS


class StoreBase:
    """Connections and lookups: what every other part of the store builds on."""

    #: The shared tags of a group, joined by U+001F.
    _TAG_LIST = "group_concat(t.tag, char(31))"

    def __init__(self, database: Database) -> None:
        self.database = database
        self._large_counts: dict[str, int] = {}  # tokens in many memories, and how many (a lower bound)
        self._common_tokens: set[str] = set()  # tokens too common to relate memories by (see related)

    def close(self) -> None:
        self.database.close()

    # --- connections --------------------------------------------------------------------

    @property
    def _file(self) -> SqliteBackend:
        """The SQLite file (the team database's store overrides every use of it)."""
        assert isinstance(self.database, SqliteBackend)
        return self.database

    @property
    def path(self) -> Path:
        return self._file.path

    def _conn(self) -> Connection:
        """This thread's connection (the SQL functions the triggers call are registered on it)."""
        return self._file.db.connection()

    @contextmanager
    def _write(self, *uris: str, exclusive: bool = False) -> Iterator[Connection]:
        """One write transaction. ``uris`` are the memories and aliases the write creates, changes or
        claims; ``exclusive`` is for writes over the whole store (an import). SQLite's write
        transaction holds the whole file, so both only matter in the team database (``postgres``)."""
        with self._file.db.write() as conn:
            yield conn

    def _lock_uris(self, conn: Connection, uris: Sequence[str]) -> None:
        """Hold these URIs until the transaction ends (SQLite's write lock already holds everything)."""

    def _resolve_locked(
        self, conn: Connection, uri: str, *, include_deleted: bool = False
    ) -> tuple[MemoryRow, str | None]:
        """``_resolve`` inside a write that will change the memory: its row held until the end."""
        return self._resolve(conn, uri, include_deleted=include_deleted)

    # --- lookups ------------------------------------------------------------------------

    def _memory_by_uri(self, conn: Connection, uri: str) -> MemoryRow | None:
        row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.uri = ?", (uri,)).fetchone()
        return MemoryRow.from_row(row) if row else None

    def _memory_by_id(self, conn: Connection, memory_id: int) -> MemoryRow:
        row = conn.execute(f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id = ?", (memory_id,)).fetchone()
        return MemoryRow.from_row(row)

    def _alias_target(self, conn: Connection, uri: str) -> int | None:
        row = conn.execute("SELECT memory_id FROM aliases WHERE alias_uri = ?", (uri,)).fetchone()
        return int(row[0]) if row else None

    def _aliases_of(self, conn: Connection, memory_id: int) -> list[str]:
        rows = conn.execute(
            "SELECT alias_uri FROM aliases WHERE memory_id = ? ORDER BY alias_uri", (memory_id,)
        )
        return [r[0] for r in rows]

    def _resolve(
        self, conn: Connection, uri: str, *, include_deleted: bool = False
    ) -> tuple[MemoryRow, str | None]:
        """The memory ``uri`` names, directly or through an alias, and the alias used if any."""
        memory = self._memory_by_uri(conn, uri)
        via: str | None = None
        if memory is None:
            target = self._alias_target(conn, uri)
            if target is None:
                raise refusals.not_found(uri)
            memory = self._memory_by_id(conn, target)
            via = uri
        if memory.status == "deleted" and not include_deleted:
            raise refusals.not_found(uri, deleted=True)
        memory.aliases = self._aliases_of(conn, memory.id)
        return memory, via

    def resolve(self, uri: str, *, include_deleted: bool = False) -> tuple[MemoryRow, str | None]:
        return self._resolve(self._conn(), uri, include_deleted=include_deleted)

    def _taken(self, conn: Connection, uri: str) -> bool:
        """Whether ``uri`` names a memory (deleted ones too) or an alias."""
        return self._memory_by_uri(conn, uri) is not None or self._alias_target(conn, uri) is not None

    def _ensure_free(self, conn: Connection, uri: str) -> None:
        existing = self._memory_by_uri(conn, uri)
        if existing is not None:
            raise refusals.already_exists(uri, "deleted" if existing.status == "deleted" else "memory")
        target = self._alias_target(conn, uri)
        if target is not None:
            raise refusals.already_exists(uri, "alias", self._memory_by_id(conn, target).uri)
