"""The task list's records, for ``hostd db copy`` (``hostd.RecordStore``; the copy is the host's).

Two kinds, keyed by task id:

- ``tasks``: the record (with who created and who claimed it), labels, notes, dependencies,
  parent, session link and history (with who made each change), times kept, and for a task
  ``import_tasks`` created the origin it was imported from (``task_origins``). Exported with
  the tasks each one waits on (dependencies, parent) first, else in list order, so a new task
  that waits on a task in conflict is held back (it would wait on someone else's task). A
  copied task goes after the team's tasks in the list order (a new ``seq``).
- ``deleted tasks``: the deletion record and history.

A task id the team database holds as the other kind (live here, deleted there) is a conflict.
Both sides are read with the same SQL (``snapshot``), so "equal" means equal as the tools would
answer it.

Task ids are handed out by each list (every member's first task is ``t-1``), so the team store
renumbers (``as_team_record``): a task is known by its local id and its creation time, and a
local task whose id the team database holds for another task (created at another time) is copied
under a new ``t-<n>``, with every id its data names (dependencies, parent, the ids in its history
and in a deleted task's record) translated the same way. The ids given are kept in
``copied_tasks``, so the next copy of the same list finds each task under the id it got and
changes nothing. The linked session is a deep-thinking session id (a UUID, or one chosen by
name): it is the same in every store and stays as it is. Each exported record carries, under
``origins``, the creation time of every task id it names (the team store drops it before
comparing or writing).
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any, NotRequired

from hostd_db import Connection, utc_stamp
from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from hostd import Record, RecordData, RecordKind, Text, pages, validation_reason
from hostd_tasks.store.base import GENERATED_ID_PREFIX, LIST_LOCK
from hostd_tasks.store.rows import deletion_time, history_of, is_live, stored_moment
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
    """A ``tasks`` record's data (``snapshot``); ``origin`` only for a task import_tasks created."""

    task: TaskRow
    labels: list[str]
    depends_on: list[str]
    notes: list[tuple[str, str]]
    history: list[HistoryData]
    origin: NotRequired[str]


class DeletedTaskData(TypedDict):
    """A ``deleted tasks`` record's data (``deleted_snapshot``)."""

    record: dict[str, object]
    deleted_at: str
    history: list[HistoryData]


_TASK, _DELETED = TypeAdapter(TaskData), TypeAdapter(DeletedTaskData)


def _stamp(value: object) -> str | None:
    return None if value is None else utc_stamp(stored_moment(value))


def _history(conn: Connection, task_id: str) -> list[dict[str, Any]]:
    return [
        {"event": entry.event, "at": utc_stamp(entry.at), "by": entry.by, "details": entry.details}
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
        **_origin(conn, task_id),
    }


def _origin(conn: Connection, task_id: str) -> dict[str, str]:
    """``{"origin": ...}`` for a task import_tasks created (the key its document gave it), else nothing,
    so the records of other tasks read as before."""
    row = conn.execute("SELECT origin FROM task_origins WHERE task_id = ?", (task_id,)).fetchone()
    return {} if row is None else {"origin": str(row[0])}


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


#: The fields, at any depth of a record's data (its history's details, a deleted task's record),
#: whose strings are task ids: through lists and ``{"from": ..., "to": ...}`` changes.
_ID_FIELDS = frozenset({"task_id", "parent_id", "depends_on", "subtasks", "dropped_from"})
#: Where an exported record keeps the creation time of each task id it names.
_ORIGINS = "origins"


def _ids_named(value: object, named: bool = False) -> Iterator[str]:
    """The task ids ``value`` names (strings under ``_ID_FIELDS``)."""
    if isinstance(value, str):
        if named:
            yield value
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _ids_named(item, named)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _ids_named(item, named or key in _ID_FIELDS)


def _renamed(value: Any, names: dict[str, str], named: bool = False) -> Any:
    """``value`` with each task id it names replaced as ``names`` says."""
    if isinstance(value, str):
        return names.get(value, value) if named else value
    if isinstance(value, list | tuple):
        return [_renamed(item, names, named) for item in value]
    if isinstance(value, dict):
        return {key: _renamed(item, names, named or key in _ID_FIELDS) for key, item in value.items()}
    return value


def _created_of_record(text: object) -> str | None:
    """The creation time in a deleted task's stored record, as the store spells times."""
    try:
        created = json.loads(str(text)).get("created_at")
        return None if created is None else _stamp(created)
    except (ValueError, AttributeError):  # a damaged record: reported when it is read
        return None


def _created_times(conn: Connection) -> dict[str, str]:
    """Every task id of a list (live or deleted) and when its task was created."""
    created = {
        str(task_id): str(_stamp(at)) for task_id, at in conn.execute("SELECT task_id, created_at FROM tasks")
    }
    for task_id, record in conn.execute("SELECT task_id, record FROM deleted_tasks"):
        at = _created_of_record(record)
        if at is not None:
            created.setdefault(str(task_id), at)
    return created


def _highest_number(task_ids: Iterable[str]) -> int:
    """The largest ``n`` of the generated ids (``t-<n>``) among ``task_ids``; 0 when there is none."""
    numbers = (
        task_id[len(GENERATED_ID_PREFIX) :] for task_id in task_ids if task_id.startswith(GENERATED_ID_PREFIX)
    )
    return max((int(number) for number in numbers if number.isdigit()), default=0)


def _with_origins(key: str, data: dict[str, Any], created: dict[str, str], highest: int) -> dict[str, Any]:
    """``data`` with the creation time of each task id it names, and the list's highest generated
    number (the team store hands out new ids past it, so a new id is never one of this list's)."""
    named = {key, *_ids_named(data)}
    origins = {task_id: created[task_id] for task_id in sorted(named) if task_id in created}
    return {**data, _ORIGINS: {"created": origins, "highest": highest}}


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
        # Renumbering, during one copy: (local id, created) -> id here; id here -> (local id,
        # created); ids handed out in this copy, recorded in copied_tasks with their task.
        self._ids: dict[tuple[str, str], str] = {}
        self._holders: dict[str, tuple[str, str]] = {}
        self._handed_out: dict[str, tuple[str, str]] = {}
        self._number = 0
        self._floor = 0  # new ids go past the local list's highest t-<n>

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
        created = database.read(_created_times)
        highest = _highest_number(created)
        for start in range(0, len(order), PAGE):
            batch = order[start : start + PAGE]
            found = database.read(partial(_read_each, batch=batch, read=snapshot, noun=_TASK_NOUN))
            for task_id, data in found:
                needs = tuple(("tasks", other) for other in waits_on[task_id])
                if isinstance(data, Text):
                    yield Record("tasks", task_id, needs=needs, damaged=data)
                elif data is not None:
                    yield Record(
                        "tasks", task_id, _with_origins(task_id, data, created, highest), needs=needs
                    )

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
                yield Record("deleted tasks", task_id, _with_origins(task_id, data, created, highest))

    # --- import ---------------------------------------------------------------------------

    def begin_import(self, conn: Connection) -> None:
        self._waiting = []
        self._ids = {
            (str(local_id), str(created)): str(task_id)
            for local_id, created, task_id in conn.execute(
                "SELECT local_id, created_at, task_id FROM copied_tasks"
            )
        }
        self._holders = {task_id: origin for origin, task_id in self._ids.items()}
        self._handed_out = {}
        self._number = 0
        self._floor = 0
        self._floor = 0  # new ids go past the local list's highest t-<n>

    def as_team_record(self, conn: Connection, record: Record) -> Record:
        """The local ``record`` under the ids it has, or gets, here (``hostd.RenumberingStore``)."""
        data = dict(record.data)
        origins = data.pop(_ORIGINS, None)
        names: dict[str, str] = {}
        created_times = origins.get("created") if isinstance(origins, dict) else None
        if isinstance(origins, dict) and isinstance(created_times, dict):
            self._floor = max(self._floor, int(str(origins.get("highest", 0))))
            for local_id, created in created_times.items():
                here = self._id_here(conn, local_id, str(created))
                if here != local_id:
                    names[local_id] = here
        if names:
            data = _renamed(data, names)
        return Record(record.kind, names.get(record.key, record.key), data, record.needs, record.damaged)

    def _id_here(self, conn: Connection, local_id: str, created: str) -> str:
        """The id of the local task (``local_id``, created at ``created``) in this store: the one it
        got before, else its own when that is free here or held by the same task, else a new one."""
        origin = (local_id, created)
        known = self._ids.get(origin)
        if known is not None:
            return known
        holder = self._holders.get(local_id)
        if holder is not None:
            same = holder == origin
        else:
            here = self._created_here(conn, local_id)
            same = here is None or here == created
        task_id = local_id if same else self._fresh_id(conn)
        self._ids[origin] = task_id
        self._holders[task_id] = origin
        if task_id != local_id:
            self._handed_out[task_id] = origin
        return task_id

    @staticmethod
    def _created_here(conn: Connection, task_id: str) -> str | None:
        """When the task this store holds under ``task_id`` (live or deleted) was created; None: free."""
        row = conn.execute("SELECT created_at FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
        if row is not None:
            return _stamp(row[0])
        row = conn.execute("SELECT record FROM deleted_tasks WHERE task_id = ?", (task_id,)).fetchone()
        return None if row is None else (_created_of_record(row[0]) or "")

    def _fresh_id(self, conn: Connection) -> str:
        """A ``t-<n>`` no task here has or had, and not handed out in this copy."""
        while True:
            if self.store.postgres:
                sequence = "pg_get_serial_sequence('tasks', 'seq')"
                (number,) = conn.execute(f"SELECT nextval({sequence})").fetchone()
                if number <= self._floor:  # past the local list's ids (the team's tasks skip them too)
                    (number,) = conn.execute(f"SELECT setval({sequence}, ?)", (self._floor + 1,)).fetchone()
            else:
                if not self._number:
                    (highest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM tasks").fetchone()
                    self._number = int(highest)
                self._number = max(self._number, self._floor) + 1
                number = self._number
            task_id = f"{GENERATED_ID_PREFIX}{number}"
            if (
                task_id not in self._holders
                and not is_live(conn, task_id)
                and deletion_time(conn, task_id) is None
            ):
                return task_id

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
        origin = self._handed_out.pop(record.key, None)
        if origin is not None:  # copied under a new id: the next copy finds it there
            conn.execute(
                "INSERT INTO copied_tasks (local_id, created_at, task_id) VALUES (?, ?, ?)",
                (*origin, record.key),
            )
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
        if "origin" in data:  # so a document imported before is still recognised after the copy
            conn.execute("DELETE FROM task_origins WHERE origin = ?", (data["origin"],))
            conn.execute(
                "INSERT INTO task_origins (origin, task_id) VALUES (?, ?)", (data["origin"], task_id)
            )
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
