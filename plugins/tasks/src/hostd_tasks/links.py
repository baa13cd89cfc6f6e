"""The ``tasks.links`` service: what deep-thinking (or any plugin) may ask about linked tasks.

Looked up by other plugins with ``ctx.services.get("tasks.links")``; answers plain dicts so the
caller needs nothing from this package.
"""

from __future__ import annotations

from typing import Any

from hostd import PluginContext
from hostd_tasks.access import store_for

SERVICE_NAME = "tasks.links"


class TaskLinks:
    """Tasks linked to a deep-thinking session, most urgent first."""

    def __init__(self, context: PluginContext) -> None:
        self._context = context

    def tasks_for_session(self, session_id: str) -> list[dict[str, Any]]:
        """Each linked task as ``{task_id, title, status, priority}``; empty when none is linked."""
        if not isinstance(session_id, str) or not session_id:
            return []
        return [
            {"task_id": task.task_id, "title": task.title, "status": task.status, "priority": task.priority}
            for task in store_for(self._context).tasks_for_session(session_id)
        ]
