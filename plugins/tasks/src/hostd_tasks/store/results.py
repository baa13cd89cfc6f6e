"""What the task store answers, beyond a single record, and the edit ``update`` takes.

Small frozen dataclasses, one per answer that carries more than one record; the records and
their items are the models the tools answer with (``hostd_tasks.models``), so nothing is copied
field by field on the way out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

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
    stuck: list[StuckTask] = field(default_factory=list)
    more_stuck: bool = False  # more may be stuck than ``stuck`` names


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
