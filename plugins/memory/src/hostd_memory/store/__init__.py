"""The memory store: ``memory_store(ctx)``, on the database the host opened for the plugin.

The plugin declares its tables (``schema``, through ``hostd_database_schema``); the host opens
them on first use -- the SQLite file named by the ``database`` setting in the plugin's data
folder, or with ``storage`` in the config the plugin's schema in the team database -- and
closes them at shut-down. ``open_store`` puts the store on it, one class for both engines;
``memory_store`` keeps one per server, shared by every thread, since it caches token counts.

The store speaks in plain rows (``rows.py``) and refuses what breaks its rules with
``ToolError``s (``refusals.py``, a table of ``Reason``) the host renders in the server's
language. ``MemoryStore`` is one class, no hierarchy: each method hands the store's ``Access``
(``access``: the database, reads, the write transaction, lookups) to a function of one part,
a plain module: ``writes`` (create, change, delete, versions, sessions), ``listings`` (pages,
views, stats, links), ``ranking`` (search, related memories), ``importing``. What an engine
does its own way is a part ``Access`` holds (``engine``): ``sqlite.SqliteEngine`` or
``postgres.PostgresEngine`` (transactions and locks, full text, upkeep). The schema and its
migrations are in ``schema``, the cost bounds in ``tuning``, the records ``hostd db copy``
reads and writes in ``records``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Concatenate, Generic, ParamSpec, TypeVar

from hostd_db import Connection, Database

from hostd import PluginContext, ToolContext
from hostd_memory import search as search_text
from hostd_memory.models import Settings
from hostd_memory.store import importing, listings, ranking, writes
from hostd_memory.store.access import Access
from hostd_memory.store.postgres import PostgresEngine
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
from hostd_memory.store.sqlite import SqliteEngine
from hostd_memory.uris import mentioned_uris

_P = ParamSpec("_P")
_R = TypeVar("_R")


class _Part(Generic[_P, _R]):
    """A store method that is a part's function handed the store's ``Access``: its signature and
    docstring are the function's, written once, in the part."""

    def __init__(self, function: Callable[Concatenate[Access, _P], _R]) -> None:
        self.function = function
        self.__doc__ = function.__doc__

    def __get__(self, store: MemoryStore, owner: type[MemoryStore] | None = None) -> Callable[_P, _R]:
        function, access = self.function, store.access

        def method(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            return function(access, *args, **kwargs)

        return method


class MemoryStore:
    """Every read and write of the memory database, SQLite file or team database; safe to share
    between threads. The SQL is written once, in the parts' functions; ``engine`` holds what the
    two engines do apart. Each method is one function of a part (its docstring says the rules),
    most bound by ``_Part``."""

    def __init__(self, database: Database) -> None:
        self.access = Access(database)

    @property
    def database(self) -> Database:
        return self.access.database

    @property
    def engine(self) -> SqliteEngine | PostgresEngine:
        return self.access.engine

    def close(self) -> None:
        self.access.close()

    def resolve(self, uri: str, *, include_deleted: bool = False) -> tuple[MemoryRow, str | None]:
        """The memory ``uri`` names, directly or through an alias, and the alias used if any."""
        return self.access.read(lambda conn: self.access.resolve(conn, uri, include_deleted=include_deleted))

    # --- writes --------------------------------------------------------------------------------

    create = _Part(writes.create)
    update = _Part(writes.update)
    soft_delete = _Part(writes.soft_delete)
    remove_alias = _Part(writes.remove_alias)
    purge = _Part(writes.purge)
    add_alias = _Part(writes.add_alias)
    count_access = _Part(writes.count_access)
    versions = _Part(writes.versions)
    version_pair = _Part(writes.version_pair)
    rollback = _Part(writes.rollback)
    save_session = _Part(writes.save_session)

    # --- listings ------------------------------------------------------------------------------

    existing_uris = _Part(listings.existing_uris)
    mentioned_by = _Part(listings.mentioned_by)
    list_page = _Part(listings.list_page)
    recent_page = _Part(listings.recent_page)
    index_page = _Part(listings.index_page)
    recent_paths = _Part(listings.recent_paths)
    recent_domains = _Part(listings.recent_domains)
    recent_tags = _Part(listings.recent_tags)
    export_page = _Part(listings.export_page)
    all_versions = _Part(listings.all_versions)
    memories_for = _Part(listings.memories_for)
    stats = _Part(listings.stats)
    link = _Part(listings.link)
    unlink = _Part(listings.unlink)
    links_of = _Part(listings.links_of)
    outgoing_links = _Part(listings.outgoing_links)

    # --- ranking -------------------------------------------------------------------------------

    def search(self, plan: search_text.QueryPlan, filters: Filters, limit: int) -> list[Hit]:
        return ranking.search(self.access, plan, filters, limit)

    similar = _Part(ranking.similar)
    match_ids = _Part(ranking.match_ids)
    core_memories = _Part(ranking.core_memories)
    related = _Part(ranking.related)

    # --- importing -----------------------------------------------------------------------------

    import_items = _Part(importing.import_items)


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
