"""The task tools: typed arguments in, the task's whole record out, messages in zh or en.

Rules live in ``models`` (transitions, limits) and ``store`` (what the data allows); this module
only checks what the schema cannot say, calls the store and explains the outcome to the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from hostd import ToolContext, ToolError, ToolOutput
from hostd_tasks.access import store_for
from hostd_tasks.models import (
    ACCEPTANCE_MAX,
    DEPENDENCIES_MAX,
    DESCRIPTION_MAX,
    ID_PATTERN,
    LABEL_PATTERN,
    LABELS_MAX,
    MEMBER_PATTERN,
    NOTE_MAX,
    NOTES_TOTAL_MAX,
    STATUSES,
    SUBTASKS_MAX,
    TITLE_MAX,
    Priority,
    Status,
    TaskRecord,
    allowed_next,
)
from hostd_tasks.search import match_expression

if TYPE_CHECKING:
    from hostd_tasks.store import DeleteRefused, StoreRefusal

SESSIONS_SERVICE = "deep-thinking.sessions"
CURSOR_PATTERN = r"^[0-2]:[0-9]{1,18}$"
#: A search is a few words; longer text would only be cut into more terms than are used.
QUERY_MAX = 200

TaskId = Annotated[
    str,
    Field(
        description="A task id: 1-64 letters, digits, '_', '-' or '.', not starting with '.' (e.g. 't-12')",
        pattern=ID_PATTERN,
    ),
]
Label = Annotated[
    str,
    Field(
        description="A label: 1-40 characters, no whitespace or comma (stored lower-case), e.g. 'backend'",
        pattern=LABEL_PATTERN,
    ),
]
Labels = Annotated[list[Label], Field(description=f"Labels, at most {LABELS_MAX}", max_length=LABELS_MAX)]
# Field descriptions shared by tools that take the same argument (create, update, split).
TITLE = Field(description="What is to be done, 1-200 characters", min_length=1, max_length=TITLE_MAX)
DESCRIPTION = Field(description=f"Details, at most {DESCRIPTION_MAX} characters", max_length=DESCRIPTION_MAX)
ACCEPTANCE = Field(
    description=f"How to verify the task is done, at most {ACCEPTANCE_MAX} characters",
    max_length=ACCEPTANCE_MAX,
)
Title = Annotated[str, TITLE]
Description = Annotated[str, DESCRIPTION]
Acceptance = Annotated[str, ACCEPTANCE]
Dependencies = Annotated[
    list[TaskId],
    Field(description="Ids of existing tasks that must be completed first", max_length=DEPENDENCIES_MAX),
]
PARENT_ID = Field(
    description="The task this one is a subtask of (it must exist); a parent is offered by "
    "get_next_task only once all its subtasks are completed",
    pattern=ID_PATTERN,
)
SessionId = Annotated[
    str,
    Field(
        description="A deep-thinking session id (1-64 letters, digits, '_', '-', '.'; not starting with '.')",
        pattern=ID_PATTERN,
    ),
]


# --- outputs -----------------------------------------------------------------------------------


class LinkedSession(BaseModel):
    session_id: str = Field(description="The session's id")
    name: str | None = Field(default=None, description="The session's name")
    status: str | None = Field(default=None, description="The session's status")
    thought_count: int | None = Field(default=None, description="How many thoughts the session holds")


class TaskAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's full record")


#: A page holds up to 1,000 records, and MCP clients check every answer against the output schema
#: keyword by keyword: spelling each record out there cost a 100-task page more than the search
#: itself (about half of its 16 ms round trip over stdio, measured in bench/bench_tasks.py). So a
#: page's items are described and their keys required, not spelled out, as the host does for
#: ``metadata``; every single-task answer (create_task, update_task, get_task...) spells it out.
RECORD_PAGE_ITEMS = {
    "type": "object",
    "description": "A task record, the same as create_task's or get_task's 'task'",
    "required": list(TaskRecord.model_fields),
}


class TaskListAnswer(ToolOutput):
    tasks: Annotated[list[TaskRecord], WithJsonSchema({"type": "array", "items": RECORD_PAGE_ITEMS})] = Field(
        description="Tasks, most urgent first (P0 before P1 before P2, then oldest)"
    )
    total: int = Field(description="How many tasks match the filters, across all pages")
    next_cursor: str | None = Field(description="Pass as 'cursor' for the next page; null on the last page")


class UpdateAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's full record after the call")
    changed: list[str] = Field(
        description="The fields this call changed (sorted); empty when every value given was already so"
    )


class DeleteAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's last record, as it was when deleted")
    dropped_from: list[str] = Field(
        description="Tasks that depended on it and no longer do (with drop_dependencies=true)"
    )


class SplitAnswer(ToolOutput):
    task: TaskRecord = Field(description="The parent task, with its subtasks' progress")
    subtasks: list[TaskRecord] = Field(description="The subtasks created, in the order given")


class HistoryEntryOut(BaseModel):
    event: str = Field(
        description="created, edited, status, claimed, linked, split, dependency_dropped or deleted"
    )
    at: datetime = Field(description="When it happened (UTC)")
    by: str | None = Field(
        description="The member who made the change; null when unknown (recorded before members were)"
    )
    details: dict[str, Any] = Field(description="What changed: e.g. {'from': 'pending', 'to': 'failed'}")


class RelatedTask(BaseModel):
    task_id: str = Field(description="The related task's id")
    title: str = Field(description="Its title")
    status: Status = Field(description="Its status")


class TaskDetailsAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's full record (for a deleted task: its last one)")
    deleted_at: datetime | None = Field(description="When the task was deleted; null for a live task")
    history: list[HistoryEntryOut] = Field(
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


class StatusAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's full record after the call")
    previous_status: Status = Field(description="The status before the call")
    changed: bool = Field(description="False when the task already had the requested status")
    allowed_next: list[Status] = Field(description="Statuses the task may move to from its status now")


class StuckTaskOut(BaseModel):
    task_id: str = Field(description="A pending task that cannot be offered")
    title: str = Field(description="Its title")
    failed: list[str] = Field(description="The failed dependencies or subtasks it waits on")


class NextTaskAnswer(ToolOutput):
    task: TaskRecord | None = Field(description="The most urgent ready task, or null when none is ready")
    claimed: bool = Field(description="True when this call moved the task to in_progress for the caller")
    reason: Literal["empty", "none_pending", "waiting_on_dependencies"] | None = Field(
        description="Why no task was offered: the list is empty, no task is pending, or every pending "
        "task waits on an unfinished dependency or subtask; null when a task was offered"
    )
    stuck: list[StuckTaskOut] = Field(
        description="When no task is ready: pending tasks that wait on failed work (retry or drop it), "
        "at most 20; empty otherwise"
    )


class StatsAnswer(ToolOutput):
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


class LinkAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's full record, with its linked_session_id")
    session_checked: bool = Field(
        description="True when deep-thinking confirmed the session exists; false when it is not loaded "
        "or could not answer (the link is then stored unchecked)"
    )
    session: LinkedSession | None = Field(
        description="The session's summary from deep-thinking, when available"
    )
    previous_session_id: str | None = Field(description="The session the task was linked to before, if any")


# --- refusals, explained -----------------------------------------------------------------------


def _explain(ctx: ToolContext, refusal: StoreRefusal, *, missing_code: str = "NOT_FOUND") -> ToolError:
    """The error envelope for a refusal; ``missing_code`` is the code for unknown dependencies.

    create_task has always answered NOT_FOUND for them; update_task answers INVALID_ARGUMENT, as
    the issue that introduced it asks (the argument it was given names no task).
    """
    from hostd_tasks.store import (
        DeleteRefused,
        DependenciesMissing,
        DependencyCycle,
        NotesTooLong,
        TaskExists,
        TaskNotFound,
        TransitionRefused,
    )

    if isinstance(refusal, TaskNotFound):
        details: dict[str, Any] = {"task_id": refusal.task_id}
        if refusal.argument != "task_id":
            details["argument"] = refusal.argument
        if refusal.deleted_at is not None:
            details["deleted_at"] = refusal.deleted_at.isoformat()
            return ToolError(
                "NOT_FOUND",
                ctx.text(
                    en=f"Task '{refusal.task_id}' was deleted.", zh=f"任务 '{refusal.task_id}' 已被删除。"
                ),
                hint=ctx.text(
                    en="get_task shows its last record and history; list_tasks shows the existing tasks.",
                    zh="get_task 可查看它最后的记录和历史；list_tasks 可列出现有任务。",
                ),
                details=details,
            )
        return ToolError(
            "NOT_FOUND",
            ctx.text(en=f"Task '{refusal.task_id}' does not exist.", zh=f"任务 '{refusal.task_id}' 不存在。"),
            hint=ctx.text(
                en="list_tasks shows the existing task ids.", zh="list_tasks 可列出现有的任务 ID。"
            ),
            details=details,
        )
    if isinstance(refusal, TaskExists):
        if refusal.deleted:
            return ToolError(
                "ALREADY_EXISTS",
                ctx.text(
                    en=f"Task id '{refusal.task_id}' belonged to a deleted task; ids are not reused, so each "
                    "task's history stays its own.",
                    zh=f"任务 ID '{refusal.task_id}' 属于一个已删除的任务；"
                    "ID 不会复用，以免历史记录混在一起。",
                ),
                hint=ctx.text(
                    en="Choose another task_id, or leave it out to get a generated one.",
                    zh="请换一个 task_id，或不传该参数以自动生成。",
                ),
                details={"argument": "task_id", "task_id": refusal.task_id, "deleted": True},
            )
        return ToolError(
            "ALREADY_EXISTS",
            ctx.text(en=f"Task '{refusal.task_id}' already exists.", zh=f"任务 '{refusal.task_id}' 已存在。"),
            hint=ctx.text(
                en="Choose another task_id, or leave it out to get a generated one.",
                zh="请换一个 task_id，或不传该参数以自动生成。",
            ),
            details={"argument": "task_id", "task_id": refusal.task_id},
        )
    if isinstance(refusal, DependenciesMissing):
        names = ", ".join(refusal.missing)
        return ToolError(
            missing_code,
            ctx.text(
                en=f"depends_on names tasks that do not exist: {names}.",
                zh=f"depends_on 中的任务不存在：{names}。",
            ),
            hint=ctx.text(
                en="Create those tasks first, or drop them from depends_on.",
                zh="请先创建这些任务，或将其从 depends_on 中移除。",
            ),
            details={"argument": "depends_on", "missing": refusal.missing},
        )
    if isinstance(refusal, DependencyCycle):
        path = " -> ".join(refusal.cycle)
        argument = refusal.argument
        return ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"{argument} would make a dependency cycle: {path} (each waits on the next).",
                zh=f"{argument} 会形成依赖环：{path}（每个任务都在等待下一个）。",
            ),
            hint=ctx.text(
                en="A task cannot wait on itself, directly or through other tasks: a task waits on its "
                "dependencies, and a parent waits on its subtasks (so a task cannot depend on its own "
                "parent, nor become a subtask of its own subtask). Leave out the task that closes the cycle.",
                zh="任务不能直接或经由其他任务等待自身：任务等待其依赖，父任务等待其子任务"
                "（因此任务不能依赖自己的父任务，也不能成为自己子任务的子任务）。请去掉形成环的那个任务。",
            ),
            details={"argument": argument, "cycle": refusal.cycle},
        )
    if isinstance(refusal, DeleteRefused):
        return _explain_delete_refused(ctx, refusal)
    if isinstance(refusal, NotesTooLong):
        return ToolError(
            "TOO_LONG",
            ctx.text(
                en=f"Task '{refusal.task_id}' already holds {refusal.current} characters of notes; adding "
                f"{refusal.adding} would pass the limit of {NOTES_TOTAL_MAX}. Nothing was changed.",
                zh=f"任务 '{refusal.task_id}' 的备注已有 {refusal.current} 个字符；再追加 {refusal.adding} "
                f"个将超过上限 {NOTES_TOTAL_MAX}。未做任何更改。",
            ),
            hint=ctx.text(
                en="Put long text in the description (update_task description=...), or shorten the note.",
                zh="长文本请写入描述（update_task 的 description 参数），或缩短备注。",
            ),
            details={
                "argument": "append_note",
                "task_id": refusal.task_id,
                "notes_characters": refusal.current,
                "limit": NOTES_TOTAL_MAX,
            },
        )
    if isinstance(refusal, TransitionRefused):
        allowed = ", ".join(refusal.allowed)
        return ToolError(
            "CONFLICT",
            ctx.text(
                en=f"Task '{refusal.task_id}' cannot move from {refusal.current} to {refusal.requested}; "
                f"from {refusal.current} it may move to: {allowed}.",
                zh=f"任务 '{refusal.task_id}' 不能从 {refusal.current} 变为 {refusal.requested}；"
                f"当前状态 {refusal.current} 只能变为：{allowed}。",
            ),
            hint=ctx.text(en=f"Use one of: {allowed}.", zh=f"请使用其中之一：{allowed}。"),
            details={
                "task_id": refusal.task_id,
                "current_status": refusal.current,
                "requested_status": refusal.requested,
                "allowed_next_statuses": refusal.allowed,
            },
        )
    raise TypeError(f"no explanation for the store refusal {type(refusal).__name__}")


def _explain_delete_refused(ctx: ToolContext, refusal: DeleteRefused) -> ToolError:
    task_id = refusal.task_id
    details: dict[str, Any] = {"task_id": task_id}
    if refusal.in_progress:
        details["status"] = "in_progress"
        return ToolError(
            "CONFLICT",
            ctx.text(
                en=f"Task {task_id} is in_progress: an agent may be working on it. Nothing was deleted.",
                zh=f"任务 {task_id} 正在进行中（in_progress），可能有代理正在处理它。未删除任何内容。",
            ),
            hint=ctx.text(
                en="Pass even_if_in_progress=true to delete it anyway, or move it out of in_progress first.",
                zh="如仍要删除，请传 even_if_in_progress=true；或先将其移出 in_progress 状态。",
            ),
            details=details,
        )
    if refusal.subtasks:
        names = ", ".join(refusal.subtasks)
        details["subtasks"] = refusal.subtasks
        return ToolError(
            "CONFLICT",
            ctx.text(
                en=f"Task {task_id} has subtasks: {names}. Nothing was deleted.",
                zh=f"任务 {task_id} 还有子任务：{names}。未删除任何内容。",
            ),
            hint=ctx.text(
                en="Delete those subtasks first, or move them elsewhere with update_task(parent_id=...) "
                '(parent_id="" makes a task top-level).',
                zh="请先删除这些子任务，或用 update_task(parent_id=...) 将其移走"
                '（parent_id="" 使其成为顶层任务）。',
            ),
            details=details,
        )
    names = ", ".join(refusal.dependents)
    details["dependents"] = refusal.dependents
    return ToolError(
        "CONFLICT",
        ctx.text(
            en=f"Tasks depend on {task_id}: {names}. Nothing was deleted.",
            zh=f"以下任务依赖 {task_id}：{names}。未删除任何内容。",
        ),
        hint=ctx.text(
            en="Pass drop_dependencies=true to delete it and remove it from their depends_on.",
            zh="传 drop_dependencies=true 可删除它，并将其从这些任务的 depends_on 中移除。",
        ),
        details=details,
    )


@contextmanager
def _refusals_explained(ctx: ToolContext, *, missing_code: str = "NOT_FOUND") -> Iterator[None]:
    """Turn the store's refusals into error envelopes in the caller's language."""
    from hostd_tasks.store import StoreRefusal

    try:
        yield
    except StoreRefusal as refusal:
        raise _explain(ctx, refusal, missing_code=missing_code) from None


def _invalid(ctx: ToolContext, argument: str, *, en: str, zh: str, hint_en: str, hint_zh: str) -> ToolError:
    return ToolError(
        "INVALID_ARGUMENT",
        ctx.text(en=en, zh=zh),
        hint=ctx.text(en=hint_en, zh=hint_zh),
        details={"argument": argument},
    )


# --- tools -------------------------------------------------------------------------------------


def _clean_title(ctx: ToolContext, title: str, argument: str = "title") -> str:
    """The title without surrounding whitespace; a blank one is refused, naming the argument."""
    clean = title.strip()
    if not clean:
        raise _invalid(
            ctx,
            argument,
            en=f"Invalid argument '{argument}': it is blank.",
            zh=f"参数 '{argument}' 无效：内容为空白。",
            hint_en="Give a short title with visible characters.",
            hint_zh="请给出含可见字符的简短标题。",
        )
    return clean


def _clean_labels(labels: list[str]) -> list[str]:
    """Labels compare without case: stored lower-case, once each, sorted."""
    return sorted({label.lower() for label in labels})


def create_task(
    ctx: ToolContext,
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
) -> TaskAnswer:
    """Create a pending task in the shared task list, with a priority and optional dependencies, parent, labels and acceptance criteria.

    get_next_task offers a task only once every task in depends_on (and every subtask) is completed.
    """  # noqa: E501
    clean_title = _clean_title(ctx, title)
    with _refusals_explained(ctx):
        task = store_for(ctx.plugin).create(
            title=clean_title,
            description=description,
            priority=priority,
            task_id=task_id,
            depends_on=depends_on,
            parent_id=parent_id,
            labels=_clean_labels(labels),
            acceptance=acceptance,
            by=ctx.member,
        )
    waits = ""
    if task.depends_on:
        waits = ctx.text(
            en=f" It waits on {len(task.depends_on)} dependenc{'y' if len(task.depends_on) == 1 else 'ies'}.",
            zh=f"它依赖 {len(task.depends_on)} 个任务。",
        )
    if task.parent_id:
        waits += ctx.text(en=f" Subtask of {task.parent_id}.", zh=f"它是 {task.parent_id} 的子任务。")
    return TaskAnswer(task=task).with_message(
        ctx.text(
            en=f"Created task {task.task_id} '{task.title}' ({task.priority}, pending).{waits}",
            zh=f"已创建任务 {task.task_id}「{task.title}」（{task.priority}，pending）。{waits}",
        )
    )


def list_tasks(
    ctx: ToolContext,
    status: Annotated[Status | None, Field(description="Only tasks with this status; omit for all")] = None,
    priority: Annotated[
        Priority | None, Field(description="Only tasks with this priority; omit for all")
    ] = None,
    limit: Annotated[
        int, Field(description="At most this many tasks per page (1-1000)", ge=1, le=1000)
    ] = 100,
    cursor: Annotated[
        str | None,
        Field(
            description="next_cursor from a previous list_tasks answer, to read the next page",
            pattern=CURSOR_PATTERN,
        ),
    ] = None,
    label: Annotated[Label | None, Field(description="Only tasks with this label; omit for all")] = None,
    parent_id: Annotated[
        str | None, Field(description="Only the subtasks of this task; omit for all", pattern=ID_PATTERN)
    ] = None,
    query: Annotated[
        str | None,
        Field(
            description="Only tasks whose title, description, acceptance, notes or labels contain every "
            "word of this text (Chinese included; a word matches as a prefix)",
            min_length=1,
            max_length=QUERY_MAX,
        ),
    ] = None,
    created_by: Annotated[
        str | None,
        Field(
            description="Only tasks this team member created (their exact name); omit for all",
            pattern=MEMBER_PATTERN,
        ),
    ] = None,
    claimed_by: Annotated[
        str | None,
        Field(
            description="Only tasks this team member holds or last held: claimed (moved to in_progress) and "
            "not back to pending (their exact name); omit for all",
            pattern=MEMBER_PATTERN,
        ),
    ] = None,
) -> TaskListAnswer:
    """List tasks, most urgent first (P0, P1, P2, then oldest), with the total count and a cursor for more. Filter by status, priority, label, parent task, text (query), or the member who created or claimed them."""  # noqa: E501
    after = None
    if cursor is not None:
        rank, seq = cursor.split(":")
        after = (int(rank), int(seq))
    if query is not None and match_expression(query) is None:
        raise _invalid(
            ctx,
            "query",
            en="Invalid argument 'query': it holds no letter or digit to search for.",
            zh="参数 'query' 无效：其中没有可搜索的文字或数字。",
            hint_en="Search for a word of the task, e.g. 'deploy' or '数据库'; omit query to list all.",
            hint_zh="请搜索任务中的词语，例如 'deploy' 或 '数据库'；不传 query 则列出全部任务。",
        )
    with _refusals_explained(ctx):
        page = store_for(ctx.plugin).list_page(
            status=status,
            priority=priority,
            limit=limit,
            after=after,
            label=label.lower() if label is not None else None,
            parent_id=parent_id,
            query=query,
            created_by=created_by,
            claimed_by=claimed_by,
        )
    next_cursor = f"{page.next_after[0]}:{page.next_after[1]}" if page.next_after else None
    more = ctx.text(en=" More with next_cursor.", zh="使用 next_cursor 查看更多。") if next_cursor else ""
    return TaskListAnswer(tasks=page.tasks, total=page.total, next_cursor=next_cursor).with_message(
        ctx.text(
            en=f"{len(page.tasks)} of {page.total} matching tasks, most urgent first.{more}",
            zh=f"共 {page.total} 个匹配任务，本页 {len(page.tasks)} 个，按紧急程度排序。{more}",
        )
    )


def update_task_status(
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="The task to change", pattern=ID_PATTERN)],
    new_status: Annotated[
        Status,
        Field(description="pending, in_progress, completed, failed or blocked (only moves the table allows)"),
    ],
) -> StatusAnswer:
    """Change a task's status. Allowed moves: pending -> in_progress|blocked|failed; in_progress -> completed|failed|blocked|pending; blocked -> pending|in_progress; failed -> pending (retry); completed -> pending (reopen). Any other move is refused with the allowed ones listed; the current status again changes nothing."""  # noqa: E501
    with _refusals_explained(ctx):
        change = store_for(ctx.plugin).set_status(task_id, new_status, by=ctx.member)
    task = change.task
    answer = StatusAnswer(
        task=task,
        previous_status=change.previous_status,
        changed=change.changed,
        allowed_next=list(allowed_next(task.status)),
    )
    if not change.changed:
        return answer.with_message(
            ctx.text(
                en=f"Task {task.task_id} is already {task.status}; nothing changed.",
                zh=f"任务 {task.task_id} 已经是 {task.status}，未做任何更改。",
            )
        )
    return answer.with_message(
        ctx.text(
            en=f"Task {task.task_id}: {change.previous_status} -> {task.status}.",
            zh=f"任务 {task.task_id}：{change.previous_status} -> {task.status}。",
        )
    )


def get_next_task(
    ctx: ToolContext,
    claim: Annotated[
        bool,
        Field(description="true: also move the task to in_progress, atomically, so no other agent gets it"),
    ] = False,
) -> NextTaskAnswer:
    """Get the most urgent pending task whose dependencies are all completed (P0 first, then oldest).

    With claim=true the task moves to in_progress in the same transaction: two agents calling at once never get the same task. When none is ready, task is null and the message says why.
    """  # noqa: E501
    found = store_for(ctx.plugin).next_task(claim=claim, by=ctx.member)
    stuck = [StuckTaskOut(task_id=s.task_id, title=s.title, failed=s.failed) for s in found.stuck]
    answer = NextTaskAnswer(task=found.task, claimed=found.claimed, reason=found.reason, stuck=stuck)
    task = found.task
    if task is not None and found.claimed:
        return answer.with_message(
            ctx.text(
                en=f"Claimed task {task.task_id} '{task.title}' ({task.priority}); it is now in_progress.",
                zh=f"已领取任务 {task.task_id}「{task.title}」（{task.priority}），状态已变为 in_progress。",
            )
        )
    if task is not None:
        return answer.with_message(
            ctx.text(
                en=f"Next task: {task.task_id} '{task.title}' ({task.priority}). "
                "Call get_next_task with claim=true to take it.",
                zh=f"下一个任务：{task.task_id}「{task.title}」（{task.priority}）。"
                "以 claim=true 调用 get_next_task 可领取它。",
            )
        )
    if found.reason == "empty":
        message = ctx.text(
            en="No task: the list is empty. create_task adds one.",
            zh="没有任务：任务清单为空。可用 create_task 添加。",
        )
    elif found.reason == "none_pending":
        message = ctx.text(
            en=f"No task is pending ({found.in_progress} in progress, {found.blocked} blocked; the rest are "
            "completed or failed).",
            zh=f"没有待执行的任务（{found.in_progress} 个进行中，{found.blocked} 个已阻塞，"
            "其余已完成或失败）。",
        )
    else:
        message = ctx.text(
            en=f"No task is ready: all {found.waiting} pending tasks wait on dependencies that are not "
            f"completed ({found.in_progress} in progress, {found.blocked} blocked).",
            zh=f"没有可执行的任务：全部 {found.waiting} 个待执行任务都在等待未完成的依赖"
            f"（{found.in_progress} 个进行中，{found.blocked} 个已阻塞）。",
        )
    if stuck:
        named = "; ".join(f"{s.task_id} ({', '.join(s.failed)})" for s in stuck)
        message += ctx.text(
            en=f" Stuck behind failed work, they will wait until it is retried (update_task_status "
            f"new_status=pending) or the dependency is dropped (update_task depends_on=...): {named}.",
            zh=f"以下任务卡在失败的任务之后，需重试失败任务（update_task_status new_status=pending）"
            f"或移除该依赖（update_task depends_on=...）才能继续：{named}。",
        )
    return answer.with_message(message)


def get_task_stats(ctx: ToolContext) -> StatsAnswer:
    """Task counts by status and by priority, the completion rate, and the age of the oldest pending task."""
    stats = store_for(ctx.plugin).stats()
    completed = stats.by_status["completed"]
    rate = round(completed / stats.total, 4) if stats.total else None
    age = None
    if stats.oldest_pending_created_at is not None:
        age = round(max(0.0, (datetime.now(UTC) - stats.oldest_pending_created_at).total_seconds()), 3)
    answer = StatsAnswer(
        total=stats.total,
        by_status=stats.by_status,
        by_priority=stats.by_priority,
        completion_rate=rate,
        waiting_on_dependencies=stats.waiting_on_dependencies,
        stuck_behind_failed=stats.stuck_behind_failed,
        oldest_pending_task_id=stats.oldest_pending_task_id,
        oldest_pending_age_seconds=age,
    )
    if not stats.total:
        return answer.with_message(ctx.text(en="No tasks yet.", zh="还没有任务。"))
    counts = ", ".join(f"{stats.by_status[s]} {s}" for s in STATUSES)
    percent = f"{(rate or 0) * 100:.1f}%"
    stuck = ""
    if stats.stuck_behind_failed:
        stuck = ctx.text(
            en=f" {stats.stuck_behind_failed} pending tasks are stuck behind failed work.",
            zh=f"{stats.stuck_behind_failed} 个待执行任务卡在失败的任务之后。",
        )
    return answer.with_message(
        ctx.text(
            en=f"{stats.total} tasks: {counts}; {percent} completed.{stuck}",
            zh=f"共 {stats.total} 个任务：{counts}；完成率 {percent}。{stuck}",
        )
    )


SessionCheck = Literal["checked", "not_loaded", "failed"]


def _ask_sessions(ctx: ToolContext, session_id: str) -> tuple[SessionCheck, bool, LinkedSession | None]:
    """What deep-thinking says of a session: (how the check went, whether it exists, its summary).

    Only through the ``deep-thinking.sessions`` service: its absence, or a failure inside it, is
    not the caller's fault, so it is reported as such and never raised.
    """
    service = ctx.services.get(SESSIONS_SERVICE)
    if service is None:
        return "not_loaded", False, None
    try:
        exists = bool(service.session_exists(session_id))
        raw = service.session_summary(session_id) if exists else None
    except Exception:
        ctx.logger.exception("deep-thinking.sessions failed for session %s", session_id)
        return "failed", False, None
    summary = None
    if isinstance(raw, dict):
        try:
            summary = LinkedSession.model_validate({**raw, "session_id": session_id})
        except ValidationError:
            ctx.logger.warning("deep-thinking gave an unreadable summary for session %s", session_id)
    return "checked", exists, summary


def _check_session(ctx: ToolContext, session_id: str) -> tuple[SessionCheck, LinkedSession | None]:
    """Ask deep-thinking whether the session exists (NOT_FOUND when it says no).

    Its absence, or a failure inside it, is not the caller's fault: the link is then stored
    unchecked and the answer says why, as the cross-plugin convention asks.
    """
    check, exists, summary = _ask_sessions(ctx, session_id)
    if check == "checked" and not exists:
        raise ToolError(
            "NOT_FOUND",
            ctx.text(
                en=f"Session '{session_id}' does not exist in deep-thinking.",
                zh=f"deep-thinking 中不存在会话 '{session_id}'。",
            ),
            hint=ctx.text(
                en="list_sessions shows the existing sessions; create_session makes one.",
                zh="list_sessions 可列出现有会话；create_session 可创建会话。",
            ),
            details={"argument": "session_id", "session_id": session_id},
        )
    return check, summary


def link_task_session(
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="The task to link", pattern=ID_PATTERN)],
    session_id: SessionId,
) -> LinkAnswer:
    """Link a task to a deep-thinking session (replacing an earlier link). With deep-thinking loaded the session must exist; without it the link is stored unchecked and the answer says so."""  # noqa: E501
    store = store_for(ctx.plugin)
    with _refusals_explained(ctx):
        store.get(task_id)  # an unknown task is reported before the session is looked up
    check, summary = _check_session(ctx, session_id)
    with _refusals_explained(ctx):
        link = store.link_session(task_id, session_id, by=ctx.member)
    answer = LinkAnswer(
        task=link.task,
        session_checked=check == "checked",
        session=summary,
        previous_session_id=link.previous_session_id,
    )
    linked = ctx.text(
        en=f"Linked task {task_id} to session '{session_id}'.",
        zh=f"已将任务 {task_id} 关联到会话 '{session_id}'。",
    )
    if check == "not_loaded":
        linked += ctx.text(
            en=" The session could not be checked: the deep-thinking plugin is not loaded in this profile.",
            zh="无法核实该会话：当前配置未加载 deep-thinking 插件。",
        )
    elif check == "failed":
        linked += ctx.text(
            en=" The session could not be checked: deep-thinking failed to answer (see the server log).",
            zh="无法核实该会话：deep-thinking 未能应答（详见服务器日志）。",
        )
    return answer.with_message(linked)


def update_task(
    ctx: ToolContext,
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
) -> UpdateAnswer:
    """Change a task's title, description, priority, dependencies, parent, labels or acceptance criteria, or append a note; only what is given changes, in one step (all or nothing). The status changes with update_task_status."""  # noqa: E501
    from hostd_tasks.store import TaskEdit

    edit = TaskEdit(
        title=None if title is None else _clean_title(ctx, title),
        description=description,
        priority=priority,
        depends_on=depends_on,
        parent_id=parent_id,
        labels=None if labels is None else _clean_labels(labels),
        acceptance=acceptance,
        append_note=append_note,
    )
    if all(value is None for value in vars(edit).values()):
        raise _invalid(
            ctx,
            "task_id",
            en="Nothing to change: give at least one of title, description, priority, depends_on, parent_id, "
            "labels, acceptance, append_note.",
            zh="没有要更改的内容：请至少给出 title、description、priority、depends_on、parent_id、labels、"
            "acceptance、append_note 之一。",
            hint_en="To change the status, use update_task_status.",
            hint_zh="要更改状态，请使用 update_task_status。",
        )
    with _refusals_explained(ctx, missing_code="INVALID_ARGUMENT"):
        update = store_for(ctx.plugin).update(task_id, edit, by=ctx.member)
    answer = UpdateAnswer(task=update.task, changed=update.changed)
    if not update.changed:
        return answer.with_message(
            ctx.text(
                en=f"Task {task_id} already had those values; nothing changed.",
                zh=f"任务 {task_id} 已是这些值，未做任何更改。",
            )
        )
    fields = ", ".join(update.changed)
    return answer.with_message(
        ctx.text(en=f"Updated task {task_id}: {fields}.", zh=f"已更新任务 {task_id}：{fields}。")
    )


def delete_task(
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="The task to delete", pattern=ID_PATTERN)],
    drop_dependencies: Annotated[
        bool,
        Field(description="true: also remove this task from the depends_on of tasks that depend on it"),
    ] = False,
    even_if_in_progress: Annotated[
        bool, Field(description="true: delete it even though it is in_progress (an agent may be on it)")
    ] = False,
) -> DeleteAnswer:
    """Delete a task: it leaves every list and get_next_task; get_task still shows its last record and history. Refused while other tasks depend on it (unless drop_dependencies=true), while it has subtasks, and while it is in_progress (unless even_if_in_progress=true)."""  # noqa: E501
    with _refusals_explained(ctx):
        deletion = store_for(ctx.plugin).delete(
            task_id,
            drop_dependencies=drop_dependencies,
            even_if_in_progress=even_if_in_progress,
            by=ctx.member,
        )
    answer = DeleteAnswer(task=deletion.task, dropped_from=deletion.dropped_from)
    message = ctx.text(
        en=f"Deleted task {task_id} '{deletion.task.title}'.",
        zh=f"已删除任务 {task_id}「{deletion.task.title}」。",
    )
    if deletion.dropped_from:
        names = ", ".join(deletion.dropped_from)
        message += ctx.text(
            en=f" It was dropped from the dependencies of: {names}.",
            zh=f"已从以下任务的依赖中移除：{names}。",
        )
    return answer.with_message(message)


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
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="The task to split into subtasks", pattern=ID_PATTERN)],
    subtasks: Annotated[
        list[SubtaskSpec],
        Field(description=f"The subtasks, 1-{SUBTASKS_MAX}, in order", min_length=1, max_length=SUBTASKS_MAX),
    ],
) -> SplitAnswer:
    """Split a task into subtasks, created together (all or none). The parent is then offered by get_next_task only once every subtask is completed; its record shows their progress."""  # noqa: E501
    specs = [
        {
            **spec.model_dump(),
            "title": _clean_title(ctx, spec.title, f"subtasks.{n}.title"),
            "labels": _clean_labels(spec.labels),
        }
        for n, spec in enumerate(subtasks)
    ]
    with _refusals_explained(ctx):
        parent, children = store_for(ctx.plugin).split(task_id, specs, by=ctx.member)
    ids = ", ".join(child.task_id for child in children)
    return SplitAnswer(task=parent, subtasks=children).with_message(
        ctx.text(
            en=f"Split task {task_id} into {len(children)} subtasks: {ids}.",
            zh=f"已将任务 {task_id} 拆分为 {len(children)} 个子任务：{ids}。",
        )
    )


def get_task(
    ctx: ToolContext,
    task_id: Annotated[str, Field(description="The task to show (a deleted one too)", pattern=ID_PATTERN)],
) -> TaskDetailsAnswer:
    """One task in full: its record, its history (every change with its time), the tasks it depends on and that depend on it, its subtasks, and its linked deep-thinking session."""  # noqa: E501
    with _refusals_explained(ctx):
        found = store_for(ctx.plugin).details(task_id)
    task = found.task
    check: SessionCheck = "not_loaded"
    session = None
    if task.linked_session_id is not None and found.deleted_at is None:
        check, _, session = _ask_sessions(ctx, task.linked_session_id)

    def related(neighbours: list[Any]) -> list[RelatedTask]:
        return [RelatedTask(task_id=n.task_id, title=n.title, status=n.status) for n in neighbours]

    answer = TaskDetailsAnswer(
        task=task,
        deleted_at=found.deleted_at,
        history=[HistoryEntryOut(event=h.event, at=h.at, by=h.by, details=h.details) for h in found.history],
        history_total=found.history_total,
        depends_on=related(found.depends_on),
        dependents=related(found.dependents),
        subtasks=related(found.subtasks),
        session=session,
        session_checked=check == "checked",
    )
    if found.deleted_at is not None:
        return answer.with_message(
            ctx.text(
                en=f"Task {task_id} '{task.title}' was deleted; this is its last record and its history.",
                zh=f"任务 {task_id}「{task.title}」已被删除；以下是它最后的记录和历史。",
            )
        )
    return answer.with_message(
        ctx.text(
            en=f"Task {task_id} '{task.title}' ({task.priority}, {task.status}): "
            f"{found.history_total} history entries, {len(found.depends_on)} dependencies, "
            f"{len(found.dependents)} dependents, "
            f"{len(found.subtasks)} subtasks.",
            zh=f"任务 {task_id}「{task.title}」（{task.priority}，{task.status}）："
            f"{found.history_total} 条历史记录，"
            f"依赖 {len(found.depends_on)} 个任务，被 {len(found.dependents)} 个任务依赖，"
            f"{len(found.subtasks)} 个子任务。",
        )
    )
