"""The deep-thinking plugin's dashboard pages (``hostd_register_views``): the sessions list
(status, member, template, text search), a session as a timeline with its branches and revisions
and its Mermaid diagram, downloads of its exports, and delete / restore.

Every read and write goes through the plugin's own tool functions (``request.call``): the list is
``list_sessions``, the search ``search_thoughts``, the timeline ``get_session``, the diagram
``visualize_session``, the downloads ``export_session``, and delete / restore their tools, so the
page shows and refuses exactly what the tools do. Mermaid is loaded on the session page only
(``ViewPage.diagram``), drawn with securityLevel strict; the diagram text is put in the page as
text (autoescaped), never as markup.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
from hostd.paging import encode_cursor

from hostd import (
    ActivityItem,
    CodedError,
    Overview,
    OverviewCount,
    RegisterViews,
    Text,
    ViewFile,
    ViewPage,
    ViewRedirect,
    ViewRequest,
    error_fields,
    given,
)
from hostd_deep_thinking.models import SessionSummary, ThoughtRecord
from hostd_deep_thinking.tools import (
    delete_session,
    export_session,
    get_session,
    list_sessions,
    list_templates,
    restore_session,
    search_thoughts,
    visualize_session,
)

HERE = Path(__file__).parent
PAGE_SIZE = 25
#: Thoughts one session page shows (get_session's largest page); more are paged.
THOUGHTS_PAGE = 100
#: With a template filter, pages of list_sessions read to fill one page of matches.
TEMPLATE_SCAN_PAGES = 20
STATUSES = ("active", "completed", "archived")
STATUS_NAMES = {
    "active": Text(en="Active", zh="进行中"),
    "completed": Text(en="Completed", zh="已完成"),
    "archived": Text(en="Archived", zh="已归档"),
}
#: A linked task's status (the tasks plugin's words; a plugin never imports another).
TASK_STATUS_NAMES = {
    "pending": Text(en="Pending", zh="待执行"),
    "in_progress": Text(en="In progress", zh="进行中"),
    "blocked": Text(en="Blocked", zh="已阻塞"),
    "completed": Text(en="Completed", zh="已完成"),
    "failed": Text(en="Failed", zh="失败"),
}
EXPORTS = {
    "markdown": ("md", "text/markdown; charset=utf-8"),
    "html": ("html", "text/html; charset=utf-8"),
    "json": ("json", "application/json"),
}


def register_views(register: RegisterViews) -> None:
    register.assets(HERE / "templates")
    register.page("", session_list, title=Text(en="Thinking", zh="思考"), tool="list_sessions", nav=True)
    register.page("/view", session_page, title=Text(en="Session", zh="会话"), tool="get_session")
    register.page("/export", download, title=Text(en="Export", zh="导出"), tool="export_session")
    register.page(
        "/delete", delete_form, title=Text(en="Delete session", zh="删除会话"), tool="delete_session"
    )
    register.action("/delete", delete, tool="delete_session")
    register.page(
        "/restore", restore_form, title=Text(en="Restore a session", zh="恢复会话"), tool="restore_session"
    )
    register.action("/restore", restore, tool="restore_session")
    register.overview(overview, tool="list_sessions")
    register.app(
        "session",
        template="app_session.html",
        tools=("get_session", "sequential_thinking"),
        title=Text(en="Session", zh="会话"),
        data={"statuses": STATUS_NAMES},
        diagram=True,
    )


# --- the list --------------------------------------------------------------------------------


async def session_list(request: ViewRequest) -> ViewPage:
    """Sessions newest first (``list_sessions``), or thoughts matching words (``search_thoughts``)."""
    query = request.query
    filters = {key: query.get(key, "") for key in ("q", "status", "member", "template")}
    error = None
    sessions: list[SessionSummary] = []
    hits: list[Any] = []
    total = 0
    next_cursor = None
    templates: list[tuple[str, str]] = []
    try:
        templates = list((await _template_names(request)).items())
        if filters["q"].strip():
            found = await request.call(
                search_thoughts, query=filters["q"], limit=PAGE_SIZE, cursor=given(query.get("cursor"))
            )
            hits, next_cursor = found.hits, found.next_cursor
        else:
            sessions, total, next_cursor = await _sessions_page(request, filters, given(query.get("cursor")))
    except CodedError as exc:
        error = error_fields(request, exc)
    return ViewPage(
        title=Text(en="Thinking sessions", zh="思考会话"),
        template="list.html",
        data={
            "filters": filters,
            "sessions": sessions,
            "hits": hits,
            "total": total,
            "error": error,
            "searching": bool(filters["q"].strip()),
            "next_cursor": next_cursor,
            "paged": bool(query.get("cursor")),
            "statuses": STATUSES,
            "status_names": {key: request.text(value) for key, value in STATUS_NAMES.items()},
            "templates": templates,
            "template_names": dict(templates),
        },
    )


async def _template_names(request: ViewRequest) -> dict[str, str]:
    """Each template's name in the page's language, by id (``list_templates``); none without it."""
    if not request.can("list_templates"):
        return {}
    listed = await request.call(list_templates)
    return {item.template_id: item.name for item in listed.templates}


async def _sessions_page(
    request: ViewRequest, filters: dict[str, str], cursor: str | None
) -> tuple[list[SessionSummary], int, str | None]:
    """One page of sessions; with a template filter, list_sessions' pages are read (up to
    ``TEMPLATE_SCAN_PAGES``) until a page of that template's sessions is found."""
    arguments: dict[str, Any] = {
        "status": given(filters["status"]),
        "created_by": given(filters["member"]),
    }
    template = given(filters["template"])
    if template is None:
        listed = await request.call(list_sessions, limit=PAGE_SIZE, cursor=cursor, **arguments)
        return listed.sessions, listed.total, listed.next_cursor
    chosen: list[SessionSummary] = []
    for _ in range(TEMPLATE_SCAN_PAGES):
        listed = await request.call(list_sessions, limit=PAGE_SIZE, cursor=cursor, **arguments)
        chosen.extend(s for s in listed.sessions if s.template_id == template)
        cursor = listed.next_cursor
        if cursor is None or len(chosen) >= PAGE_SIZE:
            break
    return chosen, len(chosen), cursor


# --- one session -----------------------------------------------------------------------------


async def session_page(request: ViewRequest) -> ViewPage:
    session_id = request.query.get("id", "")
    try:
        got = await request.call(
            get_session,
            session_id=session_id,
            limit=THOUGHTS_PAGE,
            cursor=given(request.query.get("tcursor")),
        )
    except CodedError as exc:
        if exc.code != "NOT_FOUND" or not request.can("restore_session"):
            raise
        return await _restore_page(request, session_id, error_fields(request, exc), status=404)
    diagram = None
    if request.can("visualize_session"):
        diagram = (await request.call(visualize_session, session_id=session_id, format="mermaid")).diagram
    main, branches = _timeline(got.thoughts)
    return ViewPage(
        title=Text.same(got.session.name),
        template="session.html",
        data={
            "session": got.session,
            "main": main,
            "branches": branches,
            "thought_count": got.matching_thoughts,
            "adjustments": got.adjustments,
            "linked_tasks": got.linked_tasks or [],
            "warnings": [request.text(warning.message) for warning in got.warnings],
            "diagram": diagram,
            "next_cursor": got.next_cursor,
            "paged": bool(request.query.get("tcursor")),
            "status_names": {key: request.text(value) for key, value in STATUS_NAMES.items()},
            "task_status_names": {key: request.text(value) for key, value in TASK_STATUS_NAMES.items()},
            "template_names": await _template_names(request),
            "exports": list(EXPORTS),
        },
        diagram=diagram is not None,
    )


def _timeline(thoughts: list[ThoughtRecord]) -> tuple[list[ThoughtRecord], list[dict[str, Any]]]:
    """The main line, and each branch (in order of appearance) with the thought it starts from."""
    main: list[ThoughtRecord] = []
    branches: dict[str, dict[str, Any]] = {}
    for thought in thoughts:
        if thought.branch_id is None:
            main.append(thought)
            continue
        branch = branches.setdefault(
            thought.branch_id,
            {"id": thought.branch_id, "from_sequence": thought.branch_from_sequence, "thoughts": []},
        )
        if branch["from_sequence"] is None:
            branch["from_sequence"] = thought.branch_from_sequence
        branch["thoughts"].append(thought)
    return main, list(branches.values())


async def download(request: ViewRequest) -> ViewFile:
    session_id = request.query.get("id", "")
    chosen = request.query.get("format", "")
    if chosen not in EXPORTS:
        raise CodedError(
            "INVALID_ARGUMENT",
            Text(en="format must be markdown, html or json.", zh="format 必须是 markdown、html 或 json。"),
        )
    exported = await request.call(export_session, session_id=session_id, format=chosen)
    extension, media_type = EXPORTS[chosen]
    return ViewFile(exported.content or "", f"{exported.session_id}.{extension}", media_type)


# --- delete and restore ----------------------------------------------------------------------


async def delete_form(request: ViewRequest) -> ViewPage:
    got = await request.call(get_session, session_id=request.query.get("id", ""), limit=1)
    return ViewPage(
        title=Text(en="Delete session {name}?", zh="删除会话 {name}？").format(name=got.session.name),
        template="delete.html",
        data={"session": got.session},
    )


async def delete(request: ViewRequest) -> ViewRedirect:
    result = await request.call(delete_session, session_id=request.form.get("session_id", ""))
    return ViewRedirect(
        "/restore",
        {"id": result.session_id, "backup": result.backup_id},
        Text(
            en="Deleted session '{id}'; a backup was kept and it can be restored here.",
            zh="已删除会话 '{id}'；已保留备份，可在此恢复。",
        ).format(id=result.session_id),
    )


async def restore_form(request: ViewRequest) -> ViewPage:
    return await _restore_page(
        request, request.query.get("id", ""), None, backup=request.query.get("backup", "")
    )


async def _restore_page(
    request: ViewRequest,
    session_id: str,
    error: dict[str, Any] | None,
    *,
    status: int = 200,
    backup: str = "",
) -> ViewPage:
    """The deleted sessions (``list_sessions(deleted=true)``), each with its restore button, and
    the form for one by id and backup."""
    deleted: list[SessionSummary] = []
    total, next_cursor = 0, None
    if request.can("list_sessions"):
        listed = await request.call(
            list_sessions, deleted=True, limit=PAGE_SIZE, cursor=given(request.query.get("cursor"))
        )
        deleted, total, next_cursor = listed.sessions, listed.total, listed.next_cursor
    return ViewPage(
        title=Text(en="Restore a deleted session", zh="恢复已删除的会话"),
        template="restore.html",
        data={
            "session_id": session_id,
            "backup": backup,
            "error": error,
            "deleted": deleted,
            "total": total,
            "next_cursor": next_cursor,
            "paged": bool(request.query.get("cursor")),
            "listed": request.can("list_sessions"),
            "status_names": {key: request.text(value) for key, value in STATUS_NAMES.items()},
            "template_names": await _template_names(request),
        },
        status=status,
    )


async def restore(request: ViewRequest) -> ViewPage | ViewRedirect:
    session_id = request.form.get("session_id", "").strip()
    backup = given(request.form.get("backup"))
    try:
        result = await request.call(restore_session, session_id=session_id, backup=backup)
    except CodedError as exc:
        page = await _restore_page(request, session_id, error_fields(request, exc), backup=backup or "")
        return ViewPage(page.title, page.template, page.data, status=404 if exc.code == "NOT_FOUND" else 409)
    return ViewRedirect(
        "/view",
        {"id": result.session.session_id},
        Text(en="Restored from backup {b}.", zh="已从备份 {b} 恢复。").format(b=result.restored_from),
    )


# --- the overview ----------------------------------------------------------------------------

#: Sessions (newest first) whose thoughts feed the overview's activity.
FEED_SESSIONS = 5


async def overview(request: ViewRequest, limit: int) -> Overview:
    """The number of sessions and the newest ones' activity, from one ``list_sessions`` call (at
    1,000 sessions on files it is the costly part of this overview)."""
    listed = await request.call(list_sessions, limit=FEED_SESSIONS)
    counts = [OverviewCount(Text(en="Sessions", zh="会话"), listed.total)]
    activity = await thought_activity(request, listed.sessions, limit) if request.can("get_session") else []
    return Overview(counts=counts, activity=activity)


async def thought_activity(
    request: ViewRequest, sessions: list[SessionSummary], limit: int
) -> list[ActivityItem]:
    """Who started each of ``sessions`` and who added their newest thoughts, newest first."""
    size = max(1, min(limit, 100))
    newest: dict[str, list[ThoughtRecord]] = {}

    async def read_newest(session: SessionSummary) -> None:
        newest[session.session_id] = await _last_thoughts(request, session, size)

    # The sessions' reads at once (each its own thread; on the team database its own round trips).
    async with anyio.create_task_group() as group:
        for session in sessions:
            group.start_soon(read_newest, session)
    items: list[ActivityItem] = []
    for session in sessions:
        items.append(
            ActivityItem(
                session.created_at,
                session.created_by,
                Text(en="started session '{name}'", zh="开始了会话「{name}」").format(name=session.name),
                "/view",
                {"id": session.session_id},
            )
        )
        for thought in newest[session.session_id]:
            items.append(
                ActivityItem(
                    thought.timestamp,
                    thought.by,
                    Text(en="added thought {n} to '{name}'", zh="向「{name}」添加了第 {n} 条思考").format(
                        n=thought.thought_number, name=session.name
                    ),
                    "/view",
                    {"id": session.session_id},
                )
            )
    items.sort(key=lambda item: item.at, reverse=True)
    return items[:size]


async def _last_thoughts(request: ViewRequest, session: SessionSummary, size: int) -> list[ThoughtRecord]:
    """A session's newest ``size`` thoughts: ``get_session`` resumed near its end with the cursor
    it would hand out itself (positions are sequence numbers); the first page if that is refused."""
    after = session.thought_count - size
    if after > 0:
        filters = {"session_id": session.session_id, "stage": None, "tags": None}
        try:
            got = await request.call(
                get_session,
                session_id=session.session_id,
                limit=size,
                cursor=encode_cursor("get_session", filters, after),
            )
            return got.thoughts
        except CodedError:
            pass
    got = await request.call(get_session, session_id=session.session_id, limit=size)
    return got.thoughts
