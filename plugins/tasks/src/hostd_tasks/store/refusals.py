"""What the store refuses, as the errors the caller sees: one ``ToolError`` per rule, in both languages.

The store raises these where it finds the condition (inside the transaction, which then rolls
back); the host renders message, hint and details in the server's language. Each names the
argument at fault in ``details.argument`` where there is one.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hostd_db import utc_stamp

from hostd import Text, ToolError
from hostd_tasks.rules import NOTES_TOTAL_MAX, Status, allowed_next

#: Choosing another id is the way out of both "exists" refusals.
_ANOTHER_ID = Text(
    en="Choose another task_id, or leave it out to get a generated one.",
    zh="请换一个 task_id，或不传该参数以自动生成。",
)


def task_not_found(
    task_id: str, *, argument: str = "task_id", deleted_at: datetime | None = None
) -> ToolError:
    """NOT_FOUND for a task id that names no live task (saying so when it was deleted)."""
    details: dict[str, Any] = {"task_id": task_id}
    if argument != "task_id":
        details["argument"] = argument
    if deleted_at is not None:
        details["deleted_at"] = deleted_at.isoformat()
        return ToolError(
            "NOT_FOUND",
            Text(en=f"Task '{task_id}' was deleted.", zh=f"任务 '{task_id}' 已被删除。"),
            hint=Text(
                en="get_task shows its last record and history; list_tasks shows the existing tasks.",
                zh="get_task 可查看它最后的记录和历史；list_tasks 可列出现有任务。",
            ),
            details=details,
        )
    return ToolError(
        "NOT_FOUND",
        Text(en=f"Task '{task_id}' does not exist.", zh=f"任务 '{task_id}' 不存在。"),
        hint=Text(en="list_tasks shows the existing task ids.", zh="list_tasks 可列出现有的任务 ID。"),
        details=details,
    )


def task_exists(task_id: str, *, deleted: bool) -> ToolError:
    """ALREADY_EXISTS for a given task id that is taken, now or by a deleted task (ids are not reused)."""
    if deleted:
        return ToolError(
            "ALREADY_EXISTS",
            Text(
                en=f"Task id '{task_id}' belonged to a deleted task; ids are not reused, so each "
                "task's history stays its own.",
                zh=f"任务 ID '{task_id}' 属于一个已删除的任务；ID 不会复用，以免历史记录混在一起。",
            ),
            hint=_ANOTHER_ID,
            details={"argument": "task_id", "task_id": task_id, "deleted": True},
        )
    return ToolError(
        "ALREADY_EXISTS",
        Text(en=f"Task '{task_id}' already exists.", zh=f"任务 '{task_id}' 已存在。"),
        hint=_ANOTHER_ID,
        details={"argument": "task_id", "task_id": task_id},
    )


def dependencies_missing(missing: list[str], *, code: str) -> ToolError:
    """``depends_on`` names tasks that do not exist.

    ``code`` is NOT_FOUND when creating (as create_task has always answered) and
    INVALID_ARGUMENT when updating (the argument it was given names no task).
    """
    names = ", ".join(missing)
    return ToolError(
        code,
        Text(
            en=f"depends_on names tasks that do not exist: {names}.",
            zh=f"depends_on 中的任务不存在：{names}。",
        ),
        hint=Text(
            en="Create those tasks first, or drop them from depends_on.",
            zh="请先创建这些任务，或将其从 depends_on 中移除。",
        ),
        details={"argument": "depends_on", "missing": missing},
    )


def dependency_cycle(cycle: list[str], *, argument: str = "depends_on") -> ToolError:
    """``cycle`` reads 'waits on': each task waits on the next (a dependency, or a parent on its subtask)."""
    path = " -> ".join(cycle)
    return ToolError(
        "INVALID_ARGUMENT",
        Text(
            en=f"{argument} would make a dependency cycle: {path} (each waits on the next).",
            zh=f"{argument} 会形成依赖环：{path}（每个任务都在等待下一个）。",
        ),
        hint=Text(
            en="A task cannot wait on itself, directly or through other tasks: a task waits on its "
            "dependencies, and a parent waits on its subtasks (so a task cannot depend on its own "
            "parent, nor become a subtask of its own subtask). Leave out the task that closes the cycle.",
            zh="任务不能直接或经由其他任务等待自身：任务等待其依赖，父任务等待其子任务"
            "（因此任务不能依赖自己的父任务，也不能成为自己子任务的子任务）。请去掉形成环的那个任务。",
        ),
        details={"argument": argument, "cycle": cycle},
    )


def transition_refused(task_id: str, current: Status, requested: Status) -> ToolError:
    """CONFLICT for a status move the transition table does not allow, listing the ones it does."""
    allowed = list(allowed_next(current))
    names = ", ".join(allowed)
    return ToolError(
        "CONFLICT",
        Text(
            en=f"Task '{task_id}' cannot move from {current} to {requested}; "
            f"from {current} it may move to: {names}.",
            zh=f"任务 '{task_id}' 不能从 {current} 变为 {requested}；当前状态 {current} 只能变为：{names}。",
        ),
        hint=Text(en=f"Use one of: {names}.", zh=f"请使用其中之一：{names}。"),
        details={
            "task_id": task_id,
            "current_status": current,
            "requested_status": requested,
            "allowed_next_statuses": allowed,
        },
    )


def notes_too_long(task_id: str, current: int, adding: int) -> ToolError:
    """TOO_LONG when one more note would pass the task's total of note characters."""
    return ToolError(
        "TOO_LONG",
        Text(
            en=f"Task '{task_id}' already holds {current} characters of notes; adding "
            f"{adding} would pass the limit of {NOTES_TOTAL_MAX}. Nothing was changed.",
            zh=f"任务 '{task_id}' 的备注已有 {current} 个字符；再追加 {adding} "
            f"个将超过上限 {NOTES_TOTAL_MAX}。未做任何更改。",
        ),
        hint=Text(
            en="Put long text in the description (update_task description=...), or shorten the note.",
            zh="长文本请写入描述（update_task 的 description 参数），或缩短备注。",
        ),
        details={
            "argument": "append_note",
            "task_id": task_id,
            "notes_characters": current,
            "limit": NOTES_TOTAL_MAX,
        },
    )


# --- delete: it would take work from under someone (an agent, a subtask or a dependent task) ---


def delete_refused_in_progress(task_id: str) -> ToolError:
    return ToolError(
        "CONFLICT",
        Text(
            en=f"Task {task_id} is in_progress: an agent may be working on it. Nothing was deleted.",
            zh=f"任务 {task_id} 正在进行中（in_progress），可能有代理正在处理它。未删除任何内容。",
        ),
        hint=Text(
            en="Pass even_if_in_progress=true to delete it anyway, or move it out of in_progress first.",
            zh="如仍要删除，请传 even_if_in_progress=true；或先将其移出 in_progress 状态。",
        ),
        details={"task_id": task_id, "status": "in_progress"},
    )


def delete_refused_subtasks(task_id: str, subtasks: list[str]) -> ToolError:
    names = ", ".join(subtasks)
    return ToolError(
        "CONFLICT",
        Text(
            en=f"Task {task_id} has subtasks: {names}. Nothing was deleted.",
            zh=f"任务 {task_id} 还有子任务：{names}。未删除任何内容。",
        ),
        hint=Text(
            en="Delete those subtasks first, or move them elsewhere with update_task(parent_id=...) "
            '(parent_id="" makes a task top-level).',
            zh="请先删除这些子任务，或用 update_task(parent_id=...) 将其移走"
            '（parent_id="" 使其成为顶层任务）。',
        ),
        details={"task_id": task_id, "subtasks": subtasks},
    )


def delete_refused_dependents(task_id: str, dependents: list[str]) -> ToolError:
    names = ", ".join(dependents)
    return ToolError(
        "CONFLICT",
        Text(
            en=f"Tasks depend on {task_id}: {names}. Nothing was deleted.",
            zh=f"以下任务依赖 {task_id}：{names}。未删除任何内容。",
        ),
        hint=Text(
            en="Pass drop_dependencies=true to delete it and remove it from their depends_on.",
            zh="传 drop_dependencies=true 可删除它，并将其从这些任务的 depends_on 中移除。",
        ),
        details={"task_id": task_id, "dependents": dependents},
    )


# --- leases ------------------------------------------------------------------------------------

_CLAIM_AGAIN = Text(
    en="If you still work on it, claim it again: update_task_status new_status=in_progress (or "
    "get_next_task claim=true); renew a claim with renew_claim before its lease_expires_at.",
    zh="如仍在处理，请重新领取：update_task_status new_status=in_progress（或 get_next_task claim=true）；"
    "请在 lease_expires_at 之前用 renew_claim 续期。",
)


def lease_taken(task_id: str, member: str, holder: str, status: Status, until: datetime | None) -> ToolError:
    """CONFLICT: ``member``'s lease on the task lapsed and ``holder`` has it now; nothing was applied."""
    held = f" until {utc_stamp(until)}" if until is not None else ""
    held_zh = f"（至 {utc_stamp(until)}）" if until is not None else ""
    return ToolError(
        "CONFLICT",
        Text(
            en=f"The lease of {member} on task {task_id} expired and {holder} holds the task now "
            f"({status}{held}); nothing of this call was applied.",
            zh=f"{member} 对任务 {task_id} 的领取已过期，现由 {holder} 持有（{status}{held_zh}）；"
            "本次调用的内容均未生效。",
        ),
        hint=Text(
            en=f"Leave {task_id} to {holder}: get_next_task offers other work, get_task shows its history.",
            zh=f"请把 {task_id} 交给 {holder}：get_next_task 可获取其他任务，get_task 可查看它的历史。",
        ),
        details={"task_id": task_id, "member": member, "holder": holder, "status": status},
    )


def lease_lapsed(task_id: str, member: str, status: Status) -> ToolError:
    """CONFLICT: ``member``'s lease lapsed, the task went back to pending and no one holds it."""
    return ToolError(
        "CONFLICT",
        Text(
            en=f"The lease of {member} on task {task_id} expired; the task is {status} again and nobody "
            "holds it; nothing of this call was applied.",
            zh=f"{member} 对任务 {task_id} 的领取已过期；任务已回到 {status}，无人持有；"
            "本次调用的内容均未生效。",
        ),
        hint=_CLAIM_AGAIN,
        details={"task_id": task_id, "member": member, "holder": None, "status": status},
    )


def not_holder(task_id: str, member: str, holder: str | None, status: Status) -> ToolError:
    """CONFLICT: renewing or releasing a claim ``member`` does not hold."""
    if holder is not None and status == "in_progress":
        whose = Text(en=f"{holder} holds it", zh=f"它由 {holder} 持有")
    else:
        whose = Text(en=f"it is {status} and nobody holds it", zh=f"它处于 {status}，无人持有")
    return ToolError(
        "CONFLICT",
        Text(en=f"Task {task_id} is not claimed by {member}: ", zh=f"任务 {task_id} 并非由 {member} 领取：")
        + whose
        + Text.same("."),
        hint=Text(
            en="Only the member holding a claim renews or releases it. Claim a pending task with "
            "get_next_task claim=true or update_task_status new_status=in_progress.",
            zh="只有持有领取的成员才能续期或释放它。可用 get_next_task claim=true 或 "
            "update_task_status new_status=in_progress 领取待执行任务。",
        ),
        details={"task_id": task_id, "member": member, "holder": holder, "status": status},
    )
