"""The store's foundation: what each database supplies, and how rows become whole records.

``StoreBase`` names the few members a backend (``sqlite``, ``postgres``) supplies -- how a
transaction runs, the JSON aggregates of a record, how a page of ids is passed, the search
index, new ids, locks -- and builds on them what every operation needs: whole records, a task
by id (NOT_FOUND when there is none), the search index rewritten from what is stored.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import TypeVar

from hostd_tasks.models import Note, TaskRecord
from hostd_tasks.store import refusals
from hostd_tasks.store.rows import (
    Connection,
    deletion_time,
    record_from_row,
    stored_moment,
)

T = TypeVar("T")

#: Generated ids: ``t-<n>``, short and in creation order.
GENERATED_ID_PREFIX = "t-"


class StoreBase(ABC):
    """What a backend supplies (abstract here), and records read through it.

    What differs between SQLite and PostgreSQL is kept to these few members: how a transaction
    is run (``_read``/``_write``, each taking a unit of work that may be run again), the JSON
    aggregates of a record, how a page of ids is passed, the search index, new ids, and locks.
    SQLite's write transaction locks the whole file, so its locks are no-ops; PostgreSQL locks
    the rows a write changes and serialises the writes that reshape the list (see there).
    """

    #: The columns every record is read from, in ``record_from_row`` order; dependencies come as
    #: a JSON array, subtask counts as a JSON object (text). Labels and notes are read per page.
    record_columns: str
    #: The failed tasks a task waits on, directly: dependencies and subtasks (a JSON array of ids).
    failed_blockers: str
    #: Appended to the claim's SELECT: the lock that makes one claimer the only one.
    claim_lock = ""
    #: Appended when the first look found nothing: a lock that waits for claims still in flight.
    claim_lock_waiting = ""

    # --- what a backend supplies ---------------------------------------------------------

    @abstractmethod
    def _read(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one read transaction that sees one consistent snapshot."""

    @abstractmethod
    def _write(self, work: Callable[[Connection], T]) -> T:
        """``work`` in one write transaction (run again if the database asks for it)."""

    @abstractmethod
    def _ids_in(self, column: str, ids: list[str]) -> tuple[str, object]:
        """A condition 'column is one of ids' and its one parameter (a page may hold 1,000 ids)."""

    @abstractmethod
    def _search_filter(self, query: str) -> tuple[str, object]:
        """A condition on ``t`` for tasks matching every term of ``query``, and its parameter."""

    @abstractmethod
    def _store_search(self, conn: Connection, seq: int, text_parts: list[str]) -> None:
        """Replace the search index entry of the task at ``seq``."""

    @abstractmethod
    def _drop_search(self, conn: Connection, seq: int) -> None:
        """Remove the search index entry of a task about to be deleted."""

    @abstractmethod
    def _allocate(self, conn: Connection) -> tuple[str, int | None]:
        """A generated task id never used before, and the ``seq`` to insert it with (None: the default)."""

    def _lock_task(self, conn: Connection, task_id: str) -> None:  # noqa: B027 - a no-op by design
        """Hold the task's row until the transaction ends (SQLite's write lock already does)."""

    def _lock_list(self, conn: Connection) -> None:  # noqa: B027 - a no-op by design
        """Serialise writes that reshape the list: create, split, update, delete."""

    def close(self) -> None:  # noqa: B027 - a store with nothing of its own to close
        """Release what the store holds."""

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
