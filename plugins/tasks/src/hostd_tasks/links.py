"""Links with other plugins, both ways: the service tasks offers and the one it uses.

- Offered: ``tasks.links``, looked up by other plugins (deep-thinking's get_session) with
  ``ctx.services.get("tasks.links")``; it answers plain dicts, so the caller needs nothing from
  this package.
- Used: ``deep-thinking.sessions``, when that plugin is loaded, to check that a linked session
  exists and show its summary. Its absence, or a failure inside it, is not the caller's fault:
  it is reported as such (the link is then stored unchecked) and never raised.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import ValidationError

from hostd import PluginContext, Text, ToolContext, ToolError
from hostd_tasks.models import LinkedSession, Settings
from hostd_tasks.store import TaskStore

SERVICE_NAME = "tasks.links"
SESSIONS_SERVICE = "deep-thinking.sessions"


class SessionsService(Protocol):
    """What tasks uses of ``deep-thinking.sessions`` (declared here: plugins never import each other)."""

    def session_exists(self, session_id: str) -> bool: ...

    def session_summary(self, session_id: str) -> dict[str, object] | None: ...


class TaskLinks:
    """The ``tasks.links`` service: tasks linked to a deep-thinking session, most urgent first."""

    def __init__(self, context: PluginContext[Settings]) -> None:
        self._context = context

    def tasks_for_session(self, session_id: str) -> list[dict[str, Any]]:
        """Each linked task as ``{task_id, title, status, priority}``; empty when none is linked."""
        if not isinstance(session_id, str) or not session_id:
            return []
        return [
            {"task_id": task.task_id, "title": task.title, "status": task.status, "priority": task.priority}
            for task in TaskStore(self._context.database()).tasks_for_session(session_id)
        ]


#: How asking deep-thinking went: it answered, it is not loaded, or it failed inside.
SessionCheck = Literal["checked", "not_loaded", "failed"]


def ask_sessions(
    ctx: ToolContext[Settings], session_id: str
) -> tuple[SessionCheck, bool, LinkedSession | None]:
    """What deep-thinking says of a session: (how the check went, whether it exists, its summary)."""
    service = ctx.services.get(SESSIONS_SERVICE, SessionsService)
    if service is None:
        return "not_loaded", False, None
    try:
        exists = bool(service.session_exists(session_id))
        raw = service.session_summary(session_id) if exists else None
    except Exception:
        ctx.logger.exception("deep-thinking.sessions failed for session %s", session_id)
        return "failed", False, None
    summary = None
    if isinstance(raw, dict):
        try:
            summary = LinkedSession.model_validate({**raw, "session_id": session_id})
        except ValidationError:
            ctx.logger.warning("deep-thinking gave an unreadable summary for session %s", session_id)
    return "checked", exists, summary


def check_session(ctx: ToolContext[Settings], session_id: str) -> tuple[SessionCheck, LinkedSession | None]:
    """Ask deep-thinking whether the session exists: NOT_FOUND when it answers no.

    When it is not loaded or fails, the check is reported (``not_loaded`` / ``failed``), not raised.
    """
    check, exists, summary = ask_sessions(ctx, session_id)
    if check == "checked" and not exists:
        raise ToolError(
            "NOT_FOUND",
            Text(
                en=f"Session '{session_id}' does not exist in deep-thinking.",
                zh=f"deep-thinking 中不存在会话 '{session_id}'。",
            ),
            hint=Text(
                en="list_sessions shows the existing sessions; create_session makes one.",
                zh="list_sessions 可列出现有会话；create_session 可创建会话。",
            ),
            details={"argument": "session_id", "session_id": session_id},
        )
    return check, summary
