"""Thinking sessions as MCP resources: ``thinking://<session_id>``, read as their Markdown export.

Listed through the ``list_sessions`` tool (newest first, same paging) and read through
``export_session`` with ``format="markdown"``, so a resource is exactly what the export says.
The tools' links to a session (``tools.common.session_link``) name the same URIs.
"""

from __future__ import annotations

import re
from pathlib import Path

from hostd import CodedError, ResourceInfo, ResourcePage, ResourceText, Text, ToolContext
from hostd_deep_thinking.models import SESSION_ID_PATTERN, Settings
from hostd_deep_thinking.tools.common import MIME_TYPE as MIME_TYPE
from hostd_deep_thinking.tools.common import resource_uri

TEMPLATE = "thinking://{session_id}"
PAGE = 50


def list_resources(ctx: ToolContext[Settings], cursor: str | None) -> ResourcePage:
    from hostd_deep_thinking.tools.sessions import list_sessions

    page = list_sessions(ctx, limit=PAGE, cursor=cursor)
    return ResourcePage(
        resources=[
            ResourceInfo(
                uri=resource_uri(session.session_id),
                name=session.session_id,
                title=session.name,
                description=f"{session.status}, {session.thought_count} thoughts",
                mime_type=MIME_TYPE,
                updated_at=session.updated_at,
            )
            for session in page.sessions
        ],
        next_cursor=page.next_cursor,
    )


def _no_roots() -> list[Path]:
    """The roots of a resource read: it writes no file (``export_session`` without ``output_path``)."""
    raise RuntimeError("a resource read writes no file")


_SESSION_ID = re.compile(SESSION_ID_PATTERN)


def checked_session_id(session_id: str) -> str:
    """The id of a ``thinking://`` URI, refused as the tools refuse it (INVALID_ARGUMENT naming the
    argument and the pattern): the resource calls the tool's function directly, past the host's
    argument check, and a store must never see ``..``, a NUL byte or an id too long for a file name."""
    if _SESSION_ID.fullmatch(session_id) is None:
        raise CodedError(
            "INVALID_ARGUMENT",
            Text(
                en=f"Invalid argument 'session_id': it must match {SESSION_ID_PATTERN}.",
                zh=f"参数 'session_id' 无效：须匹配 {SESSION_ID_PATTERN}。",
            ),
            hint=Text(
                en="Session ids are 1-64 letters, digits, '_', '-' or '.', not starting with '.'.",
                zh="会话 id 为 1-64 个字母、数字、'_'、'-' 或 '.'，且不以 '.' 开头。",
            ),
            details={"argument": "session_id", "problem": "string_pattern_mismatch"},
        )
    return session_id


def read_resource(ctx: ToolContext[Settings], params: dict[str, str]) -> ResourceText:
    from hostd_deep_thinking.tools.export_import import export_session

    session_id = checked_session_id(params["session_id"])
    exported = export_session(ctx, _no_roots, session_id=session_id, format="markdown")
    return ResourceText(
        uri=resource_uri(exported.session_id), text=exported.content or "", mime_type=MIME_TYPE
    )


def complete_argument(
    ctx: ToolContext[Settings], argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    """Session ids starting with ``prefix``, newest first."""
    from hostd_deep_thinking.prompts import session_ids

    return session_ids(ctx, prefix) if argument == "session_id" else []
