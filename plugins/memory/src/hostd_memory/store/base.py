"""The store's connections and lookups, which every other part of the store builds on.

Writes run in ``BEGIN IMMEDIATE`` transactions through ``hostd_db.SqliteDatabase``, so threads
and processes sharing the file serialise their read-modify-write steps and version numbers
never collide. The team database's store (``postgres.py``) overrides the connections.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from hostd_memory import search as search_text
from hostd_memory.store import refusals
from hostd_memory.store.rows import (
    Connection,
    MemoryRow,
)
from hostd_memory.store.schema import (
    MEMORY_COLUMNS,
    MIGRATIONS,
)


class StoreBase:
    """Connections and lookups: what every other part of the store builds on."""

    #: The shared tags of a group, joined by U+001F.
    _TAG_LIST = "group_concat(t.tag, char(31))"

    def __init__(self, path: Path, *, busy_timeout_ms: int = 10_000) -> None:
        from hostd_db import SqliteDatabase

        self.path = path
        self._prepared = threading.local()
        self._large_counts: dict[str, int] = {}  # tokens in many memories, and how many (a lower bound)
        self._common_tokens: set[str] = set()  # tokens too common to relate memories by (see related)
        self._db = SqliteDatabase(
            path, [self._with_functions(m) for m in MIGRATIONS], busy_timeout_ms=busy_timeout_ms
        )

    def close(self) -> None:
        self._db.close()

    # --- connections --------------------------------------------------------------------

    @staticmethod
    def _register(conn: sqlite3.Connection) -> None:
        conn.create_function("memory_words_text", 1, search_text.words_text, deterministic=True)

    def _with_functions(self, migration: Any) -> Any:
        def run(conn: sqlite3.Connection) -> None:
            self._register(conn)
            migration(conn)

        run.__name__ = getattr(migration, "__name__", "migration")
        return run

    def _conn(self) -> Connection:
        """This thread's connection, with the SQL functions the triggers call."""
        conn = self._db.connection()
        if getattr(self._prepared, "conn", None) is not conn:
            self._register(conn)
            self._prepared.conn = conn
        return conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        self._conn()
        with self._db.write() as conn:
            yield conn

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
