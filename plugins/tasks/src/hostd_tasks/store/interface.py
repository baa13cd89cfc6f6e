"""What the tools (and the ``tasks.links`` service) ask of a task store, and what it answers.

``TaskStore`` is the interface, whichever database holds the list: ``SqliteTaskStore`` (one
file, the default) and ``PostgresTaskStore`` (the team database) answer every call alike, and
``store_for`` picks one when the plugin first needs it. The answers that carry more than one
record are the small frozen dataclasses below; records and their items are the models the tools
answer with (``hostd_tasks.models``), so nothing is copied field by field on the way out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Protocol

from hostd_tasks.models import HistoryEntry, NoTaskReason, RelatedTask, StuckTask, TaskRecord
from hostd_tasks.rules import Priority, Status


@dataclass(frozen=True)
class StatusChange:
    task: TaskRecord
    previous_status: Status
    changed: bool


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


#: A list position: (priority rank, seq), the order list_tasks walks (most urgent, then oldest).
ListPosition = tuple[int, int]


@dataclass(frozen=True)
class ListPage:
    """One page of a task list: its tasks, every match's count, and where the next page starts."""

    tasks: list[TaskRecord]
    total: int
    next_after: ListPosition | None


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
class TaskDetails:
    task: TaskRecord
    deleted_at: datetime | None
    history: list[HistoryEntry]
    history_total: int
    depends_on: list[RelatedTask]
    dependents: list[RelatedTask]
    subtasks: list[RelatedTask]


class TaskStore(Protocol):
    """A task store, whichever database holds it.

    Every write takes ``by``, the member making it (the tools pass ``ToolContext.member``); it is
    recorded on what it creates or claims and on each history entry. None records "unknown".
    What the rules refuse is raised as ``hostd.ToolError`` (see ``refusals``).
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
        after: ListPosition | None,
        label: str | None = None,
        parent_id: str | None = None,
        query: str | None = None,
        created_by: str | None = None,
        claimed_by: str | None = None,
    ) -> ListPage: ...
    def set_status(self, task_id: str, new_status: Status, *, by: str | None = None) -> StatusChange: ...
    def next_task(self, *, claim: bool, by: str | None = None) -> NextTask: ...
    def stats(self) -> Stats: ...
    def link_session(self, task_id: str, session_id: str, *, by: str | None = None) -> SessionLink: ...
    def tasks_for_session(self, session_id: str) -> list[TaskRecord]: ...
