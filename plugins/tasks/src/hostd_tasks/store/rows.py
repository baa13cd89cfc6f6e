"""Rows and connections: how a task's stored row becomes its record, and the small reads and
writes every operation of the store shares (existence, history, the 'waits on' graph).

Both databases read the same rows through the same ``Connection`` shape (``?`` parameters,
tuples), so everything here is written once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from hostd_db import Connection

from hostd_tasks.models import HistoryEntry, Note, RelatedTask, SubtaskProgress, TaskRecord
from hostd_tasks.rules import STATUSES, priority_name


def stored_moment(value: object) -> datetime:
    """A stored time as an aware UTC datetime: ISO text (SQLite) or a timestamptz value (PostgreSQL).

    Times are written in ``hostd_db.utc_stamp``'s spelling (``...Z``), the one every store and answer
    uses; stores written before version 8 spelled them ``+00:00``, which version 8 rewrote.
    """
    if isinstance(value, datetime):
        return value.astimezone(UTC)
    return datetime.fromisoformat(str(value))


def json_or(value: object, empty: object) -> Any:
    """A JSON aggregate read from a record row (text on both backends; NULL when nothing matched)."""
    return json.loads(str(value)) if value else empty


def record_from_row(row: Sequence[object], labels: list[str], notes: list[Note]) -> TaskRecord:
    """A record from a row of ``TaskStore.record_columns`` with its labels and notes."""
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
        lease_expires_at,
        claim_count,
        expired_claims,
    ) = row
    counts: dict[str, int] = json_or(kids, {})
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
        depends_on=json_or(depends, []),
        linked_session_id=None if session is None else str(session),
        created_at=stored_moment(created),
        updated_at=stored_moment(updated),
        parent_id=None if parent is None else str(parent),
        labels=labels,
        acceptance=str(acceptance),
        notes=notes,
        subtasks=subtasks,
        created_by=None if created_by is None else str(created_by),
        claimed_by=None if claimed_by is None else str(claimed_by),
        lease_expires_at=None if lease_expires_at is None else stored_moment(lease_expires_at),
        claim_count=int(claim_count),  # type: ignore[call-overload]
        expired_claims=int(expired_claims),  # type: ignore[call-overload]
    )


def append_history(
    conn: Connection, task_id: str, event: str, details: dict[str, object], at: str, by: str | None
) -> None:
    """Append one entry to a task's history, made by the member ``by`` (stored as ``actor``)."""
    conn.execute(
        "INSERT INTO task_history (task_id, event, at, actor, details) VALUES (?, ?, ?, ?, ?)",
        (task_id, event, at, by, json.dumps(details, ensure_ascii=False)),
    )


def waits_on(conn: Connection, task_id: str) -> list[str]:
    """What a task waits on before it is offered: its dependencies, and (for a parent) its subtasks."""
    return [
        str(other)
        for (other,) in conn.execute(
            "SELECT depends_on FROM task_dependencies WHERE task_id = ? "
            "UNION ALL SELECT task_id FROM tasks WHERE parent_id = ?",
            (task_id, task_id),
        )
    ]


def wait_path(conn: Connection, start: str, goal: str) -> list[str] | None:
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
            for other in waits_on(conn, node):
                if other not in came_from:
                    came_from[other] = node
                    following.append(other)
        frontier = following
    return None


def is_live(conn: Connection, task_id: str) -> bool:
    return conn.execute("SELECT 1 FROM tasks WHERE task_id = ?", (task_id,)).fetchone() is not None


def deletion_time(conn: Connection, task_id: str) -> datetime | None:
    row = conn.execute("SELECT deleted_at FROM deleted_tasks WHERE task_id = ?", (task_id,)).fetchone()
    return None if row is None else stored_moment(row[0])


def related_tasks(conn: Connection, sql: str, task_id: str) -> list[RelatedTask]:
    """The tasks ``sql`` finds for ``task_id``, as (task_id, title, status) rows."""
    return [
        RelatedTask(task_id=str(other), title=str(title), status=status)
        for other, title, status in conn.execute(sql, (task_id,)).fetchall()
    ]


def history_of(conn: Connection, task_id: str, *, newest: int | None = None) -> list[HistoryEntry]:
    """A task's history, oldest first; only the ``newest`` entries when given."""
    if newest is None:
        rows = conn.execute(
            "SELECT event, at, actor, details FROM task_history WHERE task_id = ? ORDER BY seq", (task_id,)
        ).fetchall()
    else:
        rows = conn.execute(
            "SELECT event, at, actor, details FROM task_history WHERE task_id = ? ORDER BY seq DESC LIMIT ?",
            (task_id, newest),
        ).fetchall()[::-1]
    return [history_entry(event, at, actor, details) for event, at, actor, details in rows]


def history_entry(event: object, at: object, actor: object, details: object) -> HistoryEntry:
    """A history entry from its stored columns."""
    return HistoryEntry(
        event=str(event),
        at=stored_moment(at),
        by=None if actor is None else str(actor),
        details=json.loads(str(details)),
    )
