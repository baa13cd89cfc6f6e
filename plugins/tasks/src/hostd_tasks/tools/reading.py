"""Tools that read the list: list_tasks (filters, text search, paging), get_task, get_task_stats."""

from __future__ import annotations

from typing import Annotated, Any

from hostd.paging import DEFAULT_LIMIT, Cursor, Limit, bad_cursor, decode_cursor, encode_cursor
from hostd_db import utc_now
from pydantic import Field

from hostd import ID_PATTERN, Text, ToolContext
from hostd_tasks.links import SessionCheck, ask_sessions
from hostd_tasks.models import Settings, StatsOutput, TaskDetailsOutput, TaskListOutput
from hostd_tasks.rules import PRIORITIES, QUERY_MAX, STATUSES, Priority, Status
from hostd_tasks.search import match_expression
from hostd_tasks.store import TaskStore
from hostd_tasks.store.results import ListPosition
from hostd_tasks.tools.arguments import Label, MemberName, TaskId, invalid_argument
from hostd_tasks.wording import agreeing, counted, held

#: The listing a list_tasks cursor is bound to (with every filter it was made for).
LISTING = "list_tasks"


def _list_position(position: Any) -> ListPosition | None:
    """The (priority rank, seq) a decoded cursor holds; refused if it is not one list_tasks made."""
    if position is None:
        return None
    if (
        isinstance(position, list)
        and len(position) == 2
        and all(type(part) is int for part in position)
        and 0 <= position[0] < len(PRIORITIES)
        and 0 <= position[1] < 2**63
    ):
        return position[0], position[1]
    raise bad_cursor("malformed")


def list_tasks(
    ctx: ToolContext[Settings],
    status: Annotated[Status | None, Field(description="Only this status")] = None,
    priority: Annotated[Priority | None, Field(description="Only this priority")] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    label: Annotated[Label | None, Field(description="Only this label")] = None,
    parent_id: Annotated[TaskId | None, Field(description="Only subtasks of this task")] = None,
    query: Annotated[
        str | None,
        Field(
            description="Only tasks holding every word",
            min_length=1,
            max_length=QUERY_MAX,
        ),
    ] = None,
    created_by: Annotated[
        MemberName | None,
        Field(description="Only tasks this member created"),
    ] = None,
    claimed_by: Annotated[
        MemberName | None,
        Field(description="Only tasks this member holds or last held"),
    ] = None,
) -> TaskListOutput:
    """List tasks, most urgent first (P0, P1, P2, then oldest), with the total count."""
    label = label.lower() if label is not None else None
    filters = {
        "status": status,
        "priority": priority,
        "label": label,
        "parent_id": parent_id,
        "query": query,
        "created_by": created_by,
        "claimed_by": claimed_by,
    }
    after = _list_position(decode_cursor(cursor, LISTING, filters))
    if query is not None and match_expression(query) is None:
        raise invalid_argument(
            "query",
            Text(
                en="Invalid argument 'query': it holds no letter or digit to search for.",
                zh="参数 'query' 无效：其中没有可搜索的文字或数字。",
            ),
            Text(
                en="Search for a word of the task, e.g. 'deploy' or '数据库'; omit query to list all.",
                zh="请搜索任务中的词语，例如 'deploy' 或 '数据库'；不传 query 则列出全部任务。",
            ),
        )
    page = TaskStore(ctx.database()).list_page(
        status=status,
        priority=priority,
        limit=limit,
        after=after,
        label=label,
        parent_id=parent_id,
        query=query,
        created_by=created_by,
        claimed_by=claimed_by,
    )
    next_cursor = None if page.next_after is None else encode_cursor(LISTING, filters, list(page.next_after))
    message = Text(
        en=f"{len(page.tasks)} of {counted(page.total, 'matching task')}, most urgent first.",
        zh=f"共 {page.total} 个匹配任务，本页 {len(page.tasks)} 个，按紧急程度排序。",
    )
    if next_cursor is not None:
        message += Text(en=" More with next_cursor.", zh="使用 next_cursor 查看更多。")
    return TaskListOutput(
        tasks=page.tasks, total=page.total, next_cursor=next_cursor, truncated=next_cursor is not None
    ).with_message(message)


def get_task(
    ctx: ToolContext[Settings],
    task_id: Annotated[str, Field(description="Task id (deleted ones too)", pattern=ID_PATTERN)],
) -> TaskDetailsOutput:
    """One task in full: record, history, dependencies both ways, subtasks and linked thinking session."""
    found = TaskStore(ctx.database()).details(task_id)
    task = found.task
    check: SessionCheck = "not_loaded"
    session = None
    if task.linked_session_id is not None and found.deleted_at is None:
        check, _, session = ask_sessions(ctx, task.linked_session_id)
    answer = TaskDetailsOutput(
        task=task,
        deleted_at=found.deleted_at,
        history=found.history,
        history_total=found.history_total,
        depends_on=found.depends_on,
        dependents=found.dependents,
        subtasks=found.subtasks,
        session=session,
        session_checked=check == "checked",
    )
    if found.deleted_at is not None:
        return answer.with_message(
            Text(
                en=f"Task {task_id} '{task.title}' was deleted; this is its last record and its history.",
                zh=f"任务 {task_id}「{task.title}」已被删除；以下是它最后的记录和历史。",
            )
        )
    return answer.with_message(
        Text(
            en=f"Task {task_id} '{task.title}' ({task.priority}, {task.status}): "
            f"{counted(found.history_total, 'history entry', 'history entries')}, "
            f"{counted(len(found.depends_on), 'dependency', 'dependencies')}, "
            f"{counted(len(found.dependents), 'dependent')}, "
            f"{counted(len(found.subtasks), 'subtask')}.",
            zh=f"任务 {task_id}「{task.title}」（{task.priority}，{task.status}）："
            f"{found.history_total} 条历史记录，"
            f"依赖 {len(found.depends_on)} 个任务，被 {len(found.dependents)} 个任务依赖，"
            f"{len(found.subtasks)} 个子任务。",
        )
        + held(task)
    )


def get_task_stats(ctx: ToolContext[Settings]) -> StatsOutput:
    """Task counts by status and priority, completion rate and oldest pending task's age."""
    stats = TaskStore(ctx.database()).stats()
    completed = stats.by_status["completed"]
    rate = round(completed / stats.total, 4) if stats.total else None
    age = None
    if stats.oldest_pending_created_at is not None:
        age = round(max(0.0, (utc_now() - stats.oldest_pending_created_at).total_seconds()), 3)
    answer = StatsOutput(
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
        return answer.with_message(Text(en="No tasks yet.", zh="还没有任务。"))
    counts = ", ".join(f"{stats.by_status[s]} {s}" for s in STATUSES)
    percent = f"{(rate or 0) * 100:.1f}%"
    stuck = Text.same("")
    if stats.stuck_behind_failed:
        stuck = Text(
            en=f" {counted(stats.stuck_behind_failed, 'pending task')} "
            f"{agreeing(stats.stuck_behind_failed, 'is', 'are')} stuck behind failed work.",
            zh=f"{stats.stuck_behind_failed} 个待执行任务卡在失败的任务之后。",
        )
    return answer.with_message(
        Text(
            en=f"{counted(stats.total, 'task')}: {counts}; {percent} completed.",
            zh=f"共 {stats.total} 个任务：{counts}；完成率 {percent}。",
        )
        + stuck
    )
