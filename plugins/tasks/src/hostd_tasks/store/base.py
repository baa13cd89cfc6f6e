"""The store's foundation: the database the host opened, and how rows become whole records.

``StoreBase`` runs every unit of work through the plugin's ``hostd_db.Database`` (SQLite file or
team database, one interface) and keeps here, once, the few things the two databases spell
differently: the JSON aggregates of a record, the search index (FTS5 table / ``tsvector``
column), new ids, and row locks. On it: whole records, a task by id (NOT_FOUND when there is
none), the search index rewritten from what is stored.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import TypeVar, cast

from hostd_db import Connection, Database, utc_now, utc_stamp

from hostd_tasks.models import Note, TaskRecord
from hostd_tasks.search import indexed_text, match_expression, ts_query, ts_vector
from hostd_tasks.store import refusals
from hostd_tasks.store.rows import (
    append_history,
    deletion_time,
    is_live,
    record_from_row,
    stored_moment,
)

T = TypeVar("T")

#: Generated ids: ``t-<n>``, short and in creation order.
GENERATED_ID_PREFIX = "t-"
#: The lock of writes that reshape the list (create, split, update, delete): ids, dependencies,
#: parents and cycle checks see each other's results, as SQLite's single writer does. Claims and
#: status moves never wait for it (they lock the task's row).
LIST_LOCK = "list"

# The columns every record is read from, in ``record_from_row`` order; dependencies come as a JSON
# array, subtask counts as a JSON object (text). On SQLite labels and notes are read per page (no
# round trips in-process); on PostgreSQL they end the row as text arrays (labels, note texts, note
# times), so a page costs one statement, NUL-safe (``hostd_db.pgtext`` decodes inside arrays).
_RECORD_COLUMNS = {
    "sqlite": """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_group_array(depends_on) FROM
        (SELECT d.depends_on FROM task_dependencies AS d WHERE d.task_id = t.task_id ORDER BY d.position)),
    t.parent_id, t.acceptance,
    (SELECT json_group_object(status, n) FROM
        (SELECT c.status, COUNT(*) AS n FROM tasks AS c WHERE c.parent_id = t.task_id GROUP BY c.status)),
    t.created_by, t.claimed_by, t.lease_expires_at, t.claim_count, t.expired_claims
""",
    "postgres": """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_agg(d.depends_on ORDER BY d.position)::text FROM task_dependencies AS d
        WHERE d.task_id = t.task_id),
    t.parent_id, t.acceptance,
    (SELECT json_object_agg(k.status, k.n)::text FROM
        (SELECT c.status, COUNT(*) AS n FROM tasks AS c WHERE c.parent_id = t.task_id GROUP BY c.status)
        AS k),
    t.created_by, t.claimed_by, t.lease_expires_at, t.claim_count, t.expired_claims,
    ARRAY(SELECT l.label FROM task_labels AS l WHERE l.task_id = t.task_id ORDER BY l.label),
    ARRAY(SELECT n.text FROM task_notes AS n WHERE n.task_id = t.task_id ORDER BY n.seq),
    ARRAY(SELECT n.at FROM task_notes AS n WHERE n.task_id = t.task_id ORDER BY n.seq)
""",
}

#: PostgreSQL: whether any lease has lapsed by the database's clock, as one column of a read's
#: statement. The earliest lease is one seek on ``tasks_by_lease`` (``min`` reads the index's first
#: entry), whatever the number of claims; lapsed exactly when a ``_LAPSED`` row exists.
LAPSED_COLUMN = "COALESCE((SELECT min(x.lease_expires_at) FROM tasks AS x) < clock_timestamp(), false)"

#: Lapsed leases one sweep returns to pending; a read sweeps again until none is left.
EXPIRED_PER_SWEEP = 500

#: The claims whose lease has lapsed: a seek on ``tasks_by_lease``. A lease is set exactly while a
#: task is in_progress; the status is checked on the rows found, not in the query, where it would
#: lead SQLite's planner to walk every task in progress instead.
_LAPSED = (
    "SELECT t.task_id, t.claimed_by, t.lease_expires_at, t.status FROM tasks AS t "
    "WHERE t.lease_expires_at < ?"
)


class _LeasesLapsed(Exception):
    """Raised inside a read that found a lapsed lease: the read runs again after the sweep."""


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
        #: Appended to the claim's SELECT: the lock that makes one claimer the only one.
        self.claim_lock = dialect.lock_rows(of="t", skip_locked=True)
        #: Appended when the first look found nothing: a lock that waits for claims still in flight.
        self.claim_lock_waiting = dialect.lock_rows(of="t")

    def close(self) -> None:
        """Nothing of its own: the host closes the database."""

    # --- transactions and the spellings that differ ------------------------------------------

    def _read(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one read transaction that sees one consistent snapshot, in which no lease has lapsed.

        A lapsed lease is found with one index seek; then the lapsed claims go back to pending (a
        write, ``_expire_leases``) and the read runs again, so every answer shows a task whose
        lease lapsed as pending, whichever replica or process answers.
        """

        def current(conn: Connection) -> T:
            if self._lease_lapsed(conn):
                raise _LeasesLapsed
            return work(conn)

        try:
            return self.database.read(current)
        except _LeasesLapsed:
            self._sweep_lapsed()
            return self.database.read(work)

    def _read_at_once(
        self, body: str, parameters: Sequence[object], *, head: str = "", order_by: str = ""
    ) -> list[tuple[object, ...]]:
        """PostgreSQL: a read that is one statement, so one round trip and no transaction (a
        statement sees one snapshot), with the lapsed-lease check (``LAPSED_COLUMN``) inside it.

        Rows are ``head``'s columns then ``body``'s (a subquery's, ``b``; ``order_by`` names its
        columns as ``b.x``); when ``body`` finds nothing there is one row, its body columns NULL.
        ``parameters`` go in that order: the head's, then the body's. A lapsed lease is swept
        (``_expire_leases``) and the statement run once more, as ``_read`` does.
        """
        head_columns = f", {head}" if head else ""
        order = f" ORDER BY {order_by}" if order_by else ""
        sql = (
            f"SELECT {LAPSED_COLUMN}{head_columns}, b.* FROM (SELECT 1) AS one "
            f"LEFT JOIN LATERAL ({body}) AS b ON true{order}"
        )

        def run(conn: Connection) -> list[tuple[object, ...]]:
            return [tuple(row) for row in conn.execute(sql, parameters).fetchall()]

        rows = self.database.read(run, snapshot=False)
        if rows[0][0]:
            self._sweep_lapsed()
            rows = self.database.read(run, snapshot=False)
        return [row[1:] for row in rows]

    def _lease_lapsed(self, conn: Connection) -> bool:
        """Whether a lease has lapsed (PostgreSQL: by its clock): one statement, one index seek."""
        if self.postgres:
            (lapsed,) = conn.execute(f"SELECT {LAPSED_COLUMN}").fetchone()
            return bool(lapsed)
        return conn.execute(_LAPSED + " LIMIT 1", (utc_stamp(self._clock(conn)),)).fetchone() is not None

    def _sweep_lapsed(self) -> None:
        """Return every lapsed claim to pending (``_expire_leases``), a sweep at a time."""
        while self._write(lambda conn: self._expire_leases(conn, self._clock(conn))) == EXPIRED_PER_SWEEP:
            pass

    def _write(self, work: Callable[[Connection], T], *, lock: str | None = None) -> T:
        """``work`` in one write transaction (run again if the database asks for it)."""
        return self.database.write(work, lock=lock)

    def _clock(self, conn: Connection) -> datetime:
        """Now, by the database's clock: PostgreSQL's (one clock for every replica and process), or
        for the SQLite file this machine's (every process sharing the file runs on it)."""
        if self.postgres:
            (now,) = conn.execute("SELECT clock_timestamp()").fetchone()
            return stored_moment(now)
        return utc_now()

    def _expire_leases(self, conn: Connection, now: datetime, *, task_id: str | None = None) -> int:
        """Return the claims whose lease lapsed before ``now`` to pending (only ``task_id``'s when given).

        Each is counted (``expired_claims``), remembers whose lease it was (``lease_lost_by``, so a
        late update from that member can be refused) and gets a ``lease_expired`` history entry
        dated when the lease lapsed: every write to a task sweeps it first, so nothing else can
        have happened to it in between. PostgreSQL skips rows another transaction holds (that one
        sweeps or changes them). Answers how many were returned.
        """
        sql, parameters = _LAPSED, [utc_stamp(now)]
        if task_id is not None:
            sql += " AND t.task_id = ?"
            parameters.append(task_id)
        rows = conn.execute(
            f"{sql} ORDER BY t.lease_expires_at LIMIT {EXPIRED_PER_SWEEP}{self.claim_lock}", parameters
        ).fetchall()
        for lapsed_id, holder, expired_at, status in rows:
            if status != "in_progress":  # never written so; skipped rather than trusted
                continue
            at = utc_stamp(stored_moment(expired_at))
            conn.execute(
                "UPDATE tasks SET status = 'pending', claimed_by = NULL, lease_expires_at = NULL, "
                "lease_seconds = NULL, expired_claims = expired_claims + 1, lease_lost_by = ?, "
                "updated_at = ? WHERE task_id = ?",
                (holder, at, lapsed_id),
            )
            append_history(
                conn,
                str(lapsed_id),
                "lease_expired",
                {"holder": holder, "from": "in_progress", "to": "pending"},
                at,
                None,
            )
        return len(rows)

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

    def _store_search_many(self, conn: Connection, entries: Sequence[tuple[int, list[str]]]) -> None:
        """``_store_search`` for many tasks at once (``import_tasks``): one statement per kind."""
        if self.postgres:
            conn.executemany(
                "UPDATE tasks SET search = ?::tsvector WHERE seq = ?",
                [(ts_vector(*parts), seq) for seq, parts in entries],
            )
            return
        conn.executemany("DELETE FROM task_search WHERE rowid = ?", [(seq,) for seq, _ in entries])
        conn.executemany(
            "INSERT INTO task_search (rowid, body) VALUES (?, ?)",
            [(seq, indexed_text(*parts)) for seq, parts in entries],
        )

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
        """Whole records for rows of ``record_columns``: labels and notes from the row's arrays
        (PostgreSQL), or read in one query each per page (SQLite).

        Never as JSON inside the row, so a note holding any character, NUL included, comes back
        exactly as written.
        """
        if self.postgres:
            return [self._record_with_arrays(row) for row in rows]
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

    @staticmethod
    def _record_with_arrays(row: Sequence[object]) -> TaskRecord:
        """A record from a PostgreSQL row of ``record_columns``: the record's columns, then its
        labels, note texts and note times as arrays."""
        *columns, labels, texts, times = row
        notes = [
            Note(text=str(text), at=stored_moment(at))
            for text, at in zip(cast("list[str]", texts), cast("list[datetime]", times), strict=True)
        ]
        return record_from_row(columns, [str(label) for label in cast("list[str]", labels)], notes)

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
        """The task as it is now, its row held by this transaction until it ends; a claim whose
        lease has lapsed is returned to pending first (``_expire_leases``)."""
        self._lock_task(conn, task_id)
        self._expire_leases(conn, self._clock(conn), task_id=task_id)
        return self._fetch(conn, task_id)

    @staticmethod
    def _lease_lost_by(conn: Connection, task_id: str) -> str | None:
        """The member whose lease on the task lapsed last (until they claim it again), if any."""
        row = conn.execute("SELECT lease_lost_by FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        return None if row is None or row[0] is None else str(row[0])

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
