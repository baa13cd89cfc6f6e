"""The host proper: plugins loaded for one profile, their contexts, services and tools.

The ``Host`` knows nothing of transports: the server module adapts it to the SDK, and the
CLI's ``call`` uses it directly in-process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import logging
import os
import re
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import pluggy
from hostd_errors import CodedError, Text, render
from pydantic import BaseModel, ValidationError

from hostd.api import ToolOutput
from hostd.core.config import LoadedConfig, format_validation_error
from hostd.core.context import CallContext, ClientChannel, PluginRuntime, ServiceRegistry, TeamStorage
from hostd.core.errors import HostError
from hostd.core.observe import CANCELLED, CallObservers, CallRecord
from hostd.core.plugins import make_plugin_manager
from hostd.core.prompts import PromptInfo, PromptSource, PromptText
from hostd.core.resources import (
    RESOURCE_PAGE,
    ResourceBlob,
    ResourceInfo,
    ResourceKind,
    ResourceLink,
    ResourceText,
    decode_list_cursor,
    encode_list_cursor,
    find_kind,
    not_found,
)
from hostd.core.schema_cache import SchemaCache
from hostd.core.tools import (
    ArgumentError,
    ToolSpec,
    bounded_text,
    build_tool_spec,
    error_envelope,
    success_envelope,
    validate_arguments,
)
from hostd.team.quotas import MemoryBuckets, Quotas

if TYPE_CHECKING:
    from hostd_db import Database, Schema, TeamDatabaseSettings


class ChangeFeed(Protocol):
    """Where the host publishes the resources a call changed
    (``hostd.protocol.subscriptions.ResourceChanges``)."""

    async def resources_updated(self, uris: Iterable[str]) -> None: ...


#: The largest plugin icon (``hostd_icon``): it travels inline on each of the plugin's tools.
MAX_ICON_BYTES = 4096
SVG_NAMESPACE = "http://www.w3.org/2000/svg"
#: What in an icon would make a client reach the network to draw it.
_NETWORK_REFERENCE = re.compile(r"(?i)\b(?:https?|ftp):|=\s*[\"']//")

logger = logging.getLogger("hostd")

Envelope = dict[str, Any]


def schema_cache_dir() -> Path | None:
    """Where tool schemas are cached (``$HOSTD_CACHE_DIR``, else the user cache dir; ``off`` disables)."""
    configured = os.environ.get("HOSTD_CACHE_DIR")
    if configured:
        return None if configured == "off" else Path(configured).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("hostd", appauthor=False)) / "tool-schemas"


class _WorkerJob:
    """One sync tool call for a worker thread, leaving nothing of the call behind once it has run.

    anyio's worker thread keeps its last job (the function with the call's arguments) and the
    exception it raised (whose traceback holds the tool's frames and every copy of an argument in
    their locals) until its next job: a run of 30 MB calls over HTTP left one or two copies per
    call resident. The call is dropped as soon as it has run, and a failure is handed back in
    ``failure`` rather than raised in the thread, so the host can clear its frames once answered.
    """

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call: Callable[[], Any] | None = call
        self.failure: Exception | None = None

    def __call__(self) -> Any:
        call, self._call = self._call, None
        assert call is not None, "a worker job runs once"
        try:
            return call()
        except Exception as exc:
            self.failure = exc
            return None
        finally:
            del call


def _forget_frames(exc: BaseException) -> None:
    """Drop the frames an answered exception (and those chained to it) still holds."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        item = pending.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        item.__traceback__ = None
        pending += [item.__cause__, item.__context__]


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
        self.quotas: Quotas | None = None  # ``limits``, set by ``hostd serve`` (hostd.team.quotas)
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
            settings = self._validate_settings(name, models.get(name), raw)
            roots = self._narrow_roots(name, host_roots, plugin_roots)
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
        team = self._team_settings()
        if team is None and schema.sqlite_file is None:
            return None
        # The folder, not ``context.data_dir`` (which makes it): with a team database nothing is kept here.
        return open_database(schema, name, data_dir=context.host_data_dir / name, team=team)

    def _team_settings(self) -> TeamDatabaseSettings | None:
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

    @staticmethod
    def _validate_settings(name: str, model: type[BaseModel] | None, raw: dict[str, Any]) -> Any:
        if model is None:
            if raw:
                raise HostError(
                    f"plugins.{name}: this plugin takes no settings (got {', '.join(sorted(raw))})"
                )
            return None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            raise HostError(
                f"plugins.{name}: hostd_settings_model must return a pydantic BaseModel subclass or None"
                f" (got {model!r})"
            )
        try:
            return model.model_validate(raw)
        except ValidationError as exc:
            raise HostError(
                f"invalid plugin settings\n{format_validation_error(exc, f'plugins.{name}')}"
            ) from None

    @staticmethod
    def _narrow_roots(name: str, host_roots: list[Path] | None, plugin_roots: Any) -> list[Path] | None:
        if plugin_roots is None:
            return host_roots
        if not isinstance(plugin_roots, list) or not all(isinstance(r, str) for r in plugin_roots):
            raise HostError(f"plugins.{name}.allowed_roots: must be a list of folder paths")
        narrowed = [Path(r).expanduser() for r in plugin_roots]
        if host_roots is not None:
            resolved_host = [r.resolve() for r in host_roots]
            for root in narrowed:
                if not any(root.resolve().is_relative_to(h) for h in resolved_host):
                    raise HostError(
                        f"plugins.{name}.allowed_roots: {root} is outside the host-wide allowed_roots "
                        "(a plugin may only narrow them)"
                    )
        return narrowed

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
            self._add_plugin_tools(name, offered)

    def _collect_icons(self) -> dict[str, str]:
        """Each plugin's icon (``hostd_icon``) as SVG markup, checked: plugin name -> SVG."""
        icons: dict[str, str] = {}
        for name, _ in self._impls("hostd_icon"):
            svg = self._call_hook("hostd_icon", name)
            if svg is None:
                continue
            if (
                not isinstance(svg, str)
                or not svg.lstrip().startswith("<svg")
                or len(svg.encode()) > MAX_ICON_BYTES
            ):
                raise HostError(
                    f"plugin {name!r}: hostd_icon must return SVG markup of at most {MAX_ICON_BYTES} bytes"
                )
            if _NETWORK_REFERENCE.search(svg.replace(SVG_NAMESPACE, "")):
                raise HostError(f"plugin {name!r}: hostd_icon's SVG must not refer to the network")
            icons[name] = svg
        return icons

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

    def _serves(self, plugin: str, tool: str, allowed_tools: frozenset[str] | None) -> bool:
        return any(
            spec.plugin == plugin
            and spec.registered_name == tool
            and (allowed_tools is None or spec.name in allowed_tools)
            for spec in self.tools.values()
        )

    def served_prompt_sources(self, allowed_tools: frozenset[str] | None = None) -> list[PromptSource]:
        """The prompt sources this profile (or member) serves: each follows one tool, like resources."""
        return [s for s in self.prompt_sources if self._serves(s.plugin, s.tool, allowed_tools)]

    async def list_prompts(self, sources: Sequence[PromptSource]) -> list[tuple[PromptSource, PromptInfo]]:
        """Every served prompt with its source; a name offered twice keeps its first source."""
        import anyio

        found: dict[str, tuple[PromptSource, PromptInfo]] = {}
        for source in sources:
            prompts = await anyio.to_thread.run_sync(source.list, self._resource_context(source.plugin))
            for prompt in prompts:
                found.setdefault(prompt.name, (source, prompt))
        return list(found.values())

    async def get_prompt(
        self, sources: Sequence[PromptSource], name: str, arguments: dict[str, str]
    ) -> PromptText:
        """The prompt rendered; ``KeyError`` when no served source has it, ``CodedError`` from the plugin."""
        import anyio

        for source, prompt in await self.list_prompts(sources):
            if prompt.name == name:
                rendered: PromptText = await anyio.to_thread.run_sync(
                    functools.partial(source.get, self._resource_context(source.plugin), name, arguments)
                )
                return rendered
        raise KeyError(name)

    async def complete(
        self,
        allowed_tools: frozenset[str] | None,
        *,
        template: str | None,
        prompt: str | None,
        argument: str,
        prefix: str,
        arguments: dict[str, str],
    ) -> list[str]:
        """Values for an argument of a served resource template or prompt, best first (none when unknown)."""
        import anyio

        if template is not None:
            for kind in self.served_resource_kinds(allowed_tools):
                if kind.uri_template == template and kind.complete is not None and argument in kind.arguments:
                    call = functools.partial(
                        kind.complete, self._resource_context(kind.plugin), argument, prefix, arguments
                    )
                    values: list[str] = await anyio.to_thread.run_sync(call)
                    return values
            return []
        sources = self.served_prompt_sources(allowed_tools)
        for source, info in await self.list_prompts(sources):
            if info.name == prompt and source.complete is not None:
                if argument not in {a.name for a in info.arguments}:
                    return []
                call = functools.partial(
                    source.complete,
                    self._resource_context(source.plugin),
                    prompt,
                    argument,
                    prefix,
                    arguments,
                )
                found: list[str] = await anyio.to_thread.run_sync(call)
                return found
        return []

    def served_resource_kinds(self, allowed_tools: frozenset[str] | None = None) -> list[ResourceKind]:
        """The kinds of resource this profile serves (for a member limited to ``allowed_tools``, fewer):
        a kind is served exactly where the tool it follows is."""
        served = {
            (spec.plugin, spec.registered_name)
            for spec in self.tools.values()
            if allowed_tools is None or spec.name in allowed_tools
        }
        return [kind for kind in self.resource_kinds if (kind.plugin, kind.tool) in served]

    def _resource_context(self, plugin: str) -> CallContext[Any]:
        return CallContext(self.contexts[plugin], cwd=self.cwd)

    async def list_resources(
        self, kinds: Sequence[ResourceKind], cursor: str | None
    ) -> tuple[list[ResourceInfo], str | None]:
        """One page of ``resources/list``: each kind in turn, each paged by its own listing.

        Raises ``ValueError`` for a cursor that is not one of ours, ``CodedError`` from a plugin.
        """
        import anyio

        index, inner = decode_list_cursor(cursor)
        if index > len(kinds) or (index == len(kinds) and cursor is not None):
            raise ValueError("other_listing")
        found: list[ResourceInfo] = []
        while index < len(kinds) and len(found) < RESOURCE_PAGE:
            kind = kinds[index]
            if kind.list is None:  # a template's resources are made on demand: nothing to list
                index, inner = index + 1, None
                continue
            page = await anyio.to_thread.run_sync(
                functools.partial(kind.list, self._resource_context(kind.plugin), inner)
            )
            found.extend(page.resources)
            if page.next_cursor is not None:
                return found, encode_list_cursor(index, page.next_cursor)
            index, inner = index + 1, None
        return found, (encode_list_cursor(index, None) if index < len(kinds) else None)

    async def read_resource(self, kinds: Sequence[ResourceKind], uri: str) -> ResourceText | ResourceBlob:
        """The resource ``uri`` names; ``CodedError`` NOT_FOUND when no served kind has it."""
        import anyio

        matched = find_kind(kinds, uri)
        if matched is None:
            raise not_found(uri)
        kind, params = matched
        result: ResourceText | ResourceBlob = await anyio.to_thread.run_sync(
            functools.partial(kind.read, self._resource_context(kind.plugin), params)
        )
        return result

    def _add_plugin_tools(self, plugin: str, offered: list[ToolSpec]) -> None:
        selection = self.loaded.profile.tools.get(plugin)
        names = [spec.name for spec in offered]
        if len(set(names)) != len(names):
            raise HostError(f"plugin {plugin!r} registers a tool name twice")
        if selection is not None:
            where = f"profiles.{self.loaded.profile_name}.tools.{plugin}"
            for key, listed in (("include", selection.include or []), ("exclude", selection.exclude)):
                missing = sorted(set(listed) - set(names))
                if missing:
                    raise HostError(
                        f"{where}.{key}: plugin has no tool {', '.join(missing)}; it has {', '.join(names)}"
                    )
            if selection.tier != "all":
                outside = sorted(
                    spec.name
                    for spec in offered
                    if spec.tier != selection.tier and spec.name in (selection.include or [])
                )
                if outside:
                    raise HostError(
                        f"{where}.include: {', '.join(outside)} not in tier {selection.tier!r}; "
                        f"use tier: all to include it"
                    )
        for spec in offered:
            if selection is not None:
                if selection.tier != "all" and spec.tier != selection.tier:
                    continue
                if selection.include is not None and spec.name not in selection.include:
                    continue
                if spec.name in selection.exclude:
                    continue
                if selection.prefix:
                    spec = spec.renamed(selection.prefix + spec.name)
            if spec.name in self.tools:
                other = self.tools[spec.name].plugin
                raise HostError(
                    f"tool name collision: {spec.name!r} is offered by plugins {other!r} and {plugin!r}; "
                    f"give one a prefix (profiles.{self.loaded.profile_name}.tools.{plugin}.prefix) "
                    "or exclude it"
                )
            self.tools[spec.name] = spec

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

    async def call(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        channel: ClientChannel | None = None,
        client_roots: Sequence[str] | None = None,
        links: list[ResourceLink] | None = None,
    ) -> tuple[Envelope, bool]:
        """Run one tool and return its envelope and whether it is an error; the observers
        (metrics, audit) hear of every call that finished or was cut short. On success the files
        and records the tool named (``ToolOutput.with_links``) are added to ``links``."""
        if not self.observers:
            return await self._run_tool(
                name, arguments, channel=channel, client_roots=client_roots, links=links
            )
        from hostd.core.context import ClientInputNeeded, calling_member

        wall, started = time.time(), time.perf_counter()
        outcome = CANCELLED
        spec = self.tools.get(name)
        plugin, member = (spec.plugin if spec else ""), calling_member()
        tracer = self.observers.tracer
        self.observers.in_flight[name] += 1
        with tracer.span(name, plugin, member) if tracer is not None else contextlib.nullcontext() as span:
            try:
                envelope, is_error = await self._run_tool(
                    name, arguments, channel=channel, client_roots=client_roots, links=links
                )
                outcome = envelope["error"]["code"] if is_error else "ok"
                return envelope, is_error
            except BaseException as exc:
                if isinstance(exc, ClientInputNeeded) or (
                    isinstance(exc, BaseExceptionGroup) and exc.subgroup(ClientInputNeeded) is not None
                ):
                    outcome = ""  # asked the client a question: the call runs again with its answer
                raise
            finally:
                self.observers.in_flight[name] -= 1
                if span is not None:
                    span.finish(outcome or "INPUT_REQUIRED")
                if outcome:
                    self.observers.notify(
                        CallRecord(
                            tool=name,
                            plugin=plugin,
                            member=member,
                            outcome=outcome,
                            started_at=wall,
                            duration=time.perf_counter() - started,
                            arguments=arguments,
                        )
                    )

    async def _over_quota(self, name: str, started: float) -> Envelope | None:
        """The ``RATE_LIMITED`` answer when the caller's bucket (or their bucket for this tool) is empty."""
        import anyio

        from hostd.core.context import calling_member

        assert self.quotas is not None
        member = calling_member()
        try:
            if isinstance(self.quotas.buckets, MemoryBuckets):
                wait = self.quotas.retry_after(member, name)
            else:  # the team database: a round trip, off the event loop
                wait = await anyio.to_thread.run_sync(self.quotas.retry_after, member, name)
        except CodedError as exc:
            message, hint, details = exc.rendered(self.language)
            return error_envelope(exc.code, message, hint=hint, details=details, started=started)
        if not wait:
            return None
        seconds = round(wait, 3)
        return error_envelope(
            "RATE_LIMITED",
            Text(
                en=f"Too many calls: {member}'s quota for {name} is used up for now (limits).",
                zh=f"调用过多：{member} 调用 {name} 的配额暂时用完（limits）。",
            ).render(self.language),
            hint=Text(
                en=f"Try again in {seconds:g} s, or ask the operator to raise limits.",
                zh=f"请在 {seconds:g} 秒后重试，或请管理员调高 limits。",
            ).render(self.language),
            details={"retry_after": seconds, "tool": name, "member": member},
            started=started,
        )

    async def _run_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None,
        *,
        channel: ClientChannel | None,
        client_roots: Sequence[str] | None,
        links: list[ResourceLink] | None = None,
    ) -> tuple[Envelope, bool]:
        import anyio

        started = time.perf_counter()
        spec = self.tools.get(name)
        if spec is None:
            name = bounded_text(name)
            return error_envelope(
                "NOT_FOUND",
                Text(en=f"Unknown tool '{name}'.", zh=f"未知工具 '{name}'。").render(self.language),
                hint=Text(en="Available tools: ", zh="可用工具：").render(self.language)
                + ", ".join(sorted(self.tools)),
                details={"tool": name},
                started=started,
            ), True
        if self.quotas is not None:
            refused = await self._over_quota(name, started)
            if refused is not None:
                return refused, True
        try:
            validated = validate_arguments(spec, arguments, self.language)
        except ArgumentError as exc:
            return error_envelope(
                "INVALID_ARGUMENT", exc.message, hint=exc.hint, details=exc.details, started=started
            ), True
        context = CallContext(
            self.contexts[spec.plugin],
            channel=channel,
            client_roots=client_roots,
            cwd=self.cwd,
        )
        kwargs = spec.call_arguments(validated, context)
        try:
            if spec.is_async:
                result = await cast(Awaitable[ToolOutput], spec.function(**kwargs))
            else:
                job = _WorkerJob(functools.partial(spec.function, **kwargs))
                del kwargs
                result = await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
                if job.failure is not None:
                    raise job.failure
        except anyio.get_cancelled_exc_class():
            context.mark_cancelled()
            raise
        except CodedError as exc:
            _forget_frames(exc)
            message, hint, details = exc.rendered(self.language)
            return error_envelope(exc.code, message, hint=hint, details=details, started=started), True
        except Exception as exc:
            try:
                mapped = self._map_known_exception(exc)
            except Exception:
                logger.exception("mapping an error of tool %s failed", name)
                mapped = None
            if mapped is not None:
                _forget_frames(exc)
                code, message, hint, details = mapped
                return error_envelope(code, message, hint=hint, details=details, started=started), True
            logger.exception("tool %s (plugin %s) raised an unexpected error", name, spec.plugin)
            _forget_frames(exc)
            return self._internal(name, started), True
        if not isinstance(result, spec.output_model):
            logger.error("tool %s returned %r instead of %s", name, type(result), spec.output_model.__name__)
            return self._internal(name, started), True
        message = render(result.envelope_message, self.language) or Text(
            en=f"{name} succeeded.", zh=f"{name} 执行成功。"
        ).render(self.language)
        try:
            envelope = success_envelope(result, message, started, self.language)
        except Exception:
            logger.exception("tool %s returned output that cannot be serialised", name)
            return self._internal(name, started), True
        if links is not None:
            links.extend(result.links)
        await self.publish_changes(spec, context, result)
        return envelope, False

    async def publish_changes(self, spec: ToolSpec, context: CallContext[Any], result: Any) -> None:
        """Tell subscribers what a call that succeeded changed: what it reported
        (``ToolContext.resource_changed``) and, for a tool that is not read-only, the records it
        linked to. Only URIs of a served kind of resource are published (not files)."""
        if self.changes is None:
            return
        uris = context.changed_resources
        if not spec.annotations["readOnlyHint"]:
            uris += [link.uri for link in getattr(result, "links", ())]
        served = [uri for uri in uris if find_kind(self.resource_kinds, uri) is not None]
        if served:
            try:
                await self.changes.resources_updated(served)
            except Exception:  # the call succeeded: a lost notification must not turn it into an error
                logger.exception("publishing the resources %s changed failed", spec.name)

    def _map_known_exception(self, exc: Exception) -> tuple[str, str, str | None, dict[str, Any]] | None:
        """SQLite's own busy and disk-full errors, which a plugin's store may let through."""
        sqlite3 = sys.modules.get("sqlite3")  # only a plugin that opened SQLite can raise its errors
        if sqlite3 is not None and isinstance(exc, sqlite3.OperationalError):
            return self._sqlite_failure(str(exc).lower())
        return None

    def _sqlite_failure(self, text: str) -> tuple[str, str, str | None, dict[str, Any]] | None:
        """A plugin's SQLite file stayed locked past its busy timeout, or the disk filled: every
        plugin answers these the same way, whatever store it keeps."""
        if "locked" in text or "busy" in text:
            return (
                "FILE_LOCKED",
                Text(
                    en="A database file of this server stayed locked by another process.",
                    zh="本服务的一个数据库文件一直被另一个进程锁定。",
                ).render(self.language),
                Text(
                    en="Another hostd process (another IDE window) is writing a lot; retry in a moment.",
                    zh="另一个 hostd 进程（另一个 IDE 窗口）正在大量写入；请稍后重试。",
                ).render(self.language),
                {"reason": "database_busy"},
            )
        if "disk is full" in text or "database or disk is full" in text:
            return (
                "DISK_FULL",
                Text(en="The disk is full.", zh="磁盘已满。").render(self.language),
                Text(en="Free some space and retry.", zh="请释放一些空间后重试。").render(self.language),
                {"reason": "disk_full"},
            )
        return None

    def _internal(self, name: str, started: float) -> Envelope:
        return error_envelope(
            "INTERNAL",
            Text(en=f"Tool '{name}' failed unexpectedly.", zh=f"工具 '{name}' 发生意外错误。").render(
                self.language
            ),
            hint=Text(
                en="This is a bug in the server; the details are in its log (stderr). Retrying may not help.",
                zh="这是服务器的缺陷，详情见其日志（stderr）。重试可能无效。",
            ).render(self.language),
            details={},
            started=started,
        )
