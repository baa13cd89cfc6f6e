"""The ``deep-thinking.sessions`` service other plugins (tasks) use to check and describe sessions."""

from __future__ import annotations

from typing import Any

from hostd import PluginContext
from hostd_deep_thinking.store import StoreError


class SessionService:
    """Read-only questions about sessions, answered from this plugin's store."""

    def __init__(self, plugin: PluginContext) -> None:
        self._plugin = plugin

    def _store(self) -> Any:
        from hostd_deep_thinking.tools import open_store

        return open_store(self._plugin)

    def session_exists(self, session_id: str) -> bool:
        try:
            return bool(self._store().load(session_id) is not None)
        except StoreError:
            return self._store().exists(session_id)  # damaged but present

    def session_summary(self, session_id: str) -> dict[str, Any] | None:
        try:
            state = self._store().load(session_id)
        except StoreError:
            return None
        if state is None:
            return None
        summary = state.summary()
        return {key: summary[key] for key in ("session_id", "name", "status", "thought_count")}
