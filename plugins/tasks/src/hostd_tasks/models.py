"""The task model: statuses, priorities, the allowed status moves and the record every answer carries.

Kept free of storage and of the host so the rules can be read (and tested) in one place.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, field_validator

Status = Literal["pending", "in_progress", "completed", "failed", "blocked"]
Priority = Literal["P0", "P1", "P2"]

STATUSES: tuple[Status, ...] = get_args(Status)
PRIORITIES: tuple[Priority, ...] = get_args(Priority)

#: DESIGN.md's rule for identifiers that become record names: no '/', never '.' or '..'.
ID_PATTERN = r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,63}$"
ID_RE = re.compile(ID_PATTERN)
#: Team members' names follow the same rule (the host's tokens file enforces it on every name).
MEMBER_PATTERN = ID_PATTERN

TITLE_MAX = 200
#: Long enough for a real brief, short enough that one task cannot bloat every list answer.
DESCRIPTION_MAX = 20_000
#: Dependencies one task may name; more than this is a plan, not a task.
DEPENDENCIES_MAX = 100
#: How to check a task is done: as long as a description, since it often lists steps.
ACCEPTANCE_MAX = 20_000
#: One appended note; longer text belongs in the description.
NOTE_MAX = 5_000
#: All notes of one task together: past this append_note answers TOO_LONG, so a task that is
#: appended to in a loop cannot grow without bound and bloat every answer that carries it.
NOTES_TOTAL_MAX = 20_000
#: Labels per task, and the shape of one label (1-40 characters, no whitespace, comma or control).
LABELS_MAX = 20
LABEL_PATTERN = r"^[^\s,\x00-\x1f\x7f]{1,40}$"
#: Subtasks one split_task call may create.
SUBTASKS_MAX = 50

#: Every allowed move; anything else (apart from staying put) is refused as a conflict.
TRANSITIONS: dict[Status, tuple[Status, ...]] = {
    "pending": ("in_progress", "blocked", "failed"),
    "in_progress": ("completed", "failed", "blocked", "pending"),
    "blocked": ("pending", "in_progress"),
    "failed": ("pending",),
    "completed": ("pending",),
}


def allowed_next(status: Status) -> tuple[Status, ...]:
    """The statuses a task in ``status`` may move to."""
    return TRANSITIONS[status]


def claimer_after(status: Status, claimer: str | None, by: str | None) -> str | None:
    """Who holds a task once ``by`` has moved it to ``status`` (``claimer`` held it before).

    Moving it to in_progress makes it the mover's; back to pending it is nobody's (released,
    retried or reopened: whoever takes it next claims it anew, and the history keeps who held
    it before); any other move keeps the last claimer, so a finished or stuck task still says
    who worked on it.
    """
    if status == "in_progress":
        return by
    if status == "pending":
        return None
    return claimer


def priority_rank(priority: Priority) -> int:
    """P0 -> 0 (most urgent) ... P2 -> 2, the order stored and sorted on."""
    return PRIORITIES.index(priority)


def priority_name(rank: int) -> Priority:
    return PRIORITIES[rank]


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

    @classmethod
    def from_stored_json(cls, text: str | bytes) -> TaskRecord:
        """A record kept as JSON (a deleted task's last one); those kept before members were
        recorded have no member fields: unknown, so null."""
        raw = json.loads(text)
        for member_field in MEMBER_FIELDS:
            raw.setdefault(member_field, None)
        return cls.model_validate(raw)


#: The record's fields that name team members; absent (unknown) in records from before them.
MEMBER_FIELDS = ("created_by", "claimed_by")


class Settings(BaseModel):
    """The ``plugins.tasks`` section of the config."""

    model_config = ConfigDict(extra="forbid")

    database: str = Field(default="tasks.db", description="SQLite file name inside the plugin's data folder")

    @field_validator("database")
    @classmethod
    def _plain_file_name(cls, value: str) -> str:
        if not ID_RE.match(value):
            raise ValueError("must be a plain file name (letters, digits, '.', '_', '-'), not a path")
        return value
