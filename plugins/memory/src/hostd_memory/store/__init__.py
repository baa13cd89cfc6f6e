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

from collections.abc import Callable, Sequence
from typing import Any

from hostd_db import Connection, Database

from hostd import PluginContext, ToolContext
from hostd_memory import search as search_text
from hostd_memory.models import Settings
from hostd_memory.store import importing, listings, ranking, tuning, writes
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
from hostd_memory.uris import MemoryUri, mentioned_uris


class MemoryStore:
    """Every read and write of the memory database, SQLite file or team database; safe to share
    between threads. The SQL is written once, in the parts' functions; ``engine`` holds what the
    two engines do apart. Each method is one function of a part (its docstring says the rules)."""

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

    def create(
        self,
        uri: MemoryUri,
        content: str,
        priority: int,
        disclosure: str,
        tags: Sequence[str] = (),
        *,
        author: str | None,
    ) -> MemoryRow:
        return writes.create(self.access, uri, content, priority, disclosure, tags, author=author)

    def update(
        self, uri: str, *, edit: Any, change: Change, author: str | None
    ) -> tuple[MemoryRow, str | None]:
        return writes.update(self.access, uri, edit=edit, change=change, author=author)

    def soft_delete(self, uri: str, *, author: str | None) -> MemoryRow:
        return writes.soft_delete(self.access, uri, author=author)

    def remove_alias(self, alias_uri: str) -> str | None:
        return writes.remove_alias(self.access, alias_uri)

    def purge(self, uri: str) -> tuple[MemoryRow, int, list[str]]:
        return writes.purge(self.access, uri)

    def add_alias(self, target_uri: str, alias_uri: str) -> MemoryRow:
        return writes.add_alias(self.access, target_uri, alias_uri)

    def count_access(self, memory_id: int) -> tuple[int, str]:
        return writes.count_access(self.access, memory_id)

    def versions(
        self, uri: str, limit: int | None = None, *, before: int | None = None, include_current: bool = True
    ) -> tuple[MemoryRow, list[VersionRow], int]:
        return writes.versions(self.access, uri, limit, before=before, include_current=include_current)

    def version_pair(self, uri: str, first: int, second: int) -> tuple[MemoryRow, VersionRow, VersionRow]:
        return writes.version_pair(self.access, uri, first, second)

    def rollback(self, uri: str, version: int, *, author: str | None) -> tuple[MemoryRow, VersionRow, bool]:
        return writes.rollback(self.access, uri, version, author=author)

    def save_session(
        self, title: str, summary: str, memory: tuple[MemoryUri, str, int] | None, *, author: str | None
    ) -> tuple[int, str, MemoryRow | None]:
        return writes.save_session(self.access, title, summary, memory, author=author)

    # --- listings ------------------------------------------------------------------------------

    def existing_uris(self, uris: Sequence[str]) -> set[str]:
        return listings.existing_uris(self.access, uris)

    def mentioned_by(self, memory: MemoryRow, limit: int = 20) -> list[str]:
        return listings.mentioned_by(self.access, memory, limit)

    def list_page(self, filters: Filters, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        return listings.list_page(self.access, filters, after, limit)

    def recent_page(self, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        return listings.recent_page(self.access, after, limit)

    def index_page(self, after: str | None, limit: int) -> list[tuple[str, str, int]]:
        return listings.index_page(self.access, after, limit)

    def recent_paths(self, domain: str, prefix: str, limit: int) -> list[str]:
        return listings.recent_paths(self.access, domain, prefix, limit)

    def recent_domains(self, prefix: str, limit: int) -> list[str]:
        return listings.recent_domains(self.access, prefix, limit)

    def recent_tags(self, prefix: str, limit: int) -> list[str]:
        return listings.recent_tags(self.access, prefix, limit)

    def export_page(self, filters: Filters, after: int, limit: int) -> list[MemoryRow]:
        return listings.export_page(self.access, filters, after, limit)

    def all_versions(self, memory: MemoryRow) -> list[VersionRow]:
        return listings.all_versions(self.access, memory)

    def memories_for(self, ids: Sequence[int]) -> dict[int, MemoryRow]:
        return listings.memories_for(self.access, ids)

    def stats(self) -> dict[str, Any]:
        return listings.stats(self.access)

    def link(self, from_uri: str, to_uri: str, relation: str) -> tuple[MemoryRow, MemoryRow, bool]:
        return listings.link(self.access, from_uri, to_uri, relation)

    def unlink(
        self, from_uri: str, to_uri: str, relation: str | None
    ) -> tuple[MemoryRow, MemoryRow, list[str]]:
        return listings.unlink(self.access, from_uri, to_uri, relation)

    def links_of(
        self, memory_id: int, limit: int = 50
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        return listings.links_of(self.access, memory_id, limit)

    def outgoing_links(self, memory_ids: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
        return listings.outgoing_links(self.access, memory_ids)

    # --- ranking -------------------------------------------------------------------------------

    def search(self, plan: search_text.QueryPlan, filters: Filters, limit: int) -> list[Hit]:
        return ranking.search(self.access, plan, filters, limit)

    def similar(self, memory: MemoryRow) -> list[tuple[MemoryRow, float]]:
        return ranking.similar(self.access, memory)

    def match_ids(self, table: str, expression: str, limit: int) -> list[tuple[int, float]]:
        return ranking.match_ids(self.access, table, expression, limit)

    def core_memories(self, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        return ranking.core_memories(self.access, after, limit)

    def related(
        self, memory: MemoryRow, limit: int = tuning.RELATED_LIMIT
    ) -> list[tuple[MemoryRow, list[str], list[str]]]:
        return ranking.related(self.access, memory, limit)

    # --- importing -----------------------------------------------------------------------------

    def import_items(
        self,
        items: Sequence[ImportItem],
        strategy: str,
        report: ImportReport,
        *,
        author: str | None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        return importing.import_items(
            self.access, items, strategy, report, author=author, cancelled=cancelled
        )


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
