"""``hostd db copy`` for tasks: a user's SQLite list into the team database, history and all.

Each local task (and each deletion record) is looked up by id in the team database:

- absent: copied whole -- its record (with who created and who claimed it), labels, notes,
  dependencies, parent, session link and history (with who made each change), timestamps kept --
  placed after the team's tasks in the local order (a new ``seq``);
- present and equal field by field (record, labels, notes, dependencies, history): unchanged,
  so a second run changes nothing;
- present and different: a conflict, reported and never overwritten. A task that depends on,
  or is a subtask of, a task in conflict is not copied either (its dependency would name a
  different task than the one it meant) and is reported too.

Both sides are read with the same dialect-neutral SQL (``snapshot``), so "equal" means equal
as the tools would answer it. Everything runs in one transaction under the list lock: all of
it is copied, or none.
"""

from __future__ import annotations

import json
from typing import Any

from hostd_db import open_database

from hostd import CopyReport, PluginContext, Text
from hostd_tasks.models import HistoryEntry, Settings
from hostd_tasks.store.base import LIST_LOCK
from hostd_tasks.store.rows import Connection, history_of, stored_moment, stored_stamp
from hostd_tasks.store.schema import schema
from hostd_tasks.store.writes import TaskStore

TASK_COLUMNS = (
    "title, description, status, priority, linked_session_id, created_at, updated_at, parent_id, acceptance, "
    "created_by, claimed_by, lease_expires_at, lease_seconds, claim_count, expired_claims"
)


def snapshot(conn: Connection, task_id: str) -> dict[str, Any] | None:
    """Everything stored about a live task, in comparable Python values; None when there is none."""
    row = conn.execute(f"SELECT {TASK_COLUMNS} FROM tasks WHERE task_id = ?", (task_id,)).fetchone()
    if row is None:
        return None
    (
        title, description, status, priority, session, created, updated, parent, acceptance, creator, claimer,
        lease_until, lease_seconds, claims, expired,
    ) = row  # fmt: skip
    return {
        "task": {
            "title": title,
            "description": description,
            "status": status,
            "priority": int(priority),
            "linked_session_id": session,
            "created_at": stored_moment(created),
            "updated_at": stored_moment(updated),
            "parent_id": parent,
            "acceptance": acceptance,
            "created_by": creator,
            "claimed_by": claimer,
            "lease_expires_at": None if lease_until is None else stored_moment(lease_until),
            "lease_seconds": lease_seconds,
            "claim_count": int(claims),
            "expired_claims": int(expired),
        },
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
            (str(text), stored_moment(at))
            for text, at in conn.execute(
                "SELECT text, at FROM task_notes WHERE task_id = ? ORDER BY seq", (task_id,)
            )
        ],
        "history": history_of(conn, task_id),
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
        "deleted_at": stored_moment(row[1]),
        "history": history_of(conn, task_id),
    }


def _read_local(conn: Connection) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Every local task (in list order) and every deletion record, as snapshots."""
    live = {
        str(task_id): snapshot(conn, str(task_id))
        for (task_id,) in conn.execute("SELECT task_id FROM tasks ORDER BY seq").fetchall()
    }
    deleted = {
        str(task_id): deleted_snapshot(conn, str(task_id))
        for (task_id,) in conn.execute(
            "SELECT task_id FROM deleted_tasks ORDER BY deleted_at, task_id"
        ).fetchall()
    }
    return {k: v for k, v in live.items() if v}, {k: v for k, v in deleted.items() if v}


def _insert_history(conn: Connection, task_id: str, history: list[HistoryEntry]) -> None:
    conn.executemany(
        "INSERT INTO task_history (task_id, event, at, actor, details) VALUES (?, ?, ?, ?, ?)",
        [
            (
                task_id,
                entry.event,
                stored_stamp(entry.at),
                entry.by,
                json.dumps(entry.details, ensure_ascii=False),
            )
            for entry in history
        ],
    )


def copy_to_team_database(context: PluginContext[Settings]) -> CopyReport:
    """Copy the plugin's SQLite list (the ``database`` setting) into its team tables."""
    report = CopyReport()
    if not (context.data_dir / context.settings.database).exists():
        return report
    local_database = open_database(
        schema(context.settings.database), "tasks", data_dir=context.data_dir, team=None
    )
    try:
        local, local_deleted = TaskStore(local_database)._read(_read_local)
    finally:
        local_database.close()
    team = TaskStore(context.database())

    def differs(task_id: str) -> str:
        return context.render(
            Text(
                en=f"task {task_id} differs in the team database",
                zh=f"任务 {task_id} 在团队数据库中的内容与本地不同",
            )
        )

    def work(conn: Connection) -> CopyReport:
        report.copied.clear()
        report.unchanged.clear()
        report.conflicts.clear()
        new: list[str] = []
        unchanged = 0
        conflicted: set[str] = set()
        for task_id, mine in local.items():
            theirs = snapshot(conn, task_id)
            if theirs is None and deleted_snapshot(conn, task_id) is None:
                new.append(task_id)
            elif theirs == mine:
                unchanged += 1
            else:
                conflicted.add(task_id)
                report.conflicts.append(differs(task_id))
        # A new task waiting on a task in conflict would wait on someone else's task: hold it back.
        held = True
        while held:
            held = False
            for task_id in list(new):
                waits_on = [*local[task_id]["depends_on"], local[task_id]["task"]["parent_id"]]
                blocker = next((other for other in waits_on if other in conflicted), None)
                if blocker is not None:
                    new.remove(task_id)
                    conflicted.add(task_id)
                    held = True
                    report.conflicts.append(
                        context.render(
                            Text(
                                en=f"task {task_id} not copied: it waits on task {blocker}, "
                                "which is in conflict",
                                zh=f"任务 {task_id} 未复制：它等待的任务 {blocker} 存在冲突",
                            )
                        )
                    )
        for task_id in new:  # rows first (parents later: a parent may come after its subtask)
            task = {**local[task_id]["task"], "parent_id": None}
            values = [
                task_id,
                *(
                    stored_stamp(value) if key.endswith("_at") and value is not None else value
                    for key, value in task.items()
                ),
            ]
            conn.execute(
                f"INSERT INTO tasks (task_id, {TASK_COLUMNS}) VALUES ({', '.join('?' * len(values))})", values
            )
        for task_id in new:
            mine = local[task_id]
            if mine["task"]["parent_id"] is not None:
                conn.execute(
                    "UPDATE tasks SET parent_id = ? WHERE task_id = ?", (mine["task"]["parent_id"], task_id)
                )
            conn.executemany(
                "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, ?)",
                [(task_id, dep, position) for position, dep in enumerate(mine["depends_on"])],
            )
            conn.executemany(
                "INSERT INTO task_labels (task_id, label) VALUES (?, ?)",
                [(task_id, label) for label in mine["labels"]],
            )
            conn.executemany(
                "INSERT INTO task_notes (task_id, text, at) VALUES (?, ?, ?)",
                [(task_id, text, stored_stamp(at)) for text, at in mine["notes"]],
            )
            _insert_history(conn, task_id, mine["history"])
            team._reindex(conn, task_id)
        deleted_copied = deleted_unchanged = 0
        for task_id, mine in local_deleted.items():
            theirs = deleted_snapshot(conn, task_id)
            if theirs is None and snapshot(conn, task_id) is None:
                conn.execute(
                    "INSERT INTO deleted_tasks (task_id, record, deleted_at) VALUES (?, ?, ?)",
                    (
                        task_id,
                        json.dumps(mine["record"], ensure_ascii=False),
                        stored_stamp(mine["deleted_at"]),
                    ),
                )
                _insert_history(conn, task_id, mine["history"])
                deleted_copied += 1
            elif theirs == mine:
                deleted_unchanged += 1
            else:
                report.conflicts.append(
                    context.render(
                        Text(
                            en=f"deleted task {task_id} differs in the team database",
                            zh=f"已删除的任务 {task_id} 在团队数据库中的内容与本地不同",
                        )
                    )
                )
        report.copied.update({"tasks": len(new), "deleted tasks": deleted_copied})
        report.unchanged.update({"tasks": unchanged, "deleted tasks": deleted_unchanged})
        return report

    return team._write(work, lock=LIST_LOCK)
