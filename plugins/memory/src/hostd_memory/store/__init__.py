"""The memory store: ``memory_store(ctx)``, on the database the host opened for the plugin.

The plugin declares its tables (``schema``, through ``hostd_database_schema``); the host opens
them on first use -- the SQLite file named by the ``database`` setting in the plugin's data
folder, or with ``storage`` in the config the plugin's schema in the team database -- and
closes them at shut-down. ``open_store`` puts the store on it, one class for both engines;
``memory_store`` keeps one per server, shared by every thread, since it caches token counts.

The store speaks in plain rows (``rows.py``) and refuses what breaks its rules with
``ToolError``s (``refusals.py``, a table of ``Reason``) the host renders in the server's
language. ``MemoryStore`` is the store's classes joined, split by topic, each method one unit
of work (a ``work(conn)`` run by ``read`` or ``write``): ``writes.MemoryWrites`` (create,
change, delete, versions, sessions), ``listings.MemoryListings`` (pages, views, stats, links),
``ranking.MemoryRanking`` (search, related memories; on the listings), ``importing.MemoryImports``.
All build on ``access.Access`` (the database, reads, the write transaction, lookups), so their
SQL is written once for both engines; what an engine does its own way is the part ``engine``:
``sqlite.SqliteEngine`` or ``postgres.PostgresEngine`` (transactions and locks, full text,
upkeep). The schema and its migrations are in ``schema``, the cost bounds in ``tuning``, the
records ``hostd db copy`` reads and writes in ``records``.
"""

from __future__ import annotations

from hostd_db import Connection, Database

from hostd import PluginContext, ToolContext
from hostd_memory.models import Settings
from hostd_memory.store.importing import MemoryImports
from hostd_memory.store.ranking import MemoryRanking
from hostd_memory.store.rows import (
    BadLabel,
    Change,
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
from hostd_memory.store.writes import MemoryWrites
from hostd_memory.uris import mentioned_uris


class MemoryStore(MemoryWrites, MemoryRanking, MemoryImports):
    """Every read and write of the memory database, SQLite file or team database; safe to share
    between threads. Each method is one unit of work of a part (its docstring says the rules)."""

    def resolve(self, uri: str, *, include_deleted: bool = False) -> tuple[MemoryRow, str | None]:
        """The memory ``uri`` names, directly or through an alias, and the alias used if any."""
        return self.read(lambda conn: self.resolve_in(conn, uri, include_deleted=include_deleted))


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
