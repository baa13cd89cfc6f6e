"""The task rules, written once in SQL both databases understand (``SqlTaskStore``).

What differs between SQLite and PostgreSQL is kept to a few members a backend supplies (see
``sqlite`` and ``postgres``); everything a tool can ask -- create, split, update, delete, list,
status moves, the next task, statistics, session links -- is here once. What the rules refuse
is raised as ``hostd.ToolError`` where it is found (``refusals``), inside the transaction, so
nothing of a refused call is kept.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from hostd_db import utc_now

from hostd_tasks.models import NoTaskReason, Note, StuckTask, TaskRecord
from hostd_tasks.rules import (
    NOTES_TOTAL_MAX,
    PRIORITIES,
    STATUSES,
    Priority,
    Status,
    allowed_next,
    claimer_after,
    priority_name,
    priority_rank,
)
from hostd_tasks.store import refusals
from hostd_tasks.store.interface import (
    Deletion,
    ListPage,
    ListPosition,
    NextTask,
    SessionLink,
    Stats,
    StatusChange,
    TaskDetails,
    TaskEdit,
    Update,
)
from hostd_tasks.store.rows import (
    Connection,
    append_history,
    deletion_time,
    history_of,
    is_live,
    json_or,
    record_from_row,
    related_tasks,
    stored_moment,
    stored_stamp,
    wait_path,
)

T = TypeVar("T")

#: True for a task that still waits on a dependency which is not completed.
WAITING_ON_DEPENDENCY = """
    EXISTS (SELECT 1 FROM task_dependencies AS d JOIN tasks AS dep ON dep.task_id = d.depends_on
            WHERE d.task_id = t.task_id AND dep.status <> 'completed')
"""

#: True for a parent with a subtask not completed: the work to hand out is the subtask.
WAITING_ON_SUBTASK = """
    EXISTS (SELECT 1 FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status <> 'completed')
"""

#: The most urgent pending task that waits on nothing: an index walk over ``tasks_by_status``.
NEXT_READY = (
    "SELECT t.seq, t.task_id FROM tasks AS t WHERE t.status = 'pending' "
    f"AND NOT {WAITING_ON_DEPENDENCY} AND NOT {WAITING_ON_SUBTASK} ORDER BY t.priority, t.seq LIMIT 1"
)
#: A pending task waiting on a failed dependency or subtask.
STUCK_BEHIND_FAILED = """
    t.status = 'pending' AND (
        EXISTS (SELECT 1 FROM task_dependencies AS d JOIN tasks AS dep ON dep.task_id = d.depends_on
                WHERE d.task_id = t.task_id AND dep.status = 'failed')
        OR EXISTS (SELECT 1 FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status = 'failed'))
"""
#: Stuck tasks named in one get_next_task answer; get_task_stats counts them all.
STUCK_SHOWN = 20
#: History entries one get_task answer shows (the newest); the total is always given.
HISTORY_SHOWN = 200

GENERATED_ID_PREFIX = "t-"


class SqlTaskStore(ABC):
    """The task rules, written once in SQL both databases understand; subclasses supply the rest.

    What differs between SQLite and PostgreSQL is kept to a few members: how a transaction is
    run (``_read``/``_write``, each taking a unit of work that may be run again), the JSON
    aggregates of a record, how a page of ids is passed, the search index, new ids, and locks.
    SQLite's write transaction locks the whole file, so its locks are no-ops; PostgreSQL locks
    the rows a write changes and serialises the writes that reshape the list (see there).
    """

    #: The columns every record is read from, in ``record_from_row`` order; dependencies come as a JSON
    #: array, subtask counts as a JSON object (text). Labels and notes are read per page.
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

    def get(self, task_id: str) -> TaskRecord:
        return self._read(lambda conn: self._fetch(conn, task_id))

    def details(self, task_id: str) -> TaskDetails:
        """A task (or a deleted task's last record) with its history and its neighbours both ways."""

        def work(conn: Connection) -> TaskDetails:
            task = self._fetch_or_none(conn, task_id)
            deleted_at = None
            if task is None:
                deleted_at = deletion_time(conn, task_id)
                if deleted_at is None:
                    raise refusals.task_not_found(task_id)
                (record,) = conn.execute(
                    "SELECT record FROM deleted_tasks WHERE task_id = ?", (task_id,)
                ).fetchone()
                task = TaskRecord.from_stored_json(record)
            (history_total,) = conn.execute(
                "SELECT COUNT(*) FROM task_history WHERE task_id = ?", (task_id,)
            ).fetchone()
            history = history_of(conn, task_id, newest=HISTORY_SHOWN)
            depends_on = related_tasks(
                conn,
                "SELECT dep.task_id, dep.title, dep.status FROM task_dependencies AS d "
                "JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = ? ORDER BY d.position",
                task_id,
            )
            dependents = related_tasks(
                conn,
                "SELECT t.task_id, t.title, t.status FROM task_dependencies AS d "
                "JOIN tasks AS t ON t.task_id = d.task_id WHERE d.depends_on = ? ORDER BY t.priority, t.seq",
                task_id,
            )
            subtasks = related_tasks(
                conn,
                "SELECT task_id, title, status FROM tasks WHERE parent_id = ? ORDER BY priority, seq",
                task_id,
            )
            return TaskDetails(
                task, deleted_at, history, int(history_total), depends_on, dependents, subtasks
            )

        return self._read(work)

    # --- create --------------------------------------------------------------------------

    def create(
        self,
        *,
        title: str,
        description: str,
        priority: Priority,
        task_id: str | None,
        depends_on: Sequence[str],
        parent_id: str | None = None,
        labels: Sequence[str] = (),
        acceptance: str = "",
        by: str | None = None,
    ) -> TaskRecord:
        """Add a pending task, created by the member ``by``; its dependencies and parent must exist."""

        def work(conn: Connection) -> TaskRecord:
            self._lock_list(conn)
            created = self._insert(
                conn,
                title=title,
                description=description,
                priority=priority,
                task_id=task_id,
                depends_on=depends_on,
                parent_id=parent_id,
                labels=labels,
                acceptance=acceptance,
                stamp=stored_stamp(utc_now()),
                by=by,
            )
            return self._fetch(conn, created)

        return self._write(work)

    def split(
        self, task_id: str, subtasks: Sequence[dict[str, object]], *, by: str | None = None
    ) -> tuple[TaskRecord, list[TaskRecord]]:
        """Create several subtasks of one task in one transaction: all of them, or none.

        Each item takes ``create``'s keyword arguments (parent aside); a later item may depend
        on an earlier one by the task_id it was given.
        """

        def work(conn: Connection) -> tuple[TaskRecord, list[TaskRecord]]:
            self._lock_list(conn)
            self._fetch_locked(conn, task_id)
            stamp = stored_stamp(utc_now())
            created = [
                self._insert(conn, **{**spec, "parent_id": task_id, "stamp": stamp, "by": by})  # type: ignore[arg-type]
                for spec in subtasks
            ]
            append_history(conn, task_id, "split", {"subtasks": created}, stamp, by)
            conn.execute("UPDATE tasks SET updated_at = ? WHERE task_id = ?", (stamp, task_id))
            return self._fetch(conn, task_id), [self._fetch(conn, child) for child in created]

        return self._write(work)

    def _insert(
        self,
        conn: Connection,
        *,
        title: str,
        description: str,
        priority: Priority,
        task_id: str | None,
        depends_on: Sequence[str],
        parent_id: str | None,
        labels: Sequence[str],
        acceptance: str,
        stamp: str,
        by: str | None,
    ) -> str:
        """Insert one pending task inside the caller's write transaction; return its id.

        A new task has no dependents, so the only cycle it can close runs through its parent:
        depending on its parent (or any ancestor), which waits on it as a subtask. Without a
        parent the one cycle a caller can ask for is a task naming itself.
        """
        wanted = list(dict.fromkeys(depends_on))
        if task_id is not None and task_id in wanted:
            raise refusals.dependency_cycle([task_id, task_id])
        if task_id is not None and (is_live(conn, task_id) or deletion_time(conn, task_id) is not None):
            raise refusals.task_exists(task_id, deleted=not is_live(conn, task_id))
        missing = [dep for dep in wanted if not is_live(conn, dep)]
        if missing:  # create_task has always answered NOT_FOUND here
            raise refusals.dependencies_missing(missing, code="NOT_FOUND")
        if parent_id is not None and not is_live(conn, parent_id):
            raise refusals.task_not_found(
                parent_id, argument="parent_id", deleted_at=deletion_time(conn, parent_id)
            )
        seq: int | None = None
        if task_id is None:
            # Only once the arguments are known good: a PostgreSQL sequence does not roll back.
            task_id, seq = self._allocate(conn)
        columns = (
            "task_id, title, description, status, priority, created_at, updated_at, parent_id, acceptance, "
            "created_by"
        )
        values: tuple[object, ...] = (
            task_id,
            title,
            description,
            priority_rank(priority),
            stamp,
            stamp,
            parent_id,
            acceptance,
            by,
        )
        if seq is None:
            conn.execute(
                f"INSERT INTO tasks ({columns}) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)", values
            )
        else:
            conn.execute(
                f"INSERT INTO tasks (seq, {columns}) VALUES (?, ?, ?, ?, 'pending', ?, ?, ?, ?, ?, ?)",
                (seq, *values),
            )
        conn.executemany(
            "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)",
            [(task_id, dep, position) for position, dep in enumerate(wanted)],
        )
        conn.executemany(
            "INSERT INTO task_labels (task_id, label) VALUES (?, ?)",
            [(task_id, label) for label in dict.fromkeys(labels)],
        )
        if parent_id is not None:
            for dep in wanted:
                path = wait_path(conn, dep, task_id)
                if path is not None:
                    raise refusals.dependency_cycle([task_id, *path])
        self._reindex(conn, task_id)
        created: dict[str, object] = {"title": title, "priority": priority}
        if parent_id is not None:
            created["parent_id"] = parent_id
        if wanted:
            created["depends_on"] = wanted
        append_history(conn, task_id, "created", created, stamp, by)
        return task_id

    # --- update --------------------------------------------------------------------------

    def update(self, task_id: str, edit: TaskEdit, *, by: str | None = None) -> Update:
        """Change what ``edit`` gives, in one transaction; a field given its current value is no change."""

        def work(conn: Connection) -> Update:
            self._lock_list(conn)
            before = self._fetch_locked(conn, task_id)
            stamp = stored_stamp(utc_now())
            changes: dict[str, object] = {}
            scalar = {"title": edit.title, "description": edit.description, "acceptance": edit.acceptance}
            for field, value in scalar.items():
                if value is not None and value != getattr(before, field):
                    conn.execute(f"UPDATE tasks SET {field} = ? WHERE task_id = ?", (value, task_id))
                    changes[field] = {"from": getattr(before, field), "to": value}
            if edit.priority is not None and edit.priority != before.priority:
                conn.execute(
                    "UPDATE tasks SET priority = ? WHERE task_id = ?", (priority_rank(edit.priority), task_id)
                )
                changes["priority"] = {"from": before.priority, "to": edit.priority}
            if edit.labels is not None:
                labels = sorted(dict.fromkeys(edit.labels))
                if labels != before.labels:
                    conn.execute("DELETE FROM task_labels WHERE task_id = ?", (task_id,))
                    conn.executemany(
                        "INSERT INTO task_labels (task_id, label) VALUES (?, ?)",
                        [(task_id, x) for x in labels],
                    )
                    changes["labels"] = {"from": before.labels, "to": labels}
            if edit.depends_on is not None:
                self._replace_dependencies(conn, before, list(dict.fromkeys(edit.depends_on)), changes)
            if edit.parent_id is not None:
                self._move_under(conn, before, edit.parent_id or None, changes)
            if edit.append_note is not None:
                # Counted here, not with SQL LENGTH: PostgreSQL stores a NUL as two characters.
                written = sum(len(note.text) for note in before.notes)
                if written + len(edit.append_note) > NOTES_TOTAL_MAX:
                    raise refusals.notes_too_long(task_id, written, len(edit.append_note))
                conn.execute(
                    "INSERT INTO task_notes (task_id, text, at) VALUES (?, ?, ?)",
                    (task_id, edit.append_note, stamp),
                )
                changes["append_note"] = {"text": edit.append_note}
            if changes:
                conn.execute("UPDATE tasks SET updated_at = ? WHERE task_id = ?", (stamp, task_id))
                append_history(conn, task_id, "edited", changes, stamp, by)
                if changes.keys() & {"title", "description", "acceptance", "labels", "append_note"}:
                    self._reindex(conn, task_id)
            return Update(self._fetch(conn, task_id), sorted(changes))

        return self._write(work)

    @staticmethod
    def _replace_dependencies(
        conn: Connection, before: TaskRecord, wanted: list[str], changes: dict[str, object]
    ) -> None:
        task_id = before.task_id
        if wanted == before.depends_on:
            return
        missing = [dep for dep in wanted if dep != task_id and not is_live(conn, dep)]
        if missing:  # the argument update_task was given names no task
            raise refusals.dependencies_missing(missing, code="INVALID_ARGUMENT")
        conn.execute("DELETE FROM task_dependencies WHERE task_id = ?", (task_id,))
        conn.executemany(
            "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)",
            [(task_id, dep, position) for position, dep in enumerate(wanted)],
        )
        for dep in wanted:
            if dep in before.depends_on:
                continue  # an edge that was already there closes no new loop
            path = wait_path(conn, dep, task_id)
            if path is not None:
                raise refusals.dependency_cycle([task_id, *path])
        changes["depends_on"] = {"from": before.depends_on, "to": wanted}

    @staticmethod
    def _move_under(
        conn: Connection, before: TaskRecord, parent_id: str | None, changes: dict[str, object]
    ) -> None:
        task_id = before.task_id
        if parent_id == before.parent_id:
            return
        if parent_id is not None:
            if parent_id != task_id and not is_live(conn, parent_id):
                raise refusals.task_not_found(
                    parent_id, argument="parent_id", deleted_at=deletion_time(conn, parent_id)
                )
            # The parent will wait on this task: a loop if this task already waits on the parent.
            path = wait_path(conn, task_id, parent_id)
            if path is not None:
                raise refusals.dependency_cycle([parent_id, *path], argument="parent_id")
        conn.execute("UPDATE tasks SET parent_id = ? WHERE task_id = ?", (parent_id, task_id))
        changes["parent_id"] = {"from": before.parent_id, "to": parent_id}

    # --- delete --------------------------------------------------------------------------

    def delete(
        self, task_id: str, *, drop_dependencies: bool, even_if_in_progress: bool, by: str | None = None
    ) -> Deletion:
        """Remove a task; its last record and its history stay, so get_task can still explain it.

        Refused while an agent works on it (unless asked), while it has subtasks, and while other
        tasks depend on it unless ``drop_dependencies``: then those dependencies are dropped and
        each dependent's history says so.
        """

        def work(conn: Connection) -> Deletion:
            self._lock_list(conn)
            task = self._fetch_locked(conn, task_id)
            if task.status == "in_progress" and not even_if_in_progress:
                raise refusals.delete_refused_in_progress(task_id)
            subtasks = [
                str(c) for (c,) in conn.execute("SELECT task_id FROM tasks WHERE parent_id = ?", (task_id,))
            ]
            if subtasks:
                raise refusals.delete_refused_subtasks(task_id, subtasks)
            dependents = [
                str(d)
                for (d,) in conn.execute(
                    "SELECT task_id FROM task_dependencies WHERE depends_on = ? ORDER BY task_id", (task_id,)
                )
            ]
            if dependents and not drop_dependencies:
                raise refusals.delete_refused_dependents(task_id, dependents)
            stamp = stored_stamp(utc_now())
            for dependent in dependents:
                conn.execute(
                    "DELETE FROM task_dependencies WHERE task_id = ? AND depends_on = ?", (dependent, task_id)
                )
                conn.execute("UPDATE tasks SET updated_at = ? WHERE task_id = ?", (stamp, dependent))
                append_history(
                    conn,
                    dependent,
                    "dependency_dropped",
                    {"depends_on": task_id, "because": "deleted"},
                    stamp,
                    by,
                )
            (seq,) = conn.execute("SELECT seq FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
            for table in ("task_dependencies", "task_labels", "task_notes"):
                conn.execute(f"DELETE FROM {table} WHERE task_id = ?", (task_id,))
            self._drop_search(conn, int(seq))
            conn.execute("DELETE FROM tasks WHERE task_id = ?", (task_id,))
            conn.execute(
                "INSERT INTO deleted_tasks (task_id, record, deleted_at) VALUES (?, ?, ?)",
                (task_id, task.model_dump_json(), stamp),
            )
            append_history(
                conn, task_id, "deleted", {"status": task.status, "dropped_from": dependents}, stamp, by
            )
            return Deletion(task, dependents)

        return self._write(work)

    # --- list ----------------------------------------------------------------------------

    def list_page(
        self,
        *,
        status: Status | None,
        priority: Priority | None,
        limit: int,
        after: ListPosition | None,
        label: str | None = None,
        parent_id: str | None = None,
        query: str | None = None,
        created_by: str | None = None,
        claimed_by: str | None = None,
    ) -> ListPage:
        """Most urgent first (P0..P2, then oldest); ``after`` is the (priority, seq) keyset cursor.

        ``query`` must hold a word (``match_expression`` is not None); the tool checks that first.
        """
        filters: list[str] = []
        values: list[object] = []
        if status is not None:
            filters.append("t.status = ?")
            values.append(status)
        if priority is not None:
            filters.append("t.priority = ?")
            values.append(priority_rank(priority))
        if label is not None:
            filters.append(
                "EXISTS (SELECT 1 FROM task_labels AS l WHERE l.task_id = t.task_id AND l.label = ?)"
            )
            values.append(label)
        if parent_id is not None:
            filters.append("t.parent_id = ?")
            values.append(parent_id)
        for column, member in (("created_by", created_by), ("claimed_by", claimed_by)):
            if member is not None:
                filters.append(f"t.{column} = ?")
                values.append(member)
        if query is not None:
            condition, parameter = self._search_filter(query)
            filters.append(condition)
            values.append(parameter)
        where = " AND ".join(filters) or "1 = 1"
        page_where, page_values = where, list(values)
        if after is not None:
            page_where += " AND (t.priority, t.seq) > (?, ?)"
            page_values += list(after)

        def work(conn: Connection) -> ListPage:
            if parent_id is not None:
                self._fetch(conn, parent_id, argument="parent_id")
            (total,) = conn.execute(f"SELECT COUNT(*) FROM tasks AS t WHERE {where}", values).fetchone()
            rows = conn.execute(
                f"SELECT {self.record_columns}, t.priority, t.seq FROM tasks AS t WHERE {page_where} "
                "ORDER BY t.priority, t.seq LIMIT ?",
                [*page_values, limit + 1],
            ).fetchall()
            more = len(rows) > limit
            rows = rows[:limit]
            next_after = (int(rows[-1][-2]), int(rows[-1][-1])) if more and rows else None
            return ListPage(self._records(conn, [row[:-2] for row in rows]), int(total), next_after)

        return self._read(work)

    # --- status --------------------------------------------------------------------------

    def set_status(self, task_id: str, new_status: Status, *, by: str | None = None) -> StatusChange:
        """Move a task along the transition table (under its row lock); the same status again is no change.

        The move also settles who holds it (``claimer_after``): ``by`` on a move to in_progress.
        """

        def work(conn: Connection) -> StatusChange:
            current = self._fetch_locked(conn, task_id)
            if current.status == new_status:
                return StatusChange(current, current.status, changed=False)
            if new_status not in allowed_next(current.status):
                raise refusals.transition_refused(task_id, current.status, new_status)
            stamp = stored_stamp(utc_now())
            conn.execute(
                "UPDATE tasks SET status = ?, updated_at = ?, claimed_by = ? WHERE task_id = ?",
                (new_status, stamp, claimer_after(new_status, current.claimed_by, by), task_id),
            )
            append_history(conn, task_id, "status", {"from": current.status, "to": new_status}, stamp, by)
            return StatusChange(self._fetch(conn, task_id), current.status, changed=True)

        return self._write(work)

    # --- next ----------------------------------------------------------------------------

    def next_task(self, *, claim: bool, by: str | None = None) -> NextTask:
        """The most urgent pending leaf of work whose dependencies and subtasks are all completed.

        With ``claim`` the pick and the move to in_progress happen in one write transaction
        under the picked row's lock, so two agents asking at once never receive the same task;
        the member ``by`` becomes its ``claimed_by``.
        """
        query = NEXT_READY

        def work(conn: Connection) -> NextTask:
            if not claim:
                row = conn.execute(query).fetchone()
            else:
                # Skip rows other claimers hold; if that leaves none, wait for their claims to end
                # and look again, so "nothing pending" is never said of a task still being claimed.
                row = conn.execute(query + self.claim_lock).fetchone()
                if row is None and self.claim_lock_waiting:
                    row = conn.execute(query + self.claim_lock_waiting).fetchone()
            if row is None:
                return self._why_none(conn)
            seq, task_id = row
            if claim:
                stamp = stored_stamp(utc_now())
                conn.execute(
                    "UPDATE tasks SET status = 'in_progress', updated_at = ?, claimed_by = ? WHERE seq = ?",
                    (stamp, claimer_after("in_progress", None, by), seq),
                )
                append_history(
                    conn, str(task_id), "claimed", {"from": "pending", "to": "in_progress"}, stamp, by
                )
            return NextTask(self._fetch(conn, str(task_id)), claimed=claim, reason=None)

        return self._write(work) if claim else self._read(work)

    def _why_none(self, conn: Connection) -> NextTask:
        counts = dict(conn.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status").fetchall())
        pending = int(counts.get("pending", 0))
        reason: NoTaskReason
        if not counts:
            reason = "empty"
        elif pending == 0:
            reason = "none_pending"
        else:
            reason = "waiting_on_dependencies"
        stuck = tuple(
            StuckTask(task_id=str(task_id), title=str(title), failed=json_or(failed, []))
            for task_id, title, failed in conn.execute(
                f"SELECT t.task_id, t.title, {self.failed_blockers} FROM tasks AS t "
                f"WHERE {STUCK_BEHIND_FAILED} ORDER BY t.priority, t.seq LIMIT ?",
                (STUCK_SHOWN,),
            )
        )
        return NextTask(
            None,
            claimed=False,
            reason=reason,
            pending=pending,
            waiting=pending,  # nothing was offered, so every pending task waits
            in_progress=int(counts.get("in_progress", 0)),
            blocked=int(counts.get("blocked", 0)),
            stuck=stuck,
        )

    # --- stats ---------------------------------------------------------------------------

    def stats(self) -> Stats:
        def work(conn: Connection) -> tuple[list[Any], int, int, Any]:
            counts = conn.execute(
                "SELECT status, priority, COUNT(*) FROM tasks GROUP BY status, priority"
            ).fetchall()
            (waiting,) = conn.execute(
                f"SELECT COUNT(*) FROM tasks AS t WHERE t.status = 'pending' AND {WAITING_ON_DEPENDENCY}"
            ).fetchone()
            (stuck,) = conn.execute(f"SELECT COUNT(*) FROM tasks AS t WHERE {STUCK_BEHIND_FAILED}").fetchone()
            # Oldest pending: one index seek per priority instead of a scan of every pending task.
            oldest_seqs = [
                seq
                for (seq,) in (
                    conn.execute(
                        "SELECT MIN(seq) FROM tasks WHERE status = 'pending' AND priority = ?", (rank,)
                    ).fetchone()
                    for rank in range(len(PRIORITIES))
                )
                if seq is not None
            ]
            oldest = None
            if oldest_seqs:
                oldest = conn.execute(
                    "SELECT task_id, created_at FROM tasks WHERE seq = ?", (min(oldest_seqs),)
                ).fetchone()
            return counts, int(waiting), int(stuck), oldest

        counts, waiting, stuck, oldest = self._read(work)
        by_status = dict.fromkeys(STATUSES, 0)
        by_priority = dict.fromkeys(PRIORITIES, 0)
        for status, rank, count in counts:
            by_status[status] += count
            by_priority[priority_name(rank)] += count
        return Stats(
            total=sum(by_status.values()),
            by_status=by_status,
            by_priority=by_priority,
            waiting_on_dependencies=waiting,
            stuck_behind_failed=stuck,
            oldest_pending_task_id=str(oldest[0]) if oldest else None,
            oldest_pending_created_at=stored_moment(oldest[1]) if oldest else None,
        )

    # --- sessions ------------------------------------------------------------------------

    def link_session(self, task_id: str, session_id: str, *, by: str | None = None) -> SessionLink:
        """Link (or re-link) a task to a session; linking the same session again changes nothing."""

        def work(conn: Connection) -> SessionLink:
            before = self._fetch_locked(conn, task_id)
            if before.linked_session_id == session_id:
                return SessionLink(before, before.linked_session_id)
            stamp = stored_stamp(utc_now())
            conn.execute(
                "UPDATE tasks SET linked_session_id = ?, updated_at = ? WHERE task_id = ?",
                (session_id, stamp, task_id),
            )
            append_history(
                conn,
                task_id,
                "linked",
                {"session_id": session_id, "previous_session_id": before.linked_session_id},
                stamp,
                by,
            )
            return SessionLink(self._fetch(conn, task_id), before.linked_session_id)

        return self._write(work)

    def tasks_for_session(self, session_id: str) -> list[TaskRecord]:
        def work(conn: Connection) -> list[TaskRecord]:
            rows = conn.execute(
                f"SELECT {self.record_columns} FROM tasks AS t WHERE t.linked_session_id = ? "
                "ORDER BY t.priority, t.seq",
                (session_id,),
            ).fetchall()
            return self._records(conn, rows)

        return self._read(work)
