"""hostd hooks of the memory plugin: its settings model and its 18 tools.

Nothing heavy happens here: the store opens on the first tool call (``tools.store_for``) and the
host closes it at shut-down. Without ``storage`` it is the SQLite file in the data folder; with
``storage`` the team database (PostgreSQL), which the host migrates or checks at start-up through
``hostd_team_database``; ``hostd db copy`` moves the local file's memories into it through
``hostd_copy_to_team_database``.
"""

from __future__ import annotations

from typing import Any

from hostd import PluginContext, hookimpl
from hostd_memory.models import Settings


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: Any, context: PluginContext) -> None:
    from hostd_memory.tools import ALL_TOOLS

    for function, options in ALL_TOOLS:
        register(function, **options)


@hookimpl
def hostd_team_database(context: PluginContext) -> Any:
    """The memories' tables in the team database, for start-up, ``hostd db migrate`` and ``config check``."""
    from hostd_memory.tools import team_database

    return team_database(context)


@hookimpl
def hostd_copy_to_team_database(context: PluginContext) -> Any:
    """``hostd db copy``: this data folder's memories (versions, aliases, tags, links) into the
    team database."""
    from hostd_memory.team_copy import copy_to_team_database

    return copy_to_team_database(context)
