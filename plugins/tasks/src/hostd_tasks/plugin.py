"""hostd plugin ``tasks``: a prioritized task list with dependencies, shared safely by several agents.

Tools: create_task, list_tasks, get_task, update_task, update_task_status, split_task,
delete_task, get_next_task, renew_claim, release_claim, get_task_stats, link_task_session.
Offers the ``tasks.links`` service; uses ``deep-thinking.sessions`` when that plugin is loaded
(both in ``links``). The plugin declares its tables (``hostd_database_schema``); the host opens
them on the first call (the SQLite file, or with ``storage`` the team database, migrated at
start-up) and the tools reach them through ``ctx.database()``. ``hostd db copy`` moves a local
list into the team database through ``hostd_copy_to_team_database``.
"""

from __future__ import annotations

from hostd_db import Schema

from hostd import CopyReport, PluginContext, RegisterService, RegisterTool, hookimpl
from hostd_tasks.links import SERVICE_NAME, TaskLinks
from hostd_tasks.models import Settings
from hostd_tasks.tools import editing, reading, workflow


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: RegisterTool, context: PluginContext[Settings]) -> None:
    register(editing.create_task, title="Create task", destructive=False)
    register(reading.list_tasks, title="List tasks", read_only=True)
    register(reading.get_task, title="Get task", read_only=True)
    register(editing.update_task, title="Update task", destructive=False, idempotent=False)
    register(editing.split_task, title="Split task into subtasks", destructive=False)
    register(editing.delete_task, title="Delete task", destructive=True)
    register(workflow.update_task_status, title="Update task status", destructive=False, idempotent=True)
    register(workflow.get_next_task, title="Get next task", destructive=False)
    register(workflow.renew_claim, title="Renew task claim", destructive=False, idempotent=False)
    register(workflow.release_claim, title="Release task claim", destructive=False, idempotent=True)
    register(reading.get_task_stats, title="Task statistics", read_only=True)
    register(
        workflow.link_task_session,
        title="Link task to thinking session",
        destructive=False,
        idempotent=True,
    )


@hookimpl
def hostd_register_services(register: RegisterService, context: PluginContext[Settings]) -> None:
    register(SERVICE_NAME, TaskLinks(context))


@hookimpl
def hostd_database_schema(context: PluginContext[Settings]) -> Schema:
    from hostd_tasks.store.schema import schema

    return schema(context.settings.database)


@hookimpl
def hostd_copy_to_team_database(context: PluginContext[Settings]) -> CopyReport:
    from hostd_tasks.store.team_copy import copy_to_team_database

    return copy_to_team_database(context)
