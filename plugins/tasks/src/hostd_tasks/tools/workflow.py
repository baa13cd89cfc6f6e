"""Tools that move work along: update_task_status, get_next_task, link_task_session."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hostd import ID_PATTERN, Text, ToolContext
from hostd_tasks.links import check_session
from hostd_tasks.models import LinkOutput, NextTaskOutput, Settings, StatusOutput
from hostd_tasks.resources import task_link
from hostd_tasks.rules import Status, allowed_next
from hostd_tasks.store import store_for
from hostd_tasks.tools.arguments import SessionId


def update_task_status(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to change", pattern=ID_PATTERN)],
    new_status: Annotated[
        Status,
        Field(description="The new status"),
    ],
) -> StatusOutput:
    """Change a task's status: pending -> in_progress|blocked|failed; in_progress ->
    completed|failed|blocked|pending; blocked -> pending|in_progress; failed or completed -> pending.
    """
    change = store_for(ctx).set_status(task_id, new_status, by=ctx.member)
    task = change.task
    answer = StatusOutput(
        task=task,
        previous_status=change.previous_status,
        changed=change.changed,
        allowed_next=list(allowed_next(task.status)),
    ).with_links(task_link(task.task_id, task.title))
    if not change.changed:
        return answer.with_message(
            Text(
                en=f"Task {task.task_id} is already {task.status}; nothing changed.",
                zh=f"任务 {task.task_id} 已经是 {task.status}，未做任何更改。",
            )
        )
    return answer.with_message(
        Text(
            en=f"Task {task.task_id}: {change.previous_status} -> {task.status}.",
            zh=f"任务 {task.task_id}：{change.previous_status} -> {task.status}。",
        )
    )


def get_next_task(
    ctx: ToolContext[Settings],
    claim: Annotated[
        bool,
        Field(description="Also move it to in_progress atomically"),
    ] = False,
) -> NextTaskOutput:
    """The most urgent pending task whose dependencies are completed; claim=true moves it to in_progress
    atomically, so two agents never get the same task.
    """
    found = store_for(ctx).next_task(claim=claim, by=ctx.member)
    answer = NextTaskOutput(
        task=found.task, claimed=found.claimed, reason=found.reason, stuck=list(found.stuck)
    )
    task = found.task
    if task is not None:
        answer.with_links(task_link(task.task_id, task.title))
    if task is not None and found.claimed:
        return answer.with_message(
            Text(
                en=f"Claimed task {task.task_id} '{task.title}' ({task.priority}); it is now in_progress.",
                zh=f"已领取任务 {task.task_id}「{task.title}」（{task.priority}），状态已变为 in_progress。",
            )
        )
    if task is not None:
        return answer.with_message(
            Text(
                en=f"Next task: {task.task_id} '{task.title}' ({task.priority}). "
                "Call get_next_task with claim=true to take it.",
                zh=f"下一个任务：{task.task_id}「{task.title}」（{task.priority}）。"
                "以 claim=true 调用 get_next_task 可领取它。",
            )
        )
    if found.reason == "empty":
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
        message = Text(
            en=f"No task is ready: all {found.waiting} pending tasks wait on dependencies that are not "
            f"completed ({found.in_progress} in progress, {found.blocked} blocked).",
            zh=f"没有可执行的任务：全部 {found.waiting} 个待执行任务都在等待未完成的依赖"
            f"（{found.in_progress} 个进行中，{found.blocked} 个已阻塞）。",
        )
    if found.stuck:
        named = "; ".join(f"{s.task_id} ({', '.join(s.failed)})" for s in found.stuck)
        message += Text(
            en=f" Stuck behind failed work, they will wait until it is retried (update_task_status "
            f"new_status=pending) or the dependency is dropped (update_task depends_on=...): {named}.",
            zh=f"以下任务卡在失败的任务之后，需重试失败任务（update_task_status new_status=pending）"
            f"或移除该依赖（update_task depends_on=...）才能继续：{named}。",
        )
    return answer.with_message(message)


def link_task_session(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="The task to link", pattern=ID_PATTERN)],
    session_id: SessionId,
) -> LinkOutput:
    """Link a task to a deep-thinking session (replacing an earlier link)."""
    store = store_for(ctx)
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
    return answer.with_message(linked)
