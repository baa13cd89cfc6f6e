"""The store's foundation: the database the host opened, and how rows become whole records.

``StoreBase`` runs every unit of work through the plugin's ``hostd_db.Database`` (SQLite file or
team database, one interface) and keeps here, once, the few things the two databases spell
differently: the JSON aggregates of a record, the search index (FTS5 table / ``tsvector``
column), new ids, and row locks. On it: whole records, a task by id (NOT_FOUND when there is
none), the search index rewritten from what is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from hostd_db import Database

from hostd_tasks.models import Note, TaskRecord
from hostd_tasks.store import refusals
from hostd_tasks.store.rows import (
    Connection,
    deletion_time,
    is_live,
    record_from_row,
    stored_moment,
)
from hostd_tasks.store.search import indexed_text, match_expression, ts_query, ts_vector

T = TypeVar("T")

#: Generated ids: ``t-<n>``, short and in creation order.
GENERATED_ID_PREFIX = "t-"
#: The lock of writes that reshape the list (create, split, update, delete): ids, dependencies,
#: parents and cycle checks see each other's results, as SQLite's single writer does. Claims and
#: status moves never wait for it (they lock the task's row).
LIST_LOCK = "list"

# The columns every record is read from, in ``record_from_row`` order; dependencies come as a JSON
# array, subtask counts as a JSON object (text). Labels and notes are read per page.
_RECORD_COLUMNS = {
    "sqlite": """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_group_array(depends_on) FROM
        (SELECT d.depends_on FROM task_dependencies AS d WHERE d.task_id = t.task_id ORDER BY d.position)),
    t.parent_id, t.acceptance,
    (SELECT json_group_object(status, n) FROM
        (SELECT c.status, COUNT(*) AS n FROM tasks AS c WHERE c.parent_id = t.task_id GROUP BY c.status)),
    t.created_by, t.claimed_by
""",
    "postgres": """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_agg(d.depends_on ORDER BY d.position)::text FROM task_dependencies AS d
        WHERE d.task_id = t.task_id),
    t.parent_id, t.acceptance,
    (SELECT json_object_agg(k.status, k.n)::text FROM
        (SELECT c.status, COUNT(*) AS n FROM tasks AS c WHERE c.parent_id = t.task_id GROUP BY c.status)
        AS k),
    t.created_by, t.claimed_by
""",
}

# The failed tasks a task waits on, directly: dependencies and subtasks (a JSON array of ids).
_FAILED_BLOCKERS = {
    "sqlite": """
    (SELECT json_group_array(blocker) FROM (
        SELECT d.depends_on AS blocker FROM task_dependencies AS d
        JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = t.task_id AND dep.status = 'failed'
        UNION
        SELECT c.task_id FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status = 'failed'))
""",
    "postgres": """
    (SELECT json_agg(b.blocker)::text FROM (
        SELECT d.depends_on AS blocker FROM task_dependencies AS d
        JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = t.task_id AND dep.status = 'failed'
        UNION
        SELECT c.task_id FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status = 'failed') AS b)
""",
}


class StoreBase:
    """The database and the spellings that differ, and records read through them.

    SQLite's write transaction locks the whole file, so row locks and the list lock cost nothing
    there; PostgreSQL locks the rows a write changes, picks claims with ``FOR UPDATE SKIP
    LOCKED`` and serialises the writes that reshape the list (``LIST_LOCK``). PostgreSQL reads
    run REPEATABLE READ, so a list's page and its total come from one snapshot, as on SQLite.
    """

    def __init__(self, database: Database) -> None:
        self.database = database
        dialect = database.dialect
        self.postgres = dialect.is_postgres
        self.record_columns = _RECORD_COLUMNS[dialect.name]
        self.failed_blockers = _FAILED_BLOCKERS[dialect.name]
        #: Appended to the claim's SELECT: the lock that makes one claimer the only one.
        self.claim_lock = dialect.lock_rows(of="t", skip_locked=True)
        #: Appended when the first look found nothing: a lock that waits for claims still in flight.
        self.claim_lock_waiting = dialect.lock_rows(of="t")

    def close(self) -> None:
        """Nothing of its own: the host closes the database."""

    # --- transactions and the spellings that differ ------------------------------------------

    def _read(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one read transaction that sees one consistent snapshot."""
        return self.database.read(work)

    def _write(self, work: Callable[[Connection], T], *, lock: str | None = None) -> T:
        """``work`` in one write transaction (run again if the database asks for it)."""
        return self.database.write(work, lock=lock)

    def _ids_in(self, column: str, ids: list[str]) -> tuple[str, object]:
        """A condition 'column is one of ids' and its one parameter (a page may hold 1,000 ids)."""
        return self.database.dialect.ids_in(column, ids)

    def _search_filter(self, query: str) -> tuple[str, object]:
        """A condition on ``t`` for tasks matching every term of ``query``, and its parameter."""
        if self.postgres:
            return "t.search @@ ?::tsquery", ts_query(query)
        return "t.seq IN (SELECT rowid FROM task_search WHERE task_search MATCH ?)", match_expression(query)

    def _store_search(self, conn: Connection, seq: int, text_parts: list[str]) -> None:
        """Replace the search index entry of the task at ``seq``."""
        if self.postgres:
            conn.execute("UPDATE tasks SET search = ?::tsvector WHERE seq = ?", (ts_vector(*text_parts), seq))
            return
        conn.execute("DELETE FROM task_search WHERE rowid = ?", (seq,))
        conn.execute("INSERT INTO task_search (rowid, body) VALUES (?, ?)", (seq, indexed_text(*text_parts)))

    def _drop_search(self, conn: Connection, seq: int) -> None:
        """Remove the search index entry of a task about to be deleted (PostgreSQL's goes with the row)."""
        if not self.postgres:
            conn.execute("DELETE FROM task_search WHERE rowid = ?", (seq,))

    def _allocate(self, conn: Connection) -> tuple[str, int | None]:
        """A generated id never used before, ``t-<n>``, and the ``seq`` to insert it with (None: the default).

        SQLite: ``n`` starts past the highest ``seq`` (the write lock makes it this writer's).
        PostgreSQL: ``n`` is drawn from the ``seq`` identity sequence (no ``MAX()+1`` race).
        Numbers already taken by a given id, or by a deleted task, are skipped.
        """
        if self.postgres:
            while True:
                (number,) = conn.execute("SELECT nextval(pg_get_serial_sequence('tasks', 'seq'))").fetchone()
                task_id = f"{GENERATED_ID_PREFIX}{number}"
                if not is_live(conn, task_id) and deletion_time(conn, task_id) is None:
                    return task_id, int(number)
        (highest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM tasks").fetchone()
        number = int(highest) + 1
        while is_live(conn, f"{GENERATED_ID_PREFIX}{number}") or (
            deletion_time(conn, f"{GENERATED_ID_PREFIX}{number}") is not None
        ):
            number += 1
        return f"{GENERATED_ID_PREFIX}{number}", None

    def _lock_task(self, conn: Connection, task_id: str) -> None:
        """Hold the task's row until the transaction ends (SQLite's write lock already does)."""
        if self.postgres:
            conn.execute("SELECT 1 FROM tasks WHERE task_id = ? FOR UPDATE", (task_id,))

    # --- records -------------------------------------------------------------------------

    def _records(self, conn: Connection, rows: Sequence[Sequence[object]]) -> list[TaskRecord]:
        """Whole records for rows of ``record_columns``: labels and notes read in one query each per page.

        Read apart from the row (not as JSON inside it) so a note holding any character, NUL
        included, comes back exactly as written.
        """
        ids = [str(row[0]) for row in rows]
        labels: dict[str, list[str]] = {task_id: [] for task_id in ids}
        notes: dict[str, list[Note]] = {task_id: [] for task_id in ids}
        if ids:
            condition, page = self._ids_in("task_id", ids)
            for task_id, label in conn.execute(
                f"SELECT task_id, label FROM task_labels WHERE {condition} ORDER BY task_id, label", (page,)
            ):
                labels[task_id].append(label)
            for task_id, text, at in conn.execute(
                f"SELECT task_id, text, at FROM task_notes WHERE {condition} ORDER BY seq", (page,)
            ):
                notes[task_id].append(Note(text=text, at=stored_moment(at)))
        return [
            record_from_row(row, labels[task_id], notes[task_id])
            for row, task_id in zip(rows, ids, strict=True)
        ]

    def _fetch_or_none(self, conn: Connection, task_id: str) -> TaskRecord | None:
        row = conn.execute(
            f"SELECT {self.record_columns} FROM tasks AS t WHERE t.task_id = ?", (task_id,)
        ).fetchone()
        return None if row is None else self._records(conn, [row])[0]

    def _fetch(self, conn: Connection, task_id: str, *, argument: str = "task_id") -> TaskRecord:
        """The live task ``task_id``; NOT_FOUND (naming ``argument``) when there is none."""
        task = self._fetch_or_none(conn, task_id)
        if task is None:
            raise refusals.task_not_found(task_id, argument=argument, deleted_at=deletion_time(conn, task_id))
        return task

    def _fetch_locked(self, conn: Connection, task_id: str) -> TaskRecord:
        """The task as it is now, its row held by this transaction until it ends."""
        self._lock_task(conn, task_id)
        return self._fetch(conn, task_id)

    def _reindex(self, conn: Connection, task_id: str) -> None:
        """Rewrite a task's entry of the search index from what is stored now."""
        seq, title, description, acceptance = conn.execute(
            "SELECT seq, title, description, acceptance FROM tasks WHERE task_id = ?", (task_id,)
        ).fetchone()
        notes = [
            str(text)
            for (text,) in conn.execute(
                "SELECT text FROM task_notes WHERE task_id = ? ORDER BY seq", (task_id,)
            )
        ]
        labels = [
            str(label)
            for (label,) in conn.execute("SELECT label FROM task_labels WHERE task_id = ?", (task_id,))
        ]
        self._store_search(conn, int(seq), [title, description, acceptance, *notes, " ".join(labels)])
