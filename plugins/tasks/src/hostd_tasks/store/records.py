"""The task list's records, for ``hostd db copy`` (``hostd.RecordStore``; the copy is the host's).

Two kinds, keyed by task id:

- ``tasks``: the record (with who created and who claimed it), labels, notes, dependencies,
  parent, session link and history (with who made each change), times kept. Exported with
  the tasks each one waits on (dependencies, parent) first, else in list order, so a new task
  that waits on a task in conflict is held back (it would wait on someone else's task). A
  copied task goes after the team's tasks in the list order (a new ``seq``).
- ``deleted tasks``: the deletion record and history.

A task id the team database holds as the other kind (live here, deleted there) is a conflict.
Both sides are read with the same SQL (``snapshot``), so "equal" means equal as the tools would
answer it.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterator
from functools import partial
from typing import Any

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from hostd import Record, RecordData, RecordKind, Text, pages, validation_reason
from hostd_tasks.store.base import LIST_LOCK
from hostd_tasks.store.rows import Connection, history_of, stored_moment, stored_stamp
from hostd_tasks.store.writes import TaskStore

#: How many tasks one read of the local file returns.
PAGE = 500

TASK_COLUMNS = (
    "title, description, status, priority, linked_session_id, created_at, updated_at, parent_id, acceptance, "
    "created_by, claimed_by, lease_expires_at, lease_seconds, claim_count, expired_claims"
)
_MOMENTS = frozenset({"created_at", "updated_at", "lease_expires_at"})


class TaskRow(TypedDict):
    """A task's ``TASK_COLUMNS``, its times as stored stamps."""

    title: str
    description: str
    status: str
    priority: int
    linked_session_id: str | None
    created_at: str
    updated_at: str
    parent_id: str | None
    acceptance: str
    created_by: str | None
    claimed_by: str | None
    lease_expires_at: str | None
    lease_seconds: int | None
    claim_count: int
    expired_claims: int


class HistoryData(TypedDict):
    """One line of a task's history (``history_of``)."""

    event: str
    at: str
    by: str | None
    details: dict[str, object]


class TaskData(TypedDict):
    """A ``tasks`` record's data (``snapshot``)."""

    task: TaskRow
    labels: list[str]
    depends_on: list[str]
    notes: list[tuple[str, str]]
    history: list[HistoryData]


class DeletedTaskData(TypedDict):
    """A ``deleted tasks`` record's data (``deleted_snapshot``)."""

    record: dict[str, object]
    deleted_at: str
    history: list[HistoryData]


_TASK, _DELETED = TypeAdapter(TaskData), TypeAdapter(DeletedTaskData)


def _stamp(value: object) -> str | None:
    return None if value is None else stored_stamp(stored_moment(value))


def _history(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    return [
        {"event": entry.event, "at": stored_stamp(entry.at), "by": entry.by, "details": entry.details}
        for entry in history_of(conn, task_id)
    ]


def snapshot(conn: Connection, task_id: str) -> dict[str, Any] | None:
    """Everything stored about a live task as plain values (a record's data); None when there is none."""
    row = conn.execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    if row is None:
        return None
    task = dict(zip(TASK_COLUMNS.split(", "), row, strict=True))
    for name in _MOMENTS:
        task[name] = _stamp(task[name])
    for name in ("priority", "claim_count", "expired_claims"):
        task[name] = int(task[name])
    return {
        "task": task,
        "labels": sorted(
            str(label)
            for (label,) in conn.execute("SELECT label FROM task_labels WHERE task_id = ?", (task_id,))
        ),
        "depends_on": [
            str(dep)
            for (dep,) in conn.execute(
                "SELECT depends_on FROM task_dependencies WHERE task_id = ? ORDER BY position", (task_id,)
            )
        ],
        "notes": [
            [str(text), _stamp(at)]
            for text, at in conn.execute(
                "SELECT text, at FROM task_notes WHERE task_id = ? ORDER BY seq", (task_id,)
            )
        ],
        "history": _history(conn, task_id),
    }


def deleted_snapshot(conn: Connection, task_id: str) -> dict[str, Any] | None:
    """A deleted task's last record, deletion time and history; None when the id was never deleted."""
    row = conn.execute(
        "SELECT record, deleted_at FROM deleted_tasks WHERE task_id = ?", (task_id,)
    ).fetchone()
    if row is None:
        return None
    return {
        "record": json.loads(str(row[0])),
        "deleted_at": _stamp(row[1]),
        "history": _history(conn, task_id),
    }


def _damaged(noun: Text, task_id: str, exc: ValueError) -> Text:
    """Why a task of the local file could not be read (a hand-edited row), for the copy's report."""
    if isinstance(exc, ValidationError):
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        why = validation_reason(first)
        en, zh = f"{where}: {why.en}", f"{where}：{why.zh}"
    else:
        en = zh = str(exc)
    return Text(
        en=f"{noun.en} {task_id} is damaged locally and was not copied ({en})",
        zh=f"{noun.zh} {task_id} 在本地已损坏，未复制（{zh}）",
    )


def _read_each(
    conn: Connection, batch: list[str], read: Callable[[Connection, str], dict[str, Any] | None], noun: Text
) -> list[tuple[str, dict[str, Any] | Text | None]]:
    """``read`` of each task in ``batch``: its data, None when it is not there, or why it is damaged."""
    found: list[tuple[str, dict[str, Any] | Text | None]] = []
    for task_id in batch:
        try:
            found.append((task_id, read(conn, task_id)))
        except ValueError as exc:  # a row that is not what the store writes (pydantic's errors too)
            found.append((task_id, _damaged(noun, task_id, exc)))
    return found


def _waits_first(order: list[str], waits_on: dict[str, list[str]]) -> list[str]:
    """``order`` rearranged so that each task comes after the tasks it waits on (where they do not
    wait on each other in a circle), else in the order given."""
    rank = {task_id: at for at, task_id in enumerate(order)}
    blocking = {task_id: {other for other in waits_on.get(task_id, ()) if other in rank} for task_id in order}
    waiting: dict[str, list[str]] = {}
    for task_id, others in blocking.items():
        for other in others:
            waiting.setdefault(other, []).append(task_id)
    ready = [(rank[task_id], task_id) for task_id, others in blocking.items() if not others]
    heapq.heapify(ready)
    done: list[str] = []
    placed: set[str] = set()
    while len(done) < len(order):
        if not ready:  # a circle: the earliest task left goes next
            first = min((task_id for task_id in order if task_id not in placed), key=rank.__getitem__)
            heapq.heappush(ready, (rank[first], first))
        _, task_id = heapq.heappop(ready)
        if task_id in placed:
            continue
        placed.add(task_id)
        done.append(task_id)
        for other in waiting.get(task_id, ()):
            blocking[other].discard(task_id)
            if not blocking[other] and other not in placed:
                heapq.heappush(ready, (rank[other], other))
    return done


def _label(noun: Text) -> Callable[[str], Text]:
    return lambda key: Text(en=f"{noun.en} {key}", zh=f"{noun.zh} {key}")


_TASK_NOUN = Text(en="task", zh="任务")
_DELETED_NOUN = Text(en="deleted task", zh="已删除的任务")


class TaskRecords:
    """The ``hostd.RecordStore`` of one task list (the local file's, or the team database's)."""

    record_kinds = (
        RecordKind("tasks", _label(_TASK_NOUN)),
        RecordKind("deleted tasks", _label(_DELETED_NOUN)),
    )
    import_lock = LIST_LOCK

    def __init__(self, store: TaskStore) -> None:
        self.store = store
        self._waiting: list[tuple[str, str | None, list[str]]] = []  # copied: (task, parent, dependencies)

    def close(self) -> None:
        self.store.database.close()

    # --- export ---------------------------------------------------------------------------

    def export_records(self) -> Iterator[Record]:
        database = self.store.database

        def outline(conn: Connection) -> tuple[list[str], dict[str, list[str]]]:
            order, waits_on = [], {}
            for task_id, parent in conn.execute("SELECT task_id, parent_id FROM tasks ORDER BY seq"):
                order.append(str(task_id))
                waits_on[str(task_id)] = [] if parent is None else [str(parent)]
            for task_id, dep in conn.execute("SELECT task_id, depends_on FROM task_dependencies"):
                waits_on[str(task_id)].append(str(dep))
            return order, waits_on

        order, waits_on = database.read(outline)
        order = _waits_first(order, waits_on)
        for start in range(0, len(order), PAGE):
            batch = order[start : start + PAGE]
            found = database.read(partial(_read_each, batch=batch, read=snapshot, noun=_TASK_NOUN))
            for task_id, data in found:
                needs = tuple(("tasks", other) for other in waits_on[task_id])
                if isinstance(data, Text):
                    yield Record("tasks", task_id, needs=needs, damaged=data)
                elif data is not None:
                    yield Record("tasks", task_id, data, needs=needs)

        def deleted(after: tuple[str, str] | None) -> list[tuple[str, str, dict[str, Any] | Text | None]]:
            def work(conn: Connection) -> list[tuple[str, str, dict[str, Any] | Text | None]]:
                where = "" if after is None else "WHERE (deleted_at, task_id) > (?, ?) "
                rows = conn.execute(
                    f"SELECT task_id, deleted_at FROM deleted_tasks {where}"
                    "ORDER BY deleted_at, task_id LIMIT ?",
                    (*(after or ()), PAGE),
                ).fetchall()
                found = _read_each(conn, [str(t) for t, _ in rows], deleted_snapshot, _DELETED_NOUN)
                return [(task_id, at, data) for (task_id, data), (_, at) in zip(found, rows, strict=True)]

            return database.read(work)

        for task_id, _, data in pages(deleted, lambda row: (row[1], row[0])):
            if isinstance(data, Text):
                yield Record("deleted tasks", task_id, damaged=data)
            elif data is not None:
                yield Record("deleted tasks", task_id, data)

    # --- import ---------------------------------------------------------------------------

    def begin_import(self, conn: Connection) -> None:
        self._waiting = []

    def find_record(self, conn: Connection, kind: str, key: str) -> RecordData | None:
        live, deleted = snapshot(conn, key), deleted_snapshot(conn, key)
        mine, other = (live, deleted) if kind == "tasks" else (deleted, live)
        if mine is None and other is not None:
            return {"the other kind": other}  # live on one side, deleted on the other: differs
        return mine

    def import_record(self, conn: Connection, record: Record, theirs: RecordData | None) -> Text | None:
        # The data is parsed into its kind's shape before any of it is written (the host reports a
        # ``ValidationError`` as this record's conflict).
        if record.kind == "deleted tasks":
            self._insert_deleted(conn, record.key, _DELETED.validate_python(record.data))
        else:
            self._insert_task(conn, record.key, _TASK.validate_python(record.data))
        return None

    def _insert_deleted(self, conn: Connection, task_id: str, data: DeletedTaskData) -> None:
        conn.execute(
            "INSERT INTO deleted_tasks (task_id, record, deleted_at) VALUES (?, ?, ?)",
            (task_id, json.dumps(data["record"], ensure_ascii=False), data["deleted_at"]),
        )
        self._insert_history(conn, task_id, data["history"])

    def _insert_task(self, conn: Connection, task_id: str, data: TaskData) -> None:
        # The parent and dependencies are set at the end (``end_import``): they may come later.
        row: dict[str, object] = {**data["task"], "parent_id": None}
        values = [task_id, *(row[column] for column in TASK_COLUMNS.split(", "))]
        conn.execute(
            f"INSERT INTO tasks (task_id, {TASK_COLUMNS}) VALUES ({', '.join('?' * len(values))})", values
        )
        conn.executemany(
            "INSERT INTO task_labels (task_id, label) VALUES (?, ?)",
            [(task_id, label) for label in data["labels"]],
        )
        conn.executemany(
            "INSERT INTO task_notes (task_id, text, at) VALUES (?, ?, ?)",
            [(task_id, text, at) for text, at in data["notes"]],
        )
        self._insert_history(conn, task_id, data["history"])
        self._waiting.append((task_id, data["task"]["parent_id"], data["depends_on"]))

    @staticmethod
    def _insert_history(conn: Connection, task_id: str, history: list[HistoryData]) -> None:
        conn.executemany(
            "INSERT INTO task_history (task_id, event, at, actor, details) VALUES (?, ?, ?, ?, ?)",
            [
                (
                    task_id,
                    entry["event"],
                    entry["at"],
                    entry["by"],
                    json.dumps(entry["details"], ensure_ascii=False),
                )
                for entry in history
            ],
        )

    def end_import(self, conn: Connection) -> None:
        """Every copied task is in: set parents and dependencies, then index the tasks for search."""
        for task_id, parent, depends_on in self._waiting:
            if parent is not None:
                conn.execute("UPDATE tasks SET parent_id = ? WHERE task_id = ?", (parent, task_id))
            conn.executemany(
                "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)",
                [(task_id, dep, position) for position, dep in enumerate(depends_on)],
            )
            self.store._reindex(conn, task_id)
        self._waiting = []
