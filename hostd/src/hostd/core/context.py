"""The host's side of what a plugin is handed: its context for life and per call.

``hostd.api`` declares what a plugin sees (the ``PluginContext``, ``ToolContext`` and ``Services``
protocols); this module implements them and keeps the host's own handles beside them: the team
storage settings, the database opener, the resources to close at shut-down, the client channel
and cancellation. Plugins never touch the MCP SDK: everything they need from the client goes
through a ``ToolContext``, so an SDK upgrade touches the host only.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast

from hostd_errors import Message, Text, render

from hostd.api import Confirmation, SamplingResult
from hostd.core.errors import HostError
from hostd.core.i18n import Language
from hostd.core.identity import calling_member

if TYPE_CHECKING:
    from anyio.lowlevel import EventLoopToken
    from hostd_db import Database

T = TypeVar("T")
ServiceT = TypeVar("ServiceT")
#: A plugin's settings model (``hostd_settings_model``); ``None`` for a plugin that takes none.
SettingsT = TypeVar("SettingsT")


class ServiceRegistry:
    """The host's ``hostd.Services``: objects plugins offer each other, each under one name."""

    def __init__(self) -> None:
        self._by_name: dict[str, tuple[str, object]] = {}

    def add(self, name: str, service: object, *, plugin: str) -> None:
        if name in self._by_name:
            other = self._by_name[name][0]
            raise HostError(f"service {name!r} is offered by both {other!r} and {plugin!r}")
        self._by_name[name] = (plugin, service)

    def get(self, name: str, kind: type[ServiceT]) -> ServiceT | None:
        """The service registered under ``name`` as ``kind`` (not checked), or ``None``."""
        entry = self._by_name.get(name)
        return cast(ServiceT, entry[1]) if entry else None

    def find(self, name: str) -> object | None:
        """The service under ``name``, untyped (for the host and test kits)."""
        entry = self._by_name.get(name)
        return entry[1] if entry else None


@functools.cache
def shared_lock_dir() -> Path:
    """One lock folder per user, independent of config, so every hostd process agrees on it.

    Lock files for users' documents live here, never beside the documents themselves. Made
    once per process (hostd_fs re-creates it before locking if something cleaned it away).
    """
    uid = os.getuid() if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")
    path = Path(tempfile.gettempdir()) / f"hostd-locks-{uid}"
    path.mkdir(mode=0o700, exist_ok=True)
    return path


#: The resource key under which the host keeps a plugin's opened database.
_DATABASE_KEY = "hostd.database"


@dataclass(frozen=True)
class TeamStorage:
    """The resolved ``storage`` section: the URL (read from its environment variable) and pool settings."""

    url: str
    pool_size: int = 8
    connect_timeout_seconds: float = 5.0
    statement_timeout_ms: int = 30_000
    migrate: bool = True


@dataclass(eq=False)
class PluginRuntime(Generic[SettingsT]):
    """The host's ``hostd.PluginContext`` of one plugin for its whole life in one server, with
    what only the host uses: the team ``storage`` settings, the database opener, the resources to
    close at shut-down (``close_resources``) and the count of downloads in flight.
    """

    name: str
    settings: SettingsT
    language: Language
    #: The host's data folder, shared by every plugin; a plugin keeps its files in ``data_dir``.
    host_data_dir: Path
    services: ServiceRegistry
    allowed_roots: list[Path] | None = None
    #: The team database (``storage`` in the config), or None: keep the embedded files.
    storage: TeamStorage | None = None
    logger: logging.Logger = field(init=False)
    #: Opens the plugin's database from its ``hostd_database_schema`` (set by the host), or None.
    _open_database: Callable[[], Database | None] | None = field(default=None, init=False, repr=False)
    _resources: dict[str, object] = field(default_factory=dict, init=False, repr=False)
    # Re-entrant: a factory may open another resource of the same plugin (a store and its database).
    _resource_lock: threading.RLock = field(default_factory=threading.RLock, init=False, repr=False)
    _fetches: int = field(default=0, init=False, repr=False)
    _fetches_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        self.logger = logging.getLogger(f"hostd.plugin.{self.name}")

    @property
    def data_dir(self) -> Path:
        """This plugin's own folder under the host's ``data_dir`` (created on first use)."""
        path = self.host_data_dir / self.name
        path.mkdir(parents=True, exist_ok=True)
        return path

    @property
    def lock_dir(self) -> Path:
        return shared_lock_dir()

    def render(self, text: Message) -> str:
        """``text`` in the server's language, for what a tool writes into documents it produces
        (answers and errors carry ``Text`` and are rendered by the host)."""
        return cast(str, render(text, self.language))

    def database(self) -> Database:
        """The plugin's database, as its ``hostd_database_schema`` declares it: opened by the host on
        first use (its tables in the team database when ``storage`` is configured, else its SQLite
        file in ``data_dir``), migrated, shared by every thread, closed at shut-down.

        A ``HostError`` when the plugin declares no schema, or keeps its own files locally
        (``Schema.sqlite_file`` None) and no team database is configured: see ``has_team_database``.
        """
        opener = self._open_database
        if opener is None:
            raise HostError(
                f"plugin {self.name!r} asked for its database; it declares no hostd_database_schema"
            )

        def open_or_refuse() -> Database:
            database = opener()
            if database is None:
                raise HostError(
                    f"plugin {self.name!r} asked for its database; it keeps its own files without `storage`"
                )
            return database

        return self.resource(_DATABASE_KEY, open_or_refuse)

    @property
    def has_team_database(self) -> bool:
        """True when ``storage`` is configured: ``database()`` is the plugin's schema in the team database."""
        return self.storage is not None

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """Open something (a store) on first use; it is closed at shut-down if it has ``close``."""
        try:
            return cast(T, self._resources[key])
        except KeyError:
            pass
        with self._resource_lock:
            if key not in self._resources:
                self._resources[key] = factory()
            return cast(T, self._resources[key])

    @contextlib.contextmanager
    def fetching(self) -> Iterator[None]:
        """Count the block as one fetch of the network in flight (``hostd_fetches_in_flight`` on
        ``/metrics``): wrap each page or file a plugin downloads, from its first try to its answer.
        Safe from any thread; costs a lock, whether or not metrics are on."""
        with self._fetches_lock:
            self._fetches += 1
        try:
            yield
        finally:
            with self._fetches_lock:
                self._fetches -= 1

    @property
    def fetches_in_flight(self) -> int:
        """How many ``fetching`` blocks are running now."""
        return self._fetches

    def close_resources(self) -> None:
        with self._resource_lock:
            resources, self._resources = self._resources, {}
        for key, value in reversed(list(resources.items())):
            close = getattr(value, "close", None)
            if callable(close):
                try:
                    close()
                except Exception:
                    self.logger.exception("closing resource %r failed", key)


_NO_SAMPLING = Text(
    en="the client did not declare the sampling capability", zh="客户端未声明采样（sampling）能力"
)


class ClientInputNeeded(BaseException):
    """Ends this round of a tool call: the client must answer a question first.

    On the 2026-07-28 protocol the server cannot ask the client mid-call; it answers the call
    with the question (input_required) and runs the tool again once the client calls back with
    the answer. A ``BaseException``, like cancellation, so that a plugin's ``except Exception``
    cannot swallow it and carry on without the answer.
    """


class ClientChannel(Protocol):
    """The host's view of the client for one call (implemented over the SDK by the server).

    ``sample`` and ``confirm`` may raise ``ClientInputNeeded`` when the answer must come in a later
    round; ``confirm`` is asked only when ``can_elicit``.
    """

    @property
    def can_sample(self) -> bool: ...

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None: ...

    async def sample(self, prompt: str, system: str | None, max_tokens: int) -> SamplingResult: ...

    @property
    def can_elicit(self) -> bool: ...

    async def confirm(self, question: str) -> Confirmation: ...


class CallContext(Generic[SettingsT]):
    """The host's ``hostd.ToolContext`` for one call: the plugin's ``PluginRuntime`` plus the
    calling member, the client's channel (progress, sampling), its roots and cancellation.
    """

    def __init__(
        self,
        plugin: PluginRuntime[SettingsT],
        *,
        channel: ClientChannel | None = None,
        client_roots: Sequence[str] | None = None,
        cwd: Path | None = None,
        language: Language | None = None,
    ) -> None:
        self._plugin = plugin
        #: The reader's language when it is not the server's (a dashboard page's): what the tool
        #: answers with (names, diagrams, exports) follows it; ``render`` stays the server's.
        self._language = language
        self._channel = channel
        self._client_roots = client_roots
        self._cwd = cwd
        self._cancelled = threading.Event()
        self._changed: list[str] = []
        #: The person's last answer to ``confirm`` in this call (``None``: never asked, or unavailable).
        self.confirmation: Confirmation | None = None
        self._member = calling_member()
        self._loop_token: EventLoopToken | None = None
        try:  # lets sync tools, and threads they start, reach the event loop that serves the call
            import anyio.lowlevel

            self._loop_token = anyio.lowlevel.current_token()
        except RuntimeError:
            self._loop_token = None

    @property
    def member(self) -> str:
        return self._member

    @property
    def name(self) -> str:
        return self._plugin.name

    # The plugin's long-lived things, for convenience.
    @property
    def settings(self) -> SettingsT:
        return self._plugin.settings

    @property
    def language(self) -> Language:
        return self._language or self._plugin.language

    @property
    def data_dir(self) -> Path:
        return self._plugin.data_dir

    @property
    def lock_dir(self) -> Path:
        return self._plugin.lock_dir

    @property
    def logger(self) -> logging.Logger:
        return self._plugin.logger

    @property
    def services(self) -> ServiceRegistry:
        return self._plugin.services

    def render(self, text: Message) -> str:
        """``text`` in the server's language (for content the tool writes, not for answers)."""
        return self._plugin.render(text)

    def database(self) -> Database:
        """The plugin's database (``PluginContext.database``)."""
        return self._plugin.database()

    @property
    def has_team_database(self) -> bool:
        """True when ``storage`` is configured (``PluginContext.has_team_database``)."""
        return self._plugin.has_team_database

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """The plugin's long-lived ``key`` (a store), opened by ``factory`` on first use."""
        return self._plugin.resource(key, factory)

    def fetching(self) -> contextlib.AbstractContextManager[None]:
        """``with ctx.fetching():`` around one download (``PluginContext.fetching``)."""
        return self._plugin.fetching()

    # Per call.
    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this call; long sync work should check it."""
        return self._cancelled.is_set()

    def mark_cancelled(self) -> None:
        """Called by the host when the client cancelled the call."""
        self._cancelled.set()

    def resource_changed(self, *uris: str) -> None:
        """Report resources this call created, changed or deleted, by their resource URI (the one
        ``hostd.ResourceLink`` names: ``memory://...``, ``task://...``).

        Once the call has succeeded the host sends ``notifications/resources/updated`` to every
        client subscribed to one of them, on every replica with ``storage``; a call that fails
        sends nothing. The links a tool that is not read-only answers (``ToolOutput.with_links``)
        count as changed without this: report what changed without a link (a deleted record, the
        other end of a link). Safe from the tool's worker thread.
        """
        self._changed.extend(uris)

    @property
    def changed_resources(self) -> list[str]:
        """The URIs reported with ``resource_changed`` so far."""
        return list(self._changed)

    def roots(self) -> list[Path]:
        """The effective roots (``hostd.Roots``): what a tool's ``Roots`` parameter calls."""
        from hostd_fs import effective_roots

        return effective_roots(self._plugin.allowed_roots, self._client_roots, self._cwd)

    @property
    def can_sample(self) -> bool:
        """Whether the client declared MCP sampling (its own model can write text for us)."""
        return self._channel is not None and self._channel.can_sample

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send a progress notification when the client asked for progress; else nothing."""
        if self._channel is not None:
            await self._channel.report_progress(progress, total, message)

    async def sample(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 1024
    ) -> SamplingResult:
        """Ask the client's model for text (``ToolContext.sample`` says what a plugin may rely on,
        a second round on the 2026-07-28 protocol included)."""
        if self._channel is None or not self._channel.can_sample:
            return SamplingResult(available=False, reason=_NO_SAMPLING)
        return await self._channel.sample(prompt, system, max_tokens)

    def sample_sync(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 1024
    ) -> SamplingResult:
        """``sample`` for sync tools (they run in a worker thread)."""
        if self._channel is None or not self._channel.can_sample:
            return SamplingResult(available=False, reason=_NO_SAMPLING)
        import anyio.from_thread

        channel = self._channel
        return anyio.from_thread.run(channel.sample, prompt, system, max_tokens, token=self._loop_token)

    async def confirm(self, question: Text) -> Confirmation:
        """Ask the person to confirm (``ToolContext.confirm``): through the client's elicitation,
        in the reader's language; ``unavailable`` when the client cannot ask."""
        if self._channel is None or not self._channel.can_elicit:
            return "unavailable"
        answer = await self._channel.confirm(question.render(self.language))
        if answer != "unavailable":
            self.confirmation = answer
        return answer

    def confirm_sync(self, question: Text) -> Confirmation:
        """``confirm`` for sync tools (they run in a worker thread)."""
        if self._channel is None or not self._channel.can_elicit:
            return "unavailable"
        import anyio.from_thread

        return anyio.from_thread.run(self.confirm, question, token=self._loop_token)
