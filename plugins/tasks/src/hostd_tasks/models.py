"""What the plugin is configured with and what its tools answer: the settings, the task record
and the tool output models (every one named ``*Output``).

The store builds the records and the small items (``RelatedTask``, ``HistoryEntry``,
``StuckTask``) directly, so a tool answers what the store found without copying it field by
field. The rules these records obey live in ``rules``.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Annotated, Any, Literal, get_args

from hostd.paging import Page
from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema, field_validator

from hostd import ID_PATTERN, ToolOutput
from hostd_tasks.rules import (
    LEASE_SECONDS_DEFAULT,
    LEASE_SECONDS_MAX,
    LEASE_SECONDS_MIN,
    Priority,
    Status,
)


def lean_schema(schema: dict[str, Any], model: type[BaseModel]) -> None:
    """Trim a record's JSON schema to what validates, for clients that check every answer.

    MCP clients validate ``structuredContent`` against the output schema, record by record: a
    page of 100 tasks is thousands of keyword checks, and a failed ``anyOf`` branch costs an
    error object. Property titles only repeat the names; ``anyOf: [X, null]`` becomes one check
    (``type: [..., "null"]``, a nested model inlined). Descriptions stay: they are for the model.
    """
    schema.pop("title", None)
    for name, prop in schema.get("properties", {}).items():
        prop.pop("title", None)
        options = prop.get("anyOf")
        if not (isinstance(options, list) and len(options) == 2 and {"type": "null"} in options):
            continue
        (other,) = [option for option in options if option != {"type": "null"}]
        if set(other) == {"type"} and isinstance(other["type"], str):
            del prop["anyOf"]
            prop["type"] = [other["type"], "null"]
        elif set(other) == {"$ref"}:
            nested = [arg for arg in get_args(model.model_fields[name].annotation) if isinstance(arg, type)]
            inner = next((arg for arg in nested if issubclass(arg, BaseModel)), None)
            if inner is not None:
                inline = inner.model_json_schema(mode="serialization")
                if "$defs" not in inline:  # only a flat model can be inlined whole
                    del prop["anyOf"]
                    prop.update(
                        {**inline, "type": ["object", "null"], "description": prop.get("description")}
                    )


#: Records answered many at a time carry a lean schema (see ``lean_schema``).
RECORD_CONFIG = ConfigDict(frozen=True, json_schema_extra=lean_schema)


# --- the task record ---------------------------------------------------------------------------


class Note(BaseModel):
    """One note appended with update_task(append_note=...)."""

    model_config = RECORD_CONFIG

    text: str = Field(description="The note")
    at: datetime = Field(description="When it was appended (UTC)")


class SubtaskProgress(BaseModel):
    """How far a parent's subtasks are, so a parent shows progress without listing its children."""

    model_config = RECORD_CONFIG

    total: int = Field(description="Number of subtasks")
    by_status: dict[Status, int] = Field(description="Subtask count per status")


class TaskRecord(BaseModel):
    """A task as every tool answers it: the whole record, never a partial one."""

    model_config = RECORD_CONFIG

    task_id: str = Field(description="The task's identifier")
    title: str = Field(description="Short title, 1-200 characters")
    description: str = Field(description="Longer text; empty when none was given")
    status: Status = Field(description="pending, in_progress, completed, failed or blocked")
    priority: Priority = Field(description="P0 (most urgent), P1 or P2")
    depends_on: list[str] = Field(description="Tasks that must be completed before this one is offered next")
    linked_session_id: str | None = Field(description="The deep-thinking session linked to this task, if any")
    parent_id: str | None = Field(description="The task this one is a subtask of; null for a top-level task")
    labels: list[str] = Field(description="Labels (lower-case), sorted")
    acceptance: str = Field(description="How to verify the task is done; empty when none was given")
    notes: list[Note] = Field(description="Notes appended over time, oldest first")
    subtasks: SubtaskProgress | None = Field(description="Its subtasks' progress; null when it has none")
    created_at: datetime = Field(description="When the task was created (UTC)")
    updated_at: datetime = Field(description="When the task last changed (UTC)")
    created_by: str | None = Field(
        description="The member who created the task; null when unknown (created before members were "
        "recorded)"
    )
    claimed_by: str | None = Field(
        description="The member who last moved the task to in_progress (claimed it); kept while it is "
        "in_progress, blocked, completed or failed, null once it is pending again or never claimed"
    )
    lease_expires_at: datetime | None = Field(
        description="While in_progress: when the claim lapses unless its holder renews it (renew_claim, or "
        "any status or note update by the holder); then the task is pending again. Null otherwise"
    )
    claim_count: int = Field(description="How many times the task was claimed (moved to in_progress)")
    expired_claims: int = Field(description="How many of those claims lapsed unrenewed")

    @classmethod
    def from_stored_json(cls, text: str | bytes) -> TaskRecord:
        """A record kept as JSON (a deleted task's last one); those kept before members were
        recorded have no member fields: unknown, so null."""
        raw = json.loads(text)
        for member_field in MEMBER_FIELDS:
            raw.setdefault(member_field, None)
        for lease_field, unknown in LEASE_FIELDS.items():
            raw.setdefault(lease_field, unknown)
        return cls.model_validate(raw)


#: The record's fields that name team members; absent (unknown) in records from before them.
MEMBER_FIELDS = ("created_by", "claimed_by")
#: The record's lease fields and what a record kept before leases reads as.
LEASE_FIELDS: dict[str, object] = {"lease_expires_at": None, "claim_count": 0, "expired_claims": 0}


class RelatedTask(BaseModel):
    """A related task, shortly: enough to decide whether to open it."""

    model_config = ConfigDict(frozen=True)

    task_id: str = Field(description="The related task's id")
    title: str = Field(description="Its title")
    status: Status = Field(description="Its status")


class HistoryEntry(BaseModel):
    """One change in a task's history."""

    model_config = ConfigDict(frozen=True)

    event: str = Field(
        description="created, edited, status, claimed, released, lease_expired, linked, split, "
        "dependency_dropped, imported or deleted"
    )
    at: datetime = Field(description="When it happened (UTC)")
    by: str | None = Field(
        description="The member who made the change; null when unknown (recorded before members were)"
    )
    details: dict[str, Any] = Field(description="What changed: e.g. {'from': 'pending', 'to': 'failed'}")


class StuckTask(BaseModel):
    """A pending task that waits on failed work: it will not be offered until that is retried."""

    model_config = ConfigDict(frozen=True)

    task_id: str = Field(description="A pending task that cannot be offered")
    title: str = Field(description="Its title")
    failed: list[str] = Field(description="The failed dependencies or subtasks it waits on")
    via_parent: str | None = Field(
        default=None,
        description="Set for a subtask whose parent waits on the failed work (the parent's id): the "
        "subtask may be ready, but its parent cannot finish until that work is retried",
    )


class LinkedSession(BaseModel):
    """A deep-thinking session's summary, as that plugin's ``deep-thinking.sessions`` service gives it."""

    session_id: str = Field(description="The session's id")
    name: str | None = Field(default=None, description="The session's name")
    status: str | None = Field(default=None, description="The session's status")
    thought_count: int | None = Field(default=None, description="How many thoughts the session holds")


# --- tool outputs ------------------------------------------------------------------------------


class TaskOutput(ToolOutput):
    task: TaskRecord = Field(description="The task's full record")


#: MCP clients check every answer against the output schema keyword by keyword: spelling each
#: record out there cost a 100-task page more than the search itself (about half of its 16 ms
#: round trip over stdio, measured in bench/bench_tasks.py). So a page's items are described and
#: their keys required, not spelled out, as the host does for ``metadata``; every single-task
#: answer (create_task, update_task, get_task...) spells it out.
RECORD_PAGE_ITEMS = {
    "type": "object",
    "description": "A task record, the same as create_task's or get_task's 'task'",
    "required": list(TaskRecord.model_fields),
}


class TaskListOutput(Page):
    tasks: Annotated[list[TaskRecord], WithJsonSchema({"type": "array", "items": RECORD_PAGE_ITEMS})] = Field(
        description="Tasks, most urgent first (P0 before P1 before P2, then oldest)"
    )
    total: int = Field(description="How many tasks match the filters, across all pages")


class UpdateOutput(ToolOutput):
    task: TaskRecord = Field(description="The task's full record after the call")
    changed: list[str] = Field(
        description="The fields this call changed (sorted); empty when every value given was already so"
    )


class DeleteOutput(ToolOutput):
    task: TaskRecord = Field(description="The task's last record, as it was when deleted")
    dropped_from: list[str] = Field(
        description="Tasks that depended on it and no longer do (with drop_dependencies=true)"
    )


class SplitOutput(ToolOutput):
    task: TaskRecord = Field(description="The parent task, with its subtasks' progress")
    subtasks: list[TaskRecord] = Field(description="The subtasks created, in the order given")


class TaskDetailsOutput(ToolOutput):
    task: TaskRecord = Field(description="The task's full record (for a deleted task: its last one)")
    deleted_at: datetime | None = Field(description="When the task was deleted; null for a live task")
    history: list[HistoryEntry] = Field(
        description="What happened to the task, oldest first (the newest 200 entries)"
    )
    history_total: int = Field(description="All history entries of the task")
    depends_on: list[RelatedTask] = Field(description="The tasks it depends on, with their status")
    dependents: list[RelatedTask] = Field(description="The tasks that depend on it")
    subtasks: list[RelatedTask] = Field(description="Its subtasks, most urgent first")
    session: LinkedSession | None = Field(
        description="The linked deep-thinking session's summary, when linked and deep-thinking answers"
    )
    session_checked: bool = Field(
        description="True when deep-thinking was asked about the linked session and answered"
    )


class StatusOutput(ToolOutput):
    task: TaskRecord = Field(description="The task's full record after the call")
    previous_status: Status = Field(description="The status before the call")
    changed: bool = Field(description="False when the task already had the requested status")
    allowed_next: list[Status] = Field(description="Statuses the task may move to from its status now")


NoTaskReason = Literal["empty", "none_pending", "waiting_on_dependencies"]


class NextTaskOutput(ToolOutput):
    task: TaskRecord | None = Field(description="The most urgent ready task, or null when none is ready")
    claimed: bool = Field(description="True when this call moved the task to in_progress for the caller")
    reason: NoTaskReason | None = Field(
        description="Why no task was offered: the list is empty, no task is pending, or every pending "
        "task waits on an unfinished dependency or subtask; null when a task was offered"
    )
    stuck: list[StuckTask] = Field(
        description="Pending tasks that wait on failed work (retry or drop it), directly or through their "
        "parent, at most 20, behind the 20 most urgent failed tasks (get_task_stats counts them all); "
        "given whether or not a task was offered"
    )


class ClaimOutput(ToolOutput):
    task: TaskRecord = Field(description="The task's full record after the call")
    lease_expires_at: datetime | None = Field(
        description="When the caller's claim now lapses unless renewed; null once released"
    )


class StatsOutput(ToolOutput):
    total: int = Field(description="Number of tasks")
    by_status: dict[Status, int] = Field(description="Task count per status")
    by_priority: dict[Priority, int] = Field(description="Task count per priority")
    completion_rate: float | None = Field(
        description="Completed tasks / all tasks (0..1); null when there are none"
    )
    waiting_on_dependencies: int = Field(description="Pending tasks that wait on an unfinished dependency")
    stuck_behind_failed: int = Field(
        description="Pending tasks that wait on a failed dependency or subtask: they will not be offered "
        "until it is retried or the dependency dropped"
    )
    oldest_pending_task_id: str | None = Field(description="The pending task created first, if any")
    oldest_pending_age_seconds: float | None = Field(
        description="Its age in seconds; null with no pending task"
    )


class LinkOutput(ToolOutput):
    task: TaskRecord = Field(description="The task's full record, with its linked_session_id")
    session_checked: bool = Field(
        description="True when deep-thinking confirmed the session exists; false when it is not loaded "
        "or could not answer (the link is then stored unchecked)"
    )
    session: LinkedSession | None = Field(
        description="The session's summary from deep-thinking, when available"
    )
    previous_session_id: str | None = Field(description="The session the task was linked to before, if any")


class ActivityEntry(BaseModel):
    """One change to some task, for a feed of what the team did."""

    model_config = ConfigDict(frozen=True)

    task_id: str = Field(description="The task changed")
    title: str | None = Field(description="Its title now; null for a task deleted since")
    event: str = Field(
        description="created, edited, status, claimed, linked, split, dependency_dropped or deleted"
    )
    at: datetime = Field(description="When it happened (UTC)")
    by: str | None = Field(description="The member who made the change; null when unknown")
    details: dict[str, Any] = Field(description="What changed, as in get_task's history")


class ActivityOutput(ToolOutput):
    entries: list[ActivityEntry] = Field(description="Changes across all tasks, newest first")


class ExportTasksOutput(ToolOutput):
    format: Literal["json", "markdown"] = Field(description="The document's form")
    count: int = Field(description="Tasks in the document")
    brought_along: int = Field(
        description="Of those, tasks outside the filter that the selected ones wait on (dependencies, "
        "parents), included so that every reference points inside the document"
    )
    document: dict[str, Any] | None = Field(
        default=None,
        description="The JSON document (import_tasks takes it as data); null when written to a file or "
        "as Markdown",
    )
    markdown: str | None = Field(
        default=None, description="The Markdown text, when format=markdown and no output_path"
    )
    output_path: str | None = Field(default=None, description="The file written, when output_path was given")
    bytes_written: int | None = Field(default=None, description="Its size in bytes")


class ImportTasksOutput(ToolOutput):
    format_version: int = Field(description="The document's format version")
    total: int = Field(description="Tasks in the document")
    created: int = Field(description="Tasks created by this import")
    already_present: int = Field(
        description="Tasks this store already held (imported before, or made here): left as they are"
    )
    renumbered: dict[str, str] = Field(
        description="Document id -> new id, for each created task whose id was taken here (by a live or "
        "deleted task); its references (dependencies, parent, history) follow"
    )
    ids: dict[str, str] = Field(description="Every document id -> the task's id in this store")
    input_path: str | None = Field(default=None, description="The file read, when input_path was given")


class GraphTask(BaseModel):
    """A task on a path or in a ranking of the dependency graph."""

    model_config = ConfigDict(frozen=True)

    task_id: str = Field(description="The task")
    title: str = Field(description="Its title")
    status: Status = Field(description="Its status")
    priority: Priority = Field(description="Its priority")
    unblocks: int = Field(description="Unfinished tasks that wait on it, directly or through others")


class TaskGraphOutput(ToolOutput):
    mermaid: str = Field(
        description="The graph as a Mermaid flowchart: an arrow from a task to what waits on it"
    )
    tasks_shown: int = Field(description="Tasks drawn")
    tasks_total: int = Field(description="Tasks the graph holds (the whole list, or around task_id)")
    truncated: bool = Field(
        description="True when more tasks were left out than drawn (give task_id to draw fewer)"
    )
    critical_path: list[GraphTask] = Field(
        description="The chain of unfinished work that decides when the task (or the list) can be done, "
        "first to last"
    )


class CriticalPathOutput(ToolOutput):
    task_id: str | None = Field(description="The task asked about; null for the whole list")
    critical_path: list[GraphTask] = Field(
        description="The longest chain of unfinished tasks the task (or the list) waits on, in the order "
        "it must be done, the task itself last; empty when it is completed"
    )
    steps: int = Field(description="Tasks on the path: the fewest still to finish, one after another")
    unblocks_most: list[GraphTask] = Field(
        description="Ready tasks (what get_next_task may offer), the ones that unblock the most others first "
        "(at most 10)"
    )


# --- settings ----------------------------------------------------------------------------------


class Settings(BaseModel):
    """The ``plugins.tasks`` section of the config."""

    model_config = ConfigDict(extra="forbid")

    database: str = Field(default="tasks.db", description="SQLite file name inside the plugin's data folder")
    lease_seconds: int = Field(
        default=LEASE_SECONDS_DEFAULT,
        ge=LEASE_SECONDS_MIN,
        le=LEASE_SECONDS_MAX,
        description="How long a claim lasts unless renewed, in seconds (a call may ask for its own length)",
    )
    max_export_chars: int = Field(
        default=1_000_000,
        ge=10_000,
        le=50_000_000,
        description="Largest export_tasks document answered inline, in characters; a larger one goes to a "
        "file (output_path)",
    )

    @field_validator("database")
    @classmethod
    def _plain_file_name(cls, value: str) -> str:
        if not re.match(ID_PATTERN, value):
            raise ValueError("must be a plain file name (letters, digits, '.', '_', '-'), not a path")
        return value
