"""``sequential_thinking``: one thought into a durable session, the official tool's contract.

The rules of a thought (validation, type, references, totals) live in ``thinking.py``; this
module picks the session (the given one, or the caller's default session, starting a new
default when the old one is archived or deleted), stores the thought through the store and
says what happened. On files the common case runs on the event loop; anything that could wait
goes to a worker thread.
"""

from __future__ import annotations

import datetime
import secrets
from typing import Annotated, Any

import anyio
from pydantic import Field

from hostd import Text
from hostd_deep_thinking.models import (
    BRANCH_ID_PATTERN,
    MAX_STAGE_CHARS,
    MAX_TAG_CHARS,
    MAX_TAGS,
    MAX_THOUGHT_CHARS,
    MAX_THOUGHTS,
    SESSION_ID_PATTERN,
    Adjustment,
    DefaultSessionChange,
    Notice,
    ThoughtOutput,
)
from hostd_deep_thinking.store import (
    Appended,
    SessionNotFound,
    SessionState,
    SessionStore,
    WouldBlock,
    new_document,
    session_store,
)
from hostd_deep_thinking.thinking import ThoughtRequest, check_request, clean_labels, plan_thought
from hostd_deep_thinking.thinking_templates import step_after
from hostd_deep_thinking.tools.common import Context, notice, recovery_notices, session_link
from hostd_deep_thinking.tools.templates import find_template


def default_session_document(ctx: Context, session_id: str) -> dict[str, Any]:
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    name = ctx.render(Text(en=f"Thinking session {now}", zh=f"思考会话 {now}"))
    return new_document(session_id, name=name, is_default=True, created_by=ctx.member)


def new_default_id() -> str:
    stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%d-%H%M%S")
    return f"default-{stamp}-{secrets.token_hex(3)}"


class _ArchivedDefault(Exception):
    """The default session is archived: the call starts a new default session instead (and says so)."""


# --- sequential_thinking -------------------------------------------------------------


async def sequential_thinking(
    ctx: Context,
    thought: Annotated[
        str,
        Field(description="Your current thinking step", min_length=1, max_length=MAX_THOUGHT_CHARS),
    ],
    nextThoughtNeeded: Annotated[bool, Field(description="Whether another thought is needed")],
    thoughtNumber: Annotated[
        int,
        Field(description="Current thought number", ge=1, le=MAX_THOUGHTS),
    ],
    totalThoughts: Annotated[int, Field(description="Estimated total thoughts", ge=1)],
    session_id: Annotated[
        str | None,
        Field(
            description="Session, created on first use; omitted: your default one",
            pattern=SESSION_ID_PATTERN,
        ),
    ] = None,
    isRevision: Annotated[bool, Field(description="Revises an earlier thought")] = False,
    revisesThought: Annotated[int | None, Field(description="The thoughtNumber revised", ge=1)] = None,
    branchFromThought: Annotated[int | None, Field(description="thoughtNumber branched from", ge=1)] = None,
    branchId: Annotated[
        str | None,
        Field(
            description="Branch id",
            pattern=BRANCH_ID_PATTERN,
        ),
    ] = None,
    needsMoreThoughts: Annotated[bool, Field(description="Need more thoughts than planned")] = False,
    stage: Annotated[
        str | None,
        Field(
            description="Stage, e.g. analysis, conclusion",
            min_length=1,
            max_length=MAX_STAGE_CHARS,
        ),
    ] = None,
    tags: Annotated[
        list[Annotated[str, Field(min_length=1, max_length=MAX_TAG_CHARS)]] | None,
        Field(
            description="Short labels",
            max_length=MAX_TAGS,
        ),
    ] = None,
) -> ThoughtOutput:
    """Think step by step: a thought may revise an earlier one (isRevision, revisesThought) or branch
    (branchFromThought, branchId); set nextThoughtNeeded false when done. Thoughts are kept in sessions.
    """
    clean_stage, clean_tags = clean_labels(stage, tags)
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
    check_request(request)
    store = session_store(ctx)
    notices: list[Notice] = []

    def plan(state: SessionState, implicit: bool) -> tuple[dict[str, Any], dict[str, Any] | None]:
        if implicit and state.meta.get("status") == "archived":
            raise _ArchivedDefault
        planned, adjustment, found = plan_thought(state, request)
        notices.extend(notice(remark.code, remark.message) for remark in found)
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
    stored = appended.thought
    next_label = stored["thought_number"] if stored["type"] == "regular" else appended.max_regular_label
    next_step = step_after(find_template(ctx, appended.template_id), next_label, ctx.language)
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
    message = Text(
        en=f"Thought {stored['thought_number']}/{stored['total_thoughts']} stored in session '{target}' "
        f"(#{stored['seq']}).",
        zh=f"思考 {stored['thought_number']}/{stored['total_thoughts']} "
        f"已保存到会话 '{target}'（#{stored['seq']}）。",
    )
    if change is not None:
        code, words = default_change_remark(change, target)
        result.warnings.append(notice(code, words))
        message += " " + words
    if next_step is not None:
        message += Text(en=f" Next step: {next_step.title}.", zh=f" 下一步：{next_step.title}。")
    return result.with_links(session_link(target)).with_message(message)


def default_change_remark(change: DefaultSessionChange, target: str) -> tuple[str, Text]:
    """What to tell a caller without session_id whose default session is gone or archived."""
    previous = change.previous_session_id
    if change.reason == "archived":
        return "DEFAULT_SESSION_ARCHIVED", Text(
            en=f"The default session '{previous}' is archived, so this thought started the new "
            f"default session '{target}'. To continue the archived one, call resume_session and pass "
            f"session_id='{previous}'.",
            zh=f"默认会话 '{previous}' 已归档，因此这条思考开启了新的默认会话 '{target}'。"
            f"如需继续原会话，请调用 resume_session 并传入 session_id='{previous}'。",
        )
    return "DEFAULT_SESSION_DELETED", Text(
        en=f"The default session '{previous}' was deleted, so this thought started the new default "
        f"session '{target}'. restore_session(session_id='{previous}') brings the deleted one back.",
        zh=f"默认会话 '{previous}' 已删除，因此这条思考开启了新的默认会话 '{target}'。"
        f"可用 restore_session(session_id='{previous}') 恢复已删除的会话。",
    )
