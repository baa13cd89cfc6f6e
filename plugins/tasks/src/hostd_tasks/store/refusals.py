"""What the store refuses, as a table of ``Reason`` by reason name, and the ``ToolError`` each raises.

``REFUSALS`` holds every sentence once, in both languages, with ``{name}`` placeholders; the
functions below fill them from the facts the store found and add the machine-readable
``details`` (the argument at fault in ``details.argument`` where there is one). The store
raises these where it finds the condition (inside the transaction, which then rolls back); the
host renders message and hint in the server's language.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hostd_db import utc_stamp
from hostd_errors import Reason

from hostd import Text, ToolError
from hostd_tasks.rules import NOTES_TOTAL_MAX, Status, allowed_next

#: Choosing another id is the way out of both "exists" refusals.
_ANOTHER_ID = (
    "Choose another task_id, or leave it out to get a generated one.",
    "请换一个 task_id，或不传该参数以自动生成。",
)
_DEPENDENCIES_MISSING = (
    "depends_on names tasks that do not exist: {names}.",
    "depends_on 中的任务不存在：{names}。",
    "Create those tasks first, or drop them from depends_on.",
    "请先创建这些任务，或将其从 depends_on 中移除。",
)
_CLAIM_AGAIN = (
    "If you still work on it, claim it again: update_task_status new_status=in_progress (or "
    "get_next_task claim=true); renew a claim with renew_claim before its lease_expires_at.",
    "如仍在处理，请重新领取：update_task_status new_status=in_progress（或 get_next_task claim=true）；"
    "请在 lease_expires_at 之前用 renew_claim 续期。",
)

#: Reason name -> code, message and hint in both languages.
REFUSALS: dict[str, Reason] = {
    "task_not_found": Reason(
        "NOT_FOUND",
        "Task '{task_id}' does not exist.",
        "任务 '{task_id}' 不存在。",
        "list_tasks shows the existing task ids.",
        "list_tasks 可列出现有的任务 ID。",
    ),
    "task_deleted": Reason(
        "NOT_FOUND",
        "Task '{task_id}' was deleted.",
        "任务 '{task_id}' 已被删除。",
        "get_task shows its last record and history; list_tasks shows the existing tasks.",
        "get_task 可查看它最后的记录和历史；list_tasks 可列出现有任务。",
    ),
    "task_exists": Reason(
        "ALREADY_EXISTS",
        "Task '{task_id}' already exists.",
        "任务 '{task_id}' 已存在。",
        *_ANOTHER_ID,
    ),
    "task_id_of_deleted": Reason(
        "ALREADY_EXISTS",
        "Task id '{task_id}' belonged to a deleted task; ids are not reused, so each task's history "
        "stays its own.",
        "任务 ID '{task_id}' 属于一个已删除的任务；ID 不会复用，以免历史记录混在一起。",
        *_ANOTHER_ID,
    ),
    # Creating: as create_task has always answered; updating: the argument names no task.
    "dependencies_missing": Reason("NOT_FOUND", *_DEPENDENCIES_MISSING),
    "dependencies_missing_on_update": Reason("INVALID_ARGUMENT", *_DEPENDENCIES_MISSING),
    "dependency_cycle": Reason(
        "INVALID_ARGUMENT",
        "{argument} would make a dependency cycle: {path} (each waits on the next).",
        "{argument} 会形成依赖环：{path}（每个任务都在等待下一个）。",
        "A task cannot wait on itself, directly or through other tasks: a task waits on its "
        "dependencies, and a parent waits on its subtasks (so a task cannot depend on its own "
        "parent, nor become a subtask of its own subtask). Leave out the task that closes the cycle.",
        "任务不能直接或经由其他任务等待自身：任务等待其依赖，父任务等待其子任务"
        "（因此任务不能依赖自己的父任务，也不能成为自己子任务的子任务）。请去掉形成环的那个任务。",
    ),
    "transition_refused": Reason(
        "CONFLICT",
        "Task '{task_id}' cannot move from {current} to {requested}; from {current} it may move to: {names}.",
        "任务 '{task_id}' 不能从 {current} 变为 {requested}；当前状态 {current} 只能变为：{names}。",
        "Use one of: {names}.",
        "请使用其中之一：{names}。",
    ),
    "notes_too_long": Reason(
        "TOO_LONG",
        "Task '{task_id}' already holds {current} characters of notes; adding {adding} would pass the "
        "limit of {limit}. Nothing was changed.",
        "任务 '{task_id}' 的备注已有 {current} 个字符；再追加 {adding} 个将超过上限 {limit}。未做任何更改。",
        "Put long text in the description (update_task description=...), or shorten the note.",
        "长文本请写入描述（update_task 的 description 参数），或缩短备注。",
    ),
    # delete: it would take work from under someone (an agent, a subtask or a dependent task)
    "delete_in_progress": Reason(
        "CONFLICT",
        "Task {task_id} is in_progress: an agent may be working on it. Nothing was deleted.",
        "任务 {task_id} 正在进行中（in_progress），可能有代理正在处理它。未删除任何内容。",
        "Pass even_if_in_progress=true to delete it anyway, or move it out of in_progress first.",
        "如仍要删除，请传 even_if_in_progress=true；或先将其移出 in_progress 状态。",
    ),
    "delete_with_subtasks": Reason(
        "CONFLICT",
        "Task {task_id} has subtasks: {names}. Nothing was deleted.",
        "任务 {task_id} 还有子任务：{names}。未删除任何内容。",
        "Delete those subtasks first, or move them elsewhere with update_task(parent_id=...) "
        '(parent_id="" makes a task top-level).',
        '请先删除这些子任务，或用 update_task(parent_id=...) 将其移走（parent_id="" 使其成为顶层任务）。',
    ),
    "delete_with_dependents": Reason(
        "CONFLICT",
        "Tasks depend on {task_id}: {names}. Nothing was deleted.",
        "以下任务依赖 {task_id}：{names}。未删除任何内容。",
        "Pass drop_dependencies=true to delete it and remove it from their depends_on.",
        "传 drop_dependencies=true 可删除它，并将其从这些任务的 depends_on 中移除。",
    ),
    # leases
    "lease_taken": Reason(
        "CONFLICT",
        "The lease of {member} on task {task_id} expired and {holder} holds the task now "
        "({status}{until}); nothing of this call was applied.",
        "{member} 对任务 {task_id} 的领取已过期，现由 {holder} 持有（{status}{until}）；"
        "本次调用的内容均未生效。",
        "Leave {task_id} to {holder}: get_next_task offers other work, get_task shows its history.",
        "请把 {task_id} 交给 {holder}：get_next_task 可获取其他任务，get_task 可查看它的历史。",
    ),
    "lease_lapsed": Reason(
        "CONFLICT",
        "The lease of {member} on task {task_id} expired; the task is {status} again and nobody holds "
        "it; nothing of this call was applied.",
        "{member} 对任务 {task_id} 的领取已过期；任务已回到 {status}，无人持有；本次调用的内容均未生效。",
        *_CLAIM_AGAIN,
    ),
    "not_holder": Reason(
        "CONFLICT",
        "Task {task_id} is not claimed by {member}: {holder} holds it.",
        "任务 {task_id} 并非由 {member} 领取：它由 {holder} 持有。",
        "Only the member holding a claim renews or releases it. Claim a pending task with "
        "get_next_task claim=true or update_task_status new_status=in_progress.",
        "只有持有领取的成员才能续期或释放它。可用 get_next_task claim=true 或 "
        "update_task_status new_status=in_progress 领取待执行任务。",
    ),
    "not_held": Reason(
        "CONFLICT",
        "Task {task_id} is not claimed by {member}: it is {status} and nobody holds it.",
        "任务 {task_id} 并非由 {member} 领取：它处于 {status}，无人持有。",
        "Only the member holding a claim renews or releases it. Claim a pending task with "
        "get_next_task claim=true or update_task_status new_status=in_progress.",
        "只有持有领取的成员才能续期或释放它。可用 get_next_task claim=true 或 "
        "update_task_status new_status=in_progress 领取待执行任务。",
    ),
}


def refusal(reason: str, details: dict[str, Any], **values: Any) -> ToolError:
    """The ``ToolError`` for ``REFUSALS[reason]``, its sentences filled from ``values``."""
    entry = REFUSALS[reason]
    return ToolError(entry.code, entry.message(**values), hint=entry.hint(**values), details=details)


def task_not_found(
    task_id: str, *, argument: str = "task_id", deleted_at: datetime | None = None
) -> ToolError:
    """NOT_FOUND for a task id that names no live task (saying so when it was deleted)."""
    details: dict[str, Any] = {"task_id": task_id}
    if argument != "task_id":
        details["argument"] = argument
    if deleted_at is not None:
        details["deleted_at"] = utc_stamp(deleted_at)
        return refusal("task_deleted", details, task_id=task_id)
    return refusal("task_not_found", details, task_id=task_id)


def task_exists(task_id: str, *, deleted: bool) -> ToolError:
    """ALREADY_EXISTS for a given task id that is taken, now or by a deleted task (ids are not reused)."""
    if deleted:
        details = {"argument": "task_id", "task_id": task_id, "deleted": True}
        return refusal("task_id_of_deleted", details, task_id=task_id)
    return refusal("task_exists", {"argument": "task_id", "task_id": task_id}, task_id=task_id)


def dependencies_missing(missing: list[str], *, code: str) -> ToolError:
    """``depends_on`` names tasks that do not exist.

    ``code`` is NOT_FOUND when creating (as create_task has always answered) and
    INVALID_ARGUMENT when updating (the argument it was given names no task).
    """
    reason = "dependencies_missing" if code == "NOT_FOUND" else "dependencies_missing_on_update"
    return refusal(reason, {"argument": "depends_on", "missing": missing}, names=", ".join(missing))


def dependency_cycle(cycle: list[str], *, argument: str = "depends_on") -> ToolError:
    """``cycle`` reads 'waits on': each task waits on the next (a dependency, or a parent on its subtask)."""
    details = {"argument": argument, "cycle": cycle}
    return refusal("dependency_cycle", details, argument=argument, path=" -> ".join(cycle))


def transition_refused(task_id: str, current: Status, requested: Status) -> ToolError:
    """CONFLICT for a status move the transition table does not allow, listing the ones it does."""
    allowed = list(allowed_next(current))
    details = {
        "task_id": task_id,
        "current_status": current,
        "requested_status": requested,
        "allowed_next_statuses": allowed,
    }
    values = {"task_id": task_id, "current": current, "requested": requested, "names": ", ".join(allowed)}
    return refusal("transition_refused", details, **values)


def notes_too_long(task_id: str, current: int, adding: int) -> ToolError:
    """TOO_LONG when one more note would pass the task's total of note characters."""
    details = {
        "argument": "append_note",
        "task_id": task_id,
        "notes_characters": current,
        "limit": NOTES_TOTAL_MAX,
    }
    return refusal(
        "notes_too_long", details, task_id=task_id, current=current, adding=adding, limit=NOTES_TOTAL_MAX
    )


def delete_refused_in_progress(task_id: str) -> ToolError:
    return refusal("delete_in_progress", {"task_id": task_id, "status": "in_progress"}, task_id=task_id)


def delete_refused_subtasks(task_id: str, subtasks: list[str]) -> ToolError:
    details = {"task_id": task_id, "subtasks": subtasks}
    return refusal("delete_with_subtasks", details, task_id=task_id, names=", ".join(subtasks))


def delete_refused_dependents(task_id: str, dependents: list[str]) -> ToolError:
    details = {"task_id": task_id, "dependents": dependents}
    return refusal("delete_with_dependents", details, task_id=task_id, names=", ".join(dependents))


def lease_taken(task_id: str, member: str, holder: str, status: Status, until: datetime | None) -> ToolError:
    """CONFLICT: ``member``'s lease on the task lapsed and ``holder`` has it now; nothing was applied."""
    held = (
        Text(en=f" until {utc_stamp(until)}", zh=f"（至 {utc_stamp(until)}）")
        if until is not None
        else Text.same("")
    )
    details = {"task_id": task_id, "member": member, "holder": holder, "status": status}
    return refusal(
        "lease_taken", details, task_id=task_id, member=member, holder=holder, status=status, until=held
    )


def lease_lapsed(task_id: str, member: str, status: Status) -> ToolError:
    """CONFLICT: ``member``'s lease lapsed, the task went back to pending and no one holds it."""
    details = {"task_id": task_id, "member": member, "holder": None, "status": status}
    return refusal("lease_lapsed", details, task_id=task_id, member=member, status=status)


def not_holder(task_id: str, member: str, holder: str | None, status: Status) -> ToolError:
    """CONFLICT: renewing or releasing a claim ``member`` does not hold."""
    details = {"task_id": task_id, "member": member, "holder": holder, "status": status}
    reason = "not_holder" if holder is not None and status == "in_progress" else "not_held"
    return refusal(reason, details, task_id=task_id, member=member, holder=holder, status=status)
