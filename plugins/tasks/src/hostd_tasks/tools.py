"""The six task tools: typed arguments in, the task's whole record out, messages in zh or en.

Rules live in ``models`` (transitions, limits) and ``store`` (what the data allows); this module
only checks what the schema cannot say, calls the store and explains the outcome to the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import BaseModel, Field, ValidationError

from hostd import ToolContext, ToolError, ToolOutput
from hostd_tasks.access import store_for
from hostd_tasks.models import (
    DEPENDENCIES_MAX,
    DESCRIPTION_MAX,
    ID_PATTERN,
    STATUSES,
    TITLE_MAX,
    Priority,
    Status,
    TaskRecord,
    allowed_next,
)

if TYPE_CHECKING:
    from hostd_tasks.store import StoreRefusal

SESSIONS_SERVICE = "deep-thinking.sessions"
CURSOR_PATTERN = r"^[0-2]:[0-9]{1,18}$"

TaskId = Annotated[
    str,
    Field(
        description="A task id: 1-64 letters, digits, '_', '-' or '.', not starting with '.' (e.g. 't-12')",
        pattern=ID_PATTERN,
    ),
]
SessionId = Annotated[
    str,
    Field(
        description="A deep-thinking session id (1-64 letters, digits, '_', '-', '.'; not starting with '.')",
        pattern=ID_PATTERN,
    ),
]


# --- outputs -----------------------------------------------------------------------------------


class TaskAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's full record")


class TaskListAnswer(ToolOutput):
    tasks: list[TaskRecord] = Field(
        description="Tasks, most urgent first (P0 before P1 before P2, then oldest)"
    )
    total: int = Field(description="How many tasks match the filters, across all pages")
    next_cursor: str | None = Field(description="Pass as 'cursor' for the next page; null on the last page")


class StatusAnswer(ToolOutput):
    task: TaskRecord = Field(description="The task's full record after the call")
    previous_status: Status = Field(description="The status before the call")
    changed: bool = Field(description="False when the task already had the requested status")
    allowed_next: list[Status] = Field(description="Statuses the task may move to from its status now")


class NextTaskAnswer(ToolOutput):
    task: TaskRecord | None = Field(description="The most urgent ready task, or null when none is ready")
    claimed: bool = Field(description="True when this call moved the task to in_progress for the caller")
    reason: Literal["empty", "none_pending", "waiting_on_dependencies"] | None = Field(
        description="Why no task was offered: the list is empty, no task is pending, or every pending "
        "task waits on an unfinished dependency; null when a task was offered"
    )


class StatsAnswer(ToolOutput):
    total: int = Field(description="Number of tasks")
    by_status: dict[Status, int] = Field(description="Task count per status")
    by_priority: dict[Priority, int] = Field(description="Task count per priority")
    completion_rate: float | None = Field(
        description="Completed tasks / all tasks (0..1); null when there are none"
    )
    waiting_on_dependencies: int = Field(description="Pending tasks that wait on an unfinished dependency")
    oldest_pending_task_id: str | None = Field(description="The pending task created first, if any")
    oldest_pending_age_seconds: float | None = Field(
        description="Its age in seconds; null with no pending task"
    )


class LinkedSession(BaseModel):
    session_id: str = Field(description="The session's id")
    name: str | None = Field(default=None, description="The session's name")
    status: str | None = Field(default=None, description="The session's status")
    thought_count: int | None = Field(default=None, description="How many thoughts the session holds")


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


def _explain(ctx: ToolContext, refusal: StoreRefusal) -> ToolError:
    from hostd_tasks.store import (
        DependenciesMissing,
        DependencyCycle,
        TaskExists,
        TaskNotFound,
        TransitionRefused,
    )

    if isinstance(refusal, TaskNotFound):
        return ToolError(
            "NOT_FOUND",
            ctx.text(en=f"Task '{refusal.task_id}' does not exist.", zh=f"任务 '{refusal.task_id}' 不存在。"),
            hint=ctx.text(
                en="list_tasks shows the existing task ids.", zh="list_tasks 可列出现有的任务 ID。"
            ),
            details={"task_id": refusal.task_id},
        )
    if isinstance(refusal, TaskExists):
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
            "NOT_FOUND",
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
        return ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"depends_on would make a dependency cycle: {path}.",
                zh=f"depends_on 会形成依赖环：{path}。",
            ),
            hint=ctx.text(
                en="A task cannot depend on itself; list only other, existing tasks.",
                zh="任务不能依赖自身；只能列出其他已存在的任务。",
            ),
            details={"argument": "depends_on", "cycle": refusal.cycle},
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


@contextmanager
def _refusals_explained(ctx: ToolContext) -> Iterator[None]:
    """Turn the store's refusals into error envelopes in the caller's language."""
    from hostd_tasks.store import StoreRefusal

    try:
        yield
    except StoreRefusal as refusal:
        raise _explain(ctx, refusal) from None


def _invalid(ctx: ToolContext, argument: str, *, en: str, zh: str, hint_en: str, hint_zh: str) -> ToolError:
    return ToolError(
        "INVALID_ARGUMENT",
        ctx.text(en=en, zh=zh),
        hint=ctx.text(en=hint_en, zh=hint_zh),
        details={"argument": argument},
    )


# --- tools -------------------------------------------------------------------------------------


def create_task(
    ctx: ToolContext,
    title: Annotated[
        str, Field(description="What is to be done, 1-200 characters", min_length=1, max_length=TITLE_MAX)
    ],
    description: Annotated[
        str, Field(description=f"Details, at most {DESCRIPTION_MAX} characters", max_length=DESCRIPTION_MAX)
    ] = "",
    priority: Annotated[Priority, Field(description="P0 (do now), P1 (soon) or P2 (as planned)")] = "P2",
    task_id: Annotated[
        str | None,
        Field(
            description="Your own id for the task (must be new); omit it to get a short one like 't-12'",
            pattern=ID_PATTERN,
        ),
    ] = None,
    depends_on: Annotated[
        list[TaskId],
        Field(description="Ids of existing tasks that must be completed first", max_length=DEPENDENCIES_MAX),
    ] = [],  # noqa: B006 - the host validates into a fresh list on every call
) -> TaskAnswer:
    """Create a pending task in the shared task list, with a priority and optional dependencies.

    get_next_task offers a task only once every task in depends_on is completed.
    """
    clean_title = title.strip()
    if not clean_title:
        raise _invalid(
            ctx,
            "title",
            en="Invalid argument 'title': it is blank.",
            zh="参数 'title' 无效：内容为空白。",
            hint_en="Give a short title with visible characters.",
            hint_zh="请给出含可见字符的简短标题。",
        )
    with _refusals_explained(ctx):
        task = store_for(ctx.plugin).create(
            title=clean_title,
            description=description,
            priority=priority,
            task_id=task_id,
            depends_on=depends_on,
        )
    waits = ""
    if task.depends_on:
        waits = ctx.text(
            en=f" It waits on {len(task.depends_on)} dependenc{'y' if len(task.depends_on) == 1 else 'ies'}.",
            zh=f"它依赖 {len(task.depends_on)} 个任务。",
        )
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
) -> TaskListAnswer:
    """List tasks, most urgent first (P0, P1, P2, then oldest), with the total count and a cursor for more."""
    after = None
    if cursor is not None:
        rank, seq = cursor.split(":")
        after = (int(rank), int(seq))
    page = store_for(ctx.plugin).list_page(status=status, priority=priority, limit=limit, after=after)
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
        change = store_for(ctx.plugin).set_status(task_id, new_status)
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
    found = store_for(ctx.plugin).next_task(claim=claim)
    answer = NextTaskAnswer(task=found.task, claimed=found.claimed, reason=found.reason)
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
        oldest_pending_task_id=stats.oldest_pending_task_id,
        oldest_pending_age_seconds=age,
    )
    if not stats.total:
        return answer.with_message(ctx.text(en="No tasks yet.", zh="还没有任务。"))
    counts = ", ".join(f"{stats.by_status[s]} {s}" for s in STATUSES)
    percent = f"{(rate or 0) * 100:.1f}%"
    return answer.with_message(
        ctx.text(
            en=f"{stats.total} tasks: {counts}; {percent} completed.",
            zh=f"共 {stats.total} 个任务：{counts}；完成率 {percent}。",
        )
    )


SessionCheck = Literal["checked", "not_loaded", "failed"]


def _check_session(ctx: ToolContext, session_id: str) -> tuple[SessionCheck, LinkedSession | None]:
    """Ask deep-thinking whether the session exists (NOT_FOUND when it says no).

    Its absence, or a failure inside it, is not the caller's fault: the link is then stored
    unchecked and the answer says why, as the cross-plugin convention asks.
    """
    service = ctx.services.get(SESSIONS_SERVICE)
    if service is None:
        return "not_loaded", None
    try:
        exists = bool(service.session_exists(session_id))
        raw = service.session_summary(session_id) if exists else None
    except Exception:
        ctx.logger.exception("deep-thinking.sessions failed for session %s", session_id)
        return "failed", None
    if not exists:
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
    summary = None
    if isinstance(raw, dict):
        try:
            summary = LinkedSession.model_validate({**raw, "session_id": session_id})
        except ValidationError:
            ctx.logger.warning("deep-thinking gave an unreadable summary for session %s", session_id)
    return "checked", summary


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
        link = store.link_session(task_id, session_id)
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
