"""The plugins' pages: what ``hostd_register_views`` registers, and what a page's render or
action function gets (``DashboardRequest``), whose calls go through the host's call pipeline."""

from __future__ import annotations

import logging
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from hostd_errors import Message, Text, render

from hostd.core.errors import ToolError
from hostd.core.i18n import Language
from hostd.core.identity import Member
from hostd.core.view_api import (
    ActionHandler,
    OverviewRender,
    PageRender,
    ViewFile,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from hostd.core.host import Host
    from hostd.web.app import Dashboard

from hostd.web.constants import CSRF_FIELD

logger = logging.getLogger("hostd.web")
OutputT = TypeVar("OutputT")


@dataclass
class PluginViews:
    """What one plugin registered: its pages, actions, overview and assets."""

    plugin: str
    pages: dict[str, tuple[PageRender, Message, str, bool]] = field(default_factory=dict)
    actions: dict[str, tuple[ActionHandler, str]] = field(default_factory=dict)
    overview: tuple[OverviewRender, str] | None = None
    templates: Path | None = None
    static: Path | None = None
    apps: dict[str, tuple[str, tuple[str, ...], Message, Mapping[str, object], bool]] = field(
        default_factory=dict
    )


class _Registry:
    """The ``register`` object one plugin's ``hostd_register_views`` receives."""

    def __init__(self, views: PluginViews) -> None:
        self._views = views

    @staticmethod
    def _path(path: str) -> str:
        if path and (not path.startswith("/") or path.endswith("/") or "//" in path):
            raise ValueError(f"a view path is '' or starts with '/' (no trailing '/'): {path!r}")
        return path

    def page(self, path: str, render: PageRender, *, title: Message, tool: str, nav: bool = False) -> None:
        self._views.pages[self._path(path)] = (render, title, tool, nav)

    def action(self, path: str, handle: ActionHandler, *, tool: str) -> None:
        self._views.actions[self._path(path)] = (handle, tool)

    def overview(self, summarize: OverviewRender, *, tool: str) -> None:
        self._views.overview = (summarize, tool)

    def assets(self, templates: Path, static: Path | None = None) -> None:
        self._views.templates = templates
        self._views.static = static

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
        if not name.replace("-", "").isalnum() or not tools:
            raise ValueError(f"an app view needs a name of letters, digits and '-' and a tool: {name!r}")
        self._views.apps[name] = (template, tuple(tools), title, dict(data or {}), diagram)


def collect_views(host: Host) -> dict[str, PluginViews]:
    """Every loaded plugin's views, through the ``hostd_register_views`` hook, in load order."""
    collected: dict[str, PluginViews] = {}

    def arguments(plugin: str) -> dict[str, Any]:
        collected[plugin] = PluginViews(plugin)
        return {"register": _Registry(collected[plugin]), "context": host.contexts[plugin]}

    host.call_each("hostd_register_views", arguments)
    return collected


def download(answer: ViewFile) -> Response:
    """A document as an attachment; sandboxed, so an HTML export opened from it runs nothing."""
    from starlette.responses import Response

    quoted = urllib.parse.quote(answer.filename, safe="")
    fallback = "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "_" for c in answer.filename)
    fallback = fallback or "download"  # the ASCII name for old clients; filename* has the real one
    return Response(
        answer.content,
        media_type=answer.media_type,
        headers={
            "Content-Disposition": f"attachment; filename=\"{fallback}\"; filename*=UTF-8''{quoted}",
            "Content-Security-Policy": "default-src 'none'; sandbox",
            "Cache-Control": "no-store",
        },
    )


class DashboardRequest:
    """``ViewRequest`` for one plugin's page or action (see ``hostd.core.view_api``)."""

    def __init__(
        self,
        dashboard: Dashboard,
        request: Request,
        plugin: str,
        member: Member,
        language: Language,
        form: dict[str, str],
    ) -> None:
        self._dashboard = dashboard
        self._request = request
        self.plugin = plugin
        self.member_record = member
        self._language: Language = language
        self._form = form
        self._query = {k: v for k, v in request.query_params.items() if k not in ("lang", CSRF_FIELD)}

    @property
    def member(self) -> str:
        return self.member_record.name

    @property
    def language(self) -> Language:
        return self._language

    @property
    def query(self) -> Mapping[str, str]:
        return self._query

    @property
    def form(self) -> Mapping[str, str]:
        return self._form

    def query_list(self, key: str) -> list[str]:
        return self._request.query_params.getlist(key)

    def can(self, tool: str) -> bool:
        return self._dashboard.allows(self.member_record, self.plugin, tool)

    def url(self, path: str = "", **query: str | int | None) -> str:
        return self._dashboard.url(self.plugin, path, **query)

    def text(self, message: Message) -> str:
        return render(message, self._language) or ""

    async def call(self, function: Callable[..., OutputT], /, **arguments: Any) -> OutputT:
        """Run one of the plugin's tools for the signed-in member, through the host's call
        pipeline: the same access policy, quotas, validation, audit and metrics as an MCP call."""
        from hostd.core.pipeline import ToolCall

        dashboard = self._dashboard
        spec = dashboard.spec_of_function(self.plugin, function)
        if spec is None:
            name = getattr(function, "__name__", "?")
            raise ToolError(
                "PERMISSION_DENIED",
                Text(en=f"Your profile does not serve the tool {name}.", zh=f"你的配置档不提供工具 {name}。"),
                hint=Text(
                    en="Ask whoever runs the server for a profile that serves it.",
                    zh="请向服务器管理员申请提供该工具的配置档。",
                ),
                details={"tool": name},
            )
        call = ToolCall(spec.name, arguments, self.member_record, "ui", language=self._language)
        output = await dashboard.host.pipeline.call_for_view(call)
        return cast(OutputT, output)
