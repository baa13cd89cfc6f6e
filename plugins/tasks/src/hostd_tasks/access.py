"""How tools and the ``tasks.links`` service reach the one store of a plugin context.

The store (and with it sqlite3 and hostd_fs) is imported and opened on first use, never at
plugin import, so server start-up stays cheap; the host closes it at shut-down.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostd import PluginContext

if TYPE_CHECKING:
    from hostd_tasks.store import TaskStore

STORE_KEY = "store"
DEFAULT_DATABASE = "tasks.db"


def store_for(context: PluginContext) -> TaskStore:
    """The plugin's task store, opened lazily (once per server, shared by every thread)."""

    def open_store() -> TaskStore:
        from hostd_tasks.store import TaskStore

        database = context.settings.database if context.settings is not None else DEFAULT_DATABASE
        return TaskStore(context.data_dir / database)

    return context.resource(STORE_KEY, open_store)
