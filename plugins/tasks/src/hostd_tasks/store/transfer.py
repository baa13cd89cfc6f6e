"""The list as an export document's tasks, and a checked document written back (``import_tasks``).

Export reads the whole list in one snapshot with one query per table (a 10,000-task list is a
handful of statements, not one per task), picks the tasks a filter selects and brings along what
they wait on (dependencies and parents, transitively), so every reference of the document points
inside it.

Import runs in one write transaction under the list lock: a task the store already holds (its
``origin`` recorded in ``task_origins``, or a task created here with the id and creation time the
origin names) is left as it is; every other task is created with its record, labels, notes,
history, claim and lease as the document gives them, under its own id when that id is free here
(never used, not even by a deleted task), else under a new generated id. References (dependencies,
parents, task ids in the history) follow the renumbering. A refusal anywhere rolls all of it back.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from hostd_db import Connection, utc_stamp

from hostd_tasks.rules import PRIORITIES, Priority, Status, priority_rank
from hostd_tasks.store import refusals
from hostd_tasks.store.base import GENERATED_ID_PREFIX, LIST_LOCK
from hostd_tasks.store.rows import deletion_time, stored_moment, wait_path
from hostd_tasks.store.writes import TaskStore
from hostd_tasks.transfer import ImportedTask, native_origin, rewrite_references, split_origin

_COLUMNS = (
    "task_id, title, description, status, priority, linked_session_id, created_at, updated_at, parent_id, "
    "acceptance, created_by, claimed_by, lease_expires_at, lease_seconds, claim_count, expired_claims, "
    "lease_lost_by"
)
_MOMENTS = ("created_at", "updated_at", "lease_expires_at")


@dataclass(frozen=True)
class Selection:
    """Which tasks an export takes (all when every field is None)."""

    status: Status | None = None
    priority: Priority | None = None
    label: str | None = None
    task_ids: tuple[str, ...] | None = None


@dataclass
class Exported:
    """The document's tasks, in creation order, and how many came only as what others wait on."""

    tasks: list[dict[str, Any]]
    brought_along: int


@dataclass
class ImportResult:
    """What an import did: the ids it created (document id -> id here, renumbered or not), the
    tasks it found already here (document id -> id here), and which ids were renumbered."""

    created: dict[str, str] = field(default_factory=dict)
    already_present: dict[str, str] = field(default_factory=dict)
    renumbered: dict[str, str] = field(default_factory=dict)


def _stamp(value: object) -> str | None:
    """A stored time in the store's spelling: SQLite keeps that text already (every write spells it
    with ``hostd_db.utc_stamp``), PostgreSQL answers a ``datetime``."""
    if value is None or isinstance(value, str):
        return value
    return utc_stamp(stored_moment(value))


def export_tasks(store: TaskStore, selection: Selection) -> Exported:
    """The selected tasks and what they wait on, as the document's task objects (one snapshot)."""

    def work(conn: Connection) -> Exported:
        rows: dict[str, dict[str, Any]] = {}
        for row in conn.execute(f"SELECT {_COLUMNS} FROM tasks ORDER BY seq").fetchall():
            task = dict(zip(_COLUMNS.split(", "), row, strict=True))
            for name in _MOMENTS:
                task[name] = _stamp(task[name])
            task["priority"] = PRIORITIES[int(task["priority"])]
            for name in ("lease_seconds", "claim_count", "expired_claims"):
                task[name] = None if task[name] is None else int(task[name])
            rows[str(task["task_id"])] = task
        chosen = _selected(conn, rows, selection)
        depends: dict[str, list[str]] = {}
        for task_id, dep in conn.execute(
            "SELECT task_id, depends_on FROM task_dependencies ORDER BY task_id, position"
        ).fetchall():
            depends.setdefault(str(task_id), []).append(str(dep))
        wanted = _with_what_they_wait_on(chosen, rows, depends)
        labels: dict[str, list[str]] = {}
        for task_id, label in conn.execute(
            "SELECT task_id, label FROM task_labels ORDER BY label"
        ).fetchall():
            labels.setdefault(str(task_id), []).append(str(label))
        notes: dict[str, list[dict[str, Any]]] = {}
        for task_id, text, at in conn.execute(
            "SELECT task_id, text, at FROM task_notes ORDER BY seq"
        ).fetchall():
            notes.setdefault(str(task_id), []).append({"text": str(text), "at": _stamp(at)})
        history: dict[str, list[dict[str, Any]]] = {}
        for task_id, event, at, actor, details in conn.execute(
            "SELECT task_id, event, at, actor, details FROM task_history ORDER BY seq"
        ).fetchall():
            if str(task_id) in wanted:
                history.setdefault(str(task_id), []).append(
                    {"event": str(event), "at": _stamp(at), "by": actor, "details": json.loads(str(details))}
                )
        origins = {
            str(task_id): str(origin)
            for origin, task_id in conn.execute("SELECT origin, task_id FROM task_origins").fetchall()
        }
        tasks = []
        for task_id, row in rows.items():
            if task_id not in wanted:
                continue
            tasks.append(
                {
                    "task_id": task_id,
                    "origin": origins.get(task_id) or native_origin(task_id, str(row["created_at"])),
                    "title": row["title"],
                    "description": row["description"],
                    "status": row["status"],
                    "priority": row["priority"],
                    "depends_on": depends.get(task_id, []),
                    "parent_id": row["parent_id"],
                    "labels": labels.get(task_id, []),
                    "acceptance": row["acceptance"],
                    "notes": notes.get(task_id, []),
                    "linked_session_id": row["linked_session_id"],
                    "created_at": row["created_at"],
                    "updated_at": row["updated_at"],
                    "created_by": row["created_by"],
                    "claimed_by": row["claimed_by"],
                    "lease_expires_at": row["lease_expires_at"],
                    "lease_seconds": row["lease_seconds"],
                    "claim_count": row["claim_count"],
                    "expired_claims": row["expired_claims"],
                    "lease_lost_by": row["lease_lost_by"],
                    "history": history.get(task_id, []),
                }
            )
        return Exported(tasks, brought_along=len(wanted) - len(chosen))

    return store._read(work)


def _selected(conn: Connection, rows: dict[str, dict[str, Any]], selection: Selection) -> set[str]:
    chosen = set(rows)
    if selection.task_ids is not None:
        missing = [task_id for task_id in selection.task_ids if task_id not in rows]
        if missing:
            raise refusals.task_not_found(
                missing[0], argument="task_ids", deleted_at=deletion_time(conn, missing[0])
            )
        chosen &= set(selection.task_ids)
    if selection.status is not None:
        chosen = {t for t in chosen if rows[t]["status"] == selection.status}
    if selection.priority is not None:
        chosen = {t for t in chosen if rows[t]["priority"] == selection.priority}
    if selection.label is not None:
        labelled = {
            str(task_id)
            for (task_id,) in conn.execute(
                "SELECT task_id FROM task_labels WHERE label = ?", (selection.label.lower(),)
            ).fetchall()
        }
        chosen &= labelled
    return chosen


def _with_what_they_wait_on(
    chosen: set[str], rows: dict[str, dict[str, Any]], depends: dict[str, list[str]]
) -> set[str]:
    """``chosen`` and every task they name, transitively (dependencies and parents)."""
    wanted = set(chosen)
    stack = list(chosen)
    while stack:
        task_id = stack.pop()
        parent = rows[task_id]["parent_id"]
        for other in [*depends.get(task_id, []), *([] if parent is None else [str(parent)])]:
            if other not in wanted:
                wanted.add(other)
                stack.append(other)
    return wanted


# --- import --------------------------------------------------------------------------------------


def import_tasks(store: TaskStore, tasks: list[ImportedTask], *, by: str | None) -> ImportResult:
    """Write a checked document's tasks (``transfer.load_document``) in one transaction.

    A handful of statements per table, whatever the number of tasks: what is already here is
    looked up for all tasks at once, and every table is written with one ``executemany`` (rows in
    the document's order, so the new tasks keep its order in the list and in the history).
    """

    def work(conn: Connection) -> ImportResult:
        result = ImportResult()
        result.already_present = _recognised(store, conn, tasks)
        new = [task for task in tasks if task.task_id not in result.already_present]
        _choose_ids(store, conn, new, result)
        ids = {**result.already_present, **result.created}
        renamed = {old: fresh for old, fresh in ids.items() if old != fresh}
        stamp = utc_stamp(store._clock(conn))
        _insert_all(conn, new, ids, renamed, stamp, by)
        conn.executemany(
            "UPDATE tasks SET parent_id = ? WHERE task_id = ?",
            [(ids[task.parent_id], ids[task.task_id]) for task in new if task.parent_id is not None],
        )
        conn.executemany(
            "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)",
            [
                (ids[task.task_id], ids[dep], position)
                for task in new
                for position, dep in enumerate(task.depends_on)
            ],
        )
        _index_all(store, conn, new, ids)
        # A new subtask of a task already here makes that task wait on it: a cycle when the new
        # task already waits (through the store's tasks) on its parent.
        for task in new:
            if task.parent_id is not None and task.parent_id in result.already_present:
                parent = ids[task.parent_id]
                path = wait_path(conn, ids[task.task_id], parent)
                if path is not None:
                    raise refusals.dependency_cycle([parent, *path], argument="document")
        return result

    return store._write(work, lock=LIST_LOCK)


def _recognised(store: TaskStore, conn: Connection, tasks: list[ImportedTask]) -> dict[str, str]:
    """Document id -> the live task here its origin names: one imported from that origin
    (``task_origins``), or the task created here with the id and creation time the origin names."""
    origins = [task.origin_key for task in tasks]
    condition, values = store._ids_in("o.origin", origins)
    imported = {
        str(origin): str(task_id)
        for origin, task_id in conn.execute(
            f"SELECT o.origin, o.task_id FROM task_origins AS o JOIN tasks AS t ON t.task_id = o.task_id "
            f"WHERE {condition}",
            (values,),
        ).fetchall()
    }
    named = {task.task_id: split_origin(task.origin_key) for task in tasks}
    condition, values = store._ids_in("task_id", sorted({n[0] for n in named.values() if n is not None}))
    created = {
        str(task_id): _stamp(at)
        for task_id, at in conn.execute(f"SELECT task_id, created_at FROM tasks WHERE {condition}", (values,))
    }
    found: dict[str, str] = {}
    for task in tasks:
        here = imported.get(task.origin_key)
        native = named[task.task_id]
        if here is None and native is not None and created.get(native[0]) == native[1]:
            here = native[0]
        if here is not None:
            found[task.task_id] = here
    return found


def _taken(conn: Connection, task_id: str) -> bool:
    """Whether the id is a task here, live or deleted (ids are never reused)."""
    return (
        conn.execute("SELECT 1 FROM tasks WHERE task_id = ?", (task_id,)).fetchone() is not None
        or conn.execute("SELECT 1 FROM deleted_tasks WHERE task_id = ?", (task_id,)).fetchone() is not None
    )


def _choose_ids(store: TaskStore, conn: Connection, new: list[ImportedTask], result: ImportResult) -> None:
    """Each new task's id here: its own when free, else a generated ``t-<n>`` no task has or gets."""
    condition, values = store._ids_in("task_id", [task.task_id for task in new])
    taken = {
        str(task_id)
        for (task_id,) in conn.execute(
            f"SELECT task_id FROM tasks WHERE {condition} "
            f"UNION SELECT task_id FROM deleted_tasks WHERE {condition}",
            (values, values),
        )
    }
    keeps = {task.task_id for task in new if task.task_id not in taken}
    given: set[str] = set(keeps)
    number: int | None = None
    for task in new:
        if task.task_id in keeps:
            result.created[task.task_id] = task.task_id
            continue
        while True:
            if store.postgres:
                (drawn,) = conn.execute("SELECT nextval(pg_get_serial_sequence('tasks', 'seq'))").fetchone()
                candidate = f"{GENERATED_ID_PREFIX}{int(drawn)}"
            else:
                if number is None:
                    (highest,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM tasks").fetchone()
                    number = int(highest)
                number += 1
                candidate = f"{GENERATED_ID_PREFIX}{number}"
            if candidate not in given and not _taken(conn, candidate):
                break
        given.add(candidate)
        result.created[task.task_id] = candidate
        result.renumbered[task.task_id] = candidate


def _insert_all(
    conn: Connection,
    new: list[ImportedTask],
    ids: dict[str, str],
    renamed: dict[str, str],
    stamp: str,
    by: str | None,
) -> None:
    """The new tasks with everything the document gives (parents and dependencies come after)."""
    conn.executemany(
        f"INSERT INTO tasks ({_COLUMNS}) VALUES ({', '.join('?' * len(_COLUMNS.split(', ')))})",
        [
            (
                ids[task.task_id],
                task.title,
                task.description,
                task.status,
                priority_rank(task.priority),
                task.linked_session_id,
                task.created_at,
                task.updated_at or task.created_at,
                None,
                task.acceptance,
                task.created_by,
                task.claimed_by,
                task.lease_expires_at,
                task.lease_seconds,
                task.claim_count,
                task.expired_claims,
                task.lease_lost_by,
            )
            for task in new
        ],
    )
    conn.executemany(
        "INSERT INTO task_labels (task_id, label) VALUES (?, ?)",
        [(ids[task.task_id], label) for task in new for label in task.labels_stored],
    )
    conn.executemany(
        "INSERT INTO task_notes (task_id, text, at) VALUES (?, ?, ?)",
        [(ids[task.task_id], note.text, note.at) for task in new for note in task.notes],
    )
    history: list[tuple[object, ...]] = []
    for task in new:
        task_id = ids[task.task_id]
        history += [
            (
                task_id,
                entry.event,
                entry.at,
                entry.by,
                json.dumps(rewrite_references(entry.details, renamed), ensure_ascii=False),
            )
            for entry in task.history
        ]
        imported: dict[str, Any] = {"origin": task.origin_key}
        if task_id != task.task_id:
            imported["renumbered_from"] = task.task_id
        history.append((task_id, "imported", stamp, by, json.dumps(imported, ensure_ascii=False)))
    conn.executemany(
        "INSERT INTO task_history (task_id, event, at, actor, details) VALUES (?, ?, ?, ?, ?)", history
    )
    # An origin recorded for a task deleted since is taken over by the task made from it now.
    conn.executemany("DELETE FROM task_origins WHERE origin = ?", [(task.origin_key,) for task in new])
    conn.executemany(
        "INSERT INTO task_origins (origin, task_id) VALUES (?, ?)",
        [(task.origin_key, ids[task.task_id]) for task in new],
    )


def _index_all(store: TaskStore, conn: Connection, new: list[ImportedTask], ids: dict[str, str]) -> None:
    """The search index entries of the new tasks, from what the document gave (``_reindex``'s text)."""
    if not new:
        return
    condition, values = store._ids_in("task_id", [ids[task.task_id] for task in new])
    seqs = {
        str(task_id): int(seq)
        for task_id, seq in conn.execute(f"SELECT task_id, seq FROM tasks WHERE {condition}", (values,))
    }
    store._store_search_many(
        conn,
        [
            (
                seqs[ids[task.task_id]],
                [
                    task.title,
                    task.description,
                    task.acceptance,
                    *(note.text for note in task.notes),
                    " ".join(task.labels_stored),
                ],
            )
            for task in new
        ],
    )
