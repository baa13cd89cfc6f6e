"""The memory store, and the one way to open it: ``store_for(ctx)``.

Without ``storage`` in the config the store is the SQLite file named by the ``database``
setting in the plugin's data folder; with it, the plugin's tables in the team database
(PostgreSQL, ``postgres.py``). Either way it is opened on first use and shared by every
thread, and the host closes it at shut-down.

The store speaks in plain rows (``rows.py``) and refuses what breaks its rules with
``ToolError``s (``refusals.py``) the host renders in the server's language. Its parts, each a
class the next one extends: ``base`` (connections, lookups), ``writes`` (create, change,
delete, versions, sessions), ``listings`` (pages, views, stats, links), ``ranking`` (search,
related memories), ``importing``; the schema and its migrations are in ``schema``, the cost
bounds in ``tuning``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostd import PluginContext, ToolContext
from hostd_memory.models import Settings
from hostd_memory.store.importing import Importing
from hostd_memory.store.rows import (
    BadLabel,
    Change,
    Connection,
    Filters,
    Hit,
    ImportItem,
    ImportReport,
    MemoryRow,
    VersionRow,
    normalise_relation,
    normalise_tags,
    utc_time,
)
from hostd_memory.store.schema import MIGRATIONS, VISIBLE
from hostd_memory.uris import mentioned_uris

if TYPE_CHECKING:
    from hostd_db import PostgresDatabase


class MemoryStore(Importing):
    """Every read and write of the memory database; safe to share between threads.

    The SQL here is shared with the team database (``postgres.PostgresMemoryStore``), which
    overrides the connections, the full-text parts and the few spellings kept as attributes
    and small methods (``_TAG_LIST``, ``_index_hint``, ``_insert_returning_id``...)."""


def mentioned_relations(store: MemoryStore, memory: MemoryRow) -> list[tuple[str, bool]]:
    """URIs the memory's content mentions, each with whether it names something that exists."""
    uris = [u for u in mentioned_uris(memory.content) if u != memory.uri]
    existing = store.existing_uris(uris)
    return [(u, u in existing) for u in uris]


def _plugin(context: ToolContext[Settings] | PluginContext[Settings]) -> PluginContext[Settings]:
    return context.plugin if isinstance(context, ToolContext) else context


def team_database(context: ToolContext[Settings] | PluginContext[Settings]) -> PostgresDatabase:
    """The plugin's tables in the team database, opened once per server (``storage`` must be set)."""
    from hostd_memory.store.postgres import PG_MIGRATIONS

    plugin = _plugin(context)
    return plugin.resource("team-database", lambda: plugin.team_database(PG_MIGRATIONS))


def open_local_store(context: ToolContext[Settings] | PluginContext[Settings]) -> MemoryStore:
    """A new store on the plugin's SQLite file (the ``database`` setting): the caller closes it."""
    plugin = _plugin(context)
    return MemoryStore(plugin.data_dir / plugin.settings.database)


def store_for(context: ToolContext[Settings] | PluginContext[Settings]) -> MemoryStore:
    """The plugin's store, opened on first use and shared by every thread: the team database when
    the config has ``storage`` (the ``database`` setting is then unused), else the SQLite file."""
    plugin = _plugin(context)
    if plugin.storage is not None:

        def open_team_store() -> MemoryStore:
            from hostd_memory.store.postgres import PostgresMemoryStore

            return PostgresMemoryStore(team_database(plugin))

        return plugin.resource("store", open_team_store)
    return plugin.resource("store", lambda: open_local_store(plugin))


__all__ = [
    "MIGRATIONS",
    "VISIBLE",
    "BadLabel",
    "Change",
    "Connection",
    "Filters",
    "Hit",
    "ImportItem",
    "ImportReport",
    "MemoryRow",
    "MemoryStore",
    "VersionRow",
    "mentioned_relations",
    "normalise_relation",
    "normalise_tags",
    "open_local_store",
    "store_for",
    "team_database",
    "utc_time",
]
