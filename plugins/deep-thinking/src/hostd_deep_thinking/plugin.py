"""hostd hook implementations of the deep-thinking plugin: settings, tools, the sessions service,
the team database. Only hookimpls and ``register`` calls: tools live in ``tools/``, the store and
how it is opened in ``store/``, cross-plugin links in ``links.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from hostd import (
    PluginContext,
    RecordStore,
    RegisterPrompts,
    RegisterResource,
    RegisterService,
    RegisterTool,
    RegisterViews,
    hookimpl,
)
from hostd_deep_thinking import tools
from hostd_deep_thinking.links import SESSIONS_SERVICE, SessionService
from hostd_deep_thinking.models import Settings

if TYPE_CHECKING:
    from hostd_db import Schema


@hookimpl
def hostd_settings_model() -> type[BaseModel]:
    return Settings


@hookimpl
def hostd_register_tools(register: RegisterTool, context: PluginContext[Settings]) -> None:
    register(tools.sequential_thinking, title="Think step by step", tier="core", destructive=False)
    register(tools.create_session, title="Create thinking session", destructive=False)
    register(tools.get_session, title="Show thinking session", access="read")
    register(tools.list_sessions, title="List thinking sessions", access="read")
    register(tools.delete_session, title="Delete thinking session", destructive=True, idempotent=False)
    # May replace a live session (overwrite=true); each call takes a backup, pruning old ones.
    register(tools.restore_session, title="Restore thinking session", destructive=True, idempotent=False)
    register(tools.update_session_status, title="Set session status", destructive=False, idempotent=True)
    register(tools.resume_session, title="Resume thinking session", destructive=False, idempotent=True)
    register(tools.list_templates, title="List thinking templates", access="read")
    register(tools.export_session, title="Export thinking session", destructive=True)
    register(tools.import_session, title="Import thinking session", destructive=True)
    register(tools.visualize_session, title="Draw thinking session", access="read")
    # Read-only for sessions; it brings its own derived index (search.db) up to date first.
    register(tools.search_thoughts, title="Search thoughts", access="read")
    register(tools.summarize_session, title="Summarize thinking session", access="read")


@hookimpl
def hostd_database_schema(context: PluginContext[Settings]) -> Schema:
    """The sessions' tables in the team database (without ``storage`` the sessions are JSON files)."""
    from hostd_deep_thinking.store.schema import schema

    return schema()


@hookimpl
def hostd_record_store(context: PluginContext[Settings], local: bool) -> RecordStore | None:
    """``hostd db copy``: this data folder's sessions and backups (``local``), or the team database's
    tables, as records (``store.records``)."""
    from hostd_deep_thinking.store import session_store
    from hostd_deep_thinking.store.records import SessionRecords

    if local and not (context.data_dir / "sessions").is_dir():
        return None  # nothing kept in the data folder
    if not local and not context.has_team_database:
        return None  # the sessions already are the local files
    return SessionRecords(session_store(context))  # the data folder's files, or the team's tables


@hookimpl
def hostd_register_services(register: RegisterService, context: PluginContext[Settings]) -> None:
    register(SESSIONS_SERVICE, SessionService(context))


@hookimpl
def hostd_register_views(register: RegisterViews) -> None:
    """The dashboard's thinking pages (``views``): sessions, a session's timeline and diagram, exports."""
    from hostd_deep_thinking.views import register_views

    register_views(register)


@hookimpl
def hostd_register_resources(register: RegisterResource, context: PluginContext[Settings]) -> None:
    """Thinking sessions as MCP resources, served wherever ``get_session`` is."""
    from hostd_deep_thinking import resources

    register(
        resources.TEMPLATE,
        name="thinking-session",
        title="Thinking session",
        description="A thinking session as its Markdown export",
        mime_type=resources.MIME_TYPE,
        list=resources.list_resources,
        read=resources.read_resource,
        complete=resources.complete_argument,
        tool="get_session",
    )


@hookimpl
def hostd_register_prompts(register: RegisterPrompts, context: PluginContext[Settings]) -> None:
    """Each thinking template (built-in or a user's file) as a prompt, served where ``create_session`` is."""
    from hostd_deep_thinking import prompts

    register(
        list=prompts.list_prompts,
        get=prompts.get_prompt,
        complete=prompts.complete_argument,
        tool="create_session",
    )


#: The plugin's icon (a light bulb): the host serves it inline on each of its tools.
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#d9822b"/>'
    '<circle cx="16" cy="13" r="7" fill="#fff"/>'
    '<path d="M13 21h6M13.5 25h5" stroke="#fff" stroke-width="2.5" stroke-linecap="round"/>'
    "</svg>"
)


@hookimpl
def hostd_icon() -> str:
    return ICON
