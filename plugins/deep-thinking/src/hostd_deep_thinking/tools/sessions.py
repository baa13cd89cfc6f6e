"""Session management: create, show, list, delete, restore, change status, resume.

Stores raise their own ``ToolError``s (no such session, a damaged one, already exists), so
these tools only say what succeeded. ``get_session`` and ``list_sessions`` page with the host's
opaque cursor (``hostd.paging``), bound to the listing and its filters; both positions are
keysets (a thought's sequence number; a session's update time and id), so pages stay stable
while thoughts are added.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from typing import Annotated, Any, cast

from hostd.paging import DEFAULT_LIMIT, Cursor, Limit, decode_cursor, encode_cursor
from pydantic import Field

from hostd import NotConfirmed, Text, ToolError
from hostd_deep_thinking.jsonshape import shape_problem
from hostd_deep_thinking.links import linked_tasks
from hostd_deep_thinking.models import (
    BACKUP_NAME_PATTERN,
    MAX_STAGE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_THOUGHTS,
    MEMBER_NAME_PATTERN,
    SESSION_ID_PATTERN,
    Adjustment,
    DeleteSessionOutput,
    GetSessionOutput,
    ListSessionsOutput,
    Progress,
    RestoreSessionOutput,
    ResumeOutput,
    SessionOutput,
    SessionStatus,
    SessionSummary,
    UpdateStatusOutput,
)
from hostd_deep_thinking.store import SessionExists, SessionListing, SessionState, new_document, session_store
from hostd_deep_thinking.store.index import listing_key
from hostd_deep_thinking.thinking import label_key
from hostd_deep_thinking.thinking_templates import step_after
from hostd_deep_thinking.tools.common import (
    Context,
    SessionId,
    check_metadata,
    load_state,
    notice,
    record_of,
    recovery_notices,
    resource_uri,
    session_link,
    status_text,
    summary_of,
)
from hostd_deep_thinking.tools.templates import all_templates, find_template, unknown_template

MAX_METADATA_BYTES = 64 * 1024


def create_session(
    ctx: Context,
    name: Annotated[str, Field(description="Session name", min_length=1, max_length=200)],
    description: Annotated[str, Field(description="What the session is about", max_length=5000)] = "",
    metadata: Annotated[dict[str, Any], Field(description="Free-form JSON, at most 64 KiB")] = {},  # noqa: B006 - the host validates into a fresh dict per call
    template_id: Annotated[
        str | None,
        Field(
            description="A list_templates id",
            max_length=64,
        ),
    ] = None,
    session_id: Annotated[
        str | None,
        Field(description="Id to use instead of a new UUID", pattern=SESSION_ID_PATTERN),
    ] = None,
) -> SessionOutput:
    """Create a thinking session, optionally from a template."""
    check_metadata(metadata)  # first: what it refuses (lone surrogates, depth) cannot be measured
    if len(json.dumps(metadata, ensure_ascii=False).encode("utf-8")) > MAX_METADATA_BYTES:
        raise ToolError(
            "TOO_LONG",
            Text(en="metadata is larger than 64 KiB.", zh="metadata 超过 64 KiB。"),
            hint=Text(
                en="Keep metadata small; put long text in thoughts.", zh="请精简 metadata，长文本请写入思考。"
            ),
            details={"argument": "metadata", "limit_bytes": MAX_METADATA_BYTES},
        )
    total = None
    template = None
    if template_id is not None:
        templates, problems = all_templates(ctx)
        template = templates.get(template_id)
        if template is None:
            raise unknown_template(template_id, list(templates), problems)
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
        state = session_store(ctx).create(document)
    except SessionExists as exc:
        # This tool has no overwrite: the way out is another id.
        exc.hint = Text(en="Choose another session_id, or omit it.", zh="请换一个 session_id，或不指定。")
        raise
    message = Text(en=f"Created session '{new_id}'.", zh=f"已创建会话 '{new_id}'。")
    first = step_after(template, 0, ctx.language)
    if first is not None:
        message += Text(en=f" First step: {first.title}.", zh=f" 第一步：{first.title}。")
    summary = summary_of(state)
    return (
        SessionOutput(session=summary)
        .with_links(session_link(summary.session_id, summary.name))
        .with_message(message)
    )


def has_labels(thought: dict[str, Any], stage: str | None, tags: list[str]) -> bool:
    """Whether a stored thought has the stage and every tag asked for (compared by ``label_key``)."""
    if stage is not None and label_key(str(thought.get("stage") or "")) != label_key(stage):
        return False
    carried = {label_key(tag) for tag in thought.get("tags") or []}
    return all(label_key(tag) in carried for tag in tags)


def get_session(
    ctx: Context,
    session_id: SessionId,
    stage: Annotated[
        str | None,
        Field(
            description="Only thoughts of this stage",
            min_length=1,
            max_length=MAX_STAGE_CHARS,
        ),
    ] = None,
    tags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]] | None,
        Field(description="Only thoughts with all these tags", max_length=MAX_TAGS),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
) -> GetSessionOutput:
    """Show a session: summary, a page of its thoughts (optionally by stage or tags), adjustments and linked
    tasks.
    """
    filters = {"session_id": session_id, "stage": stage, "tags": tags}
    position = decode_cursor(cursor, "get_session", filters)
    after = position if isinstance(position, int) else 0
    store = session_store(ctx)
    state = load_state(ctx, session_id)
    with store.session_lock(session_id):
        chosen = state.thoughts
        if stage is not None or tags:
            chosen = [thought for thought in chosen if has_labels(thought, stage, tags or [])]
        sequences = [int(thought["seq"]) for thought in chosen]
        start = bisect_right(sequences, after)
        page = chosen[start : start + limit]
        more = start + limit < len(chosen)
        summary = summary_of(state)
        adjustments = [Adjustment.model_validate(item) for item in state.adjustments]
        log = list(state.meta.get("recovery_log") or [])
    tasks, task_notices = linked_tasks(ctx, session_id)
    result = GetSessionOutput(
        session=summary,
        thoughts=[record_of(thought) for thought in page],
        next_cursor=encode_cursor("get_session", filters, int(page[-1]["seq"])) if more and page else None,
        truncated=more,
        adjustments=adjustments,
        linked_tasks=tasks,
        warnings=[*recovery_notices(ctx, log), *task_notices],
        matching_thoughts=len(chosen),
    )
    filtered = (
        Text(en=f", {len(chosen)} match the filter", zh=f"，其中 {len(chosen)} 条符合筛选")
        if stage is not None or tags
        else ""
    )
    return result.with_message(
        Text(
            en=f"Session '{session_id}': {summary.thought_count} thoughts",
            zh=f"会话 '{session_id}'：共 {summary.thought_count} 条思考",
        )
        + filtered
        + Text(en=f", showing {len(page)}.", zh=f"，本页 {len(page)} 条。")
    )


def list_sessions(
    ctx: Context,
    status: Annotated[SessionStatus | None, Field(description="Only sessions with this status")] = None,
    created_by: Annotated[
        str | None,
        Field(
            description="Only sessions this member created",
            pattern=MEMBER_NAME_PATTERN,
        ),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    cursor: Cursor = None,
    deleted: Annotated[
        bool,
        Field(
            description="List the deleted sessions restore_session brings back instead, newest delete first"
        ),
    ] = False,
) -> ListSessionsOutput:
    """List sessions, newest first."""
    from pydantic import ValidationError

    if deleted:
        return _list_deleted(ctx, status, created_by, limit, cursor)
    filters = {"status": status, "created_by": created_by}
    position = decode_cursor(cursor, "list_sessions", filters)
    after = (
        (str(position[0]), str(position[1])) if isinstance(position, list) and len(position) == 2 else None
    )
    listed = session_store(ctx).list_summaries(
        SessionListing(status=status, limit=limit, created_by=created_by, after=after)
    )
    rows, total = listed.rows, listed.total
    last = listing_key(rows[-1]) if rows else None
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
        notice(
            "SESSION_UNREADABLE",
            Text(
                en=f"Session '{session_id}' is damaged and not listed; get_session says what is wrong.",
                zh=f"会话 '{session_id}' 已损坏，未列出；get_session 可说明问题所在。",
            ),
        )
        for session_id in unreadable_ids
    ]
    return ListSessionsOutput(
        sessions=sessions,
        total=total,
        unreadable_sessions=unreadable_ids,
        warnings=warnings,
        next_cursor=encode_cursor("list_sessions", filters, list(last)) if listed.more and last else None,
        truncated=listed.more,
    ).with_message(
        Text(
            en=f"{total} session(s), showing {len(sessions)}.",
            zh=f"共 {total} 个会话，显示 {len(sessions)} 个。",
        )
        + (
            Text(
                en=f" {len(unreadable_ids)} damaged: {', '.join(unreadable_ids)}.",
                zh=f" {len(unreadable_ids)} 个已损坏：{'、'.join(unreadable_ids)}。",
            )
            if unreadable_ids
            else ""
        )
    )


def _list_deleted(
    ctx: Context, status: SessionStatus | None, created_by: str | None, limit: int, cursor: str | None
) -> ListSessionsOutput:
    """``list_sessions(deleted=true)``: each deleted session as its newest delete's backup holds it,
    newest delete first (backup names begin with their time), paged by (backup, id)."""
    filters = {"status": status, "created_by": created_by, "deleted": True}
    position = decode_cursor(cursor, "list_sessions", filters)
    after = (
        (str(position[0]), str(position[1])) if isinstance(position, list) and len(position) == 2 else None
    )
    found = []
    for session_id, document, backup in session_store(ctx).deleted_sessions():
        summary = summary_of(SessionState.from_document(document))
        if status is not None and summary.status != status:
            continue
        if created_by is not None and summary.created_by != created_by:
            continue
        found.append(((backup, session_id), summary))
    found.sort(key=lambda item: item[0], reverse=True)
    total = len(found)
    if after is not None:
        found = [item for item in found if item[0] < after]
    page, more = found[:limit], len(found) > limit
    return ListSessionsOutput(
        sessions=[summary for _, summary in page],
        total=total,
        unreadable_sessions=[],
        warnings=[],
        next_cursor=encode_cursor("list_sessions", filters, list(page[-1][0])) if more and page else None,
        truncated=more,
    ).with_message(
        Text(
            en=f"{total} deleted session(s) restore_session can bring back, showing {len(page)}.",
            zh=f"共 {total} 个可用 restore_session 恢复的已删除会话，显示 {len(page)} 个。",
        )
    )


def delete_session(ctx: Context, session_id: SessionId) -> DeleteSessionOutput:
    """Delete a session after taking a backup (restore_session brings it back)."""
    store = session_store(ctx)
    if store.exists(session_id):  # one that does not exist is refused without asking
        answer = ctx.confirm_sync(
            Text(
                en=f"Delete the thinking session '{session_id}'? A backup is kept: "
                "restore_session brings it back.",
                zh=f"删除思考会话 '{session_id}'？会保留备份：可用 restore_session 恢复。",
            )
        )
        if answer == "declined" or answer == "cancelled":
            raise NotConfirmed(
                answer,
                Text(en=f"Session '{session_id}' is kept as it was.", zh=f"会话 '{session_id}' 保持原样。"),
            )
    backup = store.delete(session_id)
    backup_id = None if backup is None else store.backup_id(session_id, backup)
    restore_call = {"session_id": session_id, "backup": backup_id} if backup_id else None
    ctx.resource_changed(resource_uri(session_id))
    if restore_call is not None:
        message = Text(
            en=f"Deleted session '{session_id}' (backup kept); "
            f"restore_session(session_id='{session_id}') brings it back.",
            zh=f"已删除会话 '{session_id}'（已保留备份）；"
            f"可用 restore_session(session_id='{session_id}') 恢复。",
        )
    else:
        message = Text(
            en=f"Deleted session '{session_id}' (its damaged file is kept as {backup}).",
            zh=f"已删除会话 '{session_id}'（损坏的文件保留为 {backup}）。",
        )
    return DeleteSessionOutput(
        session_id=session_id, deleted=True, backup=backup, backup_id=backup_id, restore_call=restore_call
    ).with_message(message)


def restore_session(
    ctx: Context,
    session_id: SessionId,
    backup: Annotated[
        str | None,
        Field(
            description="Backup name (delete_session's backup_id); omitted: the latest",
            pattern=BACKUP_NAME_PATTERN,
        ),
    ] = None,
    overwrite: Annotated[bool, Field(description="Replace a live session of that id")] = False,
) -> RestoreSessionOutput:
    """Restore a deleted session from its backups."""
    store = session_store(ctx)
    state, restored_from, replaced = store.restore(session_id, backup, replace=overwrite)
    kept = store.backup_names(session_id)
    return (
        RestoreSessionOutput(
            session=summary_of(state),
            restored_from=restored_from,
            replaced=replaced and overwrite,
            backups=kept,
        )
        .with_links(session_link(session_id, state.meta.get("name")))
        .with_message(
            Text(
                en=f"Restored session '{session_id}' ({len(state.thoughts)} thoughts) "
                f"from backup {restored_from}.",
                zh=f"已从备份 {restored_from} 恢复会话 '{session_id}'（{len(state.thoughts)} 条思考）。",
            )
        )
    )


def _change_status(ctx: Context, session_id: str, status: str) -> tuple[SessionState, SessionStatus]:
    def change(state: SessionState) -> SessionStatus:
        previous = cast(SessionStatus, str(state.meta.get("status", "active")))
        state.meta["status"] = status
        return previous

    state, previous = session_store(ctx).update_meta(session_id, change)
    return state, previous


def update_session_status(
    ctx: Context,
    session_id: SessionId,
    status: Annotated[SessionStatus, Field(description="The new status")],
) -> UpdateStatusOutput:
    """Set a session's status (archived sessions refuse new thoughts)."""
    state, previous = _change_status(ctx, session_id, status)
    answer = UpdateStatusOutput(session=summary_of(state), previous_status=previous)
    return answer.with_links(session_link(session_id, state.meta.get("name"))).with_message(
        Text(en=f"Session '{session_id}': ", zh=f"会话 '{session_id}'：")
        + status_text(previous)
        + " → "
        + status_text(status)
        + Text(en=".", zh="。")
    )


def resume_session(ctx: Context, session_id: SessionId) -> ResumeOutput:
    """Pick a session up again: last thought, progress and the next sequential_thinking call."""
    state = load_state(ctx, session_id)
    reactivated = False
    if state.meta.get("status") != "active":
        state, _ = _change_status(ctx, session_id, "active")
        reactivated = True
    store = session_store(ctx)
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
        "thought": ctx.render(Text(en="<your next thought>", zh="<你的下一条思考>")),
        "thoughtNumber": next_number,
        "totalThoughts": max(int(total or 1), next_number),
        "nextThoughtNeeded": True,
    }
    if last is not None and last.get("branch_id") and last.get("branch_from_thought") is not None:
        next_call["branchFromThought"] = last["branch_from_thought"]
        next_call["branchId"] = last["branch_id"]
    next_step = step_after(
        find_template(ctx, template_id),
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
    message = Text(
        en=f"Session '{session_id}' resumed at thought {current or 0} of {total or '?'}.",
        zh=f"会话 '{session_id}' 从第 {current or 0}/{total or '?'} 条思考继续。",
    )
    if reactivated:
        message += Text(en=" It is active again.", zh=" 已重新激活。")
        ctx.resource_changed(resource_uri(session_id))
    return ResumeOutput(
        session=summary,
        last_thought=record_of(last) if last else None,
        progress=progress,
        adjustments=adjustments,
        next_call=next_call,
        next_step=next_step,
        reactivated=reactivated,
    ).with_message(message)
