"""The memory store: ``memory_store(ctx)``, on the database the host opened for the plugin.

The plugin declares its tables (``schema``, through ``hostd_database_schema``); the host opens
them on first use -- the SQLite file named by the ``database`` setting in the plugin's data
folder, or with ``storage`` in the config the plugin's schema in the team database -- and
closes them at shut-down. ``open_store`` puts the store on it, one class for both engines;
``memory_store`` keeps one per server, shared by every thread, since it caches token counts.

The store speaks in plain rows (``rows.py``) and refuses what breaks its rules with
``ToolError``s (``refusals.py``) the host renders in the server's language. Its rules, in
parts of the one class: ``base`` (connections, lookups), ``writes`` (create, change, delete,
versions, sessions), ``listings`` (pages, views, stats, links), ``ranking`` (search, related
memories), ``importing``. What an engine does its own way is a part the store holds
(``engine``): ``sqlite.SqliteEngine`` or ``postgres.PostgresEngine`` (transactions and locks,
full text, upkeep). The schema and its migrations are in ``schema``, the cost bounds in
``tuning``, the records ``hostd db copy`` reads and writes in ``records``.
"""

from __future__ import annotations

from hostd_db import Database

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
from hostd_memory.store.schema import VISIBLE
from hostd_memory.uris import mentioned_uris


class MemoryStore(Importing):
    """Every read and write of the memory database, SQLite file or team database; safe to share
    between threads. The SQL is written once; ``engine`` holds what the two engines do apart."""


def mentioned_relations(store: MemoryStore, memory: MemoryRow) -> list[tuple[str, bool]]:
    """URIs the memory's content mentions, each with whether it names something that exists."""
    uris = [u for u in mentioned_uris(memory.content) if u != memory.uri]
    existing = store.existing_uris(uris)
    return [(u, u in existing) for u in uris]


def open_store(database: Database) -> MemoryStore:
    """The store on ``database``: the SQLite file, or the plugin's schema in the team database."""
    return MemoryStore(database)


def memory_store(context: ToolContext[Settings] | PluginContext[Settings]) -> MemoryStore:
    """The plugin's store on its database, made on first use and kept for the server's life."""
    return context.resource("store", lambda: open_store(context.database()))


__all__ = [
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
    "memory_store",
    "mentioned_relations",
    "normalise_relation",
    "normalise_tags",
    "open_store",
    "utc_time",
]
