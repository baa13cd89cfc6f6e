"""Tools that shape the list: create_task, update_task, split_task, delete_task."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from hostd import ID_PATTERN, NotConfirmed, Text, ToolContext
from hostd_tasks.models import DeleteOutput, Settings, SplitOutput, TaskOutput, UpdateOutput
from hostd_tasks.resources import resource_uri, touched
from hostd_tasks.rules import DEPENDENCIES_MAX, LABELS_MAX, NOTE_MAX, SUBTASKS_MAX, Priority
from hostd_tasks.store import TaskStore
from hostd_tasks.store.results import TaskEdit
from hostd_tasks.tools.arguments import (
    ACCEPTANCE,
    DESCRIPTION,
    PARENT_ID,
    TITLE,
    Acceptance,
    Dependencies,
    Description,
    Label,
    Labels,
    TaskId,
    Title,
    clean_labels,
    clean_title,
    invalid_argument,
)
from hostd_tasks.wording import counted


def create_task(
    ctx: ToolContext[Settings],
    title: Title,
    description: Description = "",
    priority: Annotated[Priority, Field(description="P0 now, P1 soon, P2 as planned")] = "P2",
    task_id: Annotated[TaskId | None, Field(description="New id; omitted: generated")] = None,
    depends_on: Dependencies = [],  # noqa: B006 - the host validates into a fresh list on every call
    parent_id: Annotated[TaskId | None, PARENT_ID] = None,
    labels: Labels = [],  # noqa: B006
    acceptance: Acceptance = "",
) -> TaskOutput:
    """Create a pending task in the shared task list. get_next_task offers it once its depends_on tasks and
    subtasks are completed.
    """
    task = TaskStore(ctx.database()).create(
        title=clean_title(title),
        description=description,
        priority=priority,
        task_id=task_id,
        depends_on=depends_on,
        parent_id=parent_id,
        labels=clean_labels(labels),
        acceptance=acceptance,
        by=ctx.member,
    )
    waits = Text.same("")
    if task.depends_on:
        count = len(task.depends_on)
        waits = Text(
            en=f" It waits on {counted(count, 'dependency', 'dependencies')}.",
            zh=f"它依赖 {count} 个任务。",
        )
    if task.parent_id:
        waits += Text(en=f" Subtask of {task.parent_id}.", zh=f"它是 {task.parent_id} 的子任务。")
    created = Text(
        en=f"Created task {task.task_id} '{task.title}' ({task.priority}, pending).",
        zh=f"已创建任务 {task.task_id}「{task.title}」（{task.priority}，pending）。",
    )
    return TaskOutput(task=task).with_links(touched(ctx, task)).with_message(created + waits)


def update_task(
    ctx: ToolContext[Settings],
    task_id: Annotated[TaskId, Field(description="The task to change")],
    title: Annotated[str | None, TITLE] = None,
    description: Annotated[str | None, DESCRIPTION] = None,
    priority: Annotated[Priority | None, Field(description="New priority")] = None,
    depends_on: Annotated[
        list[TaskId] | None,
        Field(
            description="New dependencies, replacing all ([] drops them); no cycles",
            max_length=DEPENDENCIES_MAX,
        ),
    ] = None,
    parent_id: Annotated[
        str | None,
        Field(
            description='New parent task; "" makes it top-level',
            pattern=f"{ID_PATTERN}|^$",
        ),
    ] = None,
    labels: Annotated[
        list[Label] | None,
        Field(
            description="New labels, replacing all ([] clears them)",
            max_length=LABELS_MAX,
        ),
    ] = None,
    acceptance: Annotated[str | None, ACCEPTANCE] = None,
    append_note: Annotated[
        str | None,
        Field(
            description="A note to append",
            min_length=1,
            max_length=NOTE_MAX,
        ),
    ] = None,
) -> UpdateOutput:
    """Change a task's fields or append a note; only what is given changes, all or nothing. Status:
    update_task_status.
    """
    edit = TaskEdit(
        title=None if title is None else clean_title(title),
        description=description,
        priority=priority,
        depends_on=depends_on,
        parent_id=parent_id,
        labels=None if labels is None else clean_labels(labels),
        acceptance=acceptance,
        append_note=append_note,
    )
    if all(value is None for value in vars(edit).values()):
        raise invalid_argument(
            "task_id",
            Text(
                en="Nothing to change: give at least one of title, description, priority, depends_on, "
                "parent_id, labels, acceptance, append_note.",
                zh="没有要更改的内容：请至少给出 title、description、priority、depends_on、parent_id、"
                "labels、acceptance、append_note 之一。",
            ),
            Text(
                en="To change the status, use update_task_status.",
                zh="要更改状态，请使用 update_task_status。",
            ),
        )
    store = TaskStore(ctx.database())
    # A task's text shows its dependencies and subtasks both ways: the other ends change too.
    before = store.get(task_id) if depends_on is not None or parent_id is not None else None
    update = store.update(task_id, edit, by=ctx.member)
    if before is not None:
        parents = (before.parent_id, update.task.parent_id)
        ends = {*before.depends_on, *update.task.depends_on, *(p for p in parents if p)}
        ctx.resource_changed(*(resource_uri(other) for other in sorted(ends)))
    answer = UpdateOutput(task=update.task, changed=update.changed).with_links(touched(ctx, update.task))
    if not update.changed:
        return answer.with_message(
            Text(
                en=f"Task {task_id} already had those values; nothing changed.",
                zh=f"任务 {task_id} 已是这些值，未做任何更改。",
            )
        )
    fields = ", ".join(update.changed)
    return answer.with_message(
        Text(en=f"Updated task {task_id}: {fields}.", zh=f"已更新任务 {task_id}：{fields}。")
    )


class SubtaskSpec(BaseModel):
    """A subtask: create_task's fields but parent_id."""

    model_config = ConfigDict(extra="forbid")

    title: Title
    description: Description = ""
    priority: Annotated[Priority, Field(description="Priority")] = "P2"
    task_id: Annotated[TaskId | None, Field(description="New id; omitted: generated")] = None
    depends_on: Annotated[
        list[TaskId],
        Field(
            description="Tasks to complete first, also earlier subtasks of this list",
            max_length=DEPENDENCIES_MAX,
        ),
    ] = []
    labels: Labels = []
    acceptance: Acceptance = ""


def split_task(
    ctx: ToolContext[Settings],
    task_id: Annotated[TaskId, Field(description="The task to split")],
    subtasks: Annotated[
        list[SubtaskSpec],
        Field(description="The subtasks, in order", min_length=1, max_length=SUBTASKS_MAX),
    ],
) -> SplitOutput:
    """Split a task into subtasks, created together (all or none)."""
    specs = [
        {
            **spec.model_dump(),
            "title": clean_title(spec.title, f"subtasks.{n}.title"),
            "labels": clean_labels(spec.labels),
        }
        for n, spec in enumerate(subtasks)
    ]
    parent, children = TaskStore(ctx.database()).split(task_id, specs, by=ctx.member)
    ids = ", ".join(child.task_id for child in children)
    links = [touched(ctx, t) for t in (parent, *children)]
    return (
        SplitOutput(task=parent, subtasks=children)
        .with_links(*links)
        .with_message(
            Text(
                en=f"Split task {task_id} into {counted(len(children), 'subtask')}: {ids}.",
                zh=f"已将任务 {task_id} 拆分为 {len(children)} 个子任务：{ids}。",
            )
        )
    )


def delete_task(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to delete", pattern=ID_PATTERN)],
    drop_dependencies: Annotated[
        bool,
        Field(description="Also drop it from dependent tasks' depends_on"),
    ] = False,
    even_if_in_progress: Annotated[bool, Field(description="Delete even if in_progress")] = False,
) -> DeleteOutput:
    """Delete a task (get_task still shows it); refused while it has subtasks, dependents (see
    drop_dependencies) or is in_progress (see even_if_in_progress).
    """
    store = TaskStore(ctx.database())
    if drop_dependencies:
        _confirm_dropping(ctx, store, task_id, even_if_in_progress=even_if_in_progress)
    deletion = store.delete(
        task_id,
        drop_dependencies=drop_dependencies,
        even_if_in_progress=even_if_in_progress,
        by=ctx.member,
    )
    ctx.resource_changed(resource_uri(task_id), *(resource_uri(other) for other in deletion.dropped_from))
    touched(ctx, deletion.task)  # its labels' listings lose it
    message = Text(
        en=f"Deleted task {task_id} '{deletion.task.title}'.",
        zh=f"已删除任务 {task_id}「{deletion.task.title}」。",
    )
    if deletion.dropped_from:
        names = ", ".join(deletion.dropped_from)
        message += Text(
            en=f" It was dropped from the dependencies of: {names}.",
            zh=f"已从以下任务的依赖中移除：{names}。",
        )
    return DeleteOutput(task=deletion.task, dropped_from=deletion.dropped_from).with_message(message)


def _confirm_dropping(
    ctx: ToolContext[Settings], store: TaskStore, task_id: str, *, even_if_in_progress: bool
) -> None:
    """Ask the user before a delete drops other tasks' dependencies on this one; nothing is asked
    when none depends on it, or when the delete will be refused anyway (deleted already, subtasks,
    in progress). ``NotConfirmed`` unless they accept or the client cannot ask."""
    found = store.details(task_id)
    in_progress = found.task.status == "in_progress" and not even_if_in_progress
    if found.deleted_at is not None or not found.dependents or found.subtasks or in_progress:
        return
    names = ", ".join(f"{other.task_id} '{other.title}'" for other in found.dependents)
    answer = ctx.confirm_sync(
        Text(
            en=f"Delete task {task_id} '{found.task.title}' and drop it from the dependencies of "
            f"{counted(len(found.dependents), 'task')}: {names}?",
            zh=f"删除任务 {task_id}「{found.task.title}」，并将其从 {len(found.dependents)} 个任务的"
            f"依赖中移除：{names}？",
        )
    )
    if answer == "declined" or answer == "cancelled":
        raise NotConfirmed(
            answer,
            Text(
                en=f"Task {task_id} and the dependencies on it are kept.",
                zh=f"任务 {task_id} 及对它的依赖均保持不变。",
            ),
        )
