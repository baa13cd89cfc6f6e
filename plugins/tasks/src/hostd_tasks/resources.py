"""Tasks as MCP resources: ``task://<task_id>``, a text with status, dependencies and history.

Listed through the ``list_tasks`` tool (most urgent first, same paging) and read through
``get_task`` (so a resource says exactly what the tool says, a deleted task included).
"""

from __future__ import annotations

from typing import Any

from hostd_db import utc_stamp

from hostd import ResourceInfo, ResourceLink, ResourcePage, ResourceText, Text, ToolContext, ToolError
from hostd_tasks.models import RelatedTask, Settings, TaskDetailsOutput, TaskRecord

TEMPLATE = "task://{task_id}"
#: The tasks carrying one label (offered as a template: labels are completed, not listed).
LABEL_TEMPLATE = "task-label://{label}"
MIME_TYPE = "text/markdown"
PAGE = 50


def resource_uri(task_id: str) -> str:
    return f"task://{task_id}"


def label_uri(label: str) -> str:
    return f"task-label://{label}"


def touched(ctx: ToolContext[Any], task: TaskRecord) -> ResourceLink:
    """A link to a task a tool changed; its labels' resources (which list it) changed too."""
    ctx.resource_changed(*(label_uri(label) for label in task.labels))
    return task_link(task.task_id, task.title)


def task_link(task_id: str, title: str) -> ResourceLink:
    """A link to a task, for a tool's answer."""
    return ResourceLink(uri=resource_uri(task_id), name=task_id, title=title, mime_type=MIME_TYPE)


def list_resources(ctx: ToolContext[Settings], cursor: str | None) -> ResourcePage:
    from hostd_tasks.tools.reading import list_tasks

    page = list_tasks(ctx, limit=PAGE, cursor=cursor)
    return ResourcePage(
        resources=[
            ResourceInfo(
                uri=resource_uri(task.task_id),
                name=task.task_id,
                title=task.title,
                description=f"{task.status}, {task.priority}",
                mime_type=MIME_TYPE,
                updated_at=utc_stamp(task.updated_at),
            )
            for task in page.tasks
        ],
        next_cursor=page.next_cursor,
    )


def _related(tasks: list[RelatedTask]) -> str:
    return ", ".join(f"{t.task_id} ({t.status})" for t in tasks) or "-"


def as_text(details: TaskDetailsOutput) -> str:
    """The task as Markdown: record, relations, notes and history."""
    task = details.task
    lines = [
        f"# {task.task_id}: {task.title}",
        "",
        f"- status: {task.status}"
        + (f", deleted {utc_stamp(details.deleted_at)}" if details.deleted_at else ""),
        f"- priority: {task.priority}",
        f"- depends on: {_related(details.depends_on)}",
        f"- dependents: {_related(details.dependents)}",
        f"- subtasks: {_related(details.subtasks)}",
        f"- parent: {task.parent_id or '-'}",
        f"- labels: {', '.join(task.labels) or '-'}",
        f"- created: {utc_stamp(task.created_at)} by {task.created_by or '?'}",
        f"- claimed by: {task.claimed_by or '-'}",
        f"- linked session: {task.linked_session_id or '-'}",
    ]
    if task.description:
        lines += ["", "## Description", "", task.description]
    if task.acceptance:
        lines += ["", "## Acceptance", "", task.acceptance]
    if task.notes:
        lines += ["", "## Notes", ""] + [f"- {note.model_dump(mode='json')}" for note in task.notes]
    lines += ["", f"## History ({details.history_total})", ""]
    lines += [
        f"- {utc_stamp(entry.at)} {entry.event} by {entry.by or '?'}"
        + (f": {entry.details}" if entry.details else "")
        for entry in details.history
    ]
    return "\n".join(lines) + "\n"


def read_resource(ctx: ToolContext[Settings], params: dict[str, str]) -> ResourceText:
    from hostd_tasks.tools.reading import get_task

    details = get_task(ctx, task_id=params["task_id"])
    return ResourceText(uri=resource_uri(details.task.task_id), text=as_text(details), mime_type=MIME_TYPE)


#: Tasks looked at when completing a task id.
COMPLETION_SCAN = 500
#: Labels one completion answers at most (MCP shows 100; one more says there are more).
COMPLETION_LIMIT = 101


def complete_argument(
    ctx: ToolContext[Settings], argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    """Task ids starting with ``prefix``, most recently changed first."""
    from hostd_tasks.tools.reading import list_tasks

    if argument != "task_id":
        return []
    found: list[TaskRecord] = []
    cursor: str | None = None
    while len(found) < COMPLETION_SCAN:
        page = list_tasks(ctx, limit=100, cursor=cursor)
        found += [task for task in page.tasks if task.task_id.startswith(prefix)]
        cursor = page.next_cursor
        if cursor is None:
            break
    found.sort(key=lambda task: task.updated_at, reverse=True)
    return [task.task_id for task in found]


def read_label_resource(ctx: ToolContext[Settings], params: dict[str, str]) -> ResourceText:
    """The tasks carrying ``label``, in ``list_tasks``' order (most urgent first, its first page)."""
    from hostd_tasks.tools.reading import list_tasks

    label = params["label"].lower()
    page = list_tasks(ctx, label=label, limit=PAGE)
    if not page.tasks:
        raise ToolError(
            "NOT_FOUND",
            Text(en=f"No task has the label {label}.", zh=f"没有带标签 {label} 的任务。"),
            hint=Text(
                en="Complete the label argument of task-label://{label} to see the labels in use.",
                zh="请补全 task-label://{label} 的 label 参数，查看在用的标签。",
            ),
            details={"label": label},
        )
    lines = [f"# Tasks labelled {label}", ""]
    for task in page.tasks:
        lines.append(
            f"- [{task.task_id}]({resource_uri(task.task_id)}): {task.title} ({task.status}, {task.priority})"
        )
    if page.next_cursor is not None:
        lines += ["", f"(the first {PAGE}; list_tasks with label={label!r} pages on)"]
    return ResourceText(uri=label_uri(label), text="\n".join(lines) + "\n", mime_type=MIME_TYPE)


def complete_label(
    ctx: ToolContext[Settings], argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    """Labels in use starting with ``prefix``: the most recently changed task's first, then the most used."""
    from hostd_tasks.store import TaskStore

    if argument != "label":
        return []
    return TaskStore(ctx.database()).recent_labels(prefix.strip().lower(), COMPLETION_LIMIT)
