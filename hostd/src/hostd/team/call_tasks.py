"""Where the state of a tool call run as a task lives (the MCP tasks extension).

A task is one member's tool call answered later: its status (``working``, ``input_required``
while it waits for the client to answer a question, then ``completed``, ``failed`` or
``cancelled``), the last progress message, the questions asked and their answers, the final result
or error, and whether its member asked to cancel it. Two stores keep it:

- ``MemoryTaskStore``: one process (stdio, stateful HTTP), where the call runs on the process
  that is asked about it.
- ``DatabaseTaskStore``: stateless HTTP replicas. The rows live in the team database (PostgreSQL
  with ``storage``), else in a SQLite file in the shared data folder, so whichever replica a
  ``tasks/get`` or ``tasks/cancel`` reaches answers it, and the replica running the call sees a
  cancellation asked of another one.

A task is found only by its own member: another member's task id reads as unknown. Ids are
random (128 bits) so they cannot be guessed; tasks are forgotten ``TASK_TTL_MS`` after they
were created. The store is blocking (the database's round trips): async callers use a thread.
"""

from __future__ import annotations

import json
import secrets
import threading
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from hostd_db import Database, TeamDatabaseSettings

TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
TERMINAL: frozenset[str] = frozenset({"completed", "failed", "cancelled"})

#: How long a task is kept after it was created (its ``ttlMs``).
TASK_TTL_MS = 3_600_000
#: The polling interval suggested to clients (``pollIntervalMs``).
POLL_INTERVAL_MS = 500
#: The longest status message kept (a progress line).
MAX_MESSAGE = 500

COMPONENT = "hostd_call_tasks"


@dataclass(frozen=True)
class TaskRecord:
    """One task as the stores keep it; ``member`` is ``""`` for the local user."""

    task_id: str
    member: str
    tool: str
    status: TaskStatus
    created_at: datetime
    updated_at: datetime
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    cancel_requested: bool = False
    #: Questions for the client (``inputRequests``: key -> the request), answered or not.
    input_requests: dict[str, Any] = field(default_factory=dict)
    #: The client's answers by the questions' keys (``tasks/update``'s ``inputResponses``).
    input_responses: dict[str, Any] = field(default_factory=dict)

    @property
    def outstanding(self) -> dict[str, Any]:
        """The questions still without an answer."""
        return {key: value for key, value in self.input_requests.items() if key not in self.input_responses}

    @property
    def terminal(self) -> bool:
        return self.status in TERMINAL

    @property
    def expired(self) -> bool:
        return _now() - self.created_at > timedelta(milliseconds=TASK_TTL_MS)


class TaskStore(Protocol):
    """What the tasks extension needs to keep a task (blocking calls)."""

    def create(self, member: str, tool: str) -> TaskRecord: ...

    def get(self, task_id: str, member: str) -> TaskRecord | None:
        """The member's task, or ``None`` (unknown, expired or another member's)."""

    def progress(self, task_id: str, message: str) -> None:
        """A new status message while the task works (ignored once it ended)."""

    def finish(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> TaskRecord | None:
        """End a working task; ``None`` when it had already ended (or is gone)."""

    def request_cancel(self, task_id: str, member: str) -> TaskRecord | None:
        """Note the member's wish to cancel; ``None`` when the member has no such task."""

    def cancel_requested(self, task_id: str) -> bool: ...

    def ask(self, task_id: str, key: str, request: dict[str, Any]) -> None:
        """Put a question to the client: the task is ``input_required`` until it is answered."""

    def respond(self, task_id: str, member: str, responses: dict[str, Any]) -> TaskRecord | None:
        """Keep the member's answers to outstanding questions (others are ignored); the task works
        again once none is left. ``None`` when the member has no such task."""

    def response(self, task_id: str, key: str) -> dict[str, Any] | None:
        """The answer to the question ``key``, once there is one."""

    def close(self) -> None: ...


def _now() -> datetime:
    return datetime.now(UTC)


def new_task_id() -> str:
    return secrets.token_urlsafe(16)


def _clip(message: str | None) -> str | None:
    return None if message is None else message[:MAX_MESSAGE]


class MemoryTaskStore:
    """Tasks in this process's memory."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._tasks: dict[str, TaskRecord] = {}

    def _drop_expired(self) -> None:
        for task_id in [key for key, task in self._tasks.items() if task.expired]:
            del self._tasks[task_id]

    def create(self, member: str, tool: str) -> TaskRecord:
        now = _now()
        record = TaskRecord(new_task_id(), member, tool, "working", now, now)
        with self._lock:
            self._drop_expired()
            self._tasks[record.task_id] = record
        return record

    def get(self, task_id: str, member: str) -> TaskRecord | None:
        with self._lock:
            record = self._tasks.get(task_id)
        if record is None or record.member != member or record.expired:
            return None
        return record

    def progress(self, task_id: str, message: str) -> None:
        with self._lock:
            record = self._tasks.get(task_id)
            if record is not None and not record.terminal:
                self._tasks[task_id] = replace(record, status_message=_clip(message), updated_at=_now())

    def finish(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> TaskRecord | None:
        with self._lock:
            record = self._tasks.get(task_id)
            if record is None or record.terminal:
                return None
            ended = replace(
                record,
                status=status,
                status_message=_clip(message),
                result=result,
                error=error,
                updated_at=_now(),
            )
            self._tasks[task_id] = ended
            return ended

    def request_cancel(self, task_id: str, member: str) -> TaskRecord | None:
        with self._lock:
            record = self._tasks.get(task_id)
            if record is None or record.member != member or record.expired:
                return None
            if not record.terminal:
                record = replace(record, cancel_requested=True)
                self._tasks[task_id] = record
            return record

    def cancel_requested(self, task_id: str) -> bool:
        with self._lock:
            record = self._tasks.get(task_id)
        return record is not None and record.cancel_requested

    def ask(self, task_id: str, key: str, request: dict[str, Any]) -> None:
        with self._lock:
            record = self._tasks.get(task_id)
            if record is not None and not record.terminal:
                self._tasks[task_id] = _asked(record, key, request)

    def respond(self, task_id: str, member: str, responses: dict[str, Any]) -> TaskRecord | None:
        with self._lock:
            record = self._tasks.get(task_id)
            if record is None or record.member != member or record.expired:
                return None
            record = _answered(record, responses)
            self._tasks[task_id] = record
            return record

    def response(self, task_id: str, key: str) -> dict[str, Any] | None:
        with self._lock:
            record = self._tasks.get(task_id)
        answer = None if record is None else record.input_responses.get(key)
        return answer if isinstance(answer, dict) else None

    def close(self) -> None:
        return None


def _asked(record: TaskRecord, key: str, request: dict[str, Any]) -> TaskRecord:
    return replace(
        record,
        status="input_required",
        input_requests={**record.input_requests, key: request},
        updated_at=_now(),
    )


def _answered(record: TaskRecord, responses: dict[str, Any]) -> TaskRecord:
    """``record`` with the answers to its outstanding questions; working again once all are."""
    if record.terminal:
        return record
    outstanding = record.outstanding
    kept = {key: value for key, value in responses.items() if key in outstanding}
    if not kept:
        return record
    answers = {**record.input_responses, **kept}
    done = all(key in answers for key in record.input_requests)
    return replace(
        record,
        input_responses=answers,
        status="working" if done else "input_required",
        updated_at=_now(),
    )


def task_schema() -> Any:
    """The table of tasks, the same on SQLite and PostgreSQL (``hostd_db.Schema``)."""
    from hostd_db import AddColumn, Column, ColumnType, Index, Schema, Table

    return Schema(
        sqlite_file="call_tasks.db",
        migrations=[
            [
                Table(
                    "call_tasks",
                    (
                        Column("task_id", ColumnType.KEY, primary_key=True),
                        Column("member", ColumnType.KEY, not_null=True),
                        Column("tool", ColumnType.TEXT, not_null=True),
                        Column("status", ColumnType.TEXT, not_null=True),
                        Column("status_message", ColumnType.TEXT),
                        # ISO 8601 text in UTC: compared as text, the same on both engines.
                        Column("created_at", ColumnType.KEY, not_null=True),
                        Column("updated_at", ColumnType.KEY, not_null=True),
                        Column("result", ColumnType.JSON),
                        Column("error", ColumnType.JSON),
                        Column("cancel_requested", ColumnType.SMALLINT, not_null=True, default="0"),
                    ),
                ),
                Index("call_tasks_created", "call_tasks", "created_at"),
            ],
            [  # questions to the client mid-way (input_required) and its answers
                AddColumn("call_tasks", Column("input_requests", ColumnType.JSON)),
                AddColumn("call_tasks", Column("input_responses", ColumnType.JSON)),
            ],
        ],
    )


_COLUMNS = (
    "task_id, member, tool, status, status_message, created_at, updated_at, result, error, cancel_requested,"
    " input_requests, input_responses"
)


def _stamp(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _moment(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)


def _json(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    loaded = json.loads(value) if isinstance(value, str | bytes) else value
    return loaded if isinstance(loaded, dict) else None


def _record(row: Any) -> TaskRecord:
    return TaskRecord(
        task_id=row[0],
        member=row[1],
        tool=row[2],
        status=row[3],
        status_message=row[4],
        created_at=_moment(row[5]),
        updated_at=_moment(row[6]),
        result=_json(row[7]),
        error=_json(row[8]),
        cancel_requested=bool(row[9]),
        input_requests=_json(row[10]) or {},
        input_responses=_json(row[11]) or {},
    )


class DatabaseTaskStore:
    """Tasks in a database every replica reaches (``hostd_db.Database``)."""

    def __init__(self, database: Database) -> None:
        self.database = database

    @classmethod
    def open(cls, data_dir: Path, team: TeamDatabaseSettings | None) -> DatabaseTaskStore:
        """The team database's ``hostd_call_tasks`` schema with ``storage``, else
        ``call_tasks.db`` in the host's folder of the data directory (shared by the replicas)."""
        from hostd_db import open_database

        folder = data_dir / "hostd"
        if team is None:
            folder.mkdir(parents=True, exist_ok=True)
        return cls(open_database(task_schema(), COMPONENT, data_dir=folder, team=team))

    def _select(self, connection: Any, task_id: str) -> TaskRecord | None:
        row = connection.execute(
            f"SELECT {_COLUMNS} FROM call_tasks WHERE task_id = ?", (task_id,)
        ).fetchone()
        return None if row is None else _record(row)

    def create(self, member: str, tool: str) -> TaskRecord:
        now = _now()
        record = TaskRecord(new_task_id(), member, tool, "working", now, now)
        oldest = _stamp(now - timedelta(milliseconds=TASK_TTL_MS))

        def work(connection: Any) -> None:
            connection.execute("DELETE FROM call_tasks WHERE created_at < ?", (oldest,))
            connection.execute(
                "INSERT INTO call_tasks"
                " (task_id, member, tool, status, created_at, updated_at, cancel_requested)"
                " VALUES (?, ?, ?, ?, ?, ?, 0)",
                (record.task_id, member, tool, "working", _stamp(now), _stamp(now)),
            )

        self.database.write(work)  # committed before the task id is handed out
        return record

    def get(self, task_id: str, member: str) -> TaskRecord | None:
        record = self.database.read(lambda connection: self._select(connection, task_id))
        if record is None or record.member != member or record.expired:
            return None
        return record

    def progress(self, task_id: str, message: str) -> None:
        self.database.write(
            lambda connection: connection.execute(
                "UPDATE call_tasks SET status_message = ?, updated_at = ?"
                " WHERE task_id = ? AND status IN ('working', 'input_required')",
                (_clip(message), _stamp(_now()), task_id),
            )
        )

    def finish(
        self,
        task_id: str,
        status: TaskStatus,
        *,
        message: str | None = None,
        result: dict[str, Any] | None = None,
        error: dict[str, Any] | None = None,
    ) -> TaskRecord | None:
        def work(connection: Any) -> TaskRecord | None:
            changed = connection.execute(
                "UPDATE call_tasks SET status = ?, status_message = ?, result = ?, error = ?, updated_at = ?"
                " WHERE task_id = ? AND status IN ('working', 'input_required')",
                (
                    status,
                    _clip(message),
                    None if result is None else json.dumps(result),
                    None if error is None else json.dumps(error),
                    _stamp(_now()),
                    task_id,
                ),
            ).rowcount
            return self._select(connection, task_id) if changed else None

        return self.database.write(work, lock=task_id)

    def request_cancel(self, task_id: str, member: str) -> TaskRecord | None:
        def work(connection: Any) -> TaskRecord | None:
            record = self._select(connection, task_id)
            if record is None or record.member != member or record.expired:
                return None
            if record.terminal:
                return record
            connection.execute("UPDATE call_tasks SET cancel_requested = 1 WHERE task_id = ?", (task_id,))
            return replace(record, cancel_requested=True)

        return self.database.write(work, lock=task_id)

    def cancel_requested(self, task_id: str) -> bool:
        row = self.database.read(
            lambda connection: connection.execute(
                "SELECT cancel_requested FROM call_tasks WHERE task_id = ?", (task_id,)
            ).fetchone(),
            snapshot=False,
        )
        return row is not None and bool(row[0])

    def _store_questions(self, connection: Any, record: TaskRecord) -> None:
        connection.execute(
            "UPDATE call_tasks SET status = ?, input_requests = ?, input_responses = ?, updated_at = ?"
            " WHERE task_id = ?",
            (
                record.status,
                json.dumps(record.input_requests),
                json.dumps(record.input_responses),
                _stamp(record.updated_at),
                record.task_id,
            ),
        )

    def ask(self, task_id: str, key: str, request: dict[str, Any]) -> None:
        def work(connection: Any) -> None:
            record = self._select(connection, task_id)
            if record is not None and not record.terminal:
                self._store_questions(connection, _asked(record, key, request))

        self.database.write(work, lock=task_id)

    def respond(self, task_id: str, member: str, responses: dict[str, Any]) -> TaskRecord | None:
        def work(connection: Any) -> TaskRecord | None:
            record = self._select(connection, task_id)
            if record is None or record.member != member or record.expired:
                return None
            answered = _answered(record, responses)
            if answered is not record:
                self._store_questions(connection, answered)
            return answered

        return self.database.write(work, lock=task_id)

    def response(self, task_id: str, key: str) -> dict[str, Any] | None:
        record = self.database.read(lambda connection: self._select(connection, task_id), snapshot=False)
        answer = None if record is None else record.input_responses.get(key)
        return answer if isinstance(answer, dict) else None

    def close(self) -> None:
        self.database.close()
