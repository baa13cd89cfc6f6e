"""hostd hooks of the memory plugin: its settings model, its 18 tools and its dashboard pages.

Nothing heavy happens here: the plugin declares its tables (``hostd_database_schema``) and the host
opens them on the first tool call (``store.memory_store``) and closes them at shut-down. Without
``storage`` they are the SQLite file in the data folder; with ``storage`` the plugin's schema in the
team database (PostgreSQL), which the host migrates or checks at start-up; ``hostd db copy`` moves
the local file's memories into it through ``hostd_copy_to_team_database``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostd import CopyReport, PluginContext, RegisterTool, RegisterViews, hookimpl
from hostd_memory.models import Settings

if TYPE_CHECKING:
    from hostd_db import Schema


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: RegisterTool, context: PluginContext[Settings]) -> None:
    from hostd_memory.tools.import_export import export_memories, import_memories
    from hostd_memory.tools.linking import add_alias, link_memories, unlink_memories
    from hostd_memory.tools.reading import get_memory_stats, list_memories, read_memory
    from hostd_memory.tools.searching import preload_memory, search_memory
    from hostd_memory.tools.versions import (
        diff_versions,
        get_memory_versions,
        list_rollbacks,
        rollback_memory,
    )
    from hostd_memory.tools.writing import create_memory, delete_memory, save_session, update_memory

    # read_memory counts an access, so it is not read-only (nor destructive).
    register(read_memory, read_only=False, destructive=False)
    register(create_memory, destructive=False)
    register(update_memory, destructive=False)
    register(delete_memory, destructive=True)
    register(search_memory, read_only=True)
    register(preload_memory, read_only=True)
    register(save_session, destructive=False)
    register(list_memories, read_only=True)
    register(get_memory_stats, read_only=True)
    # Export may overwrite an existing file (overwrite=true), like deep-thinking's export_session.
    register(export_memories, destructive=True, uses_roots=True)
    register(import_memories, destructive=True, uses_roots=True)
    register(add_alias, destructive=False)
    register(link_memories, destructive=False, idempotent=True)
    register(unlink_memories, destructive=True)
    register(get_memory_versions, read_only=True)
    register(rollback_memory, destructive=False)
    register(diff_versions, read_only=True)
    register(list_rollbacks, read_only=True)


@hookimpl
def hostd_register_views(register: RegisterViews, context: PluginContext[Settings]) -> None:
    """The dashboard's memory pages (``views``): list and search, a memory, its diff, edit, delete."""
    from hostd_memory.views import register_views

    register_views(register, context)


@hookimpl
def hostd_database_schema(context: PluginContext[Settings]) -> Schema:
    """The memories' tables: the SQLite file named by ``database``, or the plugin's team schema."""
    from hostd_memory.store.schema import schema

    return schema(context.settings.database)


@hookimpl
def hostd_copy_to_team_database(context: PluginContext[Settings]) -> CopyReport | None:
    """``hostd db copy``: this data folder's memories (versions, aliases, tags, links) into the
    team database."""
    from hostd_memory.team_copy import copy_to_team_database

    return copy_to_team_database(context)
