"""The task store: one SQLite file shared by every hostd process and thread that serves tasks.

Built on ``hostd_fs.Database`` (WAL, busy timeout, a connection per thread, ``BEGIN IMMEDIATE``
for writes), so two IDE windows can share a list. Every operation a busy list repeats --
creating a task, changing a status, finding the next task -- is an index seek, so it costs the
same with 10,000 tasks as with 100:

- ``tasks(status, priority, seq)`` serves the "next pending task" walk and status-filtered lists;
- ``tasks(priority, seq)`` serves unfiltered lists in urgency order;
- the primary key of ``task_dependencies`` (task_id, depends_on) lets the dependency check be an
  indexed ``NOT EXISTS`` per candidate, never a load of the whole list.

``seq`` is the rowid: insertion order under the write lock, hence "oldest first".
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from hostd_fs import Database

from hostd_tasks.models import (
    PRIORITIES,
    STATUSES,
    Priority,
    Status,
    TaskRecord,
    allowed_next,
    priority_name,
    priority_rank,
)

MIGRATIONS: list[str] = [
    """
    CREATE TABLE tasks (
        seq INTEGER PRIMARY KEY,
        task_id TEXT NOT NULL UNIQUE,
        title TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL
            CHECK (status IN ('pending', 'in_progress', 'completed', 'failed', 'blocked')),
        priority INTEGER NOT NULL CHECK (priority IN (0, 1, 2)),
        linked_session_id TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    );
    CREATE INDEX tasks_by_status ON tasks (status, priority, seq);
    CREATE INDEX tasks_by_urgency ON tasks (priority, seq);
    CREATE INDEX tasks_by_session ON tasks (linked_session_id) WHERE linked_session_id IS NOT NULL;
    CREATE TABLE task_dependencies (
        task_id TEXT NOT NULL REFERENCES tasks (task_id),
        depends_on TEXT NOT NULL REFERENCES tasks (task_id),
        position INTEGER NOT NULL,
        PRIMARY KEY (task_id, depends_on)
    ) WITHOUT ROWID;
    """,
]

#: The columns every record is read from, in ``_record`` order; dependencies come as a JSON array.
RECORD_COLUMNS = """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_group_array(depends_on) FROM
        (SELECT d.depends_on FROM task_dependencies AS d WHERE d.task_id = t.task_id ORDER BY d.position))
"""

#: True for a task that still waits on a dependency which is not completed.
WAITING_ON_DEPENDENCY = """
    EXISTS (SELECT 1 FROM task_dependencies AS d JOIN tasks AS dep ON dep.task_id = d.depends_on
            WHERE d.task_id = t.task_id AND dep.status <> 'completed')
"""

GENERATED_ID_PREFIX = "t-"


# --- what the store refuses, in terms the tools translate for people -------------------------


class StoreRefusal(Exception):
    """An operation the rules refuse; tools turn each kind into an error envelope."""


class TaskNotFound(StoreRefusal):
    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


class TaskExists(StoreRefusal):
    def __init__(self, task_id: str) -> None:
        super().__init__(task_id)
        self.task_id = task_id


class DependenciesMissing(StoreRefusal):
    def __init__(self, missing: list[str]) -> None:
        super().__init__(missing)
        self.missing = missing


class DependencyCycle(StoreRefusal):
    def __init__(self, cycle: list[str]) -> None:
        super().__init__(cycle)
        self.cycle = cycle


class TransitionRefused(StoreRefusal):
    def __init__(self, task_id: str, current: Status, requested: Status) -> None:
        super().__init__(task_id, current, requested)
        self.task_id = task_id
        self.current = current
        self.requested = requested
        self.allowed = list(allowed_next(current))


# --- answers that carry more than a record ---------------------------------------------------


@dataclass(frozen=True)
class StatusChange:
    task: TaskRecord
    previous_status: Status
    changed: bool


NoTaskReason = Literal["empty", "none_pending", "waiting_on_dependencies"]


@dataclass(frozen=True)
class NextTask:
    task: TaskRecord | None
    claimed: bool
    reason: NoTaskReason | None
    pending: int = 0
    waiting: int = 0
    in_progress: int = 0
    blocked: int = 0


@dataclass(frozen=True)
class Page:
    tasks: list[TaskRecord]
    total: int
    next_after: tuple[int, int] | None


@dataclass(frozen=True)
class Stats:
    total: int
    by_status: dict[Status, int]
    by_priority: dict[Priority, int]
    waiting_on_dependencies: int
    oldest_pending_task_id: str | None
    oldest_pending_created_at: datetime | None


@dataclass(frozen=True)
class SessionLink:
    task: TaskRecord
    previous_session_id: str | None


def utc_now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    """Fixed-width ISO text, so stored stamps also sort as text."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _record(row: Sequence[object]) -> TaskRecord:
    task_id, title, description, status, rank, session, created, updated, depends = row
    return TaskRecord(
        task_id=str(task_id),
        title=str(title),
        description=str(description),
        status=status,  # type: ignore[arg-type]
        priority=priority_name(int(rank)),  # type: ignore[call-overload]
        depends_on=json.loads(str(depends)) if depends else [],
        linked_session_id=None if session is None else str(session),
        created_at=datetime.fromisoformat(str(created)),
        updated_at=datetime.fromisoformat(str(updated)),
    )


class TaskStore:
    """Tasks and their dependencies in one SQLite file, safe across threads and processes."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.db = Database(path, list(MIGRATIONS))

    def close(self) -> None:
        self.db.close()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        with self.db.read() as conn:
            yield conn

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        with self.db.write() as conn:
            yield conn

    # --- single records ------------------------------------------------------------------

    @staticmethod
    def _fetch(conn: sqlite3.Connection, task_id: str) -> TaskRecord:
        row = conn.execute(
            f"SELECT {RECORD_COLUMNS} FROM tasks AS t WHERE t.task_id = ?", (task_id,)
        ).fetchone()
        if row is None:
            raise TaskNotFound(task_id)
        return _record(row)

    def get(self, task_id: str) -> TaskRecord:
        with self._reading() as conn:
            return self._fetch(conn, task_id)

    # --- create --------------------------------------------------------------------------

    def create(
        self,
        *,
        title: str,
        description: str,
        priority: Priority,
        task_id: str | None,
        depends_on: Sequence[str],
    ) -> TaskRecord:
        """Add a pending task; its dependencies must already exist.

        Dependencies are fixed at creation and may only name tasks that exist then, so every
        edge points from a newer task to an older one and the graph cannot close a loop; the
        one cycle a caller can ask for is a task that names itself.
        """
        wanted = list(dict.fromkeys(depends_on))
        if task_id is not None and task_id in wanted:
            raise DependencyCycle([task_id, task_id])
        with self._writing() as conn:
            if task_id is None:
                task_id = self._generate_id(conn)
            elif conn.execute("SELECT 1 FROM tasks WHERE task_id = ?", (task_id,)).fetchone():
                raise TaskExists(task_id)
            missing = [
                dep
                for dep in wanted
                if not conn.execute("SELECT 1 FROM tasks WHERE task_id = ?", (dep,)).fetchone()
            ]
            if missing:
                raise DependenciesMissing(missing)
            stamp = _stamp(utc_now())
            conn.execute(
                "INSERT INTO tasks (task_id, title, description, status, priority, created_at, updated_at) "
                "VALUES (?, ?, ?, 'pending', ?, ?, ?)",
                (task_id, title, description, priority_rank(priority), stamp, stamp),
            )
            conn.executemany(
                "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)",
                [(task_id, dep, position) for position, dep in enumerate(wanted)],
            )
            return self._fetch(conn, task_id)

    @staticmethod
    def _generate_id(conn: sqlite3.Connection) -> str:
        """``t-<n>``: short, readable, in creation order; skips numbers a caller already chose."""
        (highest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM tasks").fetchone()
        number = int(highest) + 1
        while conn.execute(
            "SELECT 1 FROM tasks WHERE task_id = ?", (f"{GENERATED_ID_PREFIX}{number}",)
        ).fetchone():
            number += 1
        return f"{GENERATED_ID_PREFIX}{number}"

    # --- list ----------------------------------------------------------------------------

    def list_page(
        self,
        *,
        status: Status | None,
        priority: Priority | None,
        limit: int,
        after: tuple[int, int] | None,
    ) -> Page:
        """Most urgent first (P0..P2, then oldest); ``after`` is the (priority, seq) keyset cursor."""
        filters: list[str] = []
        values: list[object] = []
        if status is not None:
            filters.append("t.status = ?")
            values.append(status)
        if priority is not None:
            filters.append("t.priority = ?")
            values.append(priority_rank(priority))
        where = " AND ".join(filters) or "1"
        page_where, page_values = where, list(values)
        if after is not None:
            page_where += " AND (t.priority, t.seq) > (?, ?)"
            page_values += list(after)
        with self._reading() as conn:
            (total,) = conn.execute(f"SELECT COUNT(*) FROM tasks AS t WHERE {where}", values).fetchone()
            rows = conn.execute(
                f"SELECT {RECORD_COLUMNS}, t.priority, t.seq FROM tasks AS t WHERE {page_where} "
                "ORDER BY t.priority, t.seq LIMIT ?",
                [*page_values, limit + 1],
            ).fetchall()
        more = len(rows) > limit
        rows = rows[:limit]
        next_after = (int(rows[-1][-2]), int(rows[-1][-1])) if more and rows else None
        return Page([_record(row[:-2]) for row in rows], int(total), next_after)

    # --- status --------------------------------------------------------------------------

    def set_status(self, task_id: str, new_status: Status) -> StatusChange:
        """Move a task along the transition table; the same status again changes nothing."""
        with self._writing() as conn:
            current = self._fetch(conn, task_id)
            if current.status == new_status:
                return StatusChange(current, current.status, changed=False)
            if new_status not in allowed_next(current.status):
                raise TransitionRefused(task_id, current.status, new_status)
            conn.execute(
                "UPDATE tasks SET status = ?, updated_at = ? WHERE task_id = ?",
                (new_status, _stamp(utc_now()), task_id),
            )
            return StatusChange(self._fetch(conn, task_id), current.status, changed=True)

    # --- next ----------------------------------------------------------------------------

    def next_task(self, *, claim: bool) -> NextTask:
        """The most urgent pending task whose dependencies are all completed.

        With ``claim`` the pick and the move to in_progress happen in one write transaction,
        so two agents asking at once never receive the same task.
        """
        query = (
            f"SELECT t.seq FROM tasks AS t WHERE t.status = 'pending' AND NOT {WAITING_ON_DEPENDENCY} "
            "ORDER BY t.priority, t.seq LIMIT 1"
        )
        opened = self._writing() if claim else self._reading()
        with opened as conn:
            row = conn.execute(query).fetchone()
            if row is None:
                return self._why_none(conn)
            (seq,) = row
            if claim:
                conn.execute(
                    "UPDATE tasks SET status = 'in_progress', updated_at = ? WHERE seq = ?",
                    (_stamp(utc_now()), seq),
                )
            found = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM tasks AS t WHERE t.seq = ?", (seq,)
            ).fetchone()
            return NextTask(_record(found), claimed=claim, reason=None)

    @staticmethod
    def _why_none(conn: sqlite3.Connection) -> NextTask:
        counts = dict(conn.execute("SELECT status, COUNT(*) FROM tasks GROUP BY status").fetchall())
        pending = int(counts.get("pending", 0))
        reason: NoTaskReason
        if not counts:
            reason = "empty"
        elif pending == 0:
            reason = "none_pending"
        else:
            reason = "waiting_on_dependencies"
        return NextTask(
            None,
            claimed=False,
            reason=reason,
            pending=pending,
            waiting=pending,  # nothing was offered, so every pending task waits
            in_progress=int(counts.get("in_progress", 0)),
            blocked=int(counts.get("blocked", 0)),
        )

    # --- stats ---------------------------------------------------------------------------

    def stats(self) -> Stats:
        with self._reading() as conn:
            counts = conn.execute(
                "SELECT status, priority, COUNT(*) FROM tasks GROUP BY status, priority"
            ).fetchall()
            (waiting,) = conn.execute(
                f"SELECT COUNT(*) FROM tasks AS t WHERE t.status = 'pending' AND {WAITING_ON_DEPENDENCY}"
            ).fetchone()
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
        by_status = dict.fromkeys(STATUSES, 0)
        by_priority = dict.fromkeys(PRIORITIES, 0)
        for status, rank, count in counts:
            by_status[status] += count
            by_priority[priority_name(rank)] += count
        return Stats(
            total=sum(by_status.values()),
            by_status=by_status,
            by_priority=by_priority,
            waiting_on_dependencies=int(waiting),
            oldest_pending_task_id=str(oldest[0]) if oldest else None,
            oldest_pending_created_at=datetime.fromisoformat(str(oldest[1])) if oldest else None,
        )

    # --- sessions ------------------------------------------------------------------------

    def link_session(self, task_id: str, session_id: str) -> SessionLink:
        """Link (or re-link) a task to a session; linking the same session again changes nothing."""
        with self._writing() as conn:
            before = self._fetch(conn, task_id)
            if before.linked_session_id == session_id:
                return SessionLink(before, before.linked_session_id)
            conn.execute(
                "UPDATE tasks SET linked_session_id = ?, updated_at = ? WHERE task_id = ?",
                (session_id, _stamp(utc_now()), task_id),
            )
            return SessionLink(self._fetch(conn, task_id), before.linked_session_id)

    def tasks_for_session(self, session_id: str) -> list[TaskRecord]:
        with self._reading() as conn:
            rows = conn.execute(
                f"SELECT {RECORD_COLUMNS} FROM tasks AS t WHERE t.linked_session_id = ? "
                "ORDER BY t.priority, t.seq",
                (session_id,),
            ).fetchall()
        return [_record(row) for row in rows]
