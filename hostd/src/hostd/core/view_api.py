"""What a plugin uses to add dashboard pages: the ``hostd_register_views`` contract.

A plugin registers pages (GET), actions (POST) and an overview summary, each tied to one of
its own tools: the member sees a page, or may run an action, only when their profile serves
that tool. A page's render function reads through the plugin's own tool functions with
``request.call(function, ...)``, so the page and the tool validate, version, author and refuse
exactly alike; the host never reads a plugin's tables.

The host supplies the rest: layout, navigation, sign-in, CSRF, language, static files, paging
and error pages. A page body is the plugin's own Jinja template (autoescaped) and data, so the
same view can later be offered elsewhere. Nothing here imports the web stack: plugins import
these names from ``hostd`` at no cost.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from hostd_errors import Message

from hostd.core.i18n import Language

OutputT = TypeVar("OutputT")


class ViewRequest(Protocol):
    """One dashboard request, as a plugin's render or action function sees it."""

    @property
    def member(self) -> str:
        """The signed-in member's name (recorded as the author of what their actions write)."""

    @property
    def language(self) -> Language:
        """The language the member reads the dashboard in (config default, switchable)."""

    @property
    def query(self) -> Mapping[str, str]:
        """The URL's query parameters (the first value of each); the CSRF and language keys removed."""

    @property
    def form(self) -> Mapping[str, str]:
        """A POST's form fields (the CSRF token already checked and removed); empty for a GET."""

    def query_list(self, key: str) -> list[str]:
        """Every value of a repeated query parameter (``?tag=a&tag=b``)."""

    def can(self, tool: str) -> bool:
        """Whether this member may use this plugin's tool ``tool`` (its unprefixed name): show a
        page's write controls only when it is true; the host refuses the action otherwise."""

    async def call(self, function: Callable[..., OutputT], /, **arguments: object) -> OutputT:
        """Run one of this plugin's tool functions as the signed-in member, as the tool would run.

        The arguments are validated with the tool's own input model, the member is the call's
        ``ctx.member``, and the tool's ``CodedError``s propagate (the host shows them as an error
        page unless the view catches them). A tool the member's profile does not serve raises
        PERMISSION_DENIED.
        """

    def url(self, path: str = "", **query: str | int | None) -> str:
        """The absolute URL of this plugin's page ``path`` (``""`` is its first page); ``None``
        values are left out."""

    def text(self, message: Message) -> str:
        """``message`` in the member's language."""


@dataclass(frozen=True)
class ViewPage:
    """A page's answer: its title and its body, rendered from the plugin's own template.

    ``template`` is a file in the folder given to ``register.assets``; it gets ``data`` plus the
    host's helpers (``t(en=..., zh=...)``, ``url``, ``can``, ``csrf_field()``, the ``markdown``
    and ``when`` filters, and ``host/macros.html``). ``diagram`` loads Mermaid on this page only
    (``<pre class="mermaid">`` blocks are drawn, securityLevel strict). ``scripts`` are files of the
    plugin's static folder to load after the host's.
    """

    title: Message
    template: str
    data: Mapping[str, object] = field(default_factory=dict)
    diagram: bool = False
    scripts: tuple[str, ...] = ()
    status: int = 200


@dataclass(frozen=True)
class ViewRedirect:
    """An action's answer: go to this plugin's page ``path`` (303), with a notice shown there."""

    path: str = ""
    query: Mapping[str, str | int | None] = field(default_factory=dict)
    notice: Message | None = None


@dataclass(frozen=True)
class ViewFile:
    """A page's answer that is a document to download (an export), not a page.

    Sent as an attachment named ``filename``; the host adds a ``sandbox`` CSP with
    ``default-src 'none'``, so even an HTML document opened from the download runs nothing.
    """

    content: str | bytes
    filename: str
    media_type: str = "application/octet-stream"


@dataclass(frozen=True)
class OverviewCount:
    """One figure on the overview (``Memories: 1,204``), linking to the page that lists them."""

    label: Message
    value: int
    path: str = ""


@dataclass(frozen=True)
class ActivityItem:
    """One entry of the overview's feed of recent activity, linking to what it is about.

    ``at`` is an ISO 8601 UTC time (entries of every plugin are merged by it, newest first);
    ``member`` who did it (``None`` when not recorded); ``summary`` what happened; ``path`` and
    ``query`` the plugin's page of the item.
    """

    at: str
    member: str | None
    summary: Message
    path: str = ""
    query: Mapping[str, str | int | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Overview:
    """A plugin's part of the overview page."""

    counts: list[OverviewCount] = field(default_factory=list)
    activity: list[ActivityItem] = field(default_factory=list)


PageRender = Callable[[ViewRequest], Awaitable[ViewPage | ViewRedirect | ViewFile]]
ActionHandler = Callable[[ViewRequest], Awaitable[ViewPage | ViewRedirect]]
OverviewRender = Callable[[ViewRequest, int], Awaitable[Overview]]


class RegisterViews(Protocol):
    """The object ``hostd_register_views`` receives: a plugin's pages are added through it.

    Paths are the plugin's own, below ``/ui/<plugin>``: ``""`` is its first page, ``"/item"``
    another. ``tool`` is one of the plugin's tools (its unprefixed name): a member whose profile
    does not serve it neither sees the page in the navigation nor may open or post to it (403).
    """

    def page(self, path: str, render: PageRender, *, title: Message, tool: str, nav: bool = False) -> None:
        """A page answering GET; ``nav`` puts it in the navigation under ``title``."""

    def action(self, path: str, handle: ActionHandler, *, tool: str) -> None:
        """A form target answering POST (CSRF-checked by the host before ``handle`` runs)."""

    def overview(self, summarize: OverviewRender, *, tool: str) -> None:
        """This plugin's counts and recent activity on the overview; ``summarize(request, limit)``."""

    def assets(self, templates: Path, static: Path | None = None) -> None:
        """The folder of this plugin's page templates, and of its static files (CSS, scripts)."""

    def app(
        self,
        name: str,
        *,
        template: str,
        tools: tuple[str, ...],
        title: Message,
        data: Mapping[str, object] | None = None,
        diagram: bool = False,
    ) -> None:
        """A view inside the chat (MCP Apps): ``ui://hostd/<plugin>/<name>``, named by each of
        ``tools`` (unprefixed) in its ``_meta.ui.resourceUri``; served where the first is.

        ``template`` (in the assets' templates folder) is the whole document's body: the host wraps
        it with the dashboard's stylesheets, the view runtime (``hostd.view`` in the page: the
        tool's input and result, ``call(tool, arguments)`` through the client, the language and
        theme the client asks for) and a CSP; it gets ``data``, ``t``, ``both`` (a ``Text``),
        ``can``, ``as_json`` and ``strings`` (a mapping of ``Text`` as ``{"en": {...}, "zh": {...}}``
        JSON for the script). Data arrives only from
        the client, never from a store: the view is the same for every call. ``diagram`` puts
        the dashboard's Mermaid and its strict drawing script in this view only
        (``window.hostdDraw(element)`` draws its ``pre.mermaid`` blocks).
        """


__all__ = [
    "ActionHandler",
    "ActivityItem",
    "Overview",
    "OverviewCount",
    "OverviewRender",
    "PageRender",
    "RegisterViews",
    "ViewFile",
    "ViewPage",
    "ViewRedirect",
    "ViewRequest",
]
