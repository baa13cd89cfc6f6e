"""What deep-thinking offers other plugins and uses from them, in one place.

Offered: the ``deep-thinking.sessions`` service (tasks checks and describes the sessions a
task links to). Used: the tasks plugin's ``tasks.links`` (``get_session`` shows the tasks
linked to a session when that plugin is loaded).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from hostd import PluginContext, Text
from hostd_deep_thinking.models import LinkedTask, Notice
from hostd_deep_thinking.store import StoreError, session_store

if TYPE_CHECKING:
    from hostd_deep_thinking.models import Settings
    from hostd_deep_thinking.tools.common import Context

#: The service this plugin offers.
SESSIONS_SERVICE = "deep-thinking.sessions"
#: The tasks plugin's service this plugin uses.
TASKS_SERVICE = "tasks.links"


class TaskLinksService(Protocol):
    """What deep-thinking uses of ``tasks.links`` (declared here: plugins never import each other)."""

    def tasks_for_session(self, session_id: str) -> list[dict[str, object]]: ...


class SessionService:
    """Read-only questions about sessions, answered from this plugin's store."""

    def __init__(self, plugin: PluginContext[Settings]) -> None:
        self._plugin = plugin

    def session_exists(self, session_id: str) -> bool:
        store = session_store(self._plugin)
        try:
            return store.load(session_id) is not None
        except StoreError:
            return store.exists(session_id)  # damaged but present

    def session_summary(self, session_id: str) -> dict[str, Any] | None:
        try:
            state = session_store(self._plugin).load(session_id)
        except StoreError:
            return None
        if state is None:
            return None
        summary = state.summary()
        return {key: summary[key] for key in ("session_id", "name", "status", "thought_count")}


def linked_tasks(ctx: Context, session_id: str) -> tuple[list[LinkedTask] | None, list[Notice]]:
    """Tasks of the tasks plugin linked to the session, through its service; ``None`` when it is absent."""
    service = ctx.services.get(TASKS_SERVICE, TaskLinksService)
    if service is None:
        return None, [
            Notice(
                code="TASKS_UNAVAILABLE",
                message=(
                    Text(
                        en="The tasks plugin is not loaded: linked tasks are not shown.",
                        zh="未加载 tasks 插件：不显示关联任务。",
                    )
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
                message=(
                    Text(
                        en="The tasks plugin could not list linked tasks.", zh="tasks 插件无法列出关联任务。"
                    )
                ),
            )
        ]
