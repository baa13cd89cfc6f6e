"""The overview and the members page: each plugin's counts and recent activity, as the member
may open them."""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

from hostd_errors import CodedError, Text, render

from hostd.core.i18n import Language
from hostd.core.identity import Member
from hostd.core.view_api import (
    ActivityItem,
    Overview,
    OverviewRender,
)

if TYPE_CHECKING:
    from starlette.requests import Request
    from starlette.responses import Response

    from hostd.web.app import Dashboard


from hostd.web.constants import FEED_LIMIT
from hostd.web.views import DashboardRequest

logger = logging.getLogger("hostd.web")
OutputT = TypeVar("OutputT")


async def overview_page(dashboard: Dashboard, request: Request) -> Response:
    opened = dashboard._member_page(request)
    if not isinstance(opened, tuple):
        return opened
    member, session, language = opened
    import anyio

    shown = [
        (name, views.overview[0])
        for name, views in dashboard.views.items()
        if views.overview is not None and dashboard.allows(member, name, views.overview[1])
    ]
    found: dict[str, tuple[str, Overview | None, str | None]] = {}

    async def part(name: str, summarize: OverviewRender) -> None:
        view_request = DashboardRequest(dashboard, request, name, member, language, {})
        try:
            found[name] = (name, await summarize(view_request, FEED_LIMIT), None)
        except CodedError as exc:
            found[name] = (name, None, exc.rendered(language)[0])
        except Exception:
            logger.exception("the overview of plugin %s failed", name)
            found[name] = (
                name,
                None,
                Text(en="This part failed.", zh="这部分加载失败。").render(language),
            )

    # The plugins' parts at once: each waits on its own store (on the team database, its own
    # round trips), so the page waits for the slowest part rather than for their sum.
    async with anyio.create_task_group() as group:
        for name, summarize in shown:
            group.start_soon(part, name, summarize)
    parts = [found[name] for name, _ in shown]
    label = {name: dashboard.plugin_label(name, language) for name, _ in shown}
    counts: dict[str, list[tuple[str, int, str | None]]] = {}  # each plugin's tiles, under its name once
    feed: list[tuple[ActivityItem, str]] = []
    errors = []
    for name, overview, error in parts:
        if error is not None:
            errors.append((label[name], error))
        if overview is None:
            continue
        for count in overview.counts:
            href = dashboard.link(member, name, count.path)
            counts.setdefault(label[name], []).append(
                (render(count.label, language) or "", count.value, href)
            )
        for item in overview.activity:
            feed.append((item, name))
    feed.sort(key=lambda entry: entry[0].at, reverse=True)
    activity = [
        {
            "at": item.at,
            "member": item.member,
            "summary": render(item.summary, language),
            "plugin": label[name],
            "url": dashboard.link(member, name, item.path, **item.query),
        }
        for item, name in feed[:FEED_LIMIT]
    ]
    body = dashboard.env.get_template("host/overview.html").render(
        **dashboard._helpers(request, language, session, member, None),
        counts=counts,
        activity=activity,
        errors=errors,
    )
    title = Text(en="Overview", zh="概览").render(language)
    return dashboard.layout(request, language, member, session, title, body, active="")


def _member_overviews(
    dashboard: Dashboard, request: Request, viewer: Member, language: Language
) -> dict[str, Callable[[int], Awaitable[Overview]]]:
    """Each overview the viewer may read, to be asked as the viewer (the members page)."""
    asks: dict[str, Callable[[int], Awaitable[Overview]]] = {}
    for plugin, views in dashboard.views.items():
        if views.overview is None:
            continue
        summarize, tool = views.overview
        if not dashboard.allows(viewer, plugin, tool):
            continue
        context = DashboardRequest(dashboard, request, plugin, viewer, language, {})
        asks[plugin] = functools.partial(summarize, context)
    return asks


def _list_allowed(dashboard: Dashboard, viewer: Member, plugin: str) -> bool:
    page = dashboard.views[plugin].pages.get("")
    return page is not None and dashboard.allows(viewer, plugin, page[2])


async def members_page(dashboard: Dashboard, request: Request) -> Response:
    """Team only: who the members are and what each did (``members_page``)."""
    from hostd.web.members_page import member_rows

    if dashboard.sign_in.kind != "token":
        return await dashboard.not_found(request, None)
    opened = dashboard._member_page(request)
    if not isinstance(opened, tuple):
        return opened
    member, session, language = opened
    body = dashboard.env.get_template("host/members.html").render(
        **dashboard._helpers(request, language, session, member, None),
        rows=await member_rows(
            dashboard.sign_in.members.members() if dashboard.sign_in.members is not None else [],
            member,
            language,
            _member_overviews(dashboard, request, member, language),
            lambda plugin, path, query: dashboard.link(member, plugin, path, **query) or "",
            [plugin for plugin in dashboard.views if _list_allowed(dashboard, member, plugin)],
            {plugin: dashboard.plugin_label(plugin, language) for plugin in dashboard.views},
        ),
    )
    title = Text(en="Members", zh="成员").render(language)
    return dashboard.layout(request, language, member, session, title, body, active="/members")
