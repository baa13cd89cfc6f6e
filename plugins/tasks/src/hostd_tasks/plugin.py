"""hostd plugin ``tasks``: a prioritized task list with dependencies, shared safely by several agents.

Tools: create_task, list_tasks, get_task, update_task, update_task_status, split_task,
delete_task, get_next_task, renew_claim, release_claim, get_task_stats, list_task_activity,
link_task_session, export_tasks, import_tasks, get_task_graph, get_critical_path.
Offers the ``tasks.links`` service; uses ``deep-thinking.sessions`` when that plugin is loaded
(both in ``links``). The plugin declares its tables (``hostd_database_schema``); the host opens
them on the first call (the SQLite file, or with ``storage`` the team database, migrated at
start-up) and the tools reach them through ``ctx.database()``. ``hostd db copy`` moves a local
list into the team database, reading and writing it through ``hostd_record_store``.
"""

from __future__ import annotations

from hostd_db import Schema

from hostd import (
    CommandOption,
    PluginContext,
    RecordStore,
    RegisterCommand,
    RegisterResource,
    RegisterService,
    RegisterTool,
    RegisterViews,
    hookimpl,
)
from hostd_tasks.links import SERVICE_NAME, TaskLinks
from hostd_tasks.models import Settings
from hostd_tasks.tools import activity, editing, graph, reading, transfer, workflow


@hookimpl
def hostd_settings_model() -> type[Settings]:
    return Settings


@hookimpl
def hostd_register_tools(register: RegisterTool, context: PluginContext[Settings]) -> None:
    register(editing.create_task, title="Create task", tier="core", destructive=False)
    register(reading.list_tasks, title="List tasks", tier="core", access="read")
    register(reading.get_task, title="Get task", tier="core", access="read")
    register(editing.update_task, title="Update task", destructive=False, idempotent=False)
    register(editing.split_task, title="Split task into subtasks", destructive=False)
    register(editing.delete_task, title="Delete task", destructive=True)
    register(
        workflow.update_task_status,
        title="Update task status",
        tier="core",
        destructive=False,
        idempotent=True,
    )
    register(workflow.get_next_task, title="Get next task", tier="core", destructive=False)
    register(workflow.renew_claim, title="Renew task claim", destructive=False, idempotent=False)
    register(workflow.release_claim, title="Release task claim", destructive=False, idempotent=True)
    register(reading.get_task_stats, title="Task statistics", access="read")
    register(activity.list_task_activity, title="Recent task activity", access="read")
    register(
        workflow.link_task_session,
        title="Link task to thinking session",
        destructive=False,
        idempotent=True,
    )
    register(transfer.export_tasks, title="Export tasks", destructive=True)  # overwrite=true replaces a file
    register(transfer.import_tasks, title="Import tasks", destructive=False, idempotent=True)
    register(graph.get_task_graph, title="Task dependency graph", access="read")
    register(graph.get_critical_path, title="Critical path of the tasks", access="read")


@hookimpl
def hostd_register_commands(register: RegisterCommand) -> None:
    """``hostd tasks export`` and ``hostd tasks import``: export_tasks and import_tasks, called
    through the host's call pipeline like any call."""
    register(
        "tasks",
        "export",
        tool="export_tasks",
        help="export the task list (or a filter of it) as JSON for import, or as Markdown",
        options=[
            CommandOption(
                ("--format",), "format", help="json (for hostd tasks import; the default) or markdown"
            ),
            CommandOption(("--status",), "status", help="only tasks with this status"),
            CommandOption(("--priority",), "priority", help="only tasks with this priority"),
            CommandOption(("--label",), "label", help="only tasks with this label"),
            CommandOption(("--task-id",), "task_ids", repeat=True, help="only this task (repeatable)"),
            CommandOption(
                ("-o", "--output"),
                "output_path",
                help="write to this file (inside the allowed roots), not stdout",
            ),
            CommandOption(
                ("--overwrite",), "overwrite", switch=True, help="replace an existing --output file"
            ),
        ],
        prints=["document", "markdown"],
    )
    register(
        "tasks",
        "import",
        tool="import_tasks",
        help="import a file hostd tasks export wrote: all or nothing, twice changes nothing",
        options=[CommandOption(("file",), "input_path", help="the JSON file (inside the allowed roots)")],
    )


@hookimpl
def hostd_register_services(register: RegisterService, context: PluginContext[Settings]) -> None:
    register(SERVICE_NAME, TaskLinks(context))


@hookimpl
def hostd_database_schema(context: PluginContext[Settings]) -> Schema:
    from hostd_tasks.store.schema import schema

    return schema(context.settings.database)


@hookimpl
def hostd_register_views(register: RegisterViews) -> None:
    """The dashboard's task pages (``views``): the board, a task's page and its actions."""
    from hostd_tasks.views import register_views

    register_views(register)


@hookimpl
def hostd_record_store(context: PluginContext[Settings], local: bool) -> RecordStore | None:
    """``hostd db copy``: the tasks of this data folder's SQLite file (``local``), or of the team
    database, as records (``store.records``)."""
    from hostd_tasks.store import TaskStore
    from hostd_tasks.store.records import TaskRecords

    if local and not (context.data_dir / context.settings.database).exists():
        return None  # nothing kept in the data folder
    if not local and not context.has_team_database:
        return None
    return TaskRecords(TaskStore(context.database()))  # the data folder's file, or the team's tables


@hookimpl
def hostd_register_resources(register: RegisterResource, context: PluginContext[Settings]) -> None:
    """Tasks as MCP resources, served wherever ``get_task`` is."""
    from hostd_tasks import resources

    register(
        resources.TEMPLATE,
        name="task",
        title="Task",
        description="A task: status, priority, dependencies, notes and history",
        mime_type=resources.MIME_TYPE,
        list=resources.list_resources,
        read=resources.read_resource,
        complete=resources.complete_argument,
        tool="get_task",
    )
    register(
        resources.LABEL_TEMPLATE,
        name="tasks-by-label",
        title="Tasks by label",
        description="The tasks carrying one label, most urgent first",
        mime_type=resources.MIME_TYPE,
        read=resources.read_label_resource,
        complete=resources.complete_label,
        tool="list_tasks",
    )


#: The plugin's icon (a check mark): the host serves it inline on each of its tools.
ICON = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">'
    '<rect width="32" height="32" rx="6" fill="#1f8a70"/>'
    '<path d="M8 16.5l5.5 5.5L24 10" fill="none" stroke="#fff" stroke-width="3.5" '
    'stroke-linecap="round" stroke-linejoin="round"/>'
    "</svg>"
)


@hookimpl
def hostd_icon() -> str:
    return ICON
