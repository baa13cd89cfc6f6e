"""What every area of the tools shares: loading a session, turning stored dicts into answers,
the checks on free-form metadata and the ``session_id`` parameter.

Store conditions (no such session, a damaged one) are ``ToolError``s raised by the store
itself (``store/refusals.py``), so nothing here translates them.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import Field

from hostd import ResourceLink, Text, ToolContext, ToolError
from hostd_deep_thinking.jsonshape import MAX_NESTING, shape_problem
from hostd_deep_thinking.models import (
    SESSION_ID_PATTERN,
    Notice,
    SessionSummary,
    Settings,
    ThoughtRecord,
)
from hostd_deep_thinking.store import SessionNotFound, SessionState, session_store

#: The context every deep-thinking tool gets.
Context = ToolContext[Settings]

#: A session as an MCP resource (``resources``): ``thinking://<session_id>``, its Markdown export.
MIME_TYPE = "text/markdown"


def resource_uri(session_id: str) -> str:
    return f"thinking://{session_id}"


def session_link(session_id: str, name: str | None = None) -> ResourceLink:
    """A link to a session's resource, for a tool's answer."""
    return ResourceLink(uri=resource_uri(session_id), name=session_id, title=name, mime_type=MIME_TYPE)


SessionId = Annotated[
    str,
    Field(
        description="Session id",
        pattern=SESSION_ID_PATTERN,
    ),
]


def load_state(ctx: Context, session_id: str) -> SessionState:
    """The session, or NOT_FOUND; a damaged one that nothing can rebuild is the store's READ_ERROR."""
    state = session_store(ctx).load(session_id)
    if state is None:
        raise SessionNotFound(session_id)
    return state


def notice(code: str, message: Text) -> Notice:
    """A warning of an answer (the host writes its message in the caller's language)."""
    return Notice(code=code, message=message)


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


#: The repairs the file store records (``recovery_log`` keeps its English words as stored data), in Chinese.
_REPAIRS_ZH: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"the session document is missing"), "会话文档缺失"),
    (re.compile(r"the session document is damaged.*"), "会话文档已损坏"),
    (
        re.compile(r"a partial journal line from an interrupted write was removed"),
        "已删除中断写入留下的半行日志",
    ),
    (re.compile(r"journal line (\d+) is damaged and was skipped.*"), r"日志第 \1 行已损坏，已跳过"),
    (re.compile(r"backup (\S+) and journal"), r"备份 \1 和日志"),
    (
        re.compile(r"journal \(no backup; name and metadata were lost\)"),
        "日志（没有备份；名称和元数据已丢失）",
    ),
    (re.compile(r"journal"), "日志"),
]


def _repair_zh(words: str) -> str:
    for pattern, chinese in _REPAIRS_ZH:
        if pattern.fullmatch(words):
            return pattern.sub(chinese, words)
    return "会话文件有问题（详情见 recovery_log）"


def recovery_notices(ctx: Context, notes: list[dict[str, Any]]) -> list[Notice]:
    """The repairs the store made while loading, as RECOVERED warnings."""
    notices = []
    for note in notes:
        problem = str(note.get("problem"))
        source = str(note.get("recovered_from", "journal"))
        message = Text(
            en=f"The session files needed repair: {problem}; recovered from {source}.",
            zh=f"会话文件经过修复：{_repair_zh(problem)}；已从{_repair_zh(source)}恢复。",
        )
        notices.append(notice("RECOVERED", message))
    return notices


def check_metadata(metadata: dict[str, Any]) -> None:
    """Refuse metadata that could be stored but never shown again (too deep, NaN/Infinity)."""
    problem = shape_problem(metadata)
    if problem is None:
        return
    if problem == "too_deep":
        message = Text(
            en=f"metadata is nested deeper than {MAX_NESTING} levels.",
            zh=f"metadata 嵌套超过 {MAX_NESTING} 层。",
        )
    elif problem == "not_finite":
        message = Text(
            en="metadata holds NaN or Infinity, which JSON cannot carry.",
            zh="metadata 含有 NaN 或 Infinity，JSON 无法表示。",
        )
    else:
        message = Text(
            en="metadata holds a lone surrogate (such as \\udc00) in a key or value: not valid Unicode.",
            zh="metadata 的键或值含有单独的代理码点（如 \\udc00），不是有效的 Unicode。",
        )
    raise ToolError(
        "INVALID_ARGUMENT",
        message,
        hint=Text(
            en="Keep metadata flat, use plain numbers and valid Unicode text.",
            zh="请让 metadata 保持扁平，并使用普通数字和有效的 Unicode 文本。",
        ),
        details={"argument": "metadata", "problem": problem},
    )


_STATUS_TEXT = {
    "active": Text(en="active", zh="进行中"),
    "completed": Text(en="completed", zh="已完成"),
    "archived": Text(en="archived", zh="已归档"),
}


def status_text(status: str) -> Text:
    """A session's status in words (the value itself in English)."""
    return _STATUS_TEXT.get(status, Text.same(status))
