"""The whole plugin contract: every hook a hostd plugin may implement.

Plugins implement these with ``@hostd.hookimpl``; an implementation may take fewer
arguments than the spec names, so hooks can grow without breaking plugins. Hooks receive
``register`` callbacks instead of returning values, so the host owns names, collisions and
provenance (which plugin offered which tool or service).

The host calls each hook once per plugin, with that plugin's own context, through pluggy
(a subset caller holding that plugin's implementation and every plugin's wrappers), so
``hookwrapper``/``wrapper`` implementations and ``PluginManager.trace`` apply as usual.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

from hostd.api import (
    PROJECT,
    PluginContext,
    RecordStore,
    RegisterCommand,
    RegisterPrompts,
    RegisterResource,
    RegisterService,
    RegisterTool,
    RegisterViews,
    hookimpl,
)

if TYPE_CHECKING:
    from hostd_db import Schema
    from pydantic import BaseModel

hookspec = pluggy.HookspecMarker(PROJECT)


@hookspec
def hostd_settings_model() -> type[BaseModel] | None:
    """Return the pydantic model that validates this plugin's section of the config."""


@hookspec
def hostd_register_tools(register: RegisterTool, context: PluginContext[object]) -> None:
    """Register this plugin's tools by calling ``register(function, ...)`` once per tool."""


@hookspec
def hostd_register_resources(register: RegisterResource, context: PluginContext[object]) -> None:
    """Offer kinds of resource by calling ``register(uri_template, name=..., list=..., read=..., tool=...)``.

    Each kind is served (listed, read, offered as a template) exactly where its ``tool`` is: a
    profile or member that does not serve that tool neither lists nor reads the resources.
    """


@hookspec
def hostd_register_prompts(register: RegisterPrompts, context: PluginContext[object]) -> None:
    """Offer prompts by calling ``register(list=..., get=..., tool=..., complete=...)``.

    ``list`` may answer differently over time (a user adds a template); like resources, the
    prompts are served exactly where ``tool`` is.
    """


@hookspec
def hostd_register_services(register: RegisterService, context: PluginContext[object]) -> None:
    """Offer objects to other plugins by calling ``register(name, service)``."""


@hookspec
def hostd_database_schema(context: PluginContext[object]) -> Schema | None:
    """Return the tables this plugin keeps (a ``hostd_db.Schema``: tables and migrations), or None.

    The host opens the database when the plugin first calls ``context.database()``: the plugin's
    schema in the team database when ``storage`` is configured, else the SQLite file
    ``Schema.sqlite_file`` in the plugin's data folder. It applies the migrations, keeps one
    database per plugin for the server's life and closes it at shut-down; ``hostd db migrate``
    and ``hostd config check`` report it. Keep the hook cheap: it is called at start-up.
    """


@hookspec
def hostd_register_views(register: RegisterViews, context: PluginContext[object]) -> None:
    """Add this plugin's dashboard pages: ``register.page(path, render, title=..., tool=...)``,
    ``register.action(...)`` for forms, ``register.overview(...)`` for the overview's counts and
    activity, ``register.assets(templates, static)`` for its templates (see ``hostd.core.view_api``).

    Each page and action names the plugin's tool it stands for: a member whose profile does not
    serve that tool neither sees nor may use it. Render from the plugin's own tool functions
    (``request.call``), never from tables the host would read.
    """


@hookspec
def hostd_record_store(context: PluginContext[object], local: bool) -> RecordStore | None:
    """This plugin's store as ``hostd db copy`` copies it (a ``hostd.RecordStore``), or None.

    Asked twice, with the same code in mind: ``local=False`` with the plugin's context, whose
    ``database()`` is the team database that receives the records (None when the plugin keeps
    nothing to copy); ``local=True`` with the context of the plugin's data folder, as it is without
    a team database (``database()`` is its SQLite file, ``data_dir`` holds its own files), opened
    for the copy and closed by the host after it (None when nothing is stored there, so check
    before ``database()`` would create the file). The host runs the copy (``hostd.core.records``):
    one transaction, the merge rule each kind declares, conflicts reported and never overwritten,
    a second run changing nothing.
    """


@hookspec
def hostd_register_commands(register: RegisterCommand, context: PluginContext[object]) -> None:
    """Add commands to the ``hostd`` command line: ``register(group, name, tool=..., help=...,
    options=[CommandOption(...)], prints=...)`` makes ``hostd GROUP NAME [options]`` run the
    plugin's ``tool`` through the call pipeline, as ``hostd call`` does.

    A command is offered where its tool is served (a profile that leaves the tool out leaves the
    command out); two plugins registering one command, or an option naming no argument of the
    tool, stop the host.
    """


@hookspec
def hostd_icon() -> str | None:
    """Return the plugin's icon as SVG markup: small (at most 4 KiB), self-contained (no links).

    The host serves it inline (a ``data:`` URI) once, on the plugin's first listed tool, so no
    client needs the network to show it.
    """


@hookspec
def hostd_startup(context: PluginContext[object]) -> None:
    """Run once before the server accepts requests; keep it cheap (open stores lazily)."""


@hookspec
def hostd_shutdown(context: PluginContext[object]) -> None:
    """Run once when the server stops, in reverse start-up order; close what you opened."""


HOOK_NAMES: tuple[str, ...] = tuple(
    name for name, value in dict(globals()).items() if name.startswith("hostd_") and callable(value)
)

__all__ = ["HOOK_NAMES", "PROJECT", "hookimpl", "hookspec"]
