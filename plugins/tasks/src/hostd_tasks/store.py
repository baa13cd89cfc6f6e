"""The task store: the rules once (``SqlTaskStore``), on one SQLite file or on the team's PostgreSQL.

``TaskStore`` is the interface the tools use; ``SqliteTaskStore`` (here) keeps the list in one
file shared by every hostd process and thread of one user, ``store_postgres.PostgresTaskStore``
in the team database. The rest of this docstring is about the SQLite file; the PostgreSQL schema
mirrors it (same tables and indexes, the search index a ``tsvector`` column).

The SQLite store is built on ``hostd_db.SqliteDatabase`` (WAL, busy timeout, a connection per thread,
``BEGIN IMMEDIATE`` for writes), so two IDE windows can share a list. Every operation a busy list repeats --
creating a task, changing a status, finding the next task -- is an index seek, so it costs the
same with 10,000 tasks as with 100:

- ``tasks(status, priority, seq)`` serves the "next pending task" walk and status-filtered lists;
- ``tasks(priority, seq)`` serves unfiltered lists in urgency order;
- the primary key of ``task_dependencies`` (task_id, depends_on) lets the dependency check be an
  indexed ``NOT EXISTS`` per candidate, never a load of the whole list.

- ``tasks(parent_id, status)`` finds a parent's open subtasks (get_next_task hands out leaf work)
  and ``task_dependencies(depends_on)`` a task's dependents (delete, get_task, cycle checks);
- ``tasks(created_by, priority, seq)`` and ``tasks(claimed_by, priority, seq)`` serve list_tasks'
  member filters in list order;
- labels, notes and history sit in their own tables keyed by task; ``task_search`` is an FTS5
  index (rowid = seq) of each task's text, kept in step by every write (see ``search``).

``seq`` is the rowid: insertion order under the write lock, hence "oldest first". A deleted task
leaves ``tasks`` (so no list, count or index walk pays for it); its last record stays in
``deleted_tasks`` and its history in ``task_history``, so get_task can still explain it and its id
is never handed out again.
"""

from __future__ import annotations

import json
import sqlite3
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

from hostd_db import SqliteDatabase, SqliteMigration, busy_as_file_locked

from hostd_tasks.models import (
    NOTES_TOTAL_MAX,
    PRIORITIES,
    STATUSES,
    Note,
    Priority,
    Status,
    SubtaskProgress,
    TaskRecord,
    allowed_next,
    claimer_after,
    priority_name,
    priority_rank,
)
from hostd_tasks.search import indexed_text, match_expression

MIGRATIONS: list[SqliteMigration] = [
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


def _add_subtasks_labels_notes_history_and_search(conn: sqlite3.Connection) -> None:
    """Version 2: subtasks, acceptance, labels, notes, history, deletion tombstones, text search.

    A callable, not SQL, because the search index of the tasks already stored is filled with
    text rewritten in Python (CJK bigrams, see ``search``); every existing task also gets its
    'created' history entry, so each task's history starts where the task did.
    """
    for statement in (
        "ALTER TABLE tasks ADD COLUMN parent_id TEXT REFERENCES tasks (task_id)",
        "ALTER TABLE tasks ADD COLUMN acceptance TEXT NOT NULL DEFAULT ''",
        "CREATE INDEX tasks_by_parent ON tasks (parent_id, status)",
        "CREATE INDEX task_dependencies_by_target ON task_dependencies (depends_on, task_id)",
        "CREATE TABLE task_labels (task_id TEXT NOT NULL REFERENCES tasks (task_id), label TEXT NOT NULL, "
        "PRIMARY KEY (task_id, label)) WITHOUT ROWID",
        "CREATE INDEX task_labels_by_label ON task_labels (label, task_id)",
        "CREATE TABLE task_notes (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL REFERENCES tasks (task_id), "
        "text TEXT NOT NULL, at TEXT NOT NULL)",
        "CREATE INDEX task_notes_by_task ON task_notes (task_id, seq)",
        # No foreign key: a deleted task's history outlives it.
        "CREATE TABLE task_history (seq INTEGER PRIMARY KEY, task_id TEXT NOT NULL, event TEXT NOT NULL, "
        "at TEXT NOT NULL, actor TEXT, details TEXT NOT NULL DEFAULT '{}')",
        "CREATE INDEX task_history_by_task ON task_history (task_id, seq)",
        "CREATE TABLE deleted_tasks (task_id TEXT PRIMARY KEY, record TEXT NOT NULL, "
        "deleted_at TEXT NOT NULL) WITHOUT ROWID",
        "CREATE VIRTUAL TABLE task_search USING fts5 (body, tokenize = 'unicode61 remove_diacritics 2', "
        "prefix = '1 2')",
        "INSERT INTO task_history (task_id, event, at, details) "
        """SELECT task_id, 'created', created_at, '{"recorded_at_upgrade": true}' FROM tasks ORDER BY seq""",
    ):
        conn.execute(statement)
    conn.executemany(
        "INSERT INTO task_search (rowid, body) VALUES (?, ?)",
        (
            (seq, indexed_text(title, description))
            for seq, title, description in conn.execute(
                "SELECT seq, title, description FROM tasks"
            ).fetchall()
        ),
    )


# Each migration runs once per database, in order, counted in PRAGMA user_version: add new ones at
# the end and never edit one, since existing tasks.db files have already run it.
MIGRATIONS.append(_add_subtasks_labels_notes_history_and_search)
# Version 3: team members. Who created a task and who claimed it; tasks from before stay null
# (unknown), as do their history entries' ``actor``. Indexed in list order for list_tasks' filters.
MIGRATIONS.append(
    """
    ALTER TABLE tasks ADD COLUMN created_by TEXT;
    ALTER TABLE tasks ADD COLUMN claimed_by TEXT;
    CREATE INDEX tasks_by_creator ON tasks (created_by, priority, seq);
    CREATE INDEX tasks_by_claimer ON tasks (claimed_by, priority, seq);
    """
)

T = TypeVar("T")

#: SQLite's ``record_columns`` (see ``SqlTaskStore``).
SQLITE_RECORD_COLUMNS = """
    t.task_id, t.title, t.description, t.status, t.priority, t.linked_session_id, t.created_at, t.updated_at,
    (SELECT json_group_array(depends_on) FROM
        (SELECT d.depends_on FROM task_dependencies AS d WHERE d.task_id = t.task_id ORDER BY d.position)),
    t.parent_id, t.acceptance,
    (SELECT json_group_object(status, n) FROM
        (SELECT c.status, COUNT(*) AS n FROM tasks AS c WHERE c.parent_id = t.task_id GROUP BY c.status)),
    t.created_by, t.claimed_by
"""

#: True for a task that still waits on a dependency which is not completed.
WAITING_ON_DEPENDENCY = """
    EXISTS (SELECT 1 FROM task_dependencies AS d JOIN tasks AS dep ON dep.task_id = d.depends_on
            WHERE d.task_id = t.task_id AND dep.status <> 'completed')
"""

#: True for a parent with a subtask not completed: the work to hand out is the subtask.
WAITING_ON_SUBTASK = """
    EXISTS (SELECT 1 FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status <> 'completed')
"""

#: SQLite's ``failed_blockers``: the failed tasks a task waits on, directly (a JSON array).
SQLITE_FAILED_BLOCKERS = """
    (SELECT json_group_array(blocker) FROM (
        SELECT d.depends_on AS blocker FROM task_dependencies AS d
        JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = t.task_id AND dep.status = 'failed'
        UNION
        SELECT c.task_id FROM tasks AS c WHERE c.parent_id = t.task_id AND c.status = 'failed'))
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


# --- what the store refuses, in terms the tools translate for people -------------------------


class StoreRefusal(Exception):
    """An operation the rules refuse; tools turn each kind into an error envelope."""


class TaskNotFound(StoreRefusal):
    def __init__(
        self, task_id: str, *, argument: str = "task_id", deleted_at: datetime | None = None
    ) -> None:
        super().__init__(task_id)
        self.task_id = task_id
        self.argument = argument
        self.deleted_at = deleted_at


class TaskExists(StoreRefusal):
    def __init__(self, task_id: str, *, deleted: bool = False) -> None:
        super().__init__(task_id)
        self.task_id = task_id
        self.deleted = deleted


class DependenciesMissing(StoreRefusal):
    def __init__(self, missing: list[str]) -> None:
        super().__init__(missing)
        self.missing = missing


class DependencyCycle(StoreRefusal):
    """``cycle`` reads 'waits on': each task waits on the next (a dependency, or a parent on its subtask)."""

    def __init__(self, cycle: list[str], *, argument: str = "depends_on") -> None:
        super().__init__(cycle)
        self.cycle = cycle
        self.argument = argument


class TransitionRefused(StoreRefusal):
    def __init__(self, task_id: str, current: Status, requested: Status) -> None:
        super().__init__(task_id, current, requested)
        self.task_id = task_id
        self.current = current
        self.requested = requested
        self.allowed = list(allowed_next(current))


class DeleteRefused(StoreRefusal):
    """Deleting would take work from under someone: an agent, a subtask or a dependent task."""

    def __init__(
        self,
        task_id: str,
        *,
        in_progress: bool = False,
        subtasks: list[str] | None = None,
        dependents: list[str] | None = None,
    ) -> None:
        super().__init__(task_id)
        self.task_id = task_id
        self.in_progress = in_progress
        self.subtasks = subtasks or []
        self.dependents = dependents or []


class NotesTooLong(StoreRefusal):
    def __init__(self, task_id: str, current: int, adding: int) -> None:
        super().__init__(task_id)
        self.task_id = task_id
        self.current = current
        self.adding = adding


# --- answers that carry more than a record ---------------------------------------------------


@dataclass(frozen=True)
class StatusChange:
    task: TaskRecord
    previous_status: Status
    changed: bool


NoTaskReason = Literal["empty", "none_pending", "waiting_on_dependencies"]


@dataclass(frozen=True)
class StuckTask:
    """A pending task that waits on failed work: it will not be offered until that is retried."""

    task_id: str
    title: str
    failed: list[str]


@dataclass(frozen=True)
class NextTask:
    task: TaskRecord | None
    claimed: bool
    reason: NoTaskReason | None
    pending: int = 0
    waiting: int = 0
    in_progress: int = 0
    blocked: int = 0
    stuck: tuple[StuckTask, ...] = ()


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
    stuck_behind_failed: int
    oldest_pending_task_id: str | None
    oldest_pending_created_at: datetime | None


@dataclass(frozen=True)
class SessionLink:
    task: TaskRecord
    previous_session_id: str | None


@dataclass(frozen=True)
class TaskEdit:
    """What ``update`` may change; None leaves a field as it is (``parent_id=""`` makes it top-level)."""

    title: str | None = None
    description: str | None = None
    priority: Priority | None = None
    depends_on: Sequence[str] | None = None
    parent_id: str | None = None
    labels: Sequence[str] | None = None
    acceptance: str | None = None
    append_note: str | None = None


@dataclass(frozen=True)
class Update:
    task: TaskRecord
    changed: list[str]


@dataclass(frozen=True)
class Deletion:
    task: TaskRecord
    dropped_from: list[str]


@dataclass(frozen=True)
class HistoryEntry:
    event: str
    at: datetime
    by: str | None
    details: dict[str, object]


@dataclass(frozen=True)
class Neighbour:
    """A related task, shortly: enough to decide whether to open it."""

    task_id: str
    title: str
    status: Status


@dataclass(frozen=True)
class TaskDetails:
    task: TaskRecord
    deleted_at: datetime | None
    history: list[HistoryEntry]
    history_total: int
    depends_on: list[Neighbour]
    dependents: list[Neighbour]
    subtasks: list[Neighbour]


def utc_now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime) -> str:
    """Fixed-width ISO text, so stored stamps also sort as text."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _moment(value: object) -> datetime:
    """A stored time as an aware UTC datetime: ISO text (SQLite) or a timestamptz value (PostgreSQL)."""
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(value))


def _json(value: object, empty: object) -> Any:
    """A JSON aggregate read from a record row (text on both backends; NULL when nothing matched)."""
    return json.loads(str(value)) if value else empty


def _record(row: Sequence[object], labels: list[str], notes: list[Note]) -> TaskRecord:
    (
        task_id,
        title,
        description,
        status,
        rank,
        session,
        created,
        updated,
        depends,
        parent,
        acceptance,
        kids,
        created_by,
        claimed_by,
    ) = row
    counts: dict[str, int] = _json(kids, {})
    subtasks = None
    if counts:
        by_status = dict.fromkeys(STATUSES, 0)
        by_status.update(counts)  # type: ignore[arg-type]
        subtasks = SubtaskProgress(total=sum(counts.values()), by_status=by_status)
    return TaskRecord(
        task_id=str(task_id),
        title=str(title),
        description=str(description),
        status=status,  # type: ignore[arg-type]
        priority=priority_name(int(rank)),  # type: ignore[call-overload]
        depends_on=_json(depends, []),
        linked_session_id=None if session is None else str(session),
        created_at=_moment(created),
        updated_at=_moment(updated),
        parent_id=None if parent is None else str(parent),
        labels=labels,
        acceptance=str(acceptance),
        notes=notes,
        subtasks=subtasks,
        created_by=None if created_by is None else str(created_by),
        claimed_by=None if claimed_by is None else str(claimed_by),
    )


class Connection(Protocol):
    """What the store needs of a connection: ``?`` parameters, rows as tuples (sqlite3's own shape)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...


def _history(
    conn: Connection, task_id: str, event: str, details: dict[str, object], at: str, by: str | None
) -> None:
    """Append one entry to a task's history, made by the member ``by`` (stored as ``actor``)."""
    conn.execute(
        "INSERT INTO task_history (task_id, event, at, actor, details) VALUES (?, ?, ?, ?, ?)",
        (task_id, event, at, by, json.dumps(details, ensure_ascii=False)),
    )


def _waits_on(conn: Connection, task_id: str) -> list[str]:
    """What a task waits on before it is offered: its dependencies, and (for a parent) its subtasks."""
    return [
        str(other)
        for (other,) in conn.execute(
            "SELECT depends_on FROM task_dependencies WHERE task_id = ? "
            "UNION ALL SELECT task_id FROM tasks WHERE parent_id = ?",
            (task_id, task_id),
        )
    ]


def _wait_path(conn: Connection, start: str, goal: str) -> list[str] | None:
    """The shortest 'waits on' path from ``start`` to ``goal`` (both included), or None.

    Breadth-first over the stored edges; it visits at most what ``start`` transitively waits on.
    """
    came_from: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        following: list[str] = []
        for node in frontier:
            if node == goal:
                path = [node]
                while (previous := came_from[path[-1]]) is not None:
                    path.append(previous)
                return path[::-1]
            for other in _waits_on(conn, node):
                if other not in came_from:
                    came_from[other] = node
                    following.append(other)
        frontier = following
    return None


def _exists(conn: Connection, task_id: str) -> bool:
    return conn.execute("SELECT 1 FROM tasks WHERE task_id = ?", (task_id,)).fetchone() is not None


def _deleted_at(conn: Connection, task_id: str) -> datetime | None:
    row = conn.execute("SELECT deleted_at FROM deleted_tasks WHERE task_id = ?", (task_id,)).fetchone()
    return None if row is None else _moment(row[0])


def _neighbours(conn: Connection, sql: str, task_id: str) -> list[Neighbour]:
    return [
        Neighbour(str(other), str(title), status)
        for other, title, status in conn.execute(sql, (task_id,)).fetchall()
    ]


class TaskStore(Protocol):
    """What the tools (and the ``tasks.links`` service) ask of a task store, whichever database holds it.

    ``SqliteTaskStore`` (one file, the default) and ``PostgresTaskStore`` (the team database)
    answer every call alike; ``access.store_for`` picks one when the plugin first needs it.
    Every write takes ``by``, the member making it (the tools pass ``ToolContext.member``); it is
    recorded on what it creates or claims and on each history entry. None records "unknown".
    """

    def close(self) -> None: ...
    def get(self, task_id: str) -> TaskRecord: ...
    def details(self, task_id: str) -> TaskDetails: ...
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
    ) -> TaskRecord: ...
    def split(
        self, task_id: str, subtasks: Sequence[dict[str, object]], *, by: str | None = None
    ) -> tuple[TaskRecord, list[TaskRecord]]: ...
    def update(self, task_id: str, edit: TaskEdit, *, by: str | None = None) -> Update: ...
    def delete(
        self, task_id: str, *, drop_dependencies: bool, even_if_in_progress: bool, by: str | None = None
    ) -> Deletion: ...
    def list_page(
        self,
        *,
        status: Status | None,
        priority: Priority | None,
        limit: int,
        after: tuple[int, int] | None,
        label: str | None = None,
        parent_id: str | None = None,
        query: str | None = None,
        created_by: str | None = None,
        claimed_by: str | None = None,
    ) -> Page: ...
    def set_status(self, task_id: str, new_status: Status, *, by: str | None = None) -> StatusChange: ...
    def next_task(self, *, claim: bool, by: str | None = None) -> NextTask: ...
    def stats(self) -> Stats: ...
    def link_session(self, task_id: str, session_id: str, *, by: str | None = None) -> SessionLink: ...
    def tasks_for_session(self, session_id: str) -> list[TaskRecord]: ...


class SqlTaskStore(ABC):
    """The task rules, written once in SQL both databases understand; subclasses supply the rest.

    What differs between SQLite and PostgreSQL is kept to a few members: how a transaction is
    run (``_read``/``_write``, each taking a unit of work that may be run again), the JSON
    aggregates of a record, how a page of ids is passed, the search index, new ids, and locks.
    SQLite's write transaction locks the whole file, so its locks are no-ops; PostgreSQL locks
    the rows a write changes and serialises the writes that reshape the list (see there).
    """

    #: The columns every record is read from, in ``_record`` order; dependencies come as a JSON
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
                notes[task_id].append(Note(text=text, at=_moment(at)))
        return [_record(row, labels[task_id], notes[task_id]) for row, task_id in zip(rows, ids, strict=True)]

    def _fetch(self, conn: Connection, task_id: str, *, argument: str = "task_id") -> TaskRecord:
        row = conn.execute(
            f"SELECT {self.record_columns} FROM tasks AS t WHERE t.task_id = ?", (task_id,)
        ).fetchone()
        if row is None:
            raise TaskNotFound(task_id, argument=argument, deleted_at=_deleted_at(conn, task_id))
        return self._records(conn, [row])[0]

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
            deleted_at = None
            try:
                task = self._fetch(conn, task_id)
            except TaskNotFound as missing:
                if missing.deleted_at is None:
                    raise
                (record,) = conn.execute(
                    "SELECT record FROM deleted_tasks WHERE task_id = ?", (task_id,)
                ).fetchone()
                task, deleted_at = TaskRecord.from_stored_json(record), missing.deleted_at
            (history_total,) = conn.execute(
                "SELECT COUNT(*) FROM task_history WHERE task_id = ?", (task_id,)
            ).fetchone()
            history = [
                HistoryEntry(str(event), _moment(at), actor, json.loads(str(details)))
                for event, at, actor, details in reversed(
                    conn.execute(
                        "SELECT event, at, actor, details FROM task_history WHERE task_id = ? "
                        "ORDER BY seq DESC LIMIT ?",
                        (task_id, HISTORY_SHOWN),
                    ).fetchall()
                )
            ]
            depends_on = _neighbours(
                conn,
                "SELECT dep.task_id, dep.title, dep.status FROM task_dependencies AS d "
                "JOIN tasks AS dep ON dep.task_id = d.depends_on WHERE d.task_id = ? ORDER BY d.position",
                task_id,
            )
            dependents = _neighbours(
                conn,
                "SELECT t.task_id, t.title, t.status FROM task_dependencies AS d "
                "JOIN tasks AS t ON t.task_id = d.task_id WHERE d.depends_on = ? ORDER BY t.priority, t.seq",
                task_id,
            )
            subtasks = _neighbours(
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
                stamp=_stamp(utc_now()),
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
            stamp = _stamp(utc_now())
            created = [
                self._insert(conn, **{**spec, "parent_id": task_id, "stamp": stamp, "by": by})  # type: ignore[arg-type]
                for spec in subtasks
            ]
            _history(conn, task_id, "split", {"subtasks": created}, stamp, by)
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
            raise DependencyCycle([task_id, task_id])
        if task_id is not None and (_exists(conn, task_id) or _deleted_at(conn, task_id) is not None):
            raise TaskExists(task_id, deleted=not _exists(conn, task_id))
        missing = [dep for dep in wanted if not _exists(conn, dep)]
        if missing:
            raise DependenciesMissing(missing)
        if parent_id is not None and not _exists(conn, parent_id):
            raise TaskNotFound(parent_id, argument="parent_id", deleted_at=_deleted_at(conn, parent_id))
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
                path = _wait_path(conn, dep, task_id)
                if path is not None:
                    raise DependencyCycle([task_id, *path])
        self._reindex(conn, task_id)
        created: dict[str, object] = {"title": title, "priority": priority}
        if parent_id is not None:
            created["parent_id"] = parent_id
        if wanted:
            created["depends_on"] = wanted
        _history(conn, task_id, "created", created, stamp, by)
        return task_id

    # --- update --------------------------------------------------------------------------

    def update(self, task_id: str, edit: TaskEdit, *, by: str | None = None) -> Update:
        """Change what ``edit`` gives, in one transaction; a field given its current value is no change."""

        def work(conn: Connection) -> Update:
            self._lock_list(conn)
            before = self._fetch_locked(conn, task_id)
            stamp = _stamp(utc_now())
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
                    raise NotesTooLong(task_id, written, len(edit.append_note))
                conn.execute(
                    "INSERT INTO task_notes (task_id, text, at) VALUES (?, ?, ?)",
                    (task_id, edit.append_note, stamp),
                )
                changes["append_note"] = {"text": edit.append_note}
            if changes:
                conn.execute("UPDATE tasks SET updated_at = ? WHERE task_id = ?", (stamp, task_id))
                _history(conn, task_id, "edited", changes, stamp, by)
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
        missing = [dep for dep in wanted if dep != task_id and not _exists(conn, dep)]
        if missing:
            raise DependenciesMissing(missing)
        conn.execute("DELETE FROM task_dependencies WHERE task_id = ?", (task_id,))
        conn.executemany(
            "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)",
            [(task_id, dep, position) for position, dep in enumerate(wanted)],
        )
        for dep in wanted:
            if dep in before.depends_on:
                continue  # an edge that was already there closes no new loop
            path = _wait_path(conn, dep, task_id)
            if path is not None:
                raise DependencyCycle([task_id, *path])
        changes["depends_on"] = {"from": before.depends_on, "to": wanted}

    @staticmethod
    def _move_under(
        conn: Connection, before: TaskRecord, parent_id: str | None, changes: dict[str, object]
    ) -> None:
        task_id = before.task_id
        if parent_id == before.parent_id:
            return
        if parent_id is not None:
            if parent_id != task_id and not _exists(conn, parent_id):
                raise TaskNotFound(parent_id, argument="parent_id", deleted_at=_deleted_at(conn, parent_id))
            # The parent will wait on this task: a loop if this task already waits on the parent.
            path = _wait_path(conn, task_id, parent_id)
            if path is not None:
                raise DependencyCycle([parent_id, *path], argument="parent_id")
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
                raise DeleteRefused(task_id, in_progress=True)
            subtasks = [
                str(c) for (c,) in conn.execute("SELECT task_id FROM tasks WHERE parent_id = ?", (task_id,))
            ]
            if subtasks:
                raise DeleteRefused(task_id, subtasks=subtasks)
            dependents = [
                str(d)
                for (d,) in conn.execute(
                    "SELECT task_id FROM task_dependencies WHERE depends_on = ? ORDER BY task_id", (task_id,)
                )
            ]
            if dependents and not drop_dependencies:
                raise DeleteRefused(task_id, dependents=dependents)
            stamp = _stamp(utc_now())
            for dependent in dependents:
                conn.execute(
                    "DELETE FROM task_dependencies WHERE task_id = ? AND depends_on = ?", (dependent, task_id)
                )
                conn.execute("UPDATE tasks SET updated_at = ? WHERE task_id = ?", (stamp, dependent))
                _history(
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
            _history(conn, task_id, "deleted", {"status": task.status, "dropped_from": dependents}, stamp, by)
            return Deletion(task, dependents)

        return self._write(work)

    # --- list ----------------------------------------------------------------------------

    def list_page(
        self,
        *,
        status: Status | None,
        priority: Priority | None,
        limit: int,
        after: tuple[int, int] | None,
        label: str | None = None,
        parent_id: str | None = None,
        query: str | None = None,
        created_by: str | None = None,
        claimed_by: str | None = None,
    ) -> Page:
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

        def work(conn: Connection) -> Page:
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
            return Page(self._records(conn, [row[:-2] for row in rows]), int(total), next_after)

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
                raise TransitionRefused(task_id, current.status, new_status)
            stamp = _stamp(utc_now())
            conn.execute(
                "UPDATE tasks SET status = ?, updated_at = ?, claimed_by = ? WHERE task_id = ?",
                (new_status, stamp, claimer_after(new_status, current.claimed_by, by), task_id),
            )
            _history(conn, task_id, "status", {"from": current.status, "to": new_status}, stamp, by)
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
                stamp = _stamp(utc_now())
                conn.execute(
                    "UPDATE tasks SET status = 'in_progress', updated_at = ?, claimed_by = ? WHERE seq = ?",
                    (stamp, claimer_after("in_progress", None, by), seq),
                )
                _history(conn, str(task_id), "claimed", {"from": "pending", "to": "in_progress"}, stamp, by)
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
            StuckTask(str(task_id), str(title), _json(failed, []))
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
            oldest_pending_created_at=_moment(oldest[1]) if oldest else None,
        )

    # --- sessions ------------------------------------------------------------------------

    def link_session(self, task_id: str, session_id: str, *, by: str | None = None) -> SessionLink:
        """Link (or re-link) a task to a session; linking the same session again changes nothing."""

        def work(conn: Connection) -> SessionLink:
            before = self._fetch_locked(conn, task_id)
            if before.linked_session_id == session_id:
                return SessionLink(before, before.linked_session_id)
            stamp = _stamp(utc_now())
            conn.execute(
                "UPDATE tasks SET linked_session_id = ?, updated_at = ? WHERE task_id = ?",
                (session_id, stamp, task_id),
            )
            _history(
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


#: How long a SQLite write waits for another process's write lock before the call is FILE_LOCKED.
SQLITE_BUSY_TIMEOUT_MS = 10_000


class SqliteTaskStore(SqlTaskStore):
    """Tasks and their dependencies in one SQLite file, safe across threads and processes.

    Every write holds the file's write lock (``BEGIN IMMEDIATE``), so writes never interleave;
    a lock held by another process past the busy timeout is ``FILE_LOCKED``, never INTERNAL.
    """

    record_columns = SQLITE_RECORD_COLUMNS
    failed_blockers = SQLITE_FAILED_BLOCKERS

    def __init__(self, path: Path, *, busy_timeout_ms: int | None = None) -> None:
        self.path = path
        self.busy_timeout_ms = SQLITE_BUSY_TIMEOUT_MS if busy_timeout_ms is None else busy_timeout_ms
        self.db = SqliteDatabase(path, list(MIGRATIONS), busy_timeout_ms=self.busy_timeout_ms)

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
        # One JSON parameter, not one '?' per id: a page of 1,000 stays under any SQLite's variable limit.
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
        while _exists(conn, f"{GENERATED_ID_PREFIX}{number}") or (
            _deleted_at(conn, f"{GENERATED_ID_PREFIX}{number}") is not None
        ):
            number += 1
        return f"{GENERATED_ID_PREFIX}{number}", None
