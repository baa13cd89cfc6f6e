"""The deep-thinking plugin's store: ``session_store(ctx)``.

Sessions live in the plugin's data folder as JSON files (``files.SessionStore``, the default, as
the spec asks) or, with ``storage`` in the config, in the plugin's tables in the team database
(``postgres.PostgresSessionStore``, on the database the host opened from the plugin's
``hostd_database_schema``: ``schema``); both
provide ``backend.SessionBackend`` with the same rules, so tools never ask which one they have.
The parts: ``documents`` (a session's shape and state), ``refusals`` (what a store refuses, as
the errors callers see, from a table of ``Reason``), ``files`` with ``layout``, ``index``,
``backups``, ``defaults``, ``changes`` and ``search_index`` (the SQLite search index beside the
files), and ``postgres`` with ``schema``.
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
    SessionListing,
    SummaryPage,
    WouldBlock,
)
from hostd_deep_thinking.store.documents import FORMAT_VERSION, SessionState, new_document
from hostd_deep_thinking.store.files import SessionStore
from hostd_deep_thinking.store.refusals import (
    BackupNotFound,
    SessionExists,
    SessionNotFound,
    SessionUnreadable,
    StoreError,
)

if TYPE_CHECKING:
    from hostd_deep_thinking.models import Settings

    AnyContext = ToolContext[Settings] | PluginContext[Settings]


def session_store(context: AnyContext) -> SessionBackend:
    """The plugin's one store, opened on first use and closed by the host at shut-down: its tables
    in the team database when ``storage`` is configured, else the session files in its data folder."""
    if context.has_team_database:
        from hostd_deep_thinking.store.postgres import PostgresSessionStore

        return context.resource("store", lambda: PostgresSessionStore(context.database()))
    return context.resource(
        "store",
        lambda: SessionStore(
            context.data_dir,
            compact_every=context.settings.compact_every,
            sync_interval=context.settings.sync_interval_seconds,
        ),
    )


def searcher_for(context: AnyContext) -> Searcher:
    """What searches the thoughts: the PostgreSQL store itself, or the SQLite index beside the files
    (``search.db``), opened on first use and closed at shut-down."""
    from hostd_deep_thinking.store.search_index import INDEX_FILE, SearchIndex

    store = session_store(context)
    if not isinstance(store, SessionStore):
        return cast("Searcher", store)
    return context.resource("search", lambda: SearchIndex(store, context.data_dir / INDEX_FILE))


__all__ = [
    "BACKUPS_KEPT",
    "DELETED_LABEL",
    "FORMAT_VERSION",
    "Appended",
    "BackupNotFound",
    "Searcher",
    "SessionBackend",
    "SessionExists",
    "SessionListing",
    "SessionNotFound",
    "SessionState",
    "SessionStore",
    "SessionUnreadable",
    "StoreError",
    "SummaryPage",
    "WouldBlock",
    "new_document",
    "searcher_for",
    "session_store",
]
