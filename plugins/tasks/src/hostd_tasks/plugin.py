"""hostd plugin ``tasks``: a prioritized task list with dependencies, shared safely by several agents.

Tools: create_task, list_tasks, get_task, update_task, update_task_status, split_task,
delete_task, get_next_task, get_task_stats, link_task_session. Offers the ``tasks.links``
service; uses ``deep-thinking.sessions`` when that plugin is loaded. The store opens on the
first call, not at start-up: the SQLite file, or with ``storage`` the team database (which the
host migrates at start-up through ``hostd_team_database``; ``hostd db copy`` moves a local list
into it through ``hostd_copy_to_team_database``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hostd import CopyReport, PluginContext, hookimpl
from hostd_tasks import tools
from hostd_tasks.access import team_database
from hostd_tasks.links import SERVICE_NAME, TaskLinks
from hostd_tasks.models import Settings


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: Callable[..., None], context: PluginContext) -> None:
    register(tools.create_task, title="Create task", destructive=False)
    register(tools.list_tasks, title="List tasks", read_only=True)
    register(tools.get_task, title="Get task", read_only=True)
    register(tools.update_task, title="Update task", destructive=False, idempotent=False)
    register(tools.split_task, title="Split task into subtasks", destructive=False)
    register(tools.delete_task, title="Delete task", destructive=True)
    register(tools.update_task_status, title="Update task status", destructive=False, idempotent=True)
    register(tools.get_next_task, title="Get next task", destructive=False)
    register(tools.get_task_stats, title="Task statistics", read_only=True)
    register(
        tools.link_task_session, title="Link task to thinking session", destructive=False, idempotent=True
    )


@hookimpl
def hostd_register_services(register: Callable[[str, Any], None], context: PluginContext) -> None:
    register(SERVICE_NAME, TaskLinks(context))


@hookimpl
def hostd_team_database(context: PluginContext) -> Any:
    return team_database(context)


@hookimpl
def hostd_copy_to_team_database(context: PluginContext) -> CopyReport:
    from hostd_tasks.team_copy import copy_to_team_database

    return copy_to_team_database(context)
