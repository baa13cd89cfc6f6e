"""The task store, and how the plugin opens it: ``store_for`` is the one way in.

The store is imported and opened on first use, never at plugin import, so server start-up stays
cheap; the host closes it at shut-down. With ``storage`` in the config the tasks live in the team
database (PostgreSQL, ``postgres``) and the ``database`` setting is not used (it names the SQLite
file that ``hostd db copy`` reads); without it, in that SQLite file inside the plugin's data
folder (``sqlite``).

The modules of this package, by responsibility:

- ``writes`` (``TaskStore``), on ``queries`` and ``base``: the rules, once, in SQL both databases
  understand; ``results``: what the store answers beyond a single record;
- ``sqlite`` / ``postgres``: what each database does its own way;
- ``schema``: the tables and their migrations; ``rows``: rows into records, shared small queries;
- ``search``: the text index (Chinese included); ``refusals``: the errors the rules raise;
- ``team_copy``: ``hostd db copy`` from the SQLite file into the team database.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from hostd import PluginContext, ToolContext
from hostd_tasks.models import Settings

if TYPE_CHECKING:
    from hostd_db import PostgresDatabase

    from hostd_tasks.store.sqlite import SqliteTaskStore
    from hostd_tasks.store.writes import TaskStore

STORE_KEY = "store"
TEAM_DATABASE_KEY = "team-database"


def _plugin(context: ToolContext[Settings] | PluginContext[Settings]) -> PluginContext[Settings]:
    return context.plugin if isinstance(context, ToolContext) else context


def store_for(context: ToolContext[Settings] | PluginContext[Settings]) -> TaskStore:
    """The plugin's task store, opened lazily (once per server, shared by every thread)."""
    plugin = _plugin(context)
    if plugin.storage is not None:
        # Opened apart, not inside the store's factory: the database is a resource of its own,
        # the one ``hostd_team_database`` hands the host.
        database = team_database(plugin)

        def open_team_store() -> TaskStore:
            from hostd_tasks.store.postgres import PostgresTaskStore

            return PostgresTaskStore(database)

        return plugin.resource(STORE_KEY, open_team_store)
    return plugin.resource(STORE_KEY, lambda: open_local_store(plugin))


def team_database(context: PluginContext[Settings]) -> PostgresDatabase:
    """The plugin's tables in the team database, opened once per server (``storage`` must be set)."""
    from hostd_tasks.store.schema import PG_MIGRATIONS

    return context.resource(TEAM_DATABASE_KEY, lambda: context.team_database(PG_MIGRATIONS))


def local_database_path(context: PluginContext[Settings]) -> Path:
    """The plugin's SQLite file: the ``database`` setting, inside the plugin's data folder."""
    return context.data_dir / context.settings.database


def open_local_store(context: PluginContext[Settings]) -> SqliteTaskStore:
    """A new store on the plugin's SQLite file: the caller closes it (``store_for`` keeps one open)."""
    from hostd_tasks.store.sqlite import SqliteTaskStore

    return SqliteTaskStore(local_database_path(context))
