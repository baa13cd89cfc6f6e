"""The plugin API in one module: every type and interface a hostd plugin uses.

``hostd`` re-exports exactly this module's ``__all__`` (with ``hostd.paging``, the whole API).
The interfaces a plugin is handed (``PluginContext``, ``ToolContext``, ``Services``) are
protocols: the host implements them in ``hostd.core.context`` and keeps its own machinery (database
opening, resource closing, the client channel) out of what a plugin sees. The host's modules
import from here, never the other way round: this module imports only the small modules that
define public data types (resources, prompts, records, dashboard views) and nothing that
assembles or runs a server.

Nothing in the public surface is typed ``Any``: a record's data is JSON (``RecordData``) that each
store parses into its own shape; ``hostd/tests/test_public_api.py`` holds that.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal, Protocol, Self, TypeVar

import pluggy
from hostd_db.spans import TraceSpan, trace_span
from hostd_errors import CodedError, Message, Text
from pydantic import BaseModel, PrivateAttr
from pydantic_core import ErrorDetails

from hostd.core.arguments import reason
from hostd.core.commands import CommandOption, RegisterCommand
from hostd.core.errors import ToolError
from hostd.core.i18n import Language
from hostd.core.ids import ID_PATTERN
from hostd.core.prompts import PromptArgumentInfo, PromptImage, PromptInfo, PromptText, RegisterPrompts
from hostd.core.records import CopyReport, Record, RecordData, RecordKind, RecordStore, pages
from hostd.core.resources import (
    RegisterResource,
    ResourceBlob,
    ResourceInfo,
    ResourceLink,
    ResourcePage,
    ResourceText,
)
from hostd.core.textlength import TextLength
from hostd.core.view_api import (
    ActivityItem,
    Overview,
    OverviewCount,
    RegisterViews,
    ViewFile,
    ViewPage,
    ViewRedirect,
    ViewRequest,
)
from hostd.core.view_forms import error_fields, given

if TYPE_CHECKING:
    from hostd_db import Database

#: The pluggy project name: plugins are found in the entry-point group of this name.
PROJECT = "hostd"
#: The marker of a plugin's hook implementations (``@hostd.hookimpl``).
hookimpl = pluggy.HookimplMarker(PROJECT)

T = TypeVar("T")
ServiceT = TypeVar("ServiceT")
#: A plugin's settings model (``hostd_settings_model``); ``None`` for a plugin that takes none.
SettingsT_co = TypeVar("SettingsT_co", covariant=True)


class ToolOutput(BaseModel):
    """Base for a tool's return model: its fields become the envelope's top-level fields.

    ``status``, ``message``, ``error`` and ``metadata`` are the envelope's own keys and may
    not be declared; give the human message with ``with_message``.
    """

    _message: Message | None = PrivateAttr(default=None)
    _links: list[ResourceLink] = PrivateAttr(default_factory=list)

    def with_message(self, message: Message) -> Self:
        """Set the envelope's ``message`` (a ``hostd.Text``, rendered by the host) and return ``self``."""
        self._message = message
        return self

    def with_links(self, *links: ResourceLink) -> Self:
        """Name files this call wrote or records it touched (``hostd.ResourceLink``); the host answers
        each as a ``resource_link`` content block beside the envelope's text, and returns ``self``."""
        self._links.extend(links)
        return self

    @property
    def links(self) -> list[ResourceLink]:
        return list(self._links)

    @property
    def envelope_message(self) -> Message | None:
        return self._message


#: A tool: a typed function (sync or async) whose parameters become the input schema and whose
#: return type, a ``ToolOutput`` subclass, the output schema.
ToolFunction = Callable[..., ToolOutput | Awaitable[ToolOutput]]


class RegisterTool(Protocol):
    """The callback ``hostd_register_tools`` receives."""

    def __call__(
        self,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        title: str | None = None,
        access: Literal["read", "write"] = "write",
        destructive: bool = True,
        idempotent: bool = False,
        open_world: bool = False,
        tier: Literal["core", "all"] = "all",
    ) -> None: ...


class Roots(Protocol):
    """The effective roots, for a tool that reads or writes the user's files: annotate a parameter
    with it (``roots: Roots``) and the host passes it, asking the client for its roots first. A tool
    without such a parameter never makes the host ask the client.

    ``roots()`` is the configured ``allowed_roots`` intersected with the client's roots, else
    either, else the working folder; it raises ``hostd_fs.FsError`` (PATH_NOT_ALLOWED, reason
    NO_ROOT) when none is usable, which the host answers as an error envelope. Call it when a path
    is needed (a tool that may not write anything need not fail for want of a root).
    """

    def __call__(self) -> list[Path]: ...


#: The callback ``hostd_register_services`` receives: ``register(name, service)``.
RegisterService = Callable[[str, object], None]


class Services(Protocol):
    """Objects plugins offer each other (``hostd_register_services``), looked up by name."""

    def get(self, name: str, kind: type[ServiceT]) -> ServiceT | None:
        """The service registered under ``name``, typed as ``kind`` (a ``Protocol`` the caller
        declares for what it uses of it: plugins never import each other), or ``None`` when its
        plugin is not loaded. ``kind`` is not checked at run time: guard calls into another
        plugin's service as calls into code you do not own."""
        ...


@dataclass(frozen=True)
class SamplingResult:
    """The client's model's answer, or why there is none (``available`` False)."""

    available: bool
    text: str | None = None
    reason: Text | None = None
    model: str | None = None


#: What the person answered when a tool asked them to confirm (``ToolContext.confirm``):
#: ``accepted`` go on; ``declined`` (an explicit no) and ``cancelled`` (the question dismissed) do
#: nothing and raise ``NotConfirmed``; ``unavailable``: the client cannot ask (no elicitation, a
#: stateless session on the 2025 protocol, ``hostd call``, the dashboard), so the tool acts as it
#: always has.
Confirmation = Literal["accepted", "declined", "cancelled", "unavailable"]


class NotConfirmed(Exception):
    """Raise it from a tool when the person declined or cancelled its confirmation.

    ``kept`` says what was left as it was (``Text(en="memory://a/b is kept.", zh=...)``). The host
    answers a success envelope (``isError`` false: nothing failed, the person chose) whose message
    says nothing was done and why, then ``kept``; the tool's own fields are left out (they describe
    what a call did), ``metadata.confirmation`` is the answer, and no change is published.
    """

    def __init__(self, answer: Literal["declined", "cancelled"], kept: Text) -> None:
        super().__init__(kept.en)
        self.answer: Literal["declined", "cancelled"] = answer
        self.kept = kept


def validation_reason(error: ErrorDetails) -> Text:
    """Why pydantic refused a value (one item of ``ValidationError.errors()``), in both languages:
    pydantic's English and the host's Chinese, the words tool arguments are refused with. For a
    plugin checking its own files or imports with pydantic models; it names no field."""
    return Text(en=reason(error, "en"), zh=reason(error, "zh"))


class PluginContext(Protocol[SettingsT_co]):
    """Everything one plugin gets from the host for its whole life in one server.

    Generic in the plugin's settings model: annotate ``PluginContext[MySettings]`` and
    ``settings`` is that model, validated from the config with its defaults filled in.
    """

    @property
    def name(self) -> str:
        """The plugin's name in the config (its entry-point name)."""
        ...

    @property
    def settings(self) -> SettingsT_co:
        """The plugin's section of the config, validated by its ``hostd_settings_model``."""
        ...

    @property
    def language(self) -> Language:
        """The server's language (``zh`` or ``en``)."""
        ...

    @property
    def data_dir(self) -> Path:
        """This plugin's own folder under the host's ``data_dir`` (created on first use)."""
        ...

    @property
    def lock_dir(self) -> Path:
        """The folder of cross-process lock files, the same for every hostd process of this user."""
        ...

    @property
    def logger(self) -> logging.Logger:
        """The plugin's logger (``hostd.plugin.<name>``); what it logs during a call reaches the client."""
        ...

    @property
    def services(self) -> Services:
        """What other plugins offer (``Services.get``)."""
        ...

    @property
    def has_team_database(self) -> bool:
        """True when ``storage`` is configured: ``database()`` is the plugin's schema in the team database."""
        ...

    def render(self, text: Message) -> str:
        """``text`` in the server's language, for what a tool writes into documents it produces
        (answers and errors carry ``Text`` and are rendered by the host)."""
        ...

    def database(self) -> Database:
        """The plugin's database, as its ``hostd_database_schema`` declares it: opened by the host on
        first use (its tables in the team database when ``storage`` is configured, else its SQLite
        file in ``data_dir``), migrated, shared by every thread, closed at shut-down."""
        ...

    def resource(self, key: str, factory: Callable[[], T]) -> T:
        """Open something (a store) on first use; it is closed at shut-down if it has ``close``."""
        ...

    def fetching(self) -> contextlib.AbstractContextManager[None]:
        """Count the block as one download in flight (``hostd_fetches_in_flight`` on ``/metrics``):
        wrap each page or file a plugin downloads, from its first try to its answer. Any thread."""
        ...


class ToolContext(PluginContext[SettingsT_co], Protocol[SettingsT_co]):
    """What one tool call gets: its plugin's context, plus the calling member and client.

    Annotate a tool's parameter with it (``ctx: ToolContext[MySettings]``) and the host passes it.
    """

    @property
    def member(self) -> str:
        """Who is calling: over HTTP the member owning the token (``default`` for ``token_env``'s
        token), otherwise (stdio, ``hostd call``, a loopback bind without tokens) the local login
        name. Record it with what a member writes."""
        ...

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this call; long sync work should check it."""
        ...

    @property
    def can_sample(self) -> bool:
        """Whether the client declared MCP sampling (its own model can write text for us)."""
        ...

    def resource_changed(self, *uris: str) -> None:
        """Report resources this call created, changed or deleted, by their resource URI (the one
        ``hostd.ResourceLink`` names: ``memory://...``, ``task://...``).

        Once the call has succeeded the host sends ``notifications/resources/updated`` to every
        client subscribed to one of them; a call that fails sends nothing. The links a tool that is
        not read-only answers (``ToolOutput.with_links``) count as changed without this: report what
        changed without a link (a deleted record, the other end of a link). Safe from any thread.
        """
        ...

    async def report_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Send a progress notification when the client asked for progress; else nothing.
        (A tool that reports progress is written ``async``.)"""
        ...

    async def sample(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 1024
    ) -> SamplingResult:
        """Ask the client's model for text; ``available=False`` when the client cannot.

        On the 2026-07-28 protocol the first ask ends the call's round and the tool runs again
        from the start with the answer, so ask the same question each time and write nothing
        before asking that a second run would write twice.
        """
        ...

    def sample_sync(
        self, prompt: str, *, system: str | None = None, max_tokens: int = 1024
    ) -> SamplingResult:
        """``sample`` for sync tools (they run in a worker thread)."""
        ...

    async def confirm(self, question: Text) -> Confirmation:
        """Ask the person to confirm what the call is about to do (MCP elicitation), before doing it.

        ``question`` is shown in the reader's language; say what will be lost. ``unavailable``
        when the client cannot ask: then act as the tool did before it asked. On ``declined`` or
        ``cancelled`` do nothing and raise ``NotConfirmed``. On the 2026-07-28 protocol the first
        ask ends the call's round and the tool runs again from the start with the answer: ask the
        same question each time, and write nothing before asking.
        """
        ...

    def confirm_sync(self, question: Text) -> Confirmation:
        """``confirm`` for sync tools (they run in a worker thread)."""
        ...


__all__ = [
    "ID_PATTERN",
    "ActivityItem",
    "CodedError",
    "CommandOption",
    "Confirmation",
    "CopyReport",
    "NotConfirmed",
    "Overview",
    "OverviewCount",
    "PluginContext",
    "PromptArgumentInfo",
    "PromptImage",
    "PromptInfo",
    "PromptText",
    "Record",
    "RecordData",
    "RecordKind",
    "RecordStore",
    "RegisterCommand",
    "RegisterPrompts",
    "RegisterResource",
    "RegisterService",
    "RegisterTool",
    "RegisterViews",
    "ResourceBlob",
    "ResourceInfo",
    "ResourceLink",
    "ResourcePage",
    "ResourceText",
    "Roots",
    "SamplingResult",
    "Services",
    "Text",
    "TextLength",
    "ToolContext",
    "ToolError",
    "ToolFunction",
    "ToolOutput",
    "TraceSpan",
    "ViewFile",
    "ViewPage",
    "ViewRedirect",
    "ViewRequest",
    "error_fields",
    "given",
    "hookimpl",
    "pages",
    "trace_span",
    "validation_reason",
]
