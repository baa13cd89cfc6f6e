"""hostd hooks of the memory plugin: its settings model and its 18 tools.

Nothing heavy happens here: the SQLite store opens on the first tool call
(``ToolContext.plugin.resource("store", ...)``) and the host closes it at shut-down.

The store has no PostgreSQL backend yet, so a config with ``storage`` (the team database) is
refused at start-up and by ``hostd config check`` / ``hostd db ...``: quietly serving each
replica's own SQLite file would split a team's memories between machines.
"""

from __future__ import annotations

from typing import Any

from hostd import HostError, PluginContext, hookimpl
from hostd_memory.models import Settings


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: Any, context: PluginContext) -> None:
    from hostd_memory.tools import ALL_TOOLS

    for function, options in ALL_TOOLS:
        register(function, **options)


def refuse_team_database(context: PluginContext) -> None:
    """Stop before anything is opened when the config names a team database memory cannot use yet."""
    if context.storage is None:
        return
    raise HostError(
        context.text(
            en=(
                "memory cannot use the team database yet: its store is a SQLite file only, and serving "
                "each server's own file would split the team's memories. Serve memory from a config "
                "without `storage` (its memories stay in the data folder), or take `memory` out of this "
                "profile's `plugins`."
            ),
            zh=(
                "记忆插件暂不支持团队数据库：它的存储目前只有 SQLite 文件，"
                "各服务器各用自己的文件会把团队的记忆分散到多台机器上。"
                "请用不含 `storage` 的配置单独运行记忆插件（记忆保存在数据目录中），"
                "或把 `memory` 从当前配置方案的 `plugins` 列表中去掉。"
            ),
        )
    )


@hookimpl
def hostd_team_database(context: PluginContext) -> None:
    """Called only with ``storage``: refuse here so ``hostd config check`` and ``hostd db`` say so too."""
    refuse_team_database(context)


@hookimpl
def hostd_startup(context: PluginContext) -> None:
    refuse_team_database(context)
