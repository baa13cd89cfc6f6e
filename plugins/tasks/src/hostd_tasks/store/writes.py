"""The task store (``TaskStore``): every write, on top of the queries (``queries``) and the
backend contract (``base``), written once in SQL both databases understand.

One class for both databases: the SQLite file (the default) and the team database answer
every call alike, through the ``hostd_db.Database`` the host opened (``TaskStore(ctx.database())``).
What the rules refuse is raised as ``hostd.ToolError`` where it is found (``refusals``),
inside the transaction, so nothing of a refused call is kept.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from hostd_db import Connection, utc_now, utc_stamp

from hostd_tasks.models import TaskRecord
from hostd_tasks.rules import (
    LEASE_SECONDS_DEFAULT,
    NOTES_TOTAL_MAX,
    Priority,
    Status,
    allowed_next,
    claimer_after,
    priority_rank,
)
from hostd_tasks.store import refusals
from hostd_tasks.store.base import LIST_LOCK
from hostd_tasks.store.queries import TaskQueries
from hostd_tasks.store.results import (
    Deletion,
    SessionLink,
    StatusChange,
    TaskEdit,
    Update,
)
from hostd_tasks.store.rows import append_history, deletion_time, is_live, wait_path


class TaskStore(TaskQueries):
    """Creating, splitting, editing, deleting tasks, moving their status and linking sessions.

    Every write takes ``by``, the member making it (the tools pass ``ToolContext.member``); it is
    recorded on what it creates or claims and on each history entry. None records "unknown".
    """

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
                stamp=utc_stamp(utc_now()),
                by=by,
            )
            return self._fetch(conn, created)

        return self._write(work, lock=LIST_LOCK)

    def split(
        self, task_id: str, subtasks: Sequence[dict[str, object]], *, by: str | None = None
    ) -> tuple[TaskRecord, list[TaskRecord]]:
        """Create several subtasks of one task in one transaction: all of them, or none.

        Each item takes ``create``'s keyword arguments (parent aside); a later item may depend
        on an earlier one by the task_id it was given.
        """

        def work(conn: Connection) -> tuple[TaskRecord, list[TaskRecord]]:
            self._fetch_locked(conn, task_id)
            stamp = utc_stamp(utc_now())
            created = [
                self._insert(conn, **{**spec, "parent_id": task_id, "stamp": stamp, "by": by})  # type: ignore[arg-type]
                for spec in subtasks
            ]
            append_history(conn, task_id, "split", {"subtasks": created}, stamp, by)
            conn.execute("UPDATE tasks SET updated_at = ? WHERE task_id = ?", (stamp, task_id))
            return self._fetch(conn, task_id), [self._fetch(conn, child) for child in created]

        return self._write(work, lock=LIST_LOCK)

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
            before = self._fetch_locked(conn, task_id)
            self._refuse_late(conn, before, by)
            now = self._clock(conn)
            stamp = utc_stamp(now)
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
                self._renew_if_holder(conn, before, by, now)
            return Update(self._fetch(conn, task_id), sorted(changes))

        return self._write(work, lock=LIST_LOCK)

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
            stamp = utc_stamp(utc_now())
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

        return self._write(work, lock=LIST_LOCK)

    # --- status --------------------------------------------------------------------------

    def set_status(
        self,
        task_id: str,
        new_status: Status,
        *,
        by: str | None = None,
        lease_seconds: int = LEASE_SECONDS_DEFAULT,
    ) -> StatusChange:
        """Move a task along the transition table (under its row lock); the same status again is no change.

        The move also settles who holds it (``claimer_after``): ``by`` on a move to in_progress,
        which is a claim by id, for a lease of ``lease_seconds``; in_progress again by its holder
        renews the lease. Leaving in_progress ends the lease. A late move from a member whose
        lease lapsed is refused (``_refuse_late``).
        """

        def work(conn: Connection) -> StatusChange:
            current = self._fetch_locked(conn, task_id)
            self._refuse_late(
                conn,
                current,
                by,
                even_if_nobody_holds=new_status != current.status
                and new_status not in allowed_next(current.status),
            )
            now = self._clock(conn)
            if current.status == new_status:
                if new_status == "in_progress" and by is not None and current.claimed_by == by:
                    self._extend(conn, task_id, now, lease_seconds)
                    return StatusChange(self._fetch(conn, task_id), current.status, changed=False)
                return StatusChange(current, current.status, changed=False)
            if new_status not in allowed_next(current.status):
                raise refusals.transition_refused(task_id, current.status, new_status)
            stamp = utc_stamp(now)
            if new_status == "in_progress":
                self._claim(conn, task_id, by=by, now=now, lease_seconds=lease_seconds)
            else:
                conn.execute(
                    "UPDATE tasks SET status = ?, updated_at = ?, claimed_by = ?, lease_expires_at = NULL, "
                    "lease_seconds = NULL WHERE task_id = ?",
                    (new_status, stamp, claimer_after(new_status, current.claimed_by, by), task_id),
                )
            append_history(conn, task_id, "status", {"from": current.status, "to": new_status}, stamp, by)
            return StatusChange(self._fetch(conn, task_id), current.status, changed=True)

        return self._write(work)

    # --- leases --------------------------------------------------------------------------

    def renew(self, task_id: str, *, by: str | None, lease_seconds: int | None = None) -> TaskRecord:
        """Extend ``by``'s lease on the task: it now lapses ``lease_seconds`` (default: the claim's own
        length) from now, by the database's clock. CONFLICT when ``by`` does not hold it."""

        def work(conn: Connection) -> TaskRecord:
            self._held_by(conn, task_id, by)
            self._extend(conn, task_id, self._clock(conn), lease_seconds)
            return self._fetch(conn, task_id)

        return self._write(work)

    def release(self, task_id: str, *, by: str | None) -> TaskRecord:
        """Give up ``by``'s claim: the task is pending again, nobody's, ready for the next claimer."""

        def work(conn: Connection) -> TaskRecord:
            self._held_by(conn, task_id, by)
            stamp = utc_stamp(self._clock(conn))
            conn.execute(
                "UPDATE tasks SET status = 'pending', updated_at = ?, claimed_by = NULL, "
                "lease_expires_at = NULL, lease_seconds = NULL WHERE task_id = ?",
                (stamp, task_id),
            )
            append_history(conn, task_id, "released", {"from": "in_progress", "to": "pending"}, stamp, by)
            return self._fetch(conn, task_id)

        return self._write(work)

    def _held_by(self, conn: Connection, task_id: str, by: str | None) -> TaskRecord:
        """The task, locked, when ``by`` holds its claim now; else the CONFLICT that says who does."""
        task = self._fetch_locked(conn, task_id)
        self._refuse_late(conn, task, by, even_if_nobody_holds=True)
        if task.status != "in_progress" or by is None or task.claimed_by != by:
            raise refusals.not_holder(task_id, by or "unknown", task.claimed_by, task.status)
        return task

    def _refuse_late(
        self, conn: Connection, task: TaskRecord, by: str | None, *, even_if_nobody_holds: bool = False
    ) -> None:
        """Refuse (CONFLICT, nothing applied) a call from a member whose lease on the task lapsed
        (and who has not claimed it again): when someone else has claimed it since, naming them;
        ``even_if_nobody_holds`` (renew, release, a status move only the holder could make) also
        when nobody holds it, saying it is pending again."""
        if by is None or task.claimed_by == by or self._lease_lost_by(conn, task.task_id) != by:
            return
        if task.claimed_by is not None:
            raise refusals.lease_taken(task.task_id, by, task.claimed_by, task.status, task.lease_expires_at)
        if even_if_nobody_holds:
            raise refusals.lease_lapsed(task.task_id, by, task.status)

    def _renew_if_holder(self, conn: Connection, task: TaskRecord, by: str | None, now: datetime) -> None:
        """Any change a claim's holder makes to the task renews the claim's lease."""
        if task.status == "in_progress" and by is not None and task.claimed_by == by:
            self._extend(conn, task.task_id, now, None)

    @staticmethod
    def _extend(conn: Connection, task_id: str, now: datetime, lease_seconds: int | None) -> None:
        """The lease now lapses ``lease_seconds`` (None: the claim's own length) after ``now``."""
        if lease_seconds is None:
            (stored,) = conn.execute(
                "SELECT lease_seconds FROM tasks WHERE task_id = ?", (task_id,)
            ).fetchone()
            lease_seconds = LEASE_SECONDS_DEFAULT if stored is None else int(stored)
        conn.execute(
            "UPDATE tasks SET lease_expires_at = ?, lease_seconds = ? WHERE task_id = ?",
            (utc_stamp(now + timedelta(seconds=lease_seconds)), lease_seconds, task_id),
        )

    # --- sessions ------------------------------------------------------------------------

    def link_session(self, task_id: str, session_id: str, *, by: str | None = None) -> SessionLink:
        """Link (or re-link) a task to a session; linking the same session again changes nothing."""

        def work(conn: Connection) -> SessionLink:
            before = self._fetch_locked(conn, task_id)
            if before.linked_session_id == session_id:
                return SessionLink(before, before.linked_session_id)
            stamp = utc_stamp(utc_now())
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
