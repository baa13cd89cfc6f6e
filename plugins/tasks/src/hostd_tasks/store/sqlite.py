"""The task store on one SQLite file, shared by every hostd process and thread of one user.

Built on ``hostd_db.SqliteDatabase`` (WAL, busy timeout, a connection per thread, ``BEGIN
IMMEDIATE`` for writes), so two IDE windows can share a list. The rules are ``TaskStore``'s;
this module supplies what SQLite does its own way: JSON aggregates, the FTS5 search index, ids
from the highest ``seq``, and the busy timeout that turns a long-held lock into FILE_LOCKED.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from hostd_db import SqliteDatabase, busy_as_file_locked

from hostd_tasks.store.base import GENERATED_ID_PREFIX, T
from hostd_tasks.store.rows import Connection, deletion_time, is_live
from hostd_tasks.store.schema import SQLITE_MIGRATIONS
from hostd_tasks.store.search import indexed_text, match_expression
from hostd_tasks.store.writes import TaskStore

#: SQLite's ``record_columns`` (see ``TaskStore``).
SQLITE_RECORD_COLUMNS = """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_group_array(depends_on) FROM
        (SELECT d.depends_on FROM task_dependencies AS d WHERE d.task_id = t.task_id ORDER BY d.position)),
    t.parent_id, t.acceptance,
    (SELECT json_group_object(status, n) FROM
        (SELECT c.status, COUNT(*) AS n FROM tasks AS c WHERE c.parent_id = t.task_id GROUP BY c.status)),
    t.created_by, t.claimed_by
"""

#: SQLite's ``failed_blockers``: the failed tasks a task waits on, directly (a JSON array).
SQLITE_FAILED_BLOCKERS = """
    (SELECT json_group_array(blocker) FROM (
        SELECT d.depends_on AS blocker FROM task_dependencies AS d
        JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = t.task_id AND dep.status = 'failed'
        UNION
        SELECT c.task_id FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status = 'failed'))
"""

#: How long a SQLite write waits for another process's write lock before the call is FILE_LOCKED.
SQLITE_BUSY_TIMEOUT_MS = 10_000


class SqliteTaskStore(TaskStore):
    """Tasks and their dependencies in one SQLite file, safe across threads and processes.

    Every write holds the file's write lock (``BEGIN IMMEDIATE``), so writes never interleave;
    a lock held by another process past the busy timeout is ``FILE_LOCKED``, never INTERNAL.
    """

    record_columns = SQLITE_RECORD_COLUMNS
    failed_blockers = SQLITE_FAILED_BLOCKERS

    def __init__(self, path: Path, *, busy_timeout_ms: int | None = None) -> None:
        self.path = path
        self.busy_timeout_ms = SQLITE_BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        self.db = SqliteDatabase(path, list(SQLITE_MIGRATIONS), busy_timeout_ms=self.busy_timeout_ms)

    def close(self) -> None:
        self.db.close()

    def _run(
        self,
        opened: Callable[[], AbstractContextManager[sqlite3.Connection]],
        work: Callable[[Connection], T],
    ) -> T:
        with busy_as_file_locked(str(self.path), self.busy_timeout_ms), opened() as conn:
            return work(conn)

    def _read(self, work: Callable[[Connection], T]) -> T:
        return self._run(self.db.read, work)

    def _write(self, work: Callable[[Connection], T]) -> T:
        return self._run(self.db.write, work)

    def _ids_in(self, column: str, ids: list[str]) -> tuple[str, object]:
        # One JSON parameter, not one '?' per id: any page stays under any SQLite's variable limit.
        return f"{column} IN (SELECT value FROM json_each(?))", json.dumps(ids)

    def _search_filter(self, query: str) -> tuple[str, object]:
        return "t.seq IN (SELECT rowid FROM task_search WHERE task_search MATCH ?)", match_expression(query)

    def _store_search(self, conn: Connection, seq: int, text_parts: list[str]) -> None:
        conn.execute("DELETE FROM task_search WHERE rowid = ?", (seq,))
        conn.execute("INSERT INTO task_search (rowid, body) VALUES (?, ?)", (seq, indexed_text(*text_parts)))

    def _drop_search(self, conn: Connection, seq: int) -> None:
        conn.execute("DELETE FROM task_search WHERE rowid = ?", (seq,))

    def _allocate(self, conn: Connection) -> tuple[str, int | None]:
        """``t-<n>``: short, readable, in creation order; skips numbers already taken or deleted.

        ``n`` starts at the rowid SQLite gives the new row; the write lock makes it this writer's.
        """
        (highest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM tasks").fetchone()
        number = int(highest) + 1
        while is_live(conn, f"{GENERATED_ID_PREFIX}{number}") or (
            deletion_time(conn, f"{GENERATED_ID_PREFIX}{number}") is not None
        ):
            number += 1
        return f"{GENERATED_ID_PREFIX}{number}", None
