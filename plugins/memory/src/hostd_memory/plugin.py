"""hostd hooks of the memory plugin: its settings model, its 18 tools and its dashboard pages.

Nothing heavy happens here: the plugin declares its tables (``hostd_database_schema``) and the host
opens them on the first tool call (``store.memory_store``) and closes them at shut-down. Without
``storage`` they are the SQLite file in the data folder; with ``storage`` the plugin's schema in the
team database (PostgreSQL), which the host migrates or checks at start-up; ``hostd db copy`` moves
the local file's memories into it, reading and writing them through ``hostd_record_store``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hostd import PluginContext, RecordStore, RegisterResource, RegisterTool, RegisterViews, hookimpl
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

    # read_memory counts an access, which changes no content: a read, open to a read-only member.
    register(read_memory, title="Read memory", tier="core", access="read")
    register(create_memory, title="Create memory", tier="core", destructive=False)
    register(update_memory, title="Update memory", tier="core", destructive=False)
    register(delete_memory, title="Delete memory", destructive=True)
    register(search_memory, title="Search memories", tier="core", access="read")
    register(preload_memory, title="Preload memories", access="read")
    register(save_session, title="Save session", destructive=False)
    register(list_memories, title="List memories", access="read")
    register(get_memory_stats, title="Memory statistics", access="read")
    # Export may overwrite an existing file (overwrite=true), like deep-thinking's export_session.
    register(export_memories, title="Export memories", destructive=True)
    register(import_memories, title="Import memories", destructive=True)
    register(add_alias, title="Add memory alias", destructive=False)
    register(link_memories, title="Link memories", destructive=False, idempotent=True)
    register(unlink_memories, title="Unlink memories", destructive=True)
    register(get_memory_versions, title="Memory versions", access="read")
    register(rollback_memory, title="Roll back memory", destructive=False)
    register(diff_versions, title="Compare memory versions", access="read")
    register(list_rollbacks, title="List rollbacks", access="read")


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
def hostd_record_store(context: PluginContext[Settings], local: bool) -> RecordStore | None:
    """``hostd db copy``: the memories (versions, aliases, tags, links, sessions) of this data
    folder's SQLite file (``local``), or of the team database, as records (``store.records``)."""
    from hostd_memory.store import memory_store
    from hostd_memory.store.records import MemoryRecords

    if local and not (context.data_dir / context.settings.database).exists():
        return None  # nothing kept in the data folder
    if not local and not context.has_team_database:
        return None
    return MemoryRecords(memory_store(context))  # on the context's database: the file, or the team's


@hookimpl
def hostd_register_resources(register: RegisterResource, context: PluginContext[Settings]) -> None:
    """Memorys as MCP resources, served wherever ``read_memory`` is."""
    from hostd_memory import resources

    register(
        resources.TEMPLATE,
        name="memory",
        title="Memory",
        description="A memory: its content under a front matter of its record",
        mime_type=resources.MIME_TYPE,
        list=resources.list_resources,
        read=resources.read_resource,
        complete=resources.complete_argument,
        tool="read_memory",
    )
    register(
        resources.TAG_TEMPLATE,
        name="memories-by-tag",
        title="Memories by tag",
        description="The memories carrying one tag, most important first",
        mime_type=resources.MIME_TYPE,
        read=resources.read_tag_resource,
        complete=resources.complete_tag,
        tool="list_memories",
    )
    register(
        resources.GRAPH_TEMPLATE,
        name="memory-graph",
        title="Memory links",
        description="A memory's neighbourhood (what links to it and what it links to) drawn as SVG, "
        "as its dashboard page draws it; ?lang=en|zh for its words",
        mime_type=resources.GRAPH_MIME_TYPE,
        read=resources.read_graph_resource,
        complete=resources.complete_argument,
        tool="read_memory",
    )


#: The plugin's icon (a stack of records): the host serves it inline on each of its tools.
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#6b4fbb"/>'
    '<ellipse cx="16" cy="9" rx="8" ry="3" fill="#fff"/>'
    '<path d="M8 14c0 1.7 3.6 3 8 3s8-1.3 8-3M8 19c0 1.7 3.6 3 8 3s8-1.3 8-3'
    'M8 9v14c0 1.7 3.6 3 8 3s8-1.3 8-3V9" fill="none" stroke="#fff" stroke-width="2"/>'
    "</svg>"
)


@hookimpl
def hostd_icon() -> str:
    return ICON
