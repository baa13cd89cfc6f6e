"""The task store in the team database (PostgreSQL): the same rules as SQLite, for many machines.

``TaskStore`` holds the rules; this module supplies what PostgreSQL does differently:

- Transactions go through ``PostgresDatabase.run``, which runs a unit of work again on a
  serialization failure or a deadlock (a bounded number of times) and turns a lost connection
  or a slow statement into UNAVAILABLE / TIMEOUT. Reads run REPEATABLE READ, so a list's page
  and its total come from one snapshot, as on SQLite.
- Writes run READ COMMITTED with explicit locks. ``get_next_task(claim=true)`` picks its row
  with ``FOR UPDATE SKIP LOCKED``: concurrent claimers take different tasks, each exactly once.
  A status move, a session link, an edit and a delete first lock the task's row, so the
  transition table is checked against the status as it is. Writes that reshape the list
  (create, split, update, delete: ids, dependencies, parents, cycle checks) also take one
  transaction-scoped advisory lock, so they see each other's results as SQLite's single writer
  does; claims and status moves never wait for it.
- Ids come from the database: ``t-<n>`` with ``n`` drawn from the ``seq`` identity sequence
  (no ``MAX()+1``), numbers already taken by a given id skipped.
- Search: a ``tsvector`` column (``simple``, built in Python: see ``search``) with a GIN index.
- PostgreSQL text cannot hold NUL, which task text may: strings cross the connection through
  ``encode_text`` / ``decode_text``, a reversible escape that leaves every other string as it is.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hostd_db.pgtext import QmarkConnection

from hostd_tasks.store.base import GENERATED_ID_PREFIX, T
from hostd_tasks.store.rows import Connection, deletion_time, is_live
from hostd_tasks.store.search import ts_query, ts_vector
from hostd_tasks.store.writes import TaskStore

if TYPE_CHECKING:
    import psycopg
    from hostd_db import PostgresDatabase

#: The advisory lock of writes that reshape the list (a per-database key; the schema is per plugin).
LIST_LOCK_KEY = 0x7461736B73  # "tasks"

PG_RECORD_COLUMNS = """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_agg(d.depends_on ORDER BY d.position)::text FROM task_dependencies AS d
        WHERE d.task_id = t.task_id),
    t.parent_id, t.acceptance,
    (SELECT json_object_agg(k.status, k.n)::text FROM
        (SELECT c.status, COUNT(*) AS n FROM tasks AS c WHERE c.parent_id = t.task_id GROUP BY c.status)
        AS k),
    t.created_by, t.claimed_by
"""

PG_FAILED_BLOCKERS = """
    (SELECT json_agg(b.blocker)::text FROM (
        SELECT d.depends_on AS blocker FROM task_dependencies AS d
        JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = t.task_id AND dep.status = 'failed'
        UNION
        SELECT c.task_id FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status = 'failed') AS b)
"""

# NUL-safe text, placeholders and the connection adapter: hostd_db.pgtext.


class PostgresTaskStore(TaskStore):
    """The tasks of a team, in the ``tasks`` schema of the team database."""

    record_columns = PG_RECORD_COLUMNS
    failed_blockers = PG_FAILED_BLOCKERS
    claim_lock = " FOR UPDATE OF t SKIP LOCKED"
    claim_lock_waiting = " FOR UPDATE OF t"

    def __init__(self, database: PostgresDatabase) -> None:
        self.database = database

    def close(self) -> None:
        """Nothing of its own: the host closes the database (a resource of the plugin context)."""

    def _read(self, work: Callable[[Connection], T]) -> T:
        def snapshot(connection: psycopg.Connection[Any]) -> T:
            connection.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            return work(QmarkConnection(connection))

        return self.database.run(snapshot, write=False)

    def _write(self, work: Callable[[Connection], T]) -> T:
        return self.database.run(lambda connection: work(QmarkConnection(connection)), write=True)

    def _lock_task(self, conn: Connection, task_id: str) -> None:
        conn.execute("SELECT 1 FROM tasks WHERE task_id = ? FOR UPDATE", (task_id,))

    def _lock_list(self, conn: Connection) -> None:
        conn.execute("SELECT pg_advisory_xact_lock(?)", (LIST_LOCK_KEY,))

    def _ids_in(self, column: str, ids: list[str]) -> tuple[str, object]:
        return f"{column} = ANY(?)", ids

    def _search_filter(self, query: str) -> tuple[str, object]:
        return "t.search @@ ?::tsquery", ts_query(query)

    def _store_search(self, conn: Connection, seq: int, text_parts: list[str]) -> None:
        conn.execute("UPDATE tasks SET search = ?::tsvector WHERE seq = ?", (ts_vector(*text_parts), seq))

    def _drop_search(self, conn: Connection, seq: int) -> None:
        """The index entry is a column of the task's row: it goes with the row."""

    def _allocate(self, conn: Connection) -> tuple[str, int | None]:
        """``t-<n>`` with ``n`` the row's own ``seq``, drawn from the database's sequence."""
        while True:
            (number,) = conn.execute("SELECT nextval(pg_get_serial_sequence('tasks', 'seq'))").fetchone()
            task_id = f"{GENERATED_ID_PREFIX}{number}"
            if not is_live(conn, task_id) and deletion_time(conn, task_id) is None:
                return task_id, int(number)
