"""Creating, changing, deleting and rolling back memories, and recording sessions.

Every versioned change passes through ``Writes._apply``, which keeps the current state as a
version row first, so history is never rewritten and no change goes unattributed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hostd_db import utc_stamp

from hostd_memory.store import refusals
from hostd_memory.store.base import StoreBase
from hostd_memory.store.rows import (
    Change,
    Connection,
    MemoryRow,
    VersionRow,
)
from hostd_memory.store.schema import (
    VERSION_COLUMNS,
)
from hostd_memory.uris import MemoryUri


class Writes(StoreBase):
    """Every change to a memory, as a new version."""

    # --- create, change, delete ---------------------------------------------------------

    def create(
        self,
        uri: MemoryUri,
        content: str,
        priority: int,
        disclosure: str,
        tags: Sequence[str] = (),
        *,
        author: str | None,
    ) -> MemoryRow:
        """Version 1 of a new memory, written by ``author`` (the calling member)."""
        stamp = utc_stamp()
        with self._write(str(uri)) as conn:
            self._ensure_free(conn, str(uri))
            conn.execute(
                "INSERT INTO memories (uri, domain, path, content, priority, disclosure, created_at, "
                "updated_at, tags, author) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(uri),
                    uri.domain,
                    uri.path,
                    content,
                    priority,
                    disclosure,
                    stamp,
                    stamp,
                    json.dumps(list(tags)),
                    author,
                ),
            )
            memory = self._memory_by_uri(conn, str(uri))
        assert memory is not None
        return memory

    def _apply(
        self,
        conn: Connection,
        memory: MemoryRow,
        change: Change,
        kind: str,
        note: str = "",
        *,
        author: str | None,
    ) -> MemoryRow:
        """Keep the current state (with its author) as a version row, then write the new state as
        version n+1 by ``author``. Every versioned change passes here, so none goes unattributed."""
        conn.execute(
            "INSERT INTO memory_versions (memory_id, version, content, priority, disclosure, status, "
            "change, change_note, created_at, tags, author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory.id,
                memory.version,
                memory.content,
                memory.priority,
                memory.disclosure,
                memory.status,
                memory.change,
                memory.change_note,
                memory.updated_at,
                json.dumps(memory.tags),
                memory.author,
            ),
        )
        stamp = utc_stamp()
        updated = replace(
            memory,
            content=memory.content if change.content is None else change.content,
            priority=memory.priority if change.priority is None else change.priority,
            disclosure=memory.disclosure if change.disclosure is None else change.disclosure,
            status=memory.status if change.status is None else change.status,
            tags=memory.tags if change.tags is None else list(change.tags),
            version=memory.version + 1,
            change=kind,
            change_note=note,
            updated_at=stamp,
            author=author,
        )
        conn.execute(
            "UPDATE memories SET content = ?, priority = ?, disclosure = ?, status = ?, tags = ?, "
            "version = ?, change = ?, change_note = ?, updated_at = ?, author = ? WHERE id = ?",
            (
                updated.content,
                updated.priority,
                updated.disclosure,
                updated.status,
                json.dumps(updated.tags),
                updated.version,
                kind,
                note,
                stamp,
                author,
                memory.id,
            ),
        )
        return updated

    def update(
        self, uri: str, *, edit: Any, change: Change, author: str | None
    ) -> tuple[MemoryRow, str | None]:
        """Apply ``edit`` (a function of the current content giving (new content, kind)) and ``change``
        as a new version by ``author``: the memory and the kind of change.

        When the result equals the current state nothing is written: the current memory and ``None``.
        """
        with self._write(uri) as conn:
            memory, _ = self._resolve_locked(conn, uri)
            kind = "metadata"
            if edit is not None:
                new_content, kind = edit(memory.content)
                change = replace(change, content=new_content)
            elif (
                change.status is not None
                and change.priority is None
                and change.disclosure is None
                and change.tags is None
            ):
                kind = "status"
            if change.changes_nothing(memory):
                return memory, None
            updated = self._apply(conn, memory, change, kind, author=author)
        updated.aliases = memory.aliases
        return updated, kind

    def soft_delete(self, uri: str, *, author: str | None) -> MemoryRow:
        """Mark the memory deleted as a new version by ``author`` (rollback brings it back)."""
        with self._write(uri) as conn:
            memory, _ = self._resolve_locked(conn, uri)
            return self._apply(conn, memory, Change(status="deleted"), "status", "deleted", author=author)

    def remove_alias(self, alias_uri: str) -> str | None:
        """Delete an alias; the URI of the memory it pointed to, or None if it is not an alias."""
        with self._write(alias_uri) as conn:
            target = self._alias_target(conn, alias_uri)
            if target is None:
                return None
            conn.execute("DELETE FROM aliases WHERE alias_uri = ?", (alias_uri,))
            return self._memory_by_id(conn, target).uri

    def purge(self, uri: str) -> tuple[MemoryRow, int, list[str]]:
        """Remove a memory for good with its versions and aliases (deleted ones too)."""
        with self._write(uri) as conn:
            memory = self._memory_by_uri(conn, uri)
            if memory is None:
                raise refusals.not_found(uri)
            aliases = self._aliases_of(conn, memory.id)
            versions = conn.execute(
                "SELECT count(*) FROM memory_versions WHERE memory_id = ?", (memory.id,)
            ).fetchone()[0]
            conn.execute("DELETE FROM memory_versions WHERE memory_id = ?", (memory.id,))
            conn.execute("DELETE FROM aliases WHERE memory_id = ?", (memory.id,))
            conn.execute("DELETE FROM memories WHERE id = ?", (memory.id,))
        self._large_counts.clear()  # counts fall only here: count afresh
        self._common_tokens.clear()
        return memory, int(versions) + 1, aliases

    def add_alias(self, target_uri: str, alias_uri: str) -> MemoryRow:
        with self._write(target_uri, alias_uri) as conn:
            memory, _ = self._resolve(conn, target_uri)
            self._ensure_free(conn, alias_uri)
            conn.execute(
                "INSERT INTO aliases (alias_uri, memory_id, created_at) VALUES (?, ?, ?)",
                (alias_uri, memory.id, utc_stamp()),
            )
            memory.aliases = self._aliases_of(conn, memory.id)
        return memory

    def count_access(self, memory_id: int) -> tuple[int, str]:
        """Count one access now; the stored count and time, so the read that counted can report them."""
        with self._write() as conn:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
                (utc_stamp(), memory_id),
            )
            # Read back in the same transaction (not RETURNING: older SQLite builds lack it).
            row = conn.execute(
                "SELECT access_count, last_accessed_at FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
        return int(row[0]), str(row[1])

    # --- versions -----------------------------------------------------------------------

    def versions(
        self, uri: str, limit: int | None = None, *, before: int | None = None, include_current: bool = True
    ) -> tuple[MemoryRow, list[VersionRow], int]:
        """The memory, its versions newest first and how many there are (the current one counted).

        The current version leads the list when ``include_current`` and no ``before`` is given;
        ``before`` keeps only versions older than that number (the next page of a listing).
        """

        def work(conn: Connection) -> tuple[MemoryRow, list[VersionRow], int]:
            memory, _ = self._resolve(conn, uri, include_deleted=True)
            current = [self._current_version(memory)] if include_current and before is None else []
            older = f"SELECT {VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ?"
            params: list[Any] = [memory.id]
            if before is not None:
                older += " AND version < ?"
                params.append(before)
            older += " ORDER BY version DESC"
            if limit is not None:
                older += " LIMIT ?"
                params.append(max(0, limit - len(current)))
            rows = conn.execute(older, params).fetchall()
            total = conn.execute(
                "SELECT count(*) FROM memory_versions WHERE memory_id = ?", (memory.id,)
            ).fetchone()[0]
            return memory, [*current, *(VersionRow.from_row(row) for row in rows)], int(total) + 1

        return self._read(work)

    @staticmethod
    def _current_version(memory: MemoryRow) -> VersionRow:
        return VersionRow(
            memory.version,
            memory.content,
            memory.priority,
            memory.disclosure,
            memory.status,
            memory.change,
            memory.change_note,
            memory.updated_at,
            tags=list(memory.tags),
            current=True,
            author=memory.author,
        )

    def _version(self, conn: Connection, memory: MemoryRow, version: int) -> VersionRow:
        if version == memory.version:
            return self._current_version(memory)
        row = conn.execute(
            f"SELECT {VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? AND version = ?",
            (memory.id, version),
        ).fetchone()
        if row is None:
            raise refusals.version_not_found(memory.uri, version, memory.version)
        return VersionRow.from_row(row)

    def version_pair(self, uri: str, first: int, second: int) -> tuple[MemoryRow, VersionRow, VersionRow]:
        def work(conn: Connection) -> tuple[MemoryRow, VersionRow, VersionRow]:
            memory, _ = self._resolve(conn, uri, include_deleted=True)
            return memory, self._version(conn, memory, first), self._version(conn, memory, second)

        return self._read(work)

    def rollback(self, uri: str, version: int, *, author: str | None) -> tuple[MemoryRow, VersionRow, bool]:
        """Restore a version's content, priority and disclosure as a new version; and whether it changed.

        A soft-deleted memory comes back as active; otherwise its status stays as it is. When the
        memory already holds that state (the current version, or an identical one), nothing is
        written: a new identical version would only bury the history.
        """
        with self._write(uri) as conn:
            memory, _ = self._resolve_locked(conn, uri, include_deleted=True)
            target = self._version(conn, memory, version)
            status = "active" if memory.status == "deleted" else None
            change = Change(
                content=target.content,
                priority=target.priority,
                disclosure=target.disclosure,
                status=status,
                tags=target.tags,
            )
            if change.changes_nothing(memory):
                return memory, target, False
            updated = self._apply(conn, memory, change, "rollback", f"to version {version}", author=author)
            updated.aliases = self._aliases_of(conn, memory.id)
        return updated, target, True

    # --- sessions -----------------------------------------------------------------------

    def save_session(
        self, title: str, summary: str, memory: tuple[MemoryUri, str, int] | None, *, author: str | None
    ) -> tuple[int, str, MemoryRow | None]:
        """Record a session and, when ``memory`` is given, create its memory in the same transaction.

        The memory URI gets a numeric suffix when the slug is already taken that day.
        """
        stamp = utc_stamp()
        created: MemoryRow | None = None
        with self._write() as conn:
            memory_uri: str | None = None
            if memory is not None:
                base, content, priority = memory
                candidate = base
                suffix = 2
                self.engine.lock_uris(conn, [str(candidate)])
                while self._memory_by_uri(conn, str(candidate)) or self._alias_target(conn, str(candidate)):
                    candidate = MemoryUri(base.domain, f"{base.path}-{suffix}")
                    suffix += 1
                    self.engine.lock_uris(conn, [str(candidate)])
                conn.execute(
                    "INSERT INTO memories (uri, domain, path, content, priority, disclosure, created_at, "
                    "updated_at, author) "
                    "VALUES (?, ?, ?, ?, ?, '', ?, ?, ?)",
                    (
                        str(candidate),
                        candidate.domain,
                        candidate.path,
                        content,
                        priority,
                        stamp,
                        stamp,
                        author,
                    ),
                )
                created = self._memory_by_uri(conn, str(candidate))
                memory_uri = str(candidate)
            session_id = self.engine.insert_returning_id(
                conn,
                "INSERT INTO sessions (title, summary, memory_uri, created_at) VALUES (?, ?, ?, ?)",
                (title, summary, memory_uri, stamp),
            )
        return session_id, stamp, created
