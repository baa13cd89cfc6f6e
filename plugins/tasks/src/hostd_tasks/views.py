"""The tasks plugin's dashboard pages (``hostd_register_views``): the board by status with its
filters, a task's page (description, acceptance, notes, subtasks, what it waits on and what waits
on it, history), and the actions: status, priority, edit, release a claim, split, delete.

Every read and write goes through the plugin's own tool functions (``request.call``): the same
validation, the same rules (allowed moves, cycles refused, delete refused while others depend on
it), the same history entries by the signed-in member, the same errors. A refused action shows the
tool's own error on the form it came from. Releasing a claim is ``release_claim`` as the signed-in
member, so the page releases only a claim that member holds, as the tool does (CONFLICT otherwise).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from hostd_db import utc_stamp

from hostd import (
    ActivityItem,
    CodedError,
    Overview,
    OverviewCount,
    RegisterViews,
    Text,
    ViewPage,
    ViewRedirect,
    ViewRequest,
    error_fields,
    given,
)
from hostd_tasks.models import TaskDetailsOutput, TaskListOutput, TaskRecord
from hostd_tasks.rules import PRIORITIES, STATUSES, Status, allowed_next
from hostd_tasks.tools.activity import list_task_activity
from hostd_tasks.tools.editing import delete_task, split_task, update_task
from hostd_tasks.tools.graph import get_task_graph
from hostd_tasks.tools.reading import get_task, get_task_stats, list_tasks
from hostd_tasks.tools.workflow import release_claim, update_task_status

HERE = Path(__file__).parent
#: Tasks one board column shows; a column with more links to its own paged list.
COLUMN_SIZE = 30
PAGE_SIZE = 50
FILTER_KEYS = ("q", "label", "member", "creator", "priority")

STATUS_NAMES: dict[str, Text] = {
    "pending": Text(en="Pending", zh="待执行"),
    "in_progress": Text(en="In progress", zh="进行中"),
    "blocked": Text(en="Blocked", zh="已阻塞"),
    "completed": Text(en="Completed", zh="已完成"),
    "failed": Text(en="Failed", zh="失败"),
}
#: Board order: what is being worked on first, finished work last.
BOARD_ORDER: tuple[Status, ...] = ("pending", "in_progress", "blocked", "failed", "completed")
EVENT_NAMES: dict[str, Text] = {
    "created": Text(en="created", zh="创建"),
    "edited": Text(en="edited", zh="编辑"),
    "status": Text(en="status", zh="状态"),
    "claimed": Text(en="claimed", zh="领取"),
    "linked": Text(en="linked a session", zh="关联会话"),
    "split": Text(en="split", zh="拆分"),
    "dependency_dropped": Text(en="dependency dropped", zh="移除依赖"),
    "imported": Text(en="imported", zh="导入"),
    "deleted": Text(en="deleted", zh="删除"),
    "released": Text(en="claim released", zh="释放领取"),
    "lease_expired": Text(en="claim expired", zh="领取已过期"),
}


def register_views(register: RegisterViews) -> None:
    register.assets(HERE / "templates")
    register.page("", board, title=Text(en="Tasks", zh="任务"), tool="list_tasks", nav=True)
    register.page("/view", task_page, title=Text(en="Task", zh="任务"), tool="get_task")
    register.action("/status", change_status, tool="update_task_status")
    register.action("/release", release_claim_action, tool="release_claim")
    register.action("/priority", change_priority, tool="update_task")
    register.page("/edit", edit_form, title=Text(en="Edit task", zh="编辑任务"), tool="update_task")
    register.action("/edit", save_edit, tool="update_task")
    register.page("/split", split_form, title=Text(en="Split task", zh="拆分任务"), tool="split_task")
    register.action("/split", split, tool="split_task")
    register.page("/delete", delete_form, title=Text(en="Delete task", zh="删除任务"), tool="delete_task")
    register.action("/delete", delete, tool="delete_task")
    register.page(
        "/graph", graph_page, title=Text(en="Dependency graph", zh="依赖关系图"), tool="get_task_graph"
    )
    register.overview(overview, tool="get_task_stats")
    register.app(
        "board",
        template="app_board.html",
        tools=("list_tasks", "get_next_task"),
        title=Text(en="Tasks", zh="任务"),
        data={
            "order": BOARD_ORDER,
            "statuses": STATUS_NAMES,
            "moves": {status: list(allowed_next(status)) for status in STATUSES},
        },
    )


def _words(raw: str) -> list[str]:
    """A list typed as ``a, b`` (commas, the Chinese comma or spaces) into its items."""
    return [item for item in raw.replace("，", ",").replace(",", " ").split() if item]


def _status_of(code: str) -> int:
    return {"NOT_FOUND": 404, "CONFLICT": 409, "PERMISSION_DENIED": 403}.get(code, 400)


# --- the dependency graph --------------------------------------------------------------------


async def graph_page(request: ViewRequest) -> ViewPage:
    """``get_task_graph``: the unfinished tasks (``?completed=1``: every task), or one task's
    neighbourhood (``?id=``), as a Mermaid diagram with the critical path listed beneath."""
    task_id = given(request.query.get("id"))
    completed = request.query.get("completed") == "1"
    drawn = await request.call(get_task_graph, task_id=task_id, include_completed=completed)
    return ViewPage(
        title=Text(en="Dependency graph", zh="依赖关系图"),
        template="graph.html",
        data={
            "graph": drawn,
            "task_id": task_id,
            "completed": completed,
            "status_names": {key: request.text(value) for key, value in STATUS_NAMES.items()},
        },
        diagram=drawn.tasks_shown > 0,
    )


# --- the board -------------------------------------------------------------------------------


async def board(request: ViewRequest) -> ViewPage:
    """One column per status (``list_tasks`` per status, the same filters); ``?status=`` shows one
    status alone with paging."""
    query = request.query
    filters = {key: query.get(key, "") for key in FILTER_KEYS}
    common: dict[str, Any] = {
        "query": given(filters["q"]),
        "label": given(filters["label"]),
        "claimed_by": given(filters["member"]),
        "created_by": given(filters["creator"]),
        "priority": given(filters["priority"]),
    }
    only = query.get("status", "")
    error = None
    columns: list[dict[str, Any]] = []
    try:
        if only in STATUSES:
            listed = await request.call(
                list_tasks, status=only, limit=PAGE_SIZE, cursor=given(query.get("cursor")), **common
            )
            columns.append(_column(request, only, listed.tasks, listed.total, listed.next_cursor))
        else:
            for status, listed in zip(BOARD_ORDER, await _board_lists(request, common), strict=True):
                columns.append(_column(request, status, listed.tasks, listed.total, None))
    except CodedError as exc:
        error = error_fields(request, exc)
    failed_ids = {
        card["task"].task_id for column in columns if column["status"] == "failed" for card in column["cards"]
    }
    for column in columns:
        for card in column["cards"]:
            card["waits_on_failed"] = [dep for dep in card["task"].depends_on if dep in failed_ids]
    return ViewPage(
        title=Text(en="Tasks", zh="任务"),
        template="board.html",
        data={
            "filters": filters,
            "columns": columns,
            "only": only if only in STATUSES else "",
            "error": error,
            "priorities": PRIORITIES,
            # A status chosen is a filter too: none of that status is not "no tasks yet".
            "filtered": any(filters.values()) or only in STATUSES,
            "filtered_beyond_status": any(filters.values()),
            "paged": bool(query.get("cursor")),
        },
    )


async def _board_lists(request: ViewRequest, common: dict[str, Any]) -> list[TaskListOutput]:
    """The board's ``list_tasks`` calls, one per column, run at once: each runs in its own thread
    (on the team database, its own connection), so the board waits for the slowest column rather
    than for the five one after another. The first column's error, if any, is raised."""
    found: dict[str, TaskListOutput | CodedError] = {}

    async def column(status: str) -> None:
        try:
            found[status] = await request.call(list_tasks, status=status, limit=COLUMN_SIZE, **common)
        except CodedError as exc:
            found[status] = exc

    async with anyio.create_task_group() as group:
        for status in BOARD_ORDER:
            group.start_soon(column, status)
    listed: list[TaskListOutput] = []
    for status in BOARD_ORDER:
        answer = found[status]
        if isinstance(answer, CodedError):
            raise answer
        listed.append(answer)
    return listed


def _column(
    request: ViewRequest, status: str, tasks: list[TaskRecord], total: int, next_cursor: str | None
) -> dict[str, Any]:
    return {
        "status": status,
        "name": request.text(STATUS_NAMES[status]),
        "cards": [{"task": task} for task in tasks],
        "total": total,
        "next_cursor": next_cursor,
    }


# --- one task --------------------------------------------------------------------------------


async def _details(request: ViewRequest, task_id: str) -> TaskDetailsOutput:
    return await request.call(get_task, task_id=task_id)


def _task_data(request: ViewRequest, details: TaskDetailsOutput) -> dict[str, Any]:
    task = details.task
    history = [
        {
            "entry": entry,
            "event": request.text(EVENT_NAMES.get(entry.event, Text.same(entry.event))),
            "details": request.text(history_details(entry.details)),
        }
        for entry in reversed(details.history)
    ]
    return {
        "task": task,
        "details": details,
        "deleted": details.deleted_at is not None,
        "history": history,
        "status_names": {key: request.text(value) for key, value in STATUS_NAMES.items()},
        "next_statuses": list(allowed_next(task.status)),
        "priorities": PRIORITIES,
        "failed_blockers": [dep for dep in details.depends_on if dep.status == "failed"],
    }


#: What a history entry's details name, in words (``key: value`` pieces, joined).
DETAIL_NAMES: dict[str, Text] = {
    "title": Text(en="title", zh="标题"),
    "priority": Text(en="priority", zh="优先级"),
    "description": Text(en="description", zh="描述"),
    "acceptance": Text(en="acceptance", zh="验收标准"),
    "labels": Text(en="labels", zh="标签"),
    "depends_on": Text(en="waits on", zh="依赖"),
    "parent_id": Text(en="parent", zh="父任务"),
    "append_note": Text(en="note added", zh="新增备注"),
    "subtasks": Text(en="subtasks", zh="子任务"),
    "session_id": Text(en="session", zh="会话"),
    "previous_session_id": Text(en="before", zh="原会话"),
    "holder": Text(en="held by", zh="领取人"),
    "status": Text(en="status", zh="状态"),
    "dropped_from": Text(en="dropped from", zh="已从以下任务移除"),
    "because": Text(en="because", zh="原因"),
}
#: Values of ours a history entry holds (``because: deleted``).
DETAIL_VALUES: dict[str, Text] = {"deleted": Text(en="it was deleted", zh="它已被删除")}
#: Fields whose text can be long: the entry says that they changed, the task shows them.
LONG_FIELDS = ("description", "acceptance")
PAIR_SEPARATOR = Text(en=": ", zh="：")


def history_details(details: dict[str, Any]) -> Text:
    """A history entry's details in words of the page's language: ``from``/``to`` as a move
    (``Pending → In progress``), field names named, statuses by their names; what members stored
    (titles, ids, labels, notes) as it is."""

    def value(key: str, raw: Any) -> Text:
        if isinstance(raw, list):
            return Text.same(", ".join(str(item) for item in raw) if raw else "—")
        if raw is None or raw == "":
            return Text.same("—")
        if key in ("status", "from", "to") and raw in STATUS_NAMES:
            return STATUS_NAMES[raw]
        if key == "because" and raw in DETAIL_VALUES:
            return DETAIL_VALUES[raw]
        return Text.same(str(raw))

    def change(key: str, raw: Any) -> Text:
        """One field's change: ``{from, to}`` as a move, a note by its text, else the value."""
        if isinstance(raw, dict) and "to" in raw:
            if key in LONG_FIELDS:
                return Text(en="changed", zh="已修改")
            return value(key, raw.get("from")) + " → " + value(key, raw["to"])
        if isinstance(raw, dict) and "text" in raw:
            return Text.same(str(raw["text"]))
        return value(key, raw)

    if "from" in details and "to" in details:  # a status move
        parts = [value("status", details["from"]) + " → " + value("status", details["to"])]
        rest = {key: raw for key, raw in details.items() if key not in ("from", "to")}
    else:
        parts, rest = [], details
    for key, raw in rest.items():
        if raw is None:  # nothing there before (a first link): nothing to say
            continue
        name = DETAIL_NAMES.get(key, Text.same(key))
        parts.append(name + PAIR_SEPARATOR + change(key, raw))
    return Text.join(parts, en=", ", zh="，")


async def task_page(request: ViewRequest) -> ViewPage:
    details = await _details(request, request.query.get("id", ""))
    return _task_view(request, details, None)


def _task_view(
    request: ViewRequest, details: TaskDetailsOutput, error: dict[str, Any] | None, status: int = 200
) -> ViewPage:
    return ViewPage(
        title=Text.same(f"{details.task.task_id} · {details.task.title}"),
        template="task.html",
        data={**_task_data(request, details), "error": error},
        status=status,
    )


async def _act_on_task(
    request: ViewRequest, function: Any, notice: Text, **arguments: Any
) -> ViewPage | ViewRedirect:
    """Run a tool on the task of the form; on a refusal show the task's page with the tool's error."""
    task_id = request.form.get("task_id", "")
    try:
        await request.call(function, task_id=task_id, **arguments)
    except CodedError as exc:
        if exc.code == "NOT_FOUND" or exc.code == "PERMISSION_DENIED":
            raise
        details = await _details(request, task_id)
        return _task_view(request, details, error_fields(request, exc), _status_of(exc.code))
    return ViewRedirect("/view", {"id": task_id}, notice)


async def change_status(request: ViewRequest) -> ViewPage | ViewRedirect:
    wanted = request.form.get("status", "")
    notice = Text(en="Status changed to {s}.", zh="状态已改为 {s}。").format(
        s=request.text(STATUS_NAMES.get(wanted, Text.same(wanted)))
    )
    return await _act_on_task(request, update_task_status, notice, new_status=wanted)


async def release_claim_action(request: ViewRequest) -> ViewPage | ViewRedirect:
    """Give up the signed-in member's claim: back to pending, and whoever takes it next claims it
    anew. Another member's claim is refused as ``release_claim`` refuses it (CONFLICT, on the page)."""
    notice = Text(en="Claim released: the task is pending again.", zh="已释放领取：任务重新变为待执行。")
    return await _act_on_task(request, release_claim, notice)


async def change_priority(request: ViewRequest) -> ViewPage | ViewRedirect:
    wanted = request.form.get("priority", "")
    notice = Text(en="Priority set to {p}.", zh="优先级已设为 {p}。").format(p=wanted)
    return await _act_on_task(request, update_task, notice, priority=wanted)


# --- edit ------------------------------------------------------------------------------------


async def edit_form(request: ViewRequest) -> ViewPage:
    details = await _details(request, request.query.get("id", ""))
    task = details.task
    fields = {
        "title": task.title,
        "description": task.description,
        "acceptance": task.acceptance,
        "labels": ", ".join(task.labels),
        "depends_on": ", ".join(task.depends_on),
        "parent_id": task.parent_id or "",
        "append_note": "",
    }
    return _edit_page(task.task_id, fields, None)


def _edit_page(task_id: str, fields: dict[str, str], error: dict[str, Any] | None) -> ViewPage:
    return ViewPage(
        title=Text(en="Edit task {id}", zh="编辑任务 {id}").format(id=task_id),
        template="edit.html",
        data={"task_id": task_id, "fields": fields, "error": error},
        status=200 if error is None else _status_of(error["code"]),
    )


async def save_edit(request: ViewRequest) -> ViewPage | ViewRedirect:
    """Only what differs from the task now goes to ``update_task`` (one step, all or nothing)."""
    form = request.form
    task_id = form.get("task_id", "")
    fields = {
        key: form.get(key, "").replace("\r\n", "\n")
        for key in ("title", "description", "acceptance", "labels", "depends_on", "parent_id", "append_note")
    }
    try:
        current = (await _details(request, task_id)).task
        arguments: dict[str, Any] = {}
        if fields["title"] != current.title:
            arguments["title"] = fields["title"]
        for key in ("description", "acceptance"):
            if fields[key] != getattr(current, key):
                arguments[key] = fields[key]
        labels = _words(fields["labels"])
        if sorted({label.lower() for label in labels}) != current.labels:
            arguments["labels"] = labels
        depends_on = _words(fields["depends_on"])
        if depends_on != current.depends_on:
            arguments["depends_on"] = depends_on
        if fields["parent_id"].strip() != (current.parent_id or ""):
            arguments["parent_id"] = fields["parent_id"].strip()
        if fields["append_note"].strip():
            arguments["append_note"] = fields["append_note"]
        if not arguments:
            return ViewRedirect("/view", {"id": task_id}, Text(en="Nothing changed.", zh="没有改动。"))
        updated = await request.call(update_task, task_id=task_id, **arguments)
    except CodedError as exc:
        return _edit_page(task_id, fields, error_fields(request, exc))
    return ViewRedirect(
        "/view",
        {"id": task_id},
        Text(en="Saved: {f}.", zh="已保存：{f}。").format(f=", ".join(updated.changed) or "—"),
    )


# --- split and delete ------------------------------------------------------------------------


async def split_form(request: ViewRequest) -> ViewPage:
    details = await _details(request, request.query.get("id", ""))
    return _split_page(details.task.task_id, details.task.title, "", "P2", None)


def _split_page(
    task_id: str, title: str, lines: str, priority: str, error: dict[str, Any] | None
) -> ViewPage:
    return ViewPage(
        title=Text(en="Split task {id}", zh="拆分任务 {id}").format(id=task_id),
        template="split.html",
        data={
            "task_id": task_id,
            "title": title,
            "lines": lines,
            "priority": priority,
            "priorities": PRIORITIES,
            "error": error,
        },
        status=200 if error is None else _status_of(error["code"]),
    )


async def split(request: ViewRequest) -> ViewPage | ViewRedirect:
    """One subtask per non-empty line, all at the chosen priority; created together or not at all."""
    form = request.form
    task_id, lines, priority = form.get("task_id", ""), form.get("subtasks", ""), form.get("priority", "P2")
    titles = [line.strip() for line in lines.splitlines() if line.strip()]
    try:
        result = await request.call(
            split_task, task_id=task_id, subtasks=[{"title": title, "priority": priority} for title in titles]
        )
    except CodedError as exc:
        return _split_page(task_id, "", lines, priority, error_fields(request, exc))
    return ViewRedirect(
        "/view",
        {"id": task_id},
        Text(en="Split into {n} subtasks.", zh="已拆分为 {n} 个子任务。").format(n=len(result.subtasks)),
    )


async def delete_form(request: ViewRequest) -> ViewPage:
    details = await _details(request, request.query.get("id", ""))
    return _delete_page(request, details, None)


def _delete_page(request: ViewRequest, details: TaskDetailsOutput, error: dict[str, Any] | None) -> ViewPage:
    return ViewPage(
        title=Text(en="Delete task {id}?", zh="删除任务 {id}？").format(id=details.task.task_id),
        template="delete.html",
        data={**_task_data(request, details), "error": error},
        status=200 if error is None else _status_of(error["code"]),
    )


async def delete(request: ViewRequest) -> ViewPage | ViewRedirect:
    form = request.form
    task_id = form.get("task_id", "")
    try:
        result = await request.call(
            delete_task,
            task_id=task_id,
            drop_dependencies=form.get("drop_dependencies") == "on",
            even_if_in_progress=form.get("even_if_in_progress") == "on",
        )
    except CodedError as exc:
        if exc.code in ("NOT_FOUND", "PERMISSION_DENIED"):
            raise
        return _delete_page(request, await _details(request, task_id), error_fields(request, exc))
    return ViewRedirect(
        "",
        {},
        Text(en="Deleted task {id} '{title}'.", zh="已删除任务 {id}「{title}」。").format(
            id=result.task.task_id, title=result.task.title
        ),
    )


# --- the overview ----------------------------------------------------------------------------


async def overview(request: ViewRequest, limit: int) -> Overview:
    """Counts from ``get_task_stats``; activity from ``list_task_activity``: who created, claimed,
    finished, edited or deleted which task, newest first."""
    stats = await request.call(get_task_stats)
    counts = [
        OverviewCount(Text(en="Total", zh="总数"), stats.total),
        *(
            OverviewCount(STATUS_NAMES[status], stats.by_status[status], f"?status={status}")
            for status in BOARD_ORDER
        ),
    ]
    activity: list[ActivityItem] = []
    if request.can("list_task_activity"):
        activity = await task_activity(request, limit)
    return Overview(counts=counts, activity=activity)


async def task_activity(request: ViewRequest, limit: int, member: str | None = None) -> list[ActivityItem]:
    """The newest changes across tasks as feed entries (one member's only when ``member``)."""
    found = await request.call(list_task_activity, limit=max(1, min(limit, 100)), member=member)
    return [
        ActivityItem(
            utc_stamp(entry.at),
            entry.by,
            _summary(entry.event, entry.details, entry.task_id, entry.title or ""),
            "/view",
            {"id": entry.task_id},
        )
        for entry in found.entries
    ]


def _summary(event: str, details: dict[str, Any], task_id: str, title: str) -> Text:
    """What an entry of the history says, as a sentence of the feed."""
    named = {"id": task_id, "title": title}
    if event == "created":
        return Text(en="created task {id} '{title}'", zh="创建了任务 {id}「{title}」").format(**named)
    if event == "claimed" or (event == "status" and details.get("to") == "in_progress"):
        return Text(en="claimed task {id} '{title}'", zh="领取了任务 {id}「{title}」").format(**named)
    if event == "deleted":
        return Text(en="deleted task {id}", zh="删除了任务 {id}").format(**named)
    if event == "status":
        target = str(details.get("to", ""))
        if target == "completed":
            return Text(en="completed task {id} '{title}'", zh="完成了任务 {id}「{title}」").format(**named)
        if target == "failed":
            return Text(en="marked task {id} '{title}' failed", zh="将任务 {id}「{title}」标为失败").format(
                **named
            )
        name = STATUS_NAMES.get(target, Text.same(target))
        return Text(
            en="moved task {id} '{title}' to " + name.en, zh="将任务 {id}「{title}」移至" + name.zh
        ).format(**named)
    if event == "linked":
        return Text(
            en="linked task {id} '{title}' to session {session}",
            zh="将任务 {id}「{title}」关联到会话 {session}",
        ).format(session=str(details.get("session_id", "")), **named)
    if event == "split":
        return Text(en="split task {id} '{title}'", zh="拆分了任务 {id}「{title}」").format(**named)
    what = EVENT_NAMES.get(event, Text.same(event))
    return Text(
        en="changed task {id} '{title}' (" + what.en + ")", zh="修改了任务 {id}「{title}」（" + what.zh + "）"
    ).format(**named)
