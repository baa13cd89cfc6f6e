"""hostd hook implementations of the deep-thinking plugin: settings, tools, the sessions service,
the team database. Only hookimpls and ``register`` calls: tools live in ``tools/``, the store and
how it is opened in ``store/``, cross-plugin links in ``links.py``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel

from hostd import CopyReport, PluginContext, RegisterService, RegisterTool, hookimpl
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
    register(tools.sequential_thinking, destructive=False)
    register(tools.create_session, destructive=False)
    register(tools.get_session, read_only=True)
    register(tools.list_sessions, read_only=True)
    register(tools.delete_session, destructive=True, idempotent=False)
    # May replace a live session (overwrite=true); each call takes a backup, pruning old ones.
    register(tools.restore_session, destructive=True, idempotent=False)
    register(tools.update_session_status, destructive=False, idempotent=True)
    register(tools.resume_session, destructive=False, idempotent=True)
    register(tools.list_templates, read_only=True)
    register(tools.export_session, destructive=True, uses_roots=True)
    register(tools.import_session, destructive=True, uses_roots=True)
    register(tools.visualize_session, read_only=True)
    # Read-only for sessions; it brings its own derived index (search.db) up to date first.
    register(tools.search_thoughts, read_only=True)
    register(tools.summarize_session, read_only=True)


@hookimpl
def hostd_database_schema(context: PluginContext[Settings]) -> Schema:
    """The sessions' tables in the team database (without ``storage`` the sessions are JSON files)."""
    from hostd_deep_thinking.store.postgres_schema import schema

    return schema()


@hookimpl
def hostd_copy_to_team_database(context: PluginContext[Settings]) -> CopyReport | None:
    """``hostd db copy``: this data folder's sessions and backups into the team database."""
    from hostd_deep_thinking.teamcopy import copy_local_sessions

    return copy_local_sessions(context)


@hookimpl
def hostd_register_services(register: RegisterService, context: PluginContext[Settings]) -> None:
    register(SESSIONS_SERVICE, SessionService(context))
