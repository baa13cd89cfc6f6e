"""Tools that move work along: update_task_status, get_next_task, renew_claim, release_claim,
link_task_session."""

from __future__ import annotations

from typing import Annotated

from hostd_db import utc_stamp
from pydantic import Field

from hostd import ID_PATTERN, Text, ToolContext
from hostd_tasks.links import check_session
from hostd_tasks.models import (
    ClaimOutput,
    LinkOutput,
    NextTaskOutput,
    Settings,
    StatusOutput,
    StuckTask,
    TaskRecord,
)
from hostd_tasks.resources import touched
from hostd_tasks.rules import LEASE_SECONDS_MAX, LEASE_SECONDS_MIN, NextPreference, Status, allowed_next
from hostd_tasks.store import TaskStore
from hostd_tasks.tools.arguments import SessionId
from hostd_tasks.wording import agreeing, counted, held

LeaseSeconds = Annotated[
    int | None,
    Field(
        description="Lease in seconds; default: setting tasks.lease_seconds",
        ge=LEASE_SECONDS_MIN,
        le=LEASE_SECONDS_MAX,
    ),
]


def lease_length(ctx: ToolContext[Settings], lease_seconds: int | None) -> int:
    """The lease a call asked for, else the configured one."""
    return ctx.settings.lease_seconds if lease_seconds is None else lease_seconds


def until(task: TaskRecord) -> Text:
    """When the caller's lease on the task lapses and how to keep it; empty without a lease."""
    if task.lease_expires_at is None:
        return Text.same("")
    at = utc_stamp(task.lease_expires_at)
    return Text(
        en=f" The lease lasts until {at}: renew it with renew_claim (or any status or note update) "
        "before then, or the task goes back to pending for someone else.",
        zh=f"领取有效期至 {at}：请在此之前用 renew_claim（或任何状态、备注更新）续期，"
        "否则任务会回到 pending 交给他人。",
    )


def update_task_status(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to change", pattern=ID_PATTERN)],
    new_status: Annotated[
        Status,
        Field(description="The new status"),
    ],
    lease_seconds: LeaseSeconds = None,
) -> StatusOutput:
    """Change a task's status: pending -> in_progress|blocked|failed; in_progress ->
    completed|failed|blocked|pending; blocked -> pending|in_progress; failed or completed -> pending.
    in_progress claims it on a lease, which its holder renews by setting in_progress again.
    """
    change = TaskStore(ctx.database()).set_status(
        task_id, new_status, by=ctx.member, lease_seconds=lease_length(ctx, lease_seconds)
    )
    task = change.task
    answer = StatusOutput(
        task=task,
        previous_status=change.previous_status,
        changed=change.changed,
        allowed_next=list(allowed_next(task.status)),
    ).with_links(touched(ctx, task))
    if not change.changed:
        return answer.with_message(
            Text(
                en=f"Task {task.task_id} is already {task.status}; nothing changed.",
                zh=f"任务 {task.task_id} 已经是 {task.status}，未做任何更改。",
            )
            + (until(task) if task.claimed_by == ctx.member else held(task))
        )
    return answer.with_message(
        Text(
            en=f"Task {task.task_id}: {change.previous_status} -> {task.status}.",
            zh=f"任务 {task.task_id}：{change.previous_status} -> {task.status}。",
        )
        + until(task)
    )


def get_next_task(
    ctx: ToolContext[Settings],
    claim: Annotated[
        bool,
        Field(description="Also move it to in_progress atomically"),
    ] = False,
    lease_seconds: LeaseSeconds = None,
    prefer: Annotated[
        NextPreference,
        Field(description="urgent: most urgent first; unblocks_most: the one most unfinished tasks wait on"),
    ] = "urgent",
) -> NextTaskOutput:
    """The most urgent pending task whose dependencies are completed; claim=true takes it (in_progress)
    atomically, on a lease until lease_expires_at that renew_claim or any update extends, else it
    returns to pending.
    """
    found = TaskStore(ctx.database()).next_task(
        claim=claim, by=ctx.member, lease_seconds=lease_length(ctx, lease_seconds), prefer=prefer
    )
    answer = NextTaskOutput(
        task=found.task,
        claimed=found.claimed,
        reason=found.reason,
        stuck=found.stuck,
    )
    task = found.task
    if task is not None:
        answer.with_links(touched(ctx, task))
    if task is not None and found.claimed:
        message = Text(
            en=f"Claimed task {task.task_id} '{task.title}' ({task.priority}); it is now in_progress.",
            zh=f"已领取任务 {task.task_id}「{task.title}」（{task.priority}），状态已变为 in_progress。",
        ) + until(task)
    elif task is not None:
        message = Text(
            en=f"Next task: {task.task_id} '{task.title}' ({task.priority}). "
            "Call get_next_task with claim=true to take it.",
            zh=f"下一个任务：{task.task_id}「{task.title}」（{task.priority}）。"
            "以 claim=true 调用 get_next_task 可领取它。",
        )
    elif found.reason == "empty":
        message = Text(
            en="No task: the list is empty. create_task adds one.",
            zh="没有任务：任务清单为空。可用 create_task 添加。",
        )
    elif found.reason == "none_pending":
        message = Text(
            en=f"No task is pending ({found.in_progress} in progress, {found.blocked} blocked; the rest are "
            "completed or failed).",
            zh=f"没有待执行的任务（{found.in_progress} 个进行中，{found.blocked} 个已阻塞，"
            "其余已完成或失败）。",
        )
    else:
        waiting = (
            "the one pending task waits" if found.waiting == 1 else f"all {found.waiting} pending tasks wait"
        )
        message = Text(
            en=f"No task is ready: {waiting} on dependencies or subtasks that are not completed "
            f"({found.in_progress} in progress, {found.blocked} blocked).",
            zh=f"没有可执行的任务：全部 {found.waiting} 个待执行任务都在等待未完成的依赖或子任务"
            f"（{found.in_progress} 个进行中，{found.blocked} 个已阻塞）。",
        )
    if found.stuck:
        message += stuck_behind_failed(found.stuck, more=found.more_stuck)
    return answer.with_message(message)


def stuck_behind_failed(stuck: list[StuckTask], *, more: bool) -> Text:
    """The pending tasks stuck behind failed work, named with what failed (and the parent, if through one)."""

    def named(task: StuckTask) -> str:
        failed = ", ".join(task.failed)
        return (
            f"{task.task_id} ({failed})"
            if task.via_parent is None
            else f"{task.task_id} (via {task.via_parent}: {failed})"
        )

    names = "; ".join(named(task) for task in stuck)
    total = len(stuck)
    more_en = ", and possibly more (get_task_stats counts them all)" if more else ""
    more_zh = "，可能还有更多（get_task_stats 可统计全部）" if more else ""
    return Text(
        en=f" {counted(total, 'pending task')} {agreeing(total, 'is', 'are')} stuck behind failed work and "
        f"will wait until it is retried (update_task_status new_status=pending) or the dependency is dropped "
        f"(update_task depends_on=...): {names}{more_en}.",
        zh=f"{total} 个待执行任务卡在失败的任务之后，需重试失败任务（update_task_status new_status=pending）"
        f"或移除该依赖（update_task depends_on=...）才能继续：{names}{more_zh}。",
    )


def renew_claim(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="A task you hold", pattern=ID_PATTERN)],
    lease_seconds: Annotated[
        int | None,
        Field(
            description="New lease from now in seconds; default: the claim's own length",
            ge=LEASE_SECONDS_MIN,
            le=LEASE_SECONDS_MAX,
        ),
    ] = None,
) -> ClaimOutput:
    """Extend your lease on a task you hold, before its lease_expires_at."""
    task = TaskStore(ctx.database()).renew(task_id, by=ctx.member, lease_seconds=lease_seconds)
    answer = ClaimOutput(task=task, lease_expires_at=task.lease_expires_at)
    return answer.with_links(touched(ctx, task)).with_message(
        Text(en=f"Renewed your claim on task {task_id}.", zh=f"已续期你对任务 {task_id} 的领取。")
        + until(task)
    )


def release_claim(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="A task you hold", pattern=ID_PATTERN)],
) -> ClaimOutput:
    """Give up a task you hold: it goes back to pending."""
    task = TaskStore(ctx.database()).release(task_id, by=ctx.member)
    answer = ClaimOutput(task=task, lease_expires_at=None)
    return answer.with_links(touched(ctx, task)).with_message(
        Text(
            en=f"Released task {task_id}; it is pending again.",
            zh=f"已释放任务 {task_id}，它已回到 pending。",
        )
    )


def link_task_session(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to link", pattern=ID_PATTERN)],
    session_id: SessionId,
) -> LinkOutput:
    """Link a task to a deep-thinking session (replacing an earlier link)."""
    store = TaskStore(ctx.database())
    store.get(task_id)  # an unknown task is reported before the session is looked up
    check, summary = check_session(ctx, session_id)
    link = store.link_session(task_id, session_id, by=ctx.member)
    answer = LinkOutput(
        task=link.task,
        session_checked=check == "checked",
        session=summary,
        previous_session_id=link.previous_session_id,
    )
    linked = Text(
        en=f"Linked task {task_id} to session '{session_id}'.",
        zh=f"已将任务 {task_id} 关联到会话 '{session_id}'。",
    )
    if check == "not_loaded":
        linked += Text(
            en=" The session could not be checked: the deep-thinking plugin is not loaded in this profile.",
            zh="无法核实该会话：当前配置未加载 deep-thinking 插件。",
        )
    elif check == "failed":
        linked += Text(
            en=" The session could not be checked: deep-thinking failed to answer (see the server log).",
            zh="无法核实该会话：deep-thinking 未能应答（详见服务器日志）。",
        )
    return answer.with_links(touched(ctx, link.task)).with_message(linked)
