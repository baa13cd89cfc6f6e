"""Tasks as MCP resources: ``task://<task_id>``, a text with status, dependencies and history.

Listed through the ``list_tasks`` tool (most urgent first, same paging) and read through
``get_task`` (so a resource says exactly what the tool says, a deleted task included).
"""

from __future__ import annotations

from hostd import ResourceInfo, ResourceLink, ResourcePage, ResourceText, ToolContext
from hostd_tasks.models import RelatedTask, Settings, TaskDetailsOutput, TaskRecord

TEMPLATE = "task://{task_id}"
MIME_TYPE = "text/markdown"
PAGE = 50


def resource_uri(task_id: str) -> str:
    return f"task://{task_id}"


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
                updated_at=task.updated_at.isoformat(),
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
        + (f", deleted {details.deleted_at.isoformat()}" if details.deleted_at else ""),
        f"- priority: {task.priority}",
        f"- depends on: {_related(details.depends_on)}",
        f"- dependents: {_related(details.dependents)}",
        f"- subtasks: {_related(details.subtasks)}",
        f"- parent: {task.parent_id or '-'}",
        f"- labels: {', '.join(task.labels) or '-'}",
        f"- created: {task.created_at.isoformat()} by {task.created_by or '?'}",
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
        f"- {entry.at.isoformat()} {entry.event} by {entry.by or '?'}"
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
