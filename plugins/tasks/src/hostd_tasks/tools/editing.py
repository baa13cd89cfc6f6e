"""Tools that shape the list: create_task, update_task, split_task, delete_task."""

from __future__ import annotations

from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from hostd import ID_PATTERN, Text, ToolContext
from hostd_tasks.models import DeleteOutput, Settings, SplitOutput, TaskOutput, UpdateOutput
from hostd_tasks.rules import DEPENDENCIES_MAX, LABELS_MAX, NOTE_MAX, NOTES_TOTAL_MAX, SUBTASKS_MAX, Priority
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
    priority: Annotated[Priority, Field(description="P0 (do now), P1 (soon) or P2 (as planned)")] = "P2",
    task_id: Annotated[
        str | None,
        Field(
            description="Your own id for the task (must be new); omit it to get a short one like 't-12'",
            pattern=ID_PATTERN,
        ),
    ] = None,
    depends_on: Dependencies = [],  # noqa: B006 - the host validates into a fresh list on every call
    parent_id: Annotated[str | None, PARENT_ID] = None,
    labels: Labels = [],  # noqa: B006
    acceptance: Acceptance = "",
) -> TaskOutput:
    """Create a pending task in the shared task list, with a priority and optional dependencies, parent, labels and acceptance criteria.

    get_next_task offers a task only once every task in depends_on (and every subtask) is completed.
    """  # noqa: E501
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
    return TaskOutput(task=task).with_message(created + waits)


def update_task(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to change", pattern=ID_PATTERN)],
    title: Annotated[str | None, TITLE] = None,
    description: Annotated[str | None, DESCRIPTION] = None,
    priority: Annotated[Priority | None, Field(description="P0, P1 or P2")] = None,
    depends_on: Annotated[
        list[TaskId] | None,
        Field(
            description="The whole new list of dependencies ([] drops them all); each must exist, and none "
            "may close a cycle",
            max_length=DEPENDENCIES_MAX,
        ),
    ] = None,
    parent_id: Annotated[
        str | None,
        Field(
            description='Make it a subtask of this task; "" makes it top-level. It may not become its own '
            "ancestor",
            pattern=f"{ID_PATTERN}|^$",
        ),
    ] = None,
    labels: Annotated[
        list[Label] | None,
        Field(
            description=f"The whole new set of labels ([] clears them), at most {LABELS_MAX}",
            max_length=LABELS_MAX,
        ),
    ] = None,
    acceptance: Annotated[str | None, ACCEPTANCE] = None,
    append_note: Annotated[
        str | None,
        Field(
            description=f"A note to append (1-{NOTE_MAX} characters; a task holds at most {NOTES_TOTAL_MAX} "
            "characters of notes)",
            min_length=1,
            max_length=NOTE_MAX,
        ),
    ] = None,
) -> UpdateOutput:
    """Change a task's title, description, priority, dependencies, parent, labels or acceptance criteria, or append a note; only what is given changes, in one step (all or nothing). The status changes with update_task_status."""  # noqa: E501
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
    update = TaskStore(ctx.database()).update(task_id, edit, by=ctx.member)
    answer = UpdateOutput(task=update.task, changed=update.changed)
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
    """One subtask for split_task: create_task's fields, without the parent (it is the split task)."""

    model_config = ConfigDict(extra="forbid")

    title: Title
    description: Description = ""
    priority: Annotated[Priority, Field(description="P0, P1 or P2")] = "P2"
    task_id: Annotated[
        str | None,
        Field(description="Its own id (must be new); omit for a generated one", pattern=ID_PATTERN),
    ] = None
    depends_on: Annotated[
        list[TaskId],
        Field(
            description="Existing tasks, or subtasks earlier in this list (by task_id), to complete first",
            max_length=DEPENDENCIES_MAX,
        ),
    ] = []
    labels: Labels = []
    acceptance: Acceptance = ""


def split_task(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to split into subtasks", pattern=ID_PATTERN)],
    subtasks: Annotated[
        list[SubtaskSpec],
        Field(description=f"The subtasks, 1-{SUBTASKS_MAX}, in order", min_length=1, max_length=SUBTASKS_MAX),
    ],
) -> SplitOutput:
    """Split a task into subtasks, created together (all or none). The parent is then offered by get_next_task only once every subtask is completed; its record shows their progress."""  # noqa: E501
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
    return SplitOutput(task=parent, subtasks=children).with_message(
        Text(
            en=f"Split task {task_id} into {counted(len(children), 'subtask')}: {ids}.",
            zh=f"已将任务 {task_id} 拆分为 {len(children)} 个子任务：{ids}。",
        )
    )


def delete_task(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to delete", pattern=ID_PATTERN)],
    drop_dependencies: Annotated[
        bool,
        Field(description="true: also remove this task from the depends_on of tasks that depend on it"),
    ] = False,
    even_if_in_progress: Annotated[
        bool, Field(description="true: delete it even though it is in_progress (an agent may be on it)")
    ] = False,
) -> DeleteOutput:
    """Delete a task: it leaves every list and get_next_task; get_task still shows its last record and history. Refused while other tasks depend on it (unless drop_dependencies=true), while it has subtasks, and while it is in_progress (unless even_if_in_progress=true)."""  # noqa: E501
    deletion = TaskStore(ctx.database()).delete(
        task_id,
        drop_dependencies=drop_dependencies,
        even_if_in_progress=even_if_in_progress,
        by=ctx.member,
    )
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
