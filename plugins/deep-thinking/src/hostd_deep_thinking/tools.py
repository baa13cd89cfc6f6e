"""The deep-thinking tools: sequential thinking into durable sessions, session management,
templates, export/import and diagrams.

Each function is a tool as the host sees it: typed parameters with descriptions, a
``ToolOutput`` return model, ``ToolError`` for what the model can correct. Storage lives in
``store.py``; the thinking rules in ``thinking.py``; document formats in ``export.py`` and
``visualize.py``.
"""

from __future__ import annotations

import datetime
import json
import secrets
from bisect import bisect_right
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, cast

import anyio
from pydantic import Field

from hostd import PluginContext, Text, ToolContext, ToolError
from hostd_deep_thinking.jsonshape import MAX_NESTING, NotFiniteNumber, refuse_constant, shape_problem
from hostd_deep_thinking.models import (
    BACKUP_NAME_PATTERN,
    BRANCH_ID_PATTERN,
    MAX_STAGE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_THOUGHT_CHARS,
    MAX_THOUGHTS,
    MEMBER_NAME_PATTERN,
    SESSION_ID_PATTERN,
    Adjustment,
    DefaultSessionChange,
    DeleteSessionOutput,
    ExportOutput,
    GetSessionOutput,
    ImportOutput,
    InvalidTemplate,
    LinkedTask,
    ListSessionsOutput,
    Notice,
    Progress,
    RestoreSessionOutput,
    ResumeOutput,
    SearchOutput,
    SessionOutput,
    SessionStatus,
    SessionSummary,
    SummaryOutput,
    TemplatesOutput,
    ThoughtHit,
    ThoughtOutput,
    ThoughtRecord,
    ThoughtType,
    UpdateStatusOutput,
    VisualizeOutput,
)
from hostd_deep_thinking.store import (
    Appended,
    BackupNotFound,
    Searcher,
    SessionBackend,
    SessionExists,
    SessionNotFound,
    SessionState,
    SessionStore,
    SessionUnreadable,
    WouldBlock,
    new_document,
)
from hostd_deep_thinking.templates import TEMPLATES, Template, TemplateProblem, UserTemplates, step_after
from hostd_deep_thinking.thinking import ThoughtRequest, check_request, clean_labels, label_key, plan_thought

if TYPE_CHECKING:
    from hostd_db import PostgresDatabase

PAGE_SIZE = 100
MAX_QUERY_CHARS = 1000
MAX_METADATA_BYTES = 64 * 1024
MAX_IMPORT_CHARS = 50_000_000

SessionId = Annotated[
    str,
    Field(
        description="Session identifier: letters, digits, '_', '-', '.', 1-64 characters, "
        "not starting with '.'",
        pattern=SESSION_ID_PATTERN,
    ),
]


# --- plumbing ------------------------------------------------------------------------


def team_database(plugin: PluginContext) -> PostgresDatabase:
    """The plugin's tables in the team database (``storage`` in the config), opened once."""
    from hostd_deep_thinking.pgstore import MIGRATIONS

    return plugin.resource("team-db", lambda: plugin.team_database(MIGRATIONS))


def open_store(plugin: PluginContext) -> SessionBackend:
    """The plugin's one store, opened on first use and closed by the host at shut-down: the team
    database when ``storage`` is configured, else the session files in the plugin's data folder."""

    # Opened before the store: ``resource`` holds its lock while a factory runs.
    database = team_database(plugin) if plugin.storage is not None else None

    def factory() -> SessionBackend:
        if database is not None:
            from hostd_deep_thinking.pgstore import PostgresSessionStore

            return PostgresSessionStore(database)
        settings = plugin.settings
        return SessionStore(
            plugin.data_dir,
            compact_every=settings.compact_every if settings else 256,
            sync_interval=settings.sync_interval_seconds if settings else 1.0,
        )

    return plugin.resource("store", factory)


def open_search(plugin: PluginContext) -> Searcher:
    """What searches the thoughts: the PostgreSQL store itself, or the SQLite index beside the files
    (``search.db``), opened on first use and closed at shut-down."""
    from hostd_deep_thinking.search import INDEX_FILE, SearchIndex

    store = open_store(plugin)
    if not isinstance(store, SessionStore):
        return cast("Searcher", store)
    return plugin.resource("search", lambda: SearchIndex(store, plugin.data_dir / INDEX_FILE))


def templates_folder(plugin: PluginContext) -> Path:
    """The user templates' folder: the ``templates_dir`` setting (relative to the data folder), else
    ``templates/`` in the plugin's data folder."""
    configured = plugin.settings.templates_dir if plugin.settings else None
    return plugin.data_dir / Path(configured).expanduser() if configured else plugin.data_dir / "templates"


def user_templates(plugin: PluginContext) -> UserTemplates:
    return plugin.resource("user-templates", lambda: UserTemplates(templates_folder(plugin)))


def all_templates(plugin: PluginContext) -> tuple[dict[str, Template], list[TemplateProblem]]:
    """Built-in templates, then the user's (never replacing a built-in one), and the user files refused."""
    users, problems = user_templates(plugin).load()
    return {**TEMPLATES, **users}, problems


def find_template(plugin: PluginContext, template_id: str | None) -> Template | None:
    """The session's template; None without one, or when its user file is gone or broken now."""
    if template_id is None:
        return None
    return TEMPLATES.get(template_id) or user_templates(plugin).load()[0].get(template_id)


def not_found(ctx: ToolContext, session_id: str) -> ToolError:
    return ToolError(
        "NOT_FOUND",
        ctx.text(en=f"No session '{session_id}'.", zh=f"没有会话 '{session_id}'。"),
        hint=ctx.text(en="list_sessions shows the sessions that exist.", zh="list_sessions 可列出现有会话。"),
        details={"session_id": session_id},
    )


def unreadable(ctx: ToolContext, exc: SessionUnreadable) -> ToolError:
    return ToolError(
        "READ_ERROR",
        ctx.text(
            en=f"Session '{exc.session_id}' is damaged and no backup or journal can rebuild it: "
            f"{exc.problem}.",
            zh=f"会话 '{exc.session_id}' 已损坏，且没有可用于重建的备份或日志（详情见 details.problem）。",
        ),
        hint=ctx.text(
            en="The damaged file is kept as it is. Restore it with restore_session (overwrite=true) from "
            "the plugin's backups or import_session from an export, or delete_session to start over "
            "(the file is kept under another name).",
            zh="损坏的文件已原样保留。可用 restore_session（overwrite=true）从插件的备份恢复，"
            "或用 import_session 从导出文件恢复，或用 delete_session 重新开始（文件会改名保留）。",
        ),
        details={"session_id": exc.session_id, "file": exc.kept_at, "problem": exc.problem},
    )


def load_state(ctx: ToolContext, session_id: str) -> SessionState:
    try:
        state = open_store(ctx.plugin).load(session_id)
    except SessionUnreadable as exc:
        raise unreadable(ctx, exc) from None
    if state is None:
        raise not_found(ctx, session_id)
    return state


def summary_of(state: SessionState) -> SessionSummary:
    return SessionSummary.model_validate(state.summary())


def record_of(thought: dict[str, Any]) -> ThoughtRecord:
    return ThoughtRecord(
        sequence=thought["seq"],
        thought_number=thought["thought_number"],
        content=thought["content"],
        type=thought.get("type", "regular"),
        is_revision=bool(thought.get("is_revision")),
        revises_thought=thought.get("revises_thought"),
        revises_sequence=thought.get("revises_seq"),
        branch_from_thought=thought.get("branch_from_thought"),
        branch_from_sequence=thought.get("branch_from_seq"),
        branch_id=thought.get("branch_id"),
        total_thoughts=thought.get("total_thoughts") or thought["thought_number"],
        next_thought_needed=bool(thought.get("next_thought_needed", True)),
        needs_more_thoughts=bool(thought.get("needs_more_thoughts")),
        timestamp=thought.get("timestamp", ""),
        stage=thought.get("stage"),
        tags=list(thought.get("tags") or []),
        by=thought.get("by"),
    )


def recovery_notices(ctx: ToolContext, notes: list[dict[str, Any]]) -> list[Notice]:
    return [
        Notice(
            code="RECOVERED",
            message=ctx.text(
                en=f"The session files needed repair: {note.get('problem')}; recovered from "
                f"{note.get('recovered_from', 'journal')}.",
                zh=f"会话文件经过修复：{note.get('problem')}；"
                f"已从 {note.get('recovered_from', 'journal')} 恢复。",
            ),
        )
        for note in notes
    ]


def default_session_document(ctx: ToolContext, session_id: str) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    name = ctx.text(en=f"Thinking session {now}", zh=f"思考会话 {now}")
    return new_document(session_id, name=name, is_default=True, created_by=ctx.member)


def check_metadata(ctx: ToolContext, metadata: dict[str, Any]) -> None:
    """Refuse metadata that could be stored but never shown again (too deep, NaN/Infinity)."""
    problem = shape_problem(metadata)
    if problem is None:
        return
    if problem == "too_deep":
        message = ctx.text(
            en=f"metadata is nested deeper than {MAX_NESTING} levels.",
            zh=f"metadata 嵌套超过 {MAX_NESTING} 层。",
        )
    else:
        message = ctx.text(
            en="metadata holds NaN or Infinity, which JSON cannot carry.",
            zh="metadata 含有 NaN 或 Infinity，JSON 无法表示。",
        )
    raise ToolError(
        "INVALID_ARGUMENT",
        message,
        hint=ctx.text(
            en="Keep metadata flat and use plain numbers.", zh="请让 metadata 保持扁平，并使用普通数字。"
        ),
        details={"argument": "metadata", "problem": problem},
    )


def new_default_id() -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    return f"default-{stamp}-{secrets.token_hex(3)}"


class _ArchivedDefault(Exception):
    """The default session is archived: the call starts a new default session instead (and says so)."""


# --- sequential_thinking -------------------------------------------------------------


async def sequential_thinking(
    ctx: ToolContext,
    thought: Annotated[
        str,
        Field(description="Your current thinking step", min_length=1, max_length=MAX_THOUGHT_CHARS),
    ],
    nextThoughtNeeded: Annotated[bool, Field(description="Whether another thought step is needed")],
    thoughtNumber: Annotated[
        int,
        Field(description=f"Current thought number (your label, 1 to {MAX_THOUGHTS})", ge=1, le=MAX_THOUGHTS),
    ],
    totalThoughts: Annotated[int, Field(description="Estimated total thoughts needed (may change)", ge=1)],
    session_id: Annotated[
        str | None,
        Field(
            description="Session to add to (created on first use). Omitted: the current default session; "
            "thoughtNumber 1 without revision or branch starts a new default session",
            pattern=SESSION_ID_PATTERN,
        ),
    ] = None,
    isRevision: Annotated[bool, Field(description="Whether this revises previous thinking")] = False,
    revisesThought: Annotated[
        int | None, Field(description="Which thoughtNumber is being reconsidered (with isRevision)", ge=1)
    ] = None,
    branchFromThought: Annotated[
        int | None, Field(description="Branching point thoughtNumber (with branchId)", ge=1)
    ] = None,
    branchId: Annotated[
        str | None,
        Field(
            description="Branch identifier: letters, digits, '_' and '-', 1-64 characters",
            pattern=BRANCH_ID_PATTERN,
        ),
    ] = None,
    needsMoreThoughts: Annotated[
        bool, Field(description="Reached the end but need more thoughts: raises the total by 10")
    ] = False,
    stage: Annotated[
        str | None,
        Field(
            description="Optional: the thinking stage of this thought, e.g. problem_definition, analysis, "
            "synthesis, conclusion (free text)",
            min_length=1,
            max_length=MAX_STAGE_CHARS,
        ),
    ] = None,
    tags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]] | None,
        Field(
            description="Optional: short labels for this thought (get_session can filter by them)",
            max_length=MAX_TAGS,
        ),
    ] = None,
) -> ThoughtOutput:
    """A detailed tool for dynamic, reflective problem-solving through thoughts, stored in durable sessions.

    Each thought can build on, question or revise earlier ones (isRevision + revisesThought) or
    branch off (branchFromThought + branchId); totalThoughts may change as understanding
    deepens, and needsMoreThoughts adds 10. Set nextThoughtNeeded to false when done. The
    same arguments as the official sequential-thinking server, plus session_id: sessions are
    kept on disk and can be listed, resumed, exported and visualized.
    """
    clean_stage, clean_tags = clean_labels(stage, tags, ctx.text)
    request = ThoughtRequest(
        stage=clean_stage,
        tags=clean_tags,
        thought=thought,
        next_thought_needed=nextThoughtNeeded,
        thought_number=thoughtNumber,
        total_thoughts=totalThoughts,
        is_revision=isRevision,
        revises_thought=revisesThought,
        branch_from_thought=branchFromThought,
        branch_id=branchId,
        needs_more_thoughts=needsMoreThoughts,
        by=ctx.member,
    )
    check_request(request, ctx.text)
    store = open_store(ctx.plugin)
    notices: list[Notice] = []

    def plan(state: SessionState, implicit: bool) -> tuple[dict[str, Any], dict[str, Any] | None]:
        if implicit and state.meta.get("status") == "archived":
            raise _ArchivedDefault
        planned, adjustment, found = plan_thought(state, request, ctx.text)
        notices.extend(found)
        return planned, adjustment

    def attempt(blocking: bool) -> tuple[str, Appended, DefaultSessionChange | None]:
        """Store the thought; ``blocking=False`` raises WouldBlock rather than wait, load or create."""
        notices.clear()
        if session_id is not None:
            appended = store.append(
                session_id,
                lambda state: plan(state, False),
                create=lambda: new_document(session_id, name=session_id, created_by=ctx.member),
                blocking=blocking,
            )
            return session_id, appended, None
        current = store.default_session(ctx.member)
        change: DefaultSessionChange | None = None
        if current and not request.starts_conversation:
            try:
                appended = store.append(current, lambda state: plan(state, True), blocking=blocking)
                return current, appended, None
            except _ArchivedDefault:
                change = DefaultSessionChange(previous_session_id=current, reason="archived")
            except SessionNotFound:
                # Deleted: a new id, so the deleted one stays restorable and is never half brought back.
                change = DefaultSessionChange(previous_session_id=current, reason="deleted")
        target = new_default_id()
        appended = store.append(
            target,
            lambda state: plan(state, True),
            create=lambda: default_session_document(ctx, target),
            blocking=blocking,
        )
        store.set_default_session(ctx.member, target)
        return target, appended, change

    try:
        try:
            # The common case on files (a known session, lock free) is a few file operations: done
            # right here; anything that could wait (lock held elsewhere, loading, creating, and every
            # database round trip) goes to a worker thread.
            if not isinstance(store, SessionStore):
                raise WouldBlock
            target, appended, change = attempt(False)
        except WouldBlock:
            target, appended, change = await anyio.to_thread.run_sync(attempt, True)
        if appended.compaction_due:
            await anyio.to_thread.run_sync(store.compact, target)
    except SessionUnreadable as exc:
        raise unreadable(ctx, exc) from None
    stored = appended.thought
    next_label = stored["thought_number"] if stored["type"] == "regular" else appended.max_regular_label
    next_step = step_after(find_template(ctx.plugin, appended.template_id), next_label, ctx.language)
    result = ThoughtOutput(
        thoughtNumber=stored["thought_number"],
        totalThoughts=stored["total_thoughts"],
        nextThoughtNeeded=stored["next_thought_needed"],
        branches=appended.branches,
        thoughtHistoryLength=appended.thought_count,
        session_id=target,
        session_created=appended.created,
        thought_type=stored["type"],
        sequence=stored["seq"],
        adjustments=[Adjustment.model_validate(appended.adjustment)] if appended.adjustment else [],
        warnings=[*recovery_notices(ctx, appended.notes), *notices],
        next_step=next_step,
        default_session_changed=change,
    )
    message = ctx.text(
        en=f"Thought {stored['thought_number']}/{stored['total_thoughts']} stored in session '{target}' "
        f"(#{stored['seq']}).",
        zh=f"思考 {stored['thought_number']}/{stored['total_thoughts']} "
        f"已保存到会话 '{target}'（#{stored['seq']}）。",
    )
    if change is not None:
        notice = default_change_notice(ctx, change, target)
        result.warnings.append(notice)
        message += " " + notice.message
    if next_step is not None:
        message += ctx.text(en=f" Next step: {next_step.title}.", zh=f" 下一步：{next_step.title}。")
    return result.with_message(message)


def default_change_notice(ctx: ToolContext, change: DefaultSessionChange, target: str) -> Notice:
    """What to tell a caller without session_id whose default session is gone or archived."""
    previous = change.previous_session_id
    if change.reason == "archived":
        return Notice(
            code="DEFAULT_SESSION_ARCHIVED",
            message=ctx.text(
                en=f"The default session '{previous}' is archived, so this thought started the new "
                f"default session '{target}'. To continue the archived one, call resume_session and pass "
                f"session_id='{previous}'.",
                zh=f"默认会话 '{previous}' 已归档，因此这条思考开启了新的默认会话 '{target}'。"
                f"如需继续原会话，请调用 resume_session 并传入 session_id='{previous}'。",
            ),
        )
    return Notice(
        code="DEFAULT_SESSION_DELETED",
        message=ctx.text(
            en=f"The default session '{previous}' was deleted, so this thought started the new default "
            f"session '{target}'. restore_session(session_id='{previous}') brings the deleted one back.",
            zh=f"默认会话 '{previous}' 已删除，因此这条思考开启了新的默认会话 '{target}'。"
            f"可用 restore_session(session_id='{previous}') 恢复已删除的会话。",
        ),
    )


# --- sessions ----------------------------------------------------------------------------


def create_session(
    ctx: ToolContext,
    name: Annotated[str, Field(description="Session name", min_length=1, max_length=200)],
    description: Annotated[str, Field(description="What the session is about", max_length=5000)] = "",
    metadata: Annotated[
        dict[str, Any], Field(description="Free-form JSON metadata kept with the session (at most 64 KiB)")
    ] = {},  # noqa: B006 - the host validates into a fresh dict per call
    template_id: Annotated[
        str | None,
        Field(
            description="A template (built-in or user; see list_templates) that plans the steps",
            max_length=64,
        ),
    ] = None,
    session_id: Annotated[
        str | None,
        Field(description="Choose the identifier (default: a new UUID)", pattern=SESSION_ID_PATTERN),
    ] = None,
) -> SessionOutput:
    """Create a thinking session (optionally from a template); sequential_thinking adds thoughts to it."""
    if len(json.dumps(metadata, ensure_ascii=False).encode("utf-8")) > MAX_METADATA_BYTES:
        raise ToolError(
            "TOO_LONG",
            ctx.text(en="metadata is larger than 64 KiB.", zh="metadata 超过 64 KiB。"),
            hint=ctx.text(
                en="Keep metadata small; put long text in thoughts.", zh="请精简 metadata，长文本请写入思考。"
            ),
            details={"argument": "metadata", "limit_bytes": MAX_METADATA_BYTES},
        )
    check_metadata(ctx, metadata)
    total = None
    template = None
    if template_id is not None:
        templates, problems = all_templates(ctx.plugin)
        template = templates.get(template_id)
        if template is None:
            raise unknown_template(ctx, template_id, list(templates), problems)
        total = len(template.steps)
    import uuid

    new_id = session_id or str(uuid.uuid4())
    document = new_document(
        new_id,
        name=name,
        description=description,
        metadata=metadata,
        template_id=template_id,
        total_thoughts=total,
        created_by=ctx.member,
    )
    try:
        state = open_store(ctx.plugin).create(document)
    except SessionExists:
        raise ToolError(
            "ALREADY_EXISTS",
            ctx.text(en=f"Session '{new_id}' already exists.", zh=f"会话 '{new_id}' 已存在。"),
            hint=ctx.text(en="Choose another session_id, or omit it.", zh="请换一个 session_id，或不指定。"),
            details={"session_id": new_id},
        ) from None
    except SessionUnreadable as exc:
        raise unreadable(ctx, exc) from None
    message = ctx.text(en=f"Created session '{new_id}'.", zh=f"已创建会话 '{new_id}'。")
    first = step_after(template, 0, ctx.language)
    if first is not None:
        message += ctx.text(en=f" First step: {first.title}.", zh=f" 第一步：{first.title}。")
    return SessionOutput(session=summary_of(state)).with_message(message)


def unknown_template(
    ctx: ToolContext, template_id: str, valid: list[str], problems: list[TemplateProblem]
) -> ToolError:
    """No usable template of that id: the broken user file that would have defined it, else the valid ids."""
    broken = next((problem for problem in problems if problem.template_id == template_id), None)
    if broken is not None:
        return ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"Template '{template_id}' cannot be used: {broken.file}: {broken.field}: {broken.en}.",
                zh=f"模板 '{template_id}' 无法使用：{broken.file}：{broken.field}：{broken.zh}。",
            ),
            hint=ctx.text(
                en="Fix that field in the file (list_templates shows every file left out), "
                "or choose another template_id.",
                zh="请修正文件中的该字段（list_templates 列出所有未采用的文件），或换一个 template_id。",
            ),
            details={"argument": "template_id", "file": broken.file, "field": broken.field},
        )
    return ToolError(
        "INVALID_ARGUMENT",
        ctx.text(en=f"Unknown template '{template_id}'.", zh=f"未知模板 '{template_id}'。"),
        hint=ctx.text(en="Valid template_id values: ", zh="可用的 template_id：") + ", ".join(valid),
        details={"argument": "template_id", "valid": valid},
    )


def linked_tasks(ctx: ToolContext, session_id: str) -> tuple[list[LinkedTask] | None, list[Notice]]:
    """Tasks of the tasks plugin linked to the session, through its service; ``None`` when it is absent."""
    service = ctx.services.get("tasks.links")
    if service is None:
        return None, [
            Notice(
                code="TASKS_UNAVAILABLE",
                message=ctx.text(
                    en="The tasks plugin is not loaded: linked tasks are not shown.",
                    zh="未加载 tasks 插件：不显示关联任务。",
                ),
            )
        ]
    try:
        rows = service.tasks_for_session(session_id)
        return [
            LinkedTask(
                task_id=str(row["task_id"]),
                title=str(row.get("title", "")),
                status=str(row.get("status", "")),
                priority=str(row.get("priority", "")),
            )
            for row in rows
        ], []
    except Exception:
        ctx.logger.exception("tasks.links failed for session %s", session_id)
        return None, [
            Notice(
                code="TASKS_UNAVAILABLE",
                message=ctx.text(
                    en="The tasks plugin could not list linked tasks.", zh="tasks 插件无法列出关联任务。"
                ),
            )
        ]


def has_labels(thought: dict[str, Any], stage: str | None, tags: list[str]) -> bool:
    """Whether a stored thought has the stage and every tag asked for (compared by ``label_key``)."""
    if stage is not None and label_key(str(thought.get("stage") or "")) != label_key(stage):
        return False
    carried = {label_key(tag) for tag in thought.get("tags") or []}
    return all(label_key(tag) in carried for tag in tags)


def get_session(
    ctx: ToolContext,
    session_id: SessionId,
    cursor: Annotated[
        str | None,
        Field(description="next_cursor of the previous page; omit for the first page", max_length=32),
    ] = None,
    stage: Annotated[
        str | None,
        Field(
            description="Only thoughts of this stage (case, spaces and '_' aside)",
            min_length=1,
            max_length=MAX_STAGE_CHARS,
        ),
    ] = None,
    tags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]] | None,
        Field(description="Only thoughts carrying every one of these tags", max_length=MAX_TAGS),
    ] = None,
) -> GetSessionOutput:
    """Show a session: its summary, its thoughts (100 per page; optionally only those of a stage or with
    given tags), the total's adjustments and linked tasks."""
    after = 0
    if cursor is not None:
        if not cursor.isdigit():
            raise ToolError(
                "INVALID_ARGUMENT",
                ctx.text(en="cursor is not one this tool gave out.", zh="cursor 不是本工具给出的值。"),
                hint=ctx.text(
                    en="Pass next_cursor from the previous answer, or omit it.",
                    zh="请传入上一页的 next_cursor，或省略。",
                ),
                details={"argument": "cursor"},
            )
        after = int(cursor)
    store = open_store(ctx.plugin)
    state = load_state(ctx, session_id)
    with store.session_lock(session_id):
        chosen = state.thoughts
        if stage is not None or tags:
            chosen = [thought for thought in chosen if has_labels(thought, stage, tags or [])]
        sequences = [int(thought["seq"]) for thought in chosen]
        start = bisect_right(sequences, after)
        page = chosen[start : start + PAGE_SIZE]
        more = start + PAGE_SIZE < len(chosen)
        summary = summary_of(state)
        adjustments = [Adjustment.model_validate(item) for item in state.adjustments]
        log = list(state.meta.get("recovery_log") or [])
    tasks, task_notices = linked_tasks(ctx, session_id)
    result = GetSessionOutput(
        session=summary,
        thoughts=[record_of(thought) for thought in page],
        next_cursor=str(page[-1]["seq"]) if more and page else None,
        adjustments=adjustments,
        linked_tasks=tasks,
        warnings=[*recovery_notices(ctx, log), *task_notices],
        matching_thoughts=len(chosen),
    )
    filtered = (
        ctx.text(en=f", {len(chosen)} match the filter", zh=f"，其中 {len(chosen)} 条符合筛选")
        if stage is not None or tags
        else ""
    )
    return result.with_message(
        ctx.text(
            en=f"Session '{session_id}': {summary.thought_count} thoughts{filtered}, showing {len(page)}.",
            zh=f"会话 '{session_id}'：共 {summary.thought_count} 条思考{filtered}，本页 {len(page)} 条。",
        )
    )


def list_sessions(
    ctx: ToolContext,
    status: Annotated[SessionStatus | None, Field(description="Only sessions with this status")] = None,
    limit: Annotated[int, Field(description="At most this many sessions, newest first", ge=1, le=1000)] = 50,
    created_by: Annotated[
        str | None,
        Field(
            description="Only sessions this member created (a member name: letters, digits, '_', '-', '.')",
            pattern=MEMBER_NAME_PATTERN,
        ),
    ] = None,
) -> ListSessionsOutput:
    """List sessions (newest first, thoughts not yet compacted included), optionally by status or by the
    member who created them."""
    from pydantic import ValidationError

    rows, total = open_store(ctx.plugin).list_summaries(status, limit, created_by)
    sessions = []
    unreadable_ids: list[str] = []
    for row in rows:
        for internal in ("deleted", "last_seq", "doc_size"):
            row.pop(internal, None)
        row.setdefault("name", row["session_id"])
        row.setdefault("status", "active")
        row.setdefault("created_at", "")
        row.setdefault("updated_at", "")
        row.setdefault("thought_count", 0)
        try:
            # One damaged session is named, never allowed to break the listing of the others.
            if row.pop("unreadable", None) is not None or shape_problem(row.get("metadata", {})) is not None:
                raise ValueError("unreadable")
            sessions.append(SessionSummary.model_validate(row))
        except (ValueError, ValidationError):
            unreadable_ids.append(str(row["session_id"]))
    warnings = [
        Notice(
            code="SESSION_UNREADABLE",
            message=ctx.text(
                en=f"Session '{session_id}' is damaged and not listed; get_session says what is wrong.",
                zh=f"会话 '{session_id}' 已损坏，未列出；get_session 可说明问题所在。",
            ),
        )
        for session_id in unreadable_ids
    ]
    return ListSessionsOutput(
        sessions=sessions, total=total, unreadable_sessions=unreadable_ids, warnings=warnings
    ).with_message(
        ctx.text(
            en=f"{total} session(s), showing {len(sessions)}.",
            zh=f"共 {total} 个会话，显示 {len(sessions)} 个。",
        )
        + (
            ctx.text(
                en=f" {len(unreadable_ids)} damaged: {', '.join(unreadable_ids)}.",
                zh=f" {len(unreadable_ids)} 个已损坏：{'、'.join(unreadable_ids)}。",
            )
            if unreadable_ids
            else ""
        )
    )


def delete_session(ctx: ToolContext, session_id: SessionId) -> DeleteSessionOutput:
    """Delete a session; a backup is taken first, and restore_session brings it back."""
    store = open_store(ctx.plugin)
    try:
        backup = store.delete(session_id)
    except SessionNotFound:
        raise not_found(ctx, session_id) from None
    backup_id = None if backup is None else store.backup_id(session_id, backup)
    restore_call = {"session_id": session_id, "backup": backup_id} if backup_id else None
    if restore_call is not None:
        message = ctx.text(
            en=f"Deleted session '{session_id}' (backup kept); "
            f"restore_session(session_id='{session_id}') brings it back.",
            zh=f"已删除会话 '{session_id}'（已保留备份）；"
            f"可用 restore_session(session_id='{session_id}') 恢复。",
        )
    else:
        message = ctx.text(
            en=f"Deleted session '{session_id}' (its damaged file is kept as {backup}).",
            zh=f"已删除会话 '{session_id}'（损坏的文件保留为 {backup}）。",
        )
    return DeleteSessionOutput(
        session_id=session_id, deleted=True, backup=backup, backup_id=backup_id, restore_call=restore_call
    ).with_message(message)


def restore_session(
    ctx: ToolContext,
    session_id: SessionId,
    backup: Annotated[
        str | None,
        Field(
            description="A backup's name (delete_session's backup_id, or one of restore_session's backups); "
            "omit for the backup the last delete took",
            pattern=BACKUP_NAME_PATTERN,
        ),
    ] = None,
    overwrite: Annotated[
        bool, Field(description="Replace a live session of that id (a backup of it is taken first)")
    ] = False,
) -> RestoreSessionOutput:
    """Restore a deleted session from the plugin's own backups (delete_session keeps the last 10)."""
    store = open_store(ctx.plugin)
    try:
        state, restored_from, replaced = store.restore(session_id, backup, replace=overwrite)
    except BackupNotFound as exc:
        what_en = (
            f"backup '{backup}' of session '{session_id}'" if backup else f"backup of session '{session_id}'"
        )
        what_zh = f"会话 '{session_id}' 的备份 '{backup}'" if backup else f"会话 '{session_id}' 的备份"
        raise ToolError(
            "NOT_FOUND",
            ctx.text(en=f"No {what_en}.", zh=f"没有{what_zh}。"),
            hint=ctx.text(
                en="details.backups lists this session's backups; without any, only an export "
                "(import_session) can bring it back.",
                zh="details.backups 列出该会话的备份；若没有备份，只能用导出文件（import_session）恢复。",
            ),
            details={"session_id": session_id, "backups": exc.available},
        ) from None
    except SessionExists:
        raise ToolError(
            "ALREADY_EXISTS",
            ctx.text(en=f"Session '{session_id}' already exists.", zh=f"会话 '{session_id}' 已存在。"),
            hint=ctx.text(
                en="Pass overwrite=true to replace it (a backup of it is taken first), "
                "or export it before restoring.",
                zh="传入 overwrite=true 以替换它（会先备份），或先导出再恢复。",
            ),
            details={"session_id": session_id},
        ) from None
    except SessionUnreadable as exc:
        raise unreadable(ctx, exc) from None
    kept = store.backup_names(session_id)
    return RestoreSessionOutput(
        session=summary_of(state), restored_from=restored_from, replaced=replaced and overwrite, backups=kept
    ).with_message(
        ctx.text(
            en=f"Restored session '{session_id}' ({len(state.thoughts)} thoughts) "
            f"from backup {restored_from}.",
            zh=f"已从备份 {restored_from} 恢复会话 '{session_id}'（{len(state.thoughts)} 条思考）。",
        )
    )


def _change_status(ctx: ToolContext, session_id: str, status: str) -> tuple[SessionState, SessionStatus]:
    def change(state: SessionState) -> SessionStatus:
        previous = cast(SessionStatus, str(state.meta.get("status", "active")))
        state.meta["status"] = status
        return previous

    try:
        state, previous = open_store(ctx.plugin).update_meta(session_id, change)
    except SessionNotFound:
        raise not_found(ctx, session_id) from None
    except SessionUnreadable as exc:
        raise unreadable(ctx, exc) from None
    return state, previous


def update_session_status(
    ctx: ToolContext,
    session_id: SessionId,
    status: Annotated[SessionStatus, Field(description="The new status")],
) -> UpdateStatusOutput:
    """Set a session's status: active, completed or archived (archived sessions refuse new thoughts)."""
    state, previous = _change_status(ctx, session_id, status)
    return UpdateStatusOutput(session=summary_of(state), previous_status=previous).with_message(
        ctx.text(
            en=f"Session '{session_id}': {previous} → {status}.",
            zh=f"会话 '{session_id}'：{previous} → {status}。",
        )
    )


def resume_session(ctx: ToolContext, session_id: SessionId) -> ResumeOutput:
    """Pick a session up again: last thought, progress, adjustments and the next sequential_thinking call."""
    state = load_state(ctx, session_id)
    reactivated = False
    if state.meta.get("status") != "active":
        state, _ = _change_status(ctx, session_id, "active")
        reactivated = True
    store = open_store(ctx.plugin)
    with store.session_lock(session_id):
        last = state.thoughts[-1] if state.thoughts else None
        total = state.meta.get("total_thoughts")
        summary = summary_of(state)
        adjustments = [Adjustment.model_validate(item) for item in state.adjustments]
        max_regular = state.max_regular_label
        template_id = state.meta.get("template_id")
    # Labels stop at thoughtNumber's cap; they may repeat, so the cap itself is a valid next label.
    next_number = min(int(last["thought_number"]) + 1, MAX_THOUGHTS) if last else 1
    next_call: dict[str, Any] = {
        "session_id": session_id,
        "thought": ctx.text(en="<your next thought>", zh="<你的下一条思考>"),
        "thoughtNumber": next_number,
        "totalThoughts": max(int(total or 1), next_number),
        "nextThoughtNeeded": True,
    }
    if last is not None and last.get("branch_id") and last.get("branch_from_thought") is not None:
        next_call["branchFromThought"] = last["branch_from_thought"]
        next_call["branchId"] = last["branch_id"]
    next_step = step_after(
        find_template(ctx.plugin, template_id),
        max_regular if last is None or last["type"] != "regular" else int(last["thought_number"]),
        ctx.language,
    )
    current = int(last["thought_number"]) if last else None
    progress = Progress(
        thought_count=len(state.thoughts),
        current_thought_number=current,
        total_thoughts=total,
        percent=round(100.0 * min(current, total) / total, 1) if current and total else None,
    )
    message = ctx.text(
        en=f"Session '{session_id}' resumed at thought {current or 0} of {total or '?'}.",
        zh=f"会话 '{session_id}' 从第 {current or 0}/{total or '?'} 条思考继续。",
    )
    if reactivated:
        message += ctx.text(en=" It is active again.", zh=" 已重新激活。")
    return ResumeOutput(
        session=summary,
        last_thought=record_of(last) if last else None,
        progress=progress,
        adjustments=adjustments,
        next_call=next_call,
        next_step=next_step,
        reactivated=reactivated,
    ).with_message(message)


def list_templates(ctx: ToolContext) -> TemplatesOutput:
    """List the thinking templates, built-in and the user's own (YAML/JSON files in the templates folder),
    with their steps, for create_session's template_id; user files that cannot be used are named with
    the field at fault."""
    templates, problems = all_templates(ctx.plugin)
    invalid = [
        InvalidTemplate(
            file=problem.file, field=problem.field, problem=ctx.text(en=problem.en, zh=problem.zh)
        )
        for problem in problems
    ]
    message = ctx.text(en=f"{len(templates)} templates.", zh=f"共 {len(templates)} 个模板。")
    if invalid:
        message += ctx.text(
            en=f" {len(invalid)} template file(s) left out: see invalid_templates.",
            zh=f" {len(invalid)} 个模板文件未采用：见 invalid_templates。",
        )
    return TemplatesOutput(
        templates=[template.info(ctx.language) for template in templates.values()],
        templates_folder=str(templates_folder(ctx.plugin)),
        invalid_templates=invalid,
    ).with_message(message)


# --- export, import, diagrams ------------------------------------------------------------


def _render(ctx: ToolContext, state: SessionState, format: str) -> str:
    from hostd_deep_thinking import export

    store = open_store(ctx.plugin)
    with store.session_lock(state.session_id):
        if format == "json":
            return export.to_json(state)
        if format == "markdown":
            return export.to_markdown(state, ctx.text)
        if format == "html":
            return export.to_html(state, ctx.text, ctx.language)
        return export.to_text(state, ctx.text)


def export_session(
    ctx: ToolContext,
    session_id: SessionId,
    format: Annotated[Literal["json", "markdown", "html", "text"], Field(description="Document format")],
    output_path: Annotated[
        str | None,
        Field(
            description="Write the document to this file (inside the allowed roots); omit to get it back",
            max_length=4096,
        ),
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace output_path if it exists")] = False,
) -> ExportOutput:
    """Export a session as JSON (complete, re-importable), Markdown, a self-contained HTML page or text."""
    state = load_state(ctx, session_id)
    document = _render(ctx, state, format)
    if output_path is None:
        return ExportOutput(
            session_id=session_id, format=format, content=document, output_path=None, bytes_written=None
        ).with_message(
            ctx.text(en=f"Exported '{session_id}' as {format}.", zh=f"已将 '{session_id}' 导出为 {format}。")
        )
    from hostd_fs import atomic_write, resolve_beneath

    path = resolve_beneath(output_path, ctx.roots(), allow_missing=True, expect="file")
    if path.exists() and not overwrite:
        raise ToolError(
            "ALREADY_EXISTS",
            ctx.text(en=f"{path} already exists.", zh=f"{path} 已存在。"),
            hint=ctx.text(
                en="Pass overwrite=true to replace it, or choose another path.",
                zh="传入 overwrite=true 以覆盖，或换一个路径。",
            ),
            details={"path": str(path)},
        )
    written = atomic_write(path, document)  # makes missing parent folders beneath the root
    return ExportOutput(
        session_id=session_id, format=format, content=None, output_path=str(path), bytes_written=written
    ).with_message(ctx.text(en=f"Wrote {path}.", zh=f"已写入 {path}。"))


def _read_import(ctx: ToolContext, path_or_data: str) -> Any:
    text = path_or_data
    if not looks_like_json(path_or_data):
        from hostd_fs import FsError, read_beneath, resolve_beneath

        path = resolve_beneath(path_or_data, ctx.roots(), allow_missing=False, expect="file")
        try:
            text = read_beneath(path, max_bytes=MAX_IMPORT_CHARS).decode("utf-8")
        except FsError as exc:
            if exc.reason != "FILE_TOO_LARGE":
                raise
            raise ToolError(
                "TOO_LONG",
                ctx.text(en=f"{path} is too large to import.", zh=f"{path} 太大，无法导入。"),
                details={"path": str(path), "limit_bytes": MAX_IMPORT_CHARS},
            ) from None
        except UnicodeDecodeError as exc:
            raise ToolError(
                "READ_ERROR",
                ctx.text(en=f"Cannot read {path} as UTF-8 text.", zh=f"无法以 UTF-8 文本读取 {path}。"),
                details={"path": str(path), "reason": type(exc).__name__},
            ) from None
    try:
        return json.loads(text, parse_constant=refuse_constant)
    except NotFiniteNumber as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"The import holds {exc.name}, which is not a JSON value.",
                zh=f"导入内容含有 {exc.name}，它不是合法的 JSON 值。",
            ),
            hint=ctx.text(en="Replace it with a number or null.", zh="请改为具体数字或 null。"),
            details={"argument": "path_or_data", "value": exc.name},
        ) from None
    except RecursionError:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en="The import is nested too deeply to be a session.",
                zh="导入内容嵌套过深，不可能是会话。",
            ),
            hint=ctx.text(
                en="Pass a file written by export_session(format='json'), or its content.",
                zh="请传入 export_session(format='json') 生成的文件或其内容。",
            ),
            details={"argument": "path_or_data"},
        ) from None
    except ValueError as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(en=f"The import is not valid JSON: {exc}.", zh=f"导入内容不是合法的 JSON：{exc}。"),
            hint=ctx.text(
                en="Pass a file written by export_session(format='json'), or its content.",
                zh="请传入 export_session(format='json') 生成的文件或其内容。",
            ),
            details={"argument": "path_or_data"},
        ) from None


def looks_like_json(path_or_data: str) -> bool:
    """JSON text rather than a path: an object, an array or a string (a path starts with none of these)."""
    return path_or_data.lstrip()[:1] in ("{", "[", '"')


def import_session(
    ctx: ToolContext,
    path_or_data: Annotated[
        str,
        Field(
            description="A JSON export's path (inside the allowed roots) or the JSON text itself",
            min_length=1,
            max_length=MAX_IMPORT_CHARS,
        ),
    ],
    session_id: Annotated[
        str | None,
        Field(description="Store under this id instead of the export's", pattern=SESSION_ID_PATTERN),
    ] = None,
    overwrite: Annotated[
        bool, Field(description="Replace an existing session with that id (a backup is taken)")
    ] = False,
) -> ImportOutput:
    """Import a session from a JSON export (export_session format 'json') or a spec-shaped document."""
    from hostd_deep_thinking.export import ImportProblem, parse_import

    raw = _read_import(ctx, path_or_data)
    try:
        document = parse_import(raw, session_id, importer=ctx.member)
    except ImportProblem as exc:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en=f"The import is not a session: {exc.field}: {exc.en}.",
                zh=f"导入内容不是有效的会话：{exc.field}：{exc.zh}。",
            ),
            hint=ctx.text(
                en="Pass a file written by export_session(format='json').",
                zh="请传入 export_session(format='json') 生成的文件。",
            ),
            details={"argument": "path_or_data", "field": exc.field},
        ) from None
    store = open_store(ctx.plugin)
    target = document["session_id"]
    replaced = store.exists(target)
    try:
        state = store.create(document, replace=overwrite)
    except SessionExists:
        raise ToolError(
            "ALREADY_EXISTS",
            ctx.text(en=f"Session '{target}' already exists.", zh=f"会话 '{target}' 已存在。"),
            hint=ctx.text(
                en="Pass overwrite=true (a backup is taken first) or another session_id.",
                zh="传入 overwrite=true（会先备份）或指定其他 session_id。",
            ),
            details={"session_id": target},
        ) from None
    except SessionUnreadable as exc:
        raise unreadable(ctx, exc) from None
    return ImportOutput(session=summary_of(state), replaced=replaced and overwrite, warnings=[]).with_message(
        ctx.text(
            en=f"Imported session '{target}' ({len(state.thoughts)} thoughts).",
            zh=f"已导入会话 '{target}'（{len(state.thoughts)} 条思考）。",
        )
    )


def visualize_session(
    ctx: ToolContext,
    session_id: SessionId,
    format: Annotated[Literal["mermaid", "ascii"], Field(description="Diagram format")] = "mermaid",
) -> VisualizeOutput:
    """Draw a session: a Mermaid flowchart (revisions dashed, branches as own paths) or an ASCII chart."""
    from hostd_deep_thinking.visualize import to_ascii, to_mermaid

    state = load_state(ctx, session_id)
    with open_store(ctx.plugin).session_lock(session_id):
        diagram = to_mermaid(state) if format == "mermaid" else to_ascii(state)
    return VisualizeOutput(session_id=session_id, format=format, diagram=diagram).with_message(
        ctx.text(en=f"{format} diagram of '{session_id}'.", zh=f"会话 '{session_id}' 的 {format} 图。")
    )


# --- search ------------------------------------------------------------------------------


def search_thoughts(
    ctx: ToolContext,
    query: Annotated[
        str,
        Field(
            description=f"Words to find, Chinese or English (even one character); plain text, not a query "
            f"language. At most {MAX_QUERY_CHARS} characters (longer is TOO_LONG)",
            min_length=1,
        ),
    ],
    session_id: Annotated[
        str | None,
        Field(description="Search only this session", pattern=SESSION_ID_PATTERN),
    ] = None,
    limit: Annotated[int, Field(description="Most hits to return (1-100)", ge=1, le=100)] = 20,
) -> SearchOutput:
    """Search the thoughts of every session (or of one) by their text, stage and tags: hits ranked by
    relevance (BM25), thoughts holding every word first, each with its session, thoughtNumber, sequence
    and a snippet. Chinese and English; deleted sessions are never found."""
    from hostd_deep_thinking.search import plan_query, snippet

    if len(query) > MAX_QUERY_CHARS:
        raise ToolError(
            "TOO_LONG",
            ctx.text(
                en=f"query has {len(query)} characters; at most {MAX_QUERY_CHARS} are searched.",
                zh=f"query 有 {len(query)} 个字符；最多可搜索 {MAX_QUERY_CHARS} 个。",
            ),
            hint=ctx.text(
                en="Search for a few distinctive words instead of a whole text.",
                zh="请只搜索几个有代表性的词，而不是整段文字。",
            ),
            details={"argument": "query", "limit_chars": MAX_QUERY_CHARS},
        )
    plan = plan_query(query)
    if plan is None:
        raise ToolError(
            "INVALID_ARGUMENT",
            ctx.text(
                en="query holds no letters, digits or Chinese characters to search for.",
                zh="query 中没有可搜索的字母、数字或汉字。",
            ),
            hint=ctx.text(en="Give some words to look for.", zh="请给出要查找的词。"),
            details={"argument": "query"},
        )
    if session_id is not None:
        load_state(ctx, session_id)  # NOT_FOUND / READ_ERROR rather than an empty answer
    hits, truncated, strict = open_search(ctx.plugin).search(plan, session_id, limit)
    found = [
        ThoughtHit(
            session_id=hit.session_id,
            session_name=hit.session_name,
            thought_number=hit.thought_number,
            sequence=hit.sequence,
            type=cast(ThoughtType, hit.kind),  # written from a checked thought's type
            branch_id=hit.branch_id,
            stage=hit.stage,
            tags=hit.tags,
            snippet=snippet(hit.content, plan.terms),
            score=hit.score,
        )
        for hit in hits
    ]
    return SearchOutput(
        query=query,
        terms=plan.terms,
        matched="all_terms" if strict else "any_term",
        hits=found,
        truncated=truncated,
    ).with_message(
        ctx.text(
            en=f"{len(found)}{'+' if truncated else ''} thought(s) found for {query!r}.",
            zh=f"找到 {len(found)}{'+' if truncated else ''} 条与 {query!r} 相关的思考。",
        )
    )


# --- summaries -------------------------------------------------------------------------------


def summarize_session(
    ctx: ToolContext,
    session_id: SessionId,
    use_sampling: Annotated[
        bool,
        Field(
            description="Let the client's model write the summary when the client offers MCP sampling "
            "(false: always the structural summary)"
        ),
    ] = True,
) -> SummaryOutput:
    """Summarize a session: the stages it went through, its conclusions (the last thought of the main line
    and of each branch), revised thoughts and what replaced them, open branches and counts, in the
    server's language. Built from the session's structure and text; written by the client's own model
    when it offers MCP sampling (summarizer says which)."""
    from hostd_deep_thinking import summary

    state = load_state(ctx, session_id)
    with open_store(ctx.plugin).session_lock(session_id):
        # A copy: the state may grow under another call while the summary is written.
        state = SessionState(
            meta=dict(state.meta),
            thoughts=list(state.thoughts),
            adjustments=list(state.adjustments),
            branches=dict(state.branches),
        )
    template = find_template(ctx.plugin, state.meta.get("template_id"))
    spans = summary.stages(state, template, ctx.language)
    ends = summary.conclusions(state)
    notes = summary.revisions(state)
    numbers = summary.counts(state, notes)
    open_branches = [end.branch_id for end in ends if end.branch_id is not None and not end.final]
    text = summary.to_markdown(state, ctx.text, spans, ends, notes, numbers)
    summarizer: Literal["sampling", "structural"] = "structural"
    model = None
    warnings: list[Notice] = []
    # Nothing is written before this point: on the 2026-07-28 protocol the tool runs again from the
    # start once the client's model has answered, and asks the same question (it depends on the session).
    if use_sampling and ctx.can_sample and state.thoughts:
        answer = ctx.sample_sync(
            summary.sampling_prompt(state, ctx.language),
            system="You write faithful, concise summaries of a person's step-by-step reasoning.",
            max_tokens=1200,
        )
        if answer.available and answer.text and answer.text.strip():
            text, summarizer, model = answer.text.strip() + "\n", "sampling", answer.model
        else:
            reason = answer.reason or Text(en="empty answer", zh="空回答")
            warnings.append(
                Notice(
                    code="SAMPLING_FAILED",
                    message=ctx.text(
                        en=f"The client's model did not write the summary ({reason.en}); "
                        "this is the structural summary.",
                        zh=f"客户端模型未生成摘要（{reason.zh}）；以下为根据会话结构生成的摘要。",
                    ),
                )
            )
    return SummaryOutput(
        session_id=session_id,
        summarizer=summarizer,
        model=model,
        summary=text,
        stages=spans,
        conclusions=ends,
        revisions=notes,
        open_branches=open_branches,
        counts=numbers,
        warnings=warnings,
    ).with_message(
        ctx.text(
            en=f"Summary of '{session_id}' ({numbers.thoughts} thoughts), written by "
            + (
                "the client's model."
                if summarizer == "sampling"
                else "the server from the session's structure."
            ),
            zh=f"会话 '{session_id}'（{numbers.thoughts} 条思考）的摘要，"
            + ("由客户端模型撰写。" if summarizer == "sampling" else "由服务器根据会话结构生成。"),
        )
    )
