"""hostd hooks of the memory plugin: its settings model and its 18 tools.

Nothing heavy happens here: the SQLite store opens on the first tool call
(``ToolContext.plugin.resource("store", ...)``) and the host closes it at shut-down.
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
