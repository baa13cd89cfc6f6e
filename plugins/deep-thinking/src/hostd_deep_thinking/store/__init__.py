"""The deep-thinking plugin's store, and the one way to open it: ``store_for(ctx)``.

Sessions live in the plugin's data folder (``files.SessionStore``, the default) or, with
``storage`` in the config, in the team database (``postgres.PostgresSessionStore``); both
provide ``backend.SessionBackend`` with the same rules, so tools never ask which one they have.
The parts: ``documents`` (a session's shape and state), ``errors`` (what a store refuses, as
the errors callers see), ``files`` with ``layout``, ``index``, ``backups``, ``defaults`` and
``changes``, and ``postgres`` with ``postgres_schema``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from hostd import PluginContext, ToolContext
from hostd_deep_thinking.store.backend import (
    BACKUPS_KEPT,
    DELETED_LABEL,
    Appended,
    Searcher,
    SessionBackend,
    SummaryPage,
)
from hostd_deep_thinking.store.documents import FORMAT_VERSION, SessionState, new_document
from hostd_deep_thinking.store.errors import (
    BackupNotFound,
    SessionExists,
    SessionNotFound,
    SessionUnreadable,
    StoreError,
    WouldBlock,
)
from hostd_deep_thinking.store.files import SessionStore

if TYPE_CHECKING:
    from hostd_db import PostgresDatabase

    from hostd_deep_thinking.models import Settings

    AnyContext = ToolContext[Settings] | PluginContext[Settings]


def _plugin(context: AnyContext) -> PluginContext[Settings]:
    return context.plugin if isinstance(context, ToolContext) else context


def team_database(context: AnyContext) -> PostgresDatabase:
    """The plugin's tables in the team database (``storage`` in the config), opened once."""
    from hostd_deep_thinking.store.postgres_schema import MIGRATIONS

    plugin = _plugin(context)
    return plugin.resource("team-db", lambda: plugin.team_database(MIGRATIONS))


def store_for(context: AnyContext) -> SessionBackend:
    """The plugin's one store, opened on first use and closed by the host at shut-down: the team
    database when ``storage`` is configured, else the session files in the plugin's data folder."""
    plugin = _plugin(context)
    # Opened before the store: ``resource`` holds its lock while a factory runs.
    database = team_database(plugin) if plugin.storage is not None else None

    def factory() -> SessionBackend:
        if database is not None:
            from hostd_deep_thinking.store.postgres import PostgresSessionStore

            return PostgresSessionStore(database)
        return SessionStore(
            plugin.data_dir,
            compact_every=plugin.settings.compact_every,
            sync_interval=plugin.settings.sync_interval_seconds,
        )

    return plugin.resource("store", factory)


def searcher_for(context: AnyContext) -> Searcher:
    """What searches the thoughts: the PostgreSQL store itself, or the SQLite index beside the files
    (``search.db``), opened on first use and closed at shut-down."""
    from hostd_deep_thinking.search import INDEX_FILE, SearchIndex

    plugin = _plugin(context)
    store = store_for(plugin)
    if not isinstance(store, SessionStore):
        return cast("Searcher", store)
    return plugin.resource("search", lambda: SearchIndex(store, plugin.data_dir / INDEX_FILE))


__all__ = [
    "BACKUPS_KEPT",
    "DELETED_LABEL",
    "FORMAT_VERSION",
    "Appended",
    "BackupNotFound",
    "Searcher",
    "SessionBackend",
    "SessionExists",
    "SessionNotFound",
    "SessionState",
    "SessionStore",
    "SessionUnreadable",
    "StoreError",
    "SummaryPage",
    "WouldBlock",
    "new_document",
    "searcher_for",
    "store_for",
    "team_database",
]
