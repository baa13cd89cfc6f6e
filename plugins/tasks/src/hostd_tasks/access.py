"""How tools and the ``tasks.links`` service reach the one store of a plugin context.

The store is imported and opened on first use, never at plugin import, so server start-up stays
cheap; the host closes it at shut-down. With ``storage`` in the config the tasks live in the team
database (PostgreSQL) and the ``database`` setting is not used (it names the SQLite file that
``hostd db copy`` reads); without it, in that SQLite file inside the plugin's data folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostd import PluginContext

if TYPE_CHECKING:
    from hostd_db import PostgresDatabase

    from hostd_tasks.store import SqliteTaskStore, TaskStore

STORE_KEY = "store"
TEAM_DATABASE_KEY = "team-database"
DEFAULT_DATABASE = "tasks.db"


def team_database(context: PluginContext) -> PostgresDatabase:
    """The plugin's tables in the team database, opened once per server (``storage`` must be set)."""
    from hostd_tasks.store_postgres import PG_MIGRATIONS

    return context.resource(TEAM_DATABASE_KEY, lambda: context.team_database(PG_MIGRATIONS))


def open_local_store(context: PluginContext) -> SqliteTaskStore:
    """A new store on the plugin's SQLite file (the ``database`` setting): the caller closes it."""
    from hostd_tasks.store import SqliteTaskStore

    database = context.settings.database if context.settings is not None else DEFAULT_DATABASE
    return SqliteTaskStore(context.data_dir / database)


def store_for(context: PluginContext) -> TaskStore:
    """The plugin's task store, opened lazily (once per server, shared by every thread)."""

    if context.storage is not None:
        # Opened apart, not inside the store's factory: ``resource`` does not nest.
        database = team_database(context)

        def open_team_store() -> TaskStore:
            from hostd_tasks.store_postgres import PostgresTaskStore

            return PostgresTaskStore(database)

        return context.resource(STORE_KEY, open_team_store)
    return context.resource(STORE_KEY, lambda: open_local_store(context))
