"""get_task_graph and get_critical_path: the dependency graph drawn as Mermaid, the chain of
unfinished work that decides when a task (or the list) can be done, and the ready tasks that
unblock the most others (computed by ``hostd_tasks.graph`` on one snapshot of the store)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hostd import Text, ToolContext
from hostd_tasks.graph import TaskGraph, mermaid
from hostd_tasks.models import CriticalPathOutput, GraphTask, Settings, TaskGraphOutput
from hostd_tasks.rules import priority_name
from hostd_tasks.store import TaskStore
from hostd_tasks.tools.arguments import TaskId
from hostd_tasks.wording import counted

#: Tasks one drawing shows at most; past it, the most urgent (and the critical path) are drawn.
MAX_DRAWN = 300
#: Ready tasks get_critical_path ranks by what they unblock.
UNBLOCKS_SHOWN = 10


def _graph(ctx: ToolContext[Settings], task_id: str | None) -> TaskGraph:
    store = TaskStore(ctx.database())
    if task_id is not None:
        store.get(task_id)  # NOT_FOUND (or deleted) for an unknown task, as every tool answers it
    return store.graph()


def _items(graph: TaskGraph, task_ids: list[str], counts: dict[str, int]) -> list[GraphTask]:
    return [
        GraphTask(
            task_id=t,
            title=graph.nodes[t].title,
            status=graph.nodes[t].status,  # type: ignore[arg-type]
            priority=priority_name(graph.nodes[t].priority),
            unblocks=counts.get(t, 0),
        )
        for t in task_ids
    ]


def get_task_graph(
    ctx: ToolContext[Settings],
    task_id: Annotated[
        TaskId | None, Field(description="Draw only this task, what it waits on and what waits on it")
    ] = None,
    include_completed: Annotated[bool, Field(description="Also draw completed tasks")] = False,
) -> TaskGraphOutput:
    """Draw the dependency graph as a Mermaid flowchart (an arrow from a task to what waits on it,
    dotted from a subtask to its parent), coloured by status, the critical path thick.
    """
    graph = _graph(ctx, task_id)
    scope = graph.around(task_id) if task_id is not None else set(graph.nodes)
    if not include_completed:
        scope = {t for t in scope if graph.unfinished(t) or t == task_id}
    path = graph.critical_path(task_id)
    ordered = [t for t in graph.nodes if t in scope]  # list order: the most urgent first
    drawn = list(dict.fromkeys([*path, *ordered]))[:MAX_DRAWN]
    counts = graph.unblocks()
    answer = TaskGraphOutput(
        mermaid=mermaid(graph, drawn, path),
        tasks_shown=len(drawn),
        tasks_total=len(scope),
        truncated=len(drawn) < len(scope),
        critical_path=_items(graph, path, counts),
    )
    left_out = len(scope) - len(drawn)
    more = (
        Text(
            en=f" {left_out} less urgent tasks were left out; give task_id to draw one task's neighbourhood.",
            zh=f"另有 {left_out} 个较不紧急的任务未画出；传 task_id 可只画一个任务的相关部分。",
        )
        if left_out
        else Text.same("")
    )
    return answer.with_message(
        Text(
            en=f"Drew {counted(len(drawn), 'task')}; the critical path has {counted(len(path), 'step')}.",
            zh=f"已画出 {len(drawn)} 个任务；关键路径共 {len(path)} 步。",
        )
        + more
    )


def get_critical_path(
    ctx: ToolContext[Settings],
    task_id: Annotated[
        TaskId | None, Field(description="The task to finish; default: the whole list")
    ] = None,
) -> CriticalPathOutput:
    """The chain of unfinished work that decides when a task (or the whole list) can be done, first
    to last, and the ready tasks that unblock the most others (get_next_task prefer="unblocks_most").
    """
    graph = _graph(ctx, task_id)
    path = graph.critical_path(task_id)
    counts = graph.unblocks()
    ranked = [t for t, _ in graph.ready_by_unblocking()[:UNBLOCKS_SHOWN]]
    answer = CriticalPathOutput(
        task_id=task_id,
        critical_path=_items(graph, path, counts),
        steps=len(path),
        unblocks_most=_items(graph, ranked, counts),
    )
    subject = (
        Text(en=f"Task {task_id}", zh=f"任务 {task_id}") if task_id else Text(en="The list", zh="整个清单")
    )
    if not path:
        message = subject + Text(en=" has no unfinished work.", zh="没有未完成的工作。")
    else:
        chain = " -> ".join(path)
        message = subject + Text(
            en=f" can be done after {counted(len(path), 'step')}, one after another: {chain}.",
            zh=f"还需依次完成 {len(path)} 步：{chain}。",
        )
    if ranked:
        best = ranked[0]
        message += Text(
            en=f" Ready now, {best} unblocks the most ({counts.get(best, 0)}).",
            zh=f"当前可做的任务中，{best} 解锁的任务最多（{counts.get(best, 0)} 个）。",
        )
    return answer.with_message(message)
