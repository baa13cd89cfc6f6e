"""The host proper: plugins loaded for one profile, their contexts, services and tools.

The ``Host`` knows nothing of transports: the server module adapts it to the SDK, and the
CLI's ``call`` uses it directly in-process.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pluggy

from hostd.core.access import AccessPolicy
from hostd.core.assembly import checked_icon, narrow_roots, select_tools, validate_settings
from hostd.core.commands import COMMAND_NAME, CommandOption, CommandSpec
from hostd.core.config import LoadedConfig
from hostd.core.context import ClientChannel, PluginRuntime, ServiceRegistry, TeamStorage
from hostd.core.errors import HostError
from hostd.core.identity import CURRENT_MEMBER, Surface
from hostd.core.observe import CallObservers
from hostd.core.offerings import Offerings
from hostd.core.pipeline import CallPipeline, CallQuotas, ToolCall
from hostd.core.plugins import make_plugin_manager
from hostd.core.prompts import PromptSource
from hostd.core.resources import (
    ResourceKind,
    ResourceLink,
)
from hostd.core.schema_cache import SchemaCache
from hostd.core.tools import (
    ToolSpec,
    build_tool_spec,
)

if TYPE_CHECKING:
    from hostd_db import Database, Schema, TeamDatabaseSettings


class ChangeFeed(Protocol):
    """Where the host publishes the resources a call changed
    (``hostd.protocol.subscriptions.ResourceChanges``)."""

    async def resources_updated(self, uris: Iterable[str]) -> None: ...


logger = logging.getLogger("hostd")

Envelope = dict[str, Any]


def schema_cache_dir() -> Path | None:
    """Where tool schemas are cached (``$HOSTD_CACHE_DIR``, else the user cache dir; ``off`` disables)."""
    configured = os.environ.get("HOSTD_CACHE_DIR")
    if configured:
        return None if configured == "off" else Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("hostd", appauthor=False)) / "tool-schemas"


class Host:
    """Plugins of one profile, ready to list and call tools."""

    def __init__(
        self,
        loaded: LoadedConfig,
        *,
        extra_plugins: Mapping[str, object] | None = None,
        cwd: Path | None = None,
    ) -> None:
        self.loaded = loaded
        self.language = loaded.language
        self.cwd = cwd
        self._extra_plugins = set(extra_plugins or {})
        self.manager, self.plugin_names = make_plugin_manager(
            loaded.profile.plugins, extra_plugins=extra_plugins
        )
        self.services = ServiceRegistry()
        self.contexts: dict[str, PluginRuntime[Any]] = {}
        self.tools: dict[str, ToolSpec] = {}
        self._schemas: dict[str, Schema | None] = {}
        self.observers = CallObservers()
        self.quotas: CallQuotas | None = None  # ``limits``, set by ``hostd serve`` (hostd.team.quotas)
        self.ops_databases: dict[str, Any] = {}  # the host's own tables (hostd.team.ops_databases)
        #: Closed last at shutdown, newest first (what a surface opened lazily: the dashboard's sign-outs).
        self.closers: list[Callable[[], None]] = []
        self.resource_kinds: list[ResourceKind] = []
        #: Where changed resources are published (``hostd.protocol.subscriptions``), set by the server.
        self.changes: ChangeFeed | None = None
        self.prompt_sources: list[PromptSource] = []
        self._started: list[str] = []
        self._build_contexts()
        self._register_services()
        self._register_tools()
        self._register_resources()
        self._register_prompts()
        self.icons: dict[str, str] = self._collect_icons()
        #: (group, name) -> the command-line command (``hostd_register_commands``) of a served tool.
        self.commands: dict[tuple[str, str], CommandSpec] = self._register_commands()

    @property
    def extra_plugins(self) -> dict[str, object]:
        """The in-line plugins (tests, embedding) by name: they count as installed for every profile."""
        return {name: self.manager.get_plugin(name) for name in self._extra_plugins}

    # --- assembly ----------------------------------------------------------------------

    def _call_hook(self, hook_name: str, plugin_name: str, **arguments: Any) -> Any:
        """One plugin's implementation of a hook, called through pluggy.

        Each plugin gets its own context, so the host calls the hook once per plugin: a subset
        caller without the other plugins' implementations (their wrappers stay), so hookwrappers,
        ``wrapper=True`` implementations and pluggy's tracing run as they would for one call.
        """
        caller = getattr(self.manager.hook, hook_name)
        others = [
            impl.plugin
            for impl in caller.get_hookimpls()
            if impl.plugin_name != plugin_name and not (impl.hookwrapper or impl.wrapper)
        ]
        results = self.manager.subset_hook_caller(hook_name, remove_plugins=others)(**arguments)
        return results[0] if results else None

    def call_each(self, hook_name: str, arguments: Callable[[str], dict[str, Any]]) -> dict[str, Any]:
        """Call a hook once per plugin that implements it, in load order, each with its own
        arguments (``arguments(plugin)``, its context among them); the answers by plugin. The way
        a wing (the dashboard's views) asks the plugins something."""
        return {
            name: self._call_hook(hook_name, name, **arguments(name)) for name, _ in self._impls(hook_name)
        }

    def _impls(self, hook_name: str) -> list[tuple[str, pluggy.HookImpl]]:
        """Implementations of one hook in plugin load order, with the plugin's name."""
        caller = getattr(self.manager.hook, hook_name)
        by_plugin = {impl.plugin_name: impl for impl in caller.get_hookimpls()}
        return [(name, by_plugin[name]) for name in self.plugin_names if name in by_plugin]

    def _build_contexts(self) -> None:
        sections = self.loaded.config.plugins
        models = {
            name: self._call_hook("hostd_settings_model", name)
            for name, _ in self._impls("hostd_settings_model")
        }
        host_roots = self.loaded.allowed_roots
        storage = self._team_storage()
        for name in self.plugin_names:
            raw = dict(sections.get(name) or {})
            plugin_roots = raw.pop("allowed_roots", None)
            settings = validate_settings(name, models.get(name), raw)
            roots = narrow_roots(name, host_roots, plugin_roots)
            self.contexts[name] = PluginRuntime(
                name=name,
                settings=settings,
                language=self.language,
                host_data_dir=self.loaded.data_dir,
                services=self.services,
                allowed_roots=roots,
                storage=storage,
            )
        for name, _ in self._impls("hostd_database_schema"):
            self.contexts[name]._open_database = functools.partial(self._open_database, name)

    def _database_schema(self, name: str) -> Schema | None:
        """The plugin's ``hostd_database_schema``, asked once."""
        if name not in self._schemas:
            self._schemas[name] = self._call_hook("hostd_database_schema", name, context=self.contexts[name])
        return self._schemas[name]

    def _data_folder_context(self, name: str) -> PluginRuntime[Any]:
        """The plugin's context as it is without a team database: ``database()`` is the SQLite file of
        its data folder (opened on first use, never created), for ``hostd db copy`` to read from."""
        context = self.contexts[name]
        folder = dataclasses.replace(context, storage=None)  # its own resources, nothing opened yet
        schema = self._database_schema(name)
        if schema is not None and schema.sqlite_file is not None:
            from hostd_db import open_database

            folder._open_database = functools.partial(
                open_database, schema, name, data_dir=context.host_data_dir / name, team=None
            )
        return folder

    def _open_database(self, name: str) -> Database | None:
        """The plugin's database as its schema declares it (None: it keeps its own files locally)."""
        from hostd_db import open_database

        schema = self._database_schema(name)
        if schema is None:
            return None
        context = self.contexts[name]
        team = self.team_settings()
        if team is None and schema.sqlite_file is None:
            return None
        # The folder, not ``context.data_dir`` (which makes it): with a team database nothing is kept here.
        return open_database(schema, name, data_dir=context.host_data_dir / name, team=team)

    def team_settings(self) -> TeamDatabaseSettings | None:
        """The team database's settings (``storage``), or ``None`` when each store is a local file."""
        storage = self._team_storage()
        if storage is None:
            return None
        from hostd_db import TeamDatabaseSettings

        return TeamDatabaseSettings(
            url=storage.url,
            pool_size=storage.pool_size,
            connect_timeout_seconds=storage.connect_timeout_seconds,
            statement_timeout_ms=storage.statement_timeout_ms,
            migrate=storage.migrate,
        )

    def _team_storage(self) -> TeamStorage | None:
        section = self.loaded.config.storage
        url = self.loaded.database_url
        if section is None or url is None:
            return None
        return TeamStorage(
            url=url,
            pool_size=section.pool_size,
            connect_timeout_seconds=section.connect_timeout_seconds,
            statement_timeout_ms=section.statement_timeout_ms,
            migrate=section.migrate,
        )

    def team_databases(self) -> list[tuple[str, Any]]:
        """Each plugin's tables in the team database, opened from its schema (none without storage)."""
        if self.loaded.config.storage is None:
            return []
        found: list[tuple[str, Any]] = []
        for name, _ in self._impls("hostd_database_schema"):
            if self._database_schema(name) is not None:
                found.append((name, self.contexts[name].database()))
        from hostd.team.ops_databases import ops_team_databases

        found.extend(ops_team_databases(self))  # the audit trail's and the quotas' tables
        return found

    def copy_to_team_database(
        self, progress: Callable[[str, int], None] | None = None
    ) -> list[tuple[str, Any]]:
        """Each plugin's local store copied into the team database: ``(plugin, CopyReport)`` pairs.

        The plugins give their stores (``hostd_record_store``); the copy is ``hostd.core.records``'s.
        ``progress(plugin, records_read)`` is called every thousand records.
        """
        from hostd_db import DatabaseError

        from hostd.core.records import CopyReport, import_records

        reports = []
        for name, _ in self._impls("hostd_record_store"):
            context = self.contexts[name]
            try:
                team = self._call_hook("hostd_record_store", name, context=context, local=False)
                if team is None:
                    continue
                folder = self._data_folder_context(name)
                try:
                    local = self._call_hook("hostd_record_store", name, context=folder, local=True)
                    if local is None:
                        reports.append((name, CopyReport()))
                        continue
                    try:
                        report = import_records(
                            local,
                            team,
                            context.database(),
                            context.render,
                            progress=None if progress is None else partial(progress, name),
                        )
                    finally:
                        local.close()
                finally:
                    folder.close_resources()
            except DatabaseError as exc:
                raise HostError(f"{name}: {exc.message.en} {exc.hint.en if exc.hint else ''}") from None
            reports.append((name, report))
        return reports

    def prepare_team_databases(self, *, migrate: bool) -> list[tuple[str, Any]]:
        """Migrate (or only check) every plugin's team tables; a database problem is a HostError (exit 2).

        Returns ``(plugin, SchemaStatus)`` pairs. Used at start-up and by ``hostd db migrate``.
        """
        from hostd_db import DatabaseError

        statuses = []
        for name, database in self.team_databases():
            try:
                status = database.migrate() if migrate else database.schema_status()
            except DatabaseError as exc:
                raise HostError(f"{name}: {exc.message.en} {exc.hint.en if exc.hint else ''}") from None
            statuses.append((name, status))
        return statuses

    def _register_services(self) -> None:
        for name, _ in self._impls("hostd_register_services"):
            context = self.contexts[name]

            def register(service_name: str, service: object, _plugin: str = name) -> None:
                self.services.add(service_name, service, plugin=_plugin)

            self._call_hook("hostd_register_services", name, register=register, context=context)

    def _register_tools(self) -> None:
        selections = self.loaded.profile.tools
        unknown_sections = set(selections) - set(self.plugin_names)
        if unknown_sections:
            raise HostError(
                f"profiles.{self.loaded.profile_name}.tools: no loaded plugin named "
                f"{', '.join(sorted(unknown_sections))}"
            )
        cache_dir = schema_cache_dir()
        for name, _ in self._impls("hostd_register_tools"):
            offered: list[ToolSpec] = []
            installed = name not in self._extra_plugins  # in-line plugins have no stable files to key on
            cache = SchemaCache.for_plugin(
                name, self.manager.get_plugin(name), cache_dir if installed else None
            )

            def register(
                function: Callable[..., Any],
                _plugin: str = name,
                _into: list[ToolSpec] = offered,
                _cache: SchemaCache = cache,
                **options: Any,
            ) -> None:
                _into.append(build_tool_spec(function, plugin=_plugin, cache=_cache, **options))

            self._call_hook("hostd_register_tools", name, register=register, context=self.contexts[name])
            cache.save()
            select_tools(self.loaded, name, offered, into=self.tools)

    def _register_commands(self) -> dict[tuple[str, str], CommandSpec]:
        served = {(spec.plugin, spec.registered_name or spec.name): spec for spec in self.tools.values()}
        commands: dict[tuple[str, str], CommandSpec] = {}
        for plugin, _ in self._impls("hostd_register_commands"):
            offered: list[CommandSpec] = []

            def register(
                group: str,
                name: str,
                *,
                tool: str,
                help: str,
                options: Sequence[CommandOption] = (),
                prints: Sequence[str] = (),
                _plugin: str = plugin,
                _into: list[CommandSpec] = offered,
            ) -> None:
                where = f"plugin {_plugin!r}: command '{group} {name}'"
                if not (COMMAND_NAME.match(group) and COMMAND_NAME.match(name)):
                    raise HostError(f"{where}: group and name must match {COMMAND_NAME.pattern}")
                spec = served.get((_plugin, tool))
                if spec is None:
                    return  # the profile does not serve the tool (or it is not one): no command for it
                arguments = spec.input_schema.get("properties", {})
                unknown = [option.argument for option in options if option.argument not in arguments]
                if unknown:
                    raise HostError(f"{where}: {tool} has no argument {', '.join(map(repr, unknown))}")
                _into.append(
                    CommandSpec(_plugin, group, name, spec.name, help, tuple(options), tuple(prints))
                )

            context = self.contexts[plugin]
            self._call_hook("hostd_register_commands", plugin, register=register, context=context)
            for command in offered:
                key = (command.group, command.name)
                if key in commands:
                    raise HostError(
                        f"command '{command.group} {command.name}' is registered by both "
                        f"{commands[key].plugin!r} and {command.plugin!r}"
                    )
                commands[key] = command
        return commands

    def _collect_icons(self) -> dict[str, str]:
        """Each plugin's icon (``hostd_icon``) as SVG markup, checked: plugin name -> SVG."""
        icons = {name: self._call_hook("hostd_icon", name) for name, _ in self._impls("hostd_icon")}
        return {name: checked_icon(name, svg) for name, svg in icons.items() if svg is not None}

    def _register_resources(self) -> None:
        for name, _ in self._impls("hostd_register_resources"):
            offered: list[ResourceKind] = []

            def register(
                uri_template: str, _plugin: str = name, _into: list[ResourceKind] = offered, **options: Any
            ) -> None:
                _into.append(ResourceKind(plugin=_plugin, uri_template=uri_template, **options))

            self._call_hook("hostd_register_resources", name, register=register, context=self.contexts[name])
            for kind in offered:
                schemes = {k.uri_template.split("://", 1)[0] for k in self.resource_kinds}
                if kind.uri_template.split("://", 1)[0] in schemes:
                    raise HostError(f"plugin {name!r}: resource scheme of {kind.uri_template!r} is taken")
            self.resource_kinds.extend(offered)

    def _register_prompts(self) -> None:
        for name, _ in self._impls("hostd_register_prompts"):

            def register(_plugin: str = name, **options: Any) -> None:
                self.prompt_sources.append(PromptSource(plugin=_plugin, **options))

            self._call_hook("hostd_register_prompts", name, register=register, context=self.contexts[name])

    # --- life cycle --------------------------------------------------------------------

    def startup(self) -> None:
        for name, _ in self._impls("hostd_startup"):
            self._call_hook("hostd_startup", name, context=self.contexts[name])
            self._started.append(name)
        logger.debug("started plugins: %s", ", ".join(self.plugin_names))

    def shutdown(self) -> None:
        """Shut plugins down in reverse order, then close what they opened lazily."""
        started = set(self._started)
        for name, _ in reversed(self._impls("hostd_shutdown")):
            if name in started:
                try:
                    self._call_hook("hostd_shutdown", name, context=self.contexts[name])
                except Exception:
                    logger.exception("plugin %s failed to shut down cleanly", name)
        for name in reversed(self.plugin_names):
            self.contexts[name].close_resources()
        self._started.clear()
        while self.closers:
            self.closers.pop()()

    # --- calls -------------------------------------------------------------------------

    @functools.cached_property
    def access(self) -> AccessPolicy:
        """The one access policy of this host (``hostd.core.access``)."""
        return AccessPolicy.for_host(self)

    @functools.cached_property
    def offerings(self) -> Offerings:
        """What the host serves besides tools, per member: resources, prompts, completions."""
        return Offerings(self, self.access)

    @functools.cached_property
    def pipeline(self) -> CallPipeline:
        """The one call pipeline every surface hands its calls to (``hostd.core.pipeline``)."""
        return CallPipeline(self, self.access)

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        channel: ClientChannel | None = None,
        client_roots: Sequence[str] | None = None,
        links: list[ResourceLink] | None = None,
        surface: Surface = "cli",
    ) -> tuple[Envelope, bool]:
        """Run one tool for the member of the call in progress (``hostd.core.identity``) through
        the pipeline; its envelope and whether it is an error. On success the files and records
        the tool named are added to ``links``."""
        call = ToolCall(
            name,
            arguments,
            CURRENT_MEMBER.get(),
            surface,
            channel=channel,
            client_roots=client_roots,
        )
        answer = await self.pipeline.call_tool(call)
        if links is not None:
            links.extend(call.links)
        return answer.envelope, answer.is_error
