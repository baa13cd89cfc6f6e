"""The export document of ``export_tasks`` / ``import_tasks``: its format, its checks, its Markdown.

A document is plain JSON, so it travels in a tool's answer as well as in a file:

    {"format": "hostd-tasks-export", "version": 1, "exported_at": "...", "filters": {...},
     "tasks": [{"task_id", "origin", "title", "description", "status", "priority", "depends_on",
                "parent_id", "labels", "acceptance", "notes": [{"text", "at"}], "linked_session_id",
                "created_at", "updated_at", "created_by", "claimed_by", "lease_expires_at",
                "lease_seconds", "claim_count", "expired_claims", "lease_lost_by",
                "history": [{"event", "at", "by", "details"}]}, ...]}

Every task it names by reference (a dependency, a parent) is in the document: a filtered export
brings along what its tasks wait on. ``origin`` is the key a task keeps wherever it travels (the
id and creation time it had in the store it was created in); an import recognises a task it
already holds by it, so importing a document twice changes nothing.

Format history: version 1 (current) is the first. A later version adds a migration here, as
memory's export does, and a build that knows only version 1 refuses a later document.

Checks (``load_document``) run before anything is written: the format and version, each task's
fields and their limits (the tools' own), duplicate ids and origins, references to tasks the
document does not hold, and cycles of waiting (a task waits on its dependencies, a parent on its
subtasks). Each problem has a stable code (``problem``), the place (``where``: ``tasks.3.title``)
and the task's id as given; the tool turns them into one refusal, so nothing is half-written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from hostd_db import utc_stamp
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from hostd import ID_PATTERN, TextLength
from hostd_tasks.rules import (
    ACCEPTANCE_MAX,
    DEPENDENCIES_MAX,
    DESCRIPTION_MAX,
    LABEL_PATTERN,
    LABELS_MAX,
    LEASE_SECONDS_MAX,
    LEASE_SECONDS_MIN,
    NOTES_TOTAL_MAX,
    TITLE_MAX,
    Priority,
    Status,
)

FORMAT_NAME = "hostd-tasks-export"
FORMAT_VERSION = 1
#: The most tasks one document may hold.
MAX_TASKS = 100_000
#: The largest document import_tasks reads (a file's bytes, or the inline document's JSON size):
#: 10,000 tasks with their history take about 10 MB; past this a document is refused unread.
MAX_DOCUMENT_BYTES = 32 * 1024 * 1024
#: History entries one task may carry in a document (its own history never grows this long).
MAX_HISTORY = 10_000
#: Characters of an origin key (a task id, '@', a time).
ORIGIN_MAX = 200
#: Keys of history details that name tasks: rewritten when an import renumbers a task.
TASK_REFERENCE_KEYS = frozenset({"parent_id", "depends_on", "subtasks", "dropped_from"})
#: How deep a history entry's details may nest (objects and lists).
MAX_DEPTH = 10
#: Problems found before the first one is reported, at most.
MAX_PROBLEMS = 20


class DocumentError(ValueError):
    """The document cannot be imported: every problem found (at most ``MAX_PROBLEMS``)."""

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(", ".join(f"{p.problem} at {p.where}" for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a document: a stable code, where, and the task it concerns."""

    problem: str
    where: str
    task_id: str | None = None
    cycle: list[str] | None = None
    limit: int | None = None

    def as_details(self) -> dict[str, Any]:
        found: dict[str, Any] = {"problem": self.problem, "where": self.where, "task_id": self.task_id}
        if self.cycle is not None:
            found["cycle"] = self.cycle
        if self.limit is not None:
            found["limit"] = self.limit
        return found


def _encodable(text: str) -> str:
    """Text both databases store: UTF-8 (no lone surrogate, which JSON's "\\ud800" decodes to)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise PydanticCustomError("invalid_unicode", "text holds a lone surrogate") from None
    return text


def _moment(value: str) -> str:
    """An ISO 8601 time, in UTC (a time without an offset is read as UTC)."""
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise PydanticCustomError("invalid_time", "not an ISO 8601 time") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return utc_stamp(moment)
    except (OverflowError, ValueError):
        raise PydanticCustomError("invalid_time", "not an ISO 8601 time within years 1-9999") from None


#: A native origin as stores spelled it before version 8 of the schema (``t-1@...123456+00:00``).
_OLD_NATIVE_ORIGIN = re.compile(r"(.+@\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6})\+00:00")


def stored_origin(origin: str) -> str:
    """``origin`` as stores spell it now: a native origin written before version 8 of the schema
    (documents exported then, the ``task_origins`` rows version 8 rewrites) ends ``Z`` instead of
    ``+00:00``, so an old document still finds the tasks imported from it; any other origin as given."""
    old = _OLD_NATIVE_ORIGIN.fullmatch(origin)
    return origin if old is None else f"{old.group(1)}Z"


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank_title", "the title is blank")
    return text.strip()


StoredText = Annotated[str, AfterValidator(_encodable)]
Moment = Annotated[str, Field(max_length=64), AfterValidator(_moment)]
Origin = Annotated[StoredText, Field(min_length=1, max_length=ORIGIN_MAX), AfterValidator(stored_origin)]
TaskId = Annotated[str, Field(pattern=ID_PATTERN)]
Member = Annotated[str, Field(pattern=ID_PATTERN)]
Label = Annotated[str, Field(pattern=LABEL_PATTERN)]


class ImportedNote(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: Annotated[StoredText, TextLength(max_length=NOTES_TOTAL_MAX)]
    at: Moment


def _shallow(details: dict[str, Any]) -> dict[str, Any]:
    """History details nested at most ``MAX_DEPTH`` deep (the store's own are two or three)."""
    stack: list[tuple[Any, int]] = [(details, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise PydanticCustomError("too_deep", "nested too deep")
        if isinstance(value, dict):
            stack.extend((inner, depth + 1) for inner in value.values())
        elif isinstance(value, list):
            stack.extend((inner, depth + 1) for inner in value)
    return details


class ImportedHistory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    event: Annotated[str, Field(pattern=r"^[a-z_]{1,40}$")]
    at: Moment
    by: Member | None = None
    details: Annotated[dict[str, Any], AfterValidator(_shallow)] = Field(default_factory=dict)


class ImportedTask(BaseModel):
    """One task of a document, checked: the tools' limits, times in the store's spelling."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    task_id: TaskId
    origin: Origin | None = None
    title: Annotated[StoredText, TextLength(min_length=1, max_length=TITLE_MAX), AfterValidator(_not_blank)]
    description: Annotated[StoredText, TextLength(max_length=DESCRIPTION_MAX)] = ""
    status: Status = "pending"
    priority: Priority = "P2"
    depends_on: Annotated[list[TaskId], Field(max_length=DEPENDENCIES_MAX)] = Field(default_factory=list)
    parent_id: TaskId | None = None
    labels: Annotated[list[Label], Field(max_length=LABELS_MAX)] = Field(default_factory=list)
    acceptance: Annotated[StoredText, TextLength(max_length=ACCEPTANCE_MAX)] = ""
    notes: Annotated[list[ImportedNote], Field(max_length=NOTES_TOTAL_MAX)] = Field(default_factory=list)
    linked_session_id: TaskId | None = None
    created_at: Moment
    updated_at: Moment | None = None
    created_by: Member | None = None
    claimed_by: Member | None = None
    lease_expires_at: Moment | None = None
    lease_seconds: Annotated[int, Field(ge=LEASE_SECONDS_MIN, le=LEASE_SECONDS_MAX)] | None = None
    claim_count: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    expired_claims: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0
    lease_lost_by: Member | None = None
    history: Annotated[list[ImportedHistory], Field(max_length=MAX_HISTORY)] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> ImportedTask:
        if sum(len(note.text) for note in self.notes) > NOTES_TOTAL_MAX:
            raise PydanticCustomError("notes_too_long", "the notes hold more than the limit")
        if self.task_id in self.depends_on or self.parent_id == self.task_id:
            raise PydanticCustomError("waits_on_itself", "the task waits on itself")
        if len(set(self.depends_on)) != len(self.depends_on):
            raise PydanticCustomError("duplicate_dependency", "a dependency is named twice")
        if (self.lease_expires_at is not None) != (self.status == "in_progress"):
            # A lease is held exactly while a task is in progress (the store sweeps lapsed ones).
            raise PydanticCustomError("lease_without_claim", "a lease without in_progress, or the reverse")
        return self

    @property
    def labels_stored(self) -> list[str]:
        return sorted({label.lower() for label in self.labels})

    @property
    def origin_key(self) -> str:
        """The origin the task keeps: the document's, else its id and creation time here."""
        return self.origin or native_origin(self.task_id, self.created_at)


def native_origin(task_id: str, created_at: str) -> str:
    """The origin of a task created in this store: its id and creation time (the stored spelling)."""
    return f"{task_id}@{created_at}"


def split_origin(origin: str) -> tuple[str, str] | None:
    """The (task id, creation time) a native origin names, or None when it is not one."""
    task_id, at, stamp = origin.rpartition("@")
    if not at or not re.match(ID_PATTERN, task_id):
        return None
    return task_id, stamp


class _Header(BaseModel):
    model_config = ConfigDict(extra="ignore")

    format: Literal["hostd-tasks-export"]
    version: Literal[1]
    tasks: list[Any] = Field(max_length=MAX_TASKS)


def unwrap(data: dict[str, Any]) -> dict[str, Any]:
    """The document inside ``data``: itself, or the ``document`` of an ``export_tasks`` answer."""
    inner = data.get("document")
    if "format" not in data and isinstance(inner, dict):
        return inner
    return data


def _place(loc: tuple[int | str, ...]) -> str:
    return ".".join(str(part) for part in loc) or "document"


def load_document(data: dict[str, Any]) -> tuple[list[ImportedTask], int]:
    """The document's tasks, checked, and its format version; raises ``DocumentError``.

    Nothing here touches a store: every problem a document can have on its own is found first.
    """
    document = unwrap(data)
    if document.get("format") != FORMAT_NAME:
        raise DocumentError([Problem("unknown_format", "format")])
    version = document.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= FORMAT_VERSION:
        raise DocumentError([Problem("unknown_version", "version")])
    try:
        header = _Header.model_validate(document)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        problem = "too_many_tasks" if first["type"] == "too_long" else first["type"]
        limit = MAX_TASKS if problem == "too_many_tasks" else None
        raise DocumentError([Problem(problem, _place(first["loc"]), limit=limit)]) from None
    problems: list[Problem] = []
    tasks: list[ImportedTask] = []
    for index, raw in enumerate(header.tasks):
        given = raw.get("task_id") if isinstance(raw, dict) else None
        named = given if isinstance(given, str) else None
        try:
            tasks.append(ImportedTask.model_validate(raw))
        except ValidationError as exc:
            first = exc.errors(include_url=False, include_input=False)[0]
            problems.append(Problem(first["type"], _place(("tasks", index, *first["loc"])), _echo(named)))
            if len(problems) >= MAX_PROBLEMS:
                break
    if problems:
        raise DocumentError(problems)
    problems = list(_reference_problems(tasks))[:MAX_PROBLEMS]
    if problems:
        raise DocumentError(problems)
    cycle = find_cycle(waits_on_edges(tasks))
    if cycle is not None:
        index = next(i for i, task in enumerate(tasks) if task.task_id == cycle[0])
        raise DocumentError([Problem("dependency_cycle", f"tasks.{index}", cycle[0], cycle=cycle)])
    return tasks, version


def _echo(value: str | None) -> str | None:
    """A value of the document safe to put in an answer (a lone surrogate written as an escape)."""
    return None if value is None else value[:100].encode("utf-8", "backslashreplace").decode("utf-8")


def _reference_problems(tasks: list[ImportedTask]) -> Iterator[Problem]:
    """Duplicate ids or origins, and references to tasks the document does not hold."""
    ids: set[str] = set()
    origins: set[str] = set()
    for index, task in enumerate(tasks):
        if task.task_id in ids:
            yield Problem("duplicate_task_id", f"tasks.{index}.task_id", task.task_id)
        elif task.origin_key in origins:
            yield Problem("duplicate_origin", f"tasks.{index}.origin", task.task_id)
        ids.add(task.task_id)
        origins.add(task.origin_key)
    for index, task in enumerate(tasks):
        for number, dep in enumerate(task.depends_on):
            if dep not in ids:
                yield Problem("dangling_reference", f"tasks.{index}.depends_on.{number}", task.task_id)
        if task.parent_id is not None and task.parent_id not in ids:
            yield Problem("dangling_reference", f"tasks.{index}.parent_id", task.task_id)


def waits_on_edges(tasks: list[ImportedTask]) -> dict[str, list[str]]:
    """What each task of the document waits on: its dependencies and its subtasks."""
    edges = {task.task_id: list(task.depends_on) for task in tasks}
    for task in tasks:
        if task.parent_id is not None:
            edges[task.parent_id].append(task.task_id)
    return edges


def find_cycle(edges: dict[str, list[str]]) -> list[str] | None:
    """A cycle of ``edges`` (node -> what it waits on) as a path that ends where it starts, or None.

    An iterative depth-first walk (a document may hold 100,000 tasks), in the order given.
    """
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    for root in edges:
        if root in state:
            continue
        path: list[str] = []
        work: list[tuple[str, int]] = [(root, 0)]
        while work:
            node, at = work.pop()
            if at == 0:
                state[node] = 1
                path.append(node)
            following = edges.get(node, [])
            if at < len(following):
                work.append((node, at + 1))
                other = following[at]
                if state.get(other) == 1:
                    return [*path[path.index(other) :], other]
                if other not in state:
                    work.append((other, 0))
                continue
            state[node] = 2
            path.pop()
    return None


def rewrite_references(details: Any, renamed: dict[str, str], key: str | None = None) -> Any:
    """History details with every task id (under ``TASK_REFERENCE_KEYS``) renamed by ``renamed``."""
    if isinstance(details, dict):
        return {
            k: rewrite_references(v, renamed, k if k in TASK_REFERENCE_KEYS else key)
            for k, v in details.items()
        }
    if isinstance(details, list):
        return [rewrite_references(v, renamed, key) for v in details]
    if key is not None and isinstance(details, str):
        return renamed.get(details, details)
    return details


def document_size(value: Any, limit: int) -> int:
    """About how many bytes ``value`` takes as JSON, counted up to just past ``limit`` (then it
    stops: a hostile document is refused without walking all of it)."""
    total = 0
    stack = [value]
    while stack and total <= limit:
        item = stack.pop()
        if isinstance(item, str):
            total += len(item) + 2
        elif isinstance(item, dict):
            total += 2 + 2 * len(item)
            for key, inner in item.items():
                total += len(str(key)) + 2
                stack.append(inner)
        elif isinstance(item, list):
            total += 2 + len(item)
            stack.extend(item)
        else:
            total += 8
    return total


def json_pieces(document: dict[str, Any]) -> Iterator[bytes]:
    """The document as JSON, one task a line, in pieces (for a file written as they come): the
    compact encoder per task, never the whole text (or an indented encoding of it) in memory."""
    head = json.dumps({key: value for key, value in document.items() if key != "tasks"}, ensure_ascii=False)
    yield (head[:-1] + (', "tasks": [' if len(head) > 2 else '"tasks": [')).encode("utf-8")
    for at, task in enumerate(document["tasks"]):
        yield (("," if at else "") + "\n" + json.dumps(task, ensure_ascii=False)).encode("utf-8")
    yield b"\n]}\n"


# --- a document for people -------------------------------------------------------------------


def _one_line(text: str) -> str:
    return " ".join(text.split())


def markdown(document: dict[str, Any]) -> str:
    """The document as Markdown a person reads: a summary, then each task with what it waits on,
    its text, notes and history. Not read back by import_tasks (the JSON is)."""
    tasks: list[dict[str, Any]] = document["tasks"]
    by_status: dict[str, int] = {}
    for task in tasks:
        by_status[task["status"]] = by_status.get(task["status"], 0) + 1
    summary = ", ".join(f"{n} {status}" for status, n in sorted(by_status.items())) or "none"
    lines = [
        "# Tasks",
        "",
        f"Exported {document['exported_at']}: {len(tasks)} task(s) ({summary}).",
        "",
    ]
    for task in tasks:
        lines += [f"## {task['task_id']}: {_one_line(task['title'])}", ""]
        facts = [
            f"status: {task['status']}",
            f"priority: {task['priority']}",
        ]
        if task["depends_on"]:
            facts.append("depends on: " + ", ".join(task["depends_on"]))
        if task["parent_id"]:
            facts.append(f"subtask of: {task['parent_id']}")
        if task["labels"]:
            facts.append("labels: " + ", ".join(task["labels"]))
        facts.append(f"created: {task['created_at']} by {task['created_by'] or '?'}")
        if task["claimed_by"]:
            facts.append(f"claimed by: {task['claimed_by']}")
        if task["lease_expires_at"]:
            facts.append(f"lease until: {task['lease_expires_at']}")
        if task["linked_session_id"]:
            facts.append(f"linked session: {task['linked_session_id']}")
        lines += [f"- {fact}" for fact in facts]
        if task["description"]:
            lines += ["", "### Description", "", task["description"]]
        if task["acceptance"]:
            lines += ["", "### Acceptance", "", task["acceptance"]]
        if task["notes"]:
            lines += ["", "### Notes", ""]
            lines += [f"- {note['at']}: {_one_line(note['text'])}" for note in task["notes"]]
        if task["history"]:
            lines += ["", "### History", ""]
            for entry in task["history"]:
                what = f"- {entry['at']} {entry['event']} by {entry['by'] or '?'}"
                if entry["details"]:
                    what += f": {_one_line(str(entry['details']))}"
                lines.append(what)
        lines.append("")
    return "\n".join(lines)
