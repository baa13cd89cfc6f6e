"""hostd hook implementations of the deep-thinking plugin: settings, tools, the sessions service."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from hostd import PluginContext, hookimpl
from hostd_deep_thinking import tools
from hostd_deep_thinking.service import SessionService


class Settings(BaseModel):
    """``plugins.deep-thinking`` in the config."""

    model_config = ConfigDict(extra="forbid")
    compact_every: int = Field(
        default=256,
        ge=1,
        le=1000,
        description="Fold a session's journal into its document after this many thoughts",
    )
    sync_interval_seconds: float = Field(
        default=1.0,
        gt=0,
        le=1.0,
        description="Journal writes are fsynced at most this long after they answer",
    )
    templates_dir: str | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="Folder of user templates (*.yaml, *.yml, *.json); relative to the plugin's data "
        "folder; default: templates/ in it",
    )


@hookimpl
def hostd_settings_model() -> type[BaseModel]:
    return Settings


@hookimpl
def hostd_register_tools(register: Callable[..., None], context: PluginContext) -> None:
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
def hostd_team_database(context: PluginContext) -> Any:
    """The sessions' tables in the team database, for start-up, ``hostd db migrate`` and ``config check``."""
    return tools.team_database(context)


@hookimpl
def hostd_copy_to_team_database(context: PluginContext) -> Any:
    """``hostd db copy``: this data folder's sessions and backups into the team database."""
    from hostd_deep_thinking.pgstore import PostgresSessionStore
    from hostd_deep_thinking.teamcopy import copy_local_sessions

    store = tools.open_store(context)
    if not isinstance(store, PostgresSessionStore):
        return None  # no `storage`: the sessions already are the local ones
    return copy_local_sessions(context, store)


@hookimpl
def hostd_register_services(register: Callable[[str, object], None], context: PluginContext) -> None:
    register("deep-thinking.sessions", SessionService(context))
