"""Creating, changing, deleting and rolling back memories, and recording sessions.

Every versioned change passes through ``apply_change``, which keeps the current state as a
version row first, so history is never rewritten and no change goes unattributed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from hostd_db import Connection, utc_stamp

from hostd_memory.store import refusals
from hostd_memory.store.access import Access
from hostd_memory.store.rows import Change, MemoryRow, VersionRow
from hostd_memory.store.schema import (
    VERSION_COLUMNS,
)
from hostd_memory.uris import MemoryUri


class MemoryWrites(Access):
    """Creating, changing, deleting and rolling back memories; their versions; sessions."""

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

        def work(conn: Connection) -> MemoryRow | None:
            self.ensure_free(conn, str(uri))
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
            return self.memory_by_uri(conn, str(uri))

        memory = self.write(work, str(uri))
        assert memory is not None
        return memory

    def update(
        self, uri: str, *, edit: Any, change: Change, author: str | None
    ) -> tuple[MemoryRow, str | None]:
        """Apply ``edit`` (a function of the current content giving (new content, kind)) and ``change``
        as a new version by ``author``: the memory and the kind of change.

        When the result equals the current state nothing is written: the current memory and ``None``.
        """

        def work(conn: Connection) -> tuple[MemoryRow, str | None]:
            memory, _ = self.resolve_locked(conn, uri)
            kind = "metadata"
            wanted = change
            if edit is not None:
                new_content, kind = edit(memory.content)
                wanted = replace(change, content=new_content)
            elif (
                change.status is not None
                and change.priority is None
                and change.disclosure is None
                and change.tags is None
            ):
                kind = "status"
            if wanted.changes_nothing(memory):
                return memory, None
            updated = apply_change(conn, memory, wanted, kind, author=author)
            updated.aliases = memory.aliases
            return updated, kind

        return self.write(work, uri)

    def soft_delete(self, uri: str, *, author: str | None) -> MemoryRow:
        """Mark the memory deleted as a new version by ``author`` (rollback brings it back)."""

        def work(conn: Connection) -> MemoryRow:
            memory, _ = self.resolve_locked(conn, uri)
            return apply_change(conn, memory, Change(status="deleted"), "status", "deleted", author=author)

        return self.write(work, uri)

    def remove_alias(self, alias_uri: str) -> str | None:
        """Delete an alias; the URI of the memory it pointed to, or None if it is not an alias."""

        def work(conn: Connection) -> str | None:
            target = self.alias_target(conn, alias_uri)
            if target is None:
                return None
            conn.execute("DELETE FROM aliases WHERE alias_uri = ?", (alias_uri,))
            return self.memory_by_id(conn, target).uri

        return self.write(work, alias_uri)

    def purge(self, uri: str) -> tuple[MemoryRow, int, list[str]]:
        """Remove a memory for good with its versions and aliases (deleted ones too)."""

        def work(conn: Connection) -> tuple[MemoryRow, int, list[str]]:
            memory = self.memory_by_uri(conn, uri)
            if memory is None:
                raise refusals.not_found(uri)
            aliases = self.aliases_of(conn, memory.id)
            versions = conn.execute(
                "SELECT count(*) FROM memory_versions WHERE memory_id = ?", (memory.id,)
            ).fetchone()[0]
            conn.execute("DELETE FROM memory_versions WHERE memory_id = ?", (memory.id,))
            conn.execute("DELETE FROM aliases WHERE memory_id = ?", (memory.id,))
            conn.execute("DELETE FROM memories WHERE id = ?", (memory.id,))
            return memory, int(versions), aliases

        memory, versions, aliases = self.write(work, uri)
        self.large_counts.clear()  # counts fall only here: count afresh
        self.common_tokens.clear()
        return memory, versions + 1, aliases

    def add_alias(self, target_uri: str, alias_uri: str) -> MemoryRow:
        def work(conn: Connection) -> MemoryRow:
            memory, _ = self.resolve_in(conn, target_uri)
            self.ensure_free(conn, alias_uri)
            conn.execute(
                "INSERT INTO aliases (alias_uri, memory_id, created_at) VALUES (?, ?, ?)",
                (alias_uri, memory.id, utc_stamp()),
            )
            memory.aliases = self.aliases_of(conn, memory.id)
            return memory

        return self.write(work, target_uri, alias_uri)

    def count_access(self, memory_id: int) -> tuple[int, str]:
        """Count one access now; the stored count and time, so the read that counted can report them."""

        def work(conn: Connection) -> Any:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
                (utc_stamp(), memory_id),
            )
            # Read back in the same transaction (not RETURNING: older SQLite builds lack it).
            return conn.execute(
                "SELECT access_count, last_accessed_at FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()

        row = self.write(work)
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
            memory, _ = self.resolve_in(conn, uri, include_deleted=True)
            current = [current_version(memory)] if include_current and before is None else []
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

        return self.read(work)

    def version_pair(self, uri: str, first: int, second: int) -> tuple[MemoryRow, VersionRow, VersionRow]:
        def work(conn: Connection) -> tuple[MemoryRow, VersionRow, VersionRow]:
            memory, _ = self.resolve_in(conn, uri, include_deleted=True)
            return memory, version_of(conn, memory, first), version_of(conn, memory, second)

        return self.read(work)

    def rollback(self, uri: str, version: int, *, author: str | None) -> tuple[MemoryRow, VersionRow, bool]:
        """Restore a version's content, priority and disclosure as a new version; and whether it changed.

        A soft-deleted memory comes back as active; otherwise its status stays as it is. When the
        memory already holds that state (the current version, or an identical one), nothing is
        written: a new identical version would only bury the history.
        """

        def work(conn: Connection) -> tuple[MemoryRow, VersionRow, bool]:
            memory, _ = self.resolve_locked(conn, uri, include_deleted=True)
            target = version_of(conn, memory, version)
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
            updated = apply_change(conn, memory, change, "rollback", f"to version {version}", author=author)
            updated.aliases = self.aliases_of(conn, memory.id)
            return updated, target, True

        return self.write(work, uri)

    # --- sessions -----------------------------------------------------------------------

    def save_session(
        self, title: str, summary: str, memory: tuple[MemoryUri, str, int] | None, *, author: str | None
    ) -> tuple[int, str, MemoryRow | None]:
        """Record a session and, when ``memory`` is given, create its memory in the same transaction.

        The memory URI gets a numeric suffix when the slug is already taken that day.
        """
        stamp = utc_stamp()

        def work(conn: Connection) -> tuple[int, MemoryRow | None]:
            created: MemoryRow | None = None
            memory_uri: str | None = None
            if memory is not None:
                base, content, priority = memory
                candidate = base
                suffix = 2
                self.hold(conn, str(candidate))
                while self.memory_by_uri(conn, str(candidate)) or self.alias_target(conn, str(candidate)):
                    candidate = MemoryUri(base.domain, f"{base.path}-{suffix}")
                    suffix += 1
                    self.hold(conn, str(candidate))
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
                created = self.memory_by_uri(conn, str(candidate))
                memory_uri = str(candidate)
            session_id = self.engine.insert_returning_id(
                conn,
                "INSERT INTO sessions (title, summary, memory_uri, created_at) VALUES (?, ?, ?, ?)",
                (title, summary, memory_uri, stamp),
            )
            return session_id, created

        session_id, created = self.write(work)
        return session_id, stamp, created


def apply_change(
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
    conn.execute(INSERT_VERSION, version_values(memory.id, current_version(memory)))
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


#: Keeps one version of a memory; its values are ``version_values``.
INSERT_VERSION = (
    f"INSERT INTO memory_versions (memory_id, {VERSION_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def version_values(memory_id: int, version: VersionRow) -> tuple[Any, ...]:
    """``INSERT_VERSION``'s values for ``version`` of memory ``memory_id``, in ``VERSION_COLUMNS`` order."""
    return (
        memory_id,
        version.version,
        version.content,
        version.priority,
        version.disclosure,
        version.status,
        version.change,
        version.change_note,
        version.created_at,
        json.dumps(version.tags),
        version.author,
    )


def current_version(memory: MemoryRow) -> VersionRow:
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


def version_of(conn: Connection, memory: MemoryRow, version: int) -> VersionRow:
    if version == memory.version:
        return current_version(memory)
    row = conn.execute(
        f"SELECT {VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? AND version = ?",
        (memory.id, version),
    ).fetchone()
    if row is None:
        raise refusals.version_not_found(memory.uri, version, memory.version)
    return VersionRow.from_row(row)
