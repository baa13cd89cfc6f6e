"""The members page of a team dashboard: each member's name and profile (never a token), their
last activity and what they wrote, drawn from the plugins' own overview feeds.

Only where members sign in with tokens (the HTTP transport's ``/ui``); ``hostd web`` has one
local user and no such page. The host reads no plugin's tables: it asks each plugin's overview
(``hostd_register_views``' ``overview``, as the signed-in member, so a profile that cannot read a
plugin sees none of its activity) and groups the entries by member. Each member also links to
the plugins' own lists filtered to them (``created_by``/``author`` filters).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hostd_errors import CodedError, Text, render

from hostd.core.i18n import Language
from hostd.core.view_api import Overview

if TYPE_CHECKING:
    from hostd.core.identity import Member

logger = logging.getLogger("hostd.web")

#: Entries asked of each plugin's overview for this page (the tools page at most 100).
MEMBERS_FEED_LIMIT = 100
#: Entries shown per member.
SHOWN_PER_MEMBER = 8
#: The filtered lists a member links to: plugin -> (its list page's member filter, label).
MEMBER_FILTERS: dict[str, tuple[str, str, str]] = {
    "memory": ("author", "Memories written", "写过的记忆"),
    "tasks": ("creator", "Tasks created", "创建的任务"),
    "deep-thinking": ("member", "Sessions started", "发起的会话"),
}


#: A plugin's overview for this page, asked as the viewer (``hostd_register_views``' ``overview``).
AskOverview = Callable[[int], Awaitable[Overview]]
#: A link into a plugin's pages: ``(plugin, path, query) -> URL``.
PluginUrl = Callable[[str, str, Mapping[str, str | int | None]], str]


async def member_rows(
    members: Sequence[Member],
    viewer: Member,
    language: Language,
    overviews: Mapping[str, AskOverview],
    url: PluginUrl,
    listable: Collection[str],
    plugin_labels: Mapping[str, str],
) -> list[dict[str, Any]]:
    """One row per member: profile, last activity, recent entries, links to filtered lists.

    ``overviews`` are those of the plugins the viewer may read; ``listable`` the plugins whose
    list page the viewer may open (each member links to them, filtered to that member);
    ``plugin_labels`` name each plugin as its pages do, in the reader's language.
    """
    entries: dict[str, list[dict[str, Any]]] = {member.name: [] for member in members}
    for plugin, ask in overviews.items():
        try:
            overview = await ask(MEMBERS_FEED_LIMIT)
        except CodedError:
            continue  # the overview page shows that plugin's error; here it only has no entries
        except Exception:
            logger.exception("the overview of plugin %s failed (members page)", plugin)
            continue
        for item in overview.activity:
            if item.member in entries:
                entries[item.member].append(
                    {
                        "at": item.at,
                        "summary": render(item.summary, language),
                        "plugin": plugin_labels.get(plugin, plugin),
                        "url": url(plugin, item.path, item.query),
                    }
                )
    rows = []
    for member in members:
        mine = sorted(entries[member.name], key=lambda entry: entry["at"], reverse=True)
        links = [
            (Text(en=en, zh=zh).render(language), url(plugin, "", {key: member.name}))
            for plugin, (key, en, zh) in MEMBER_FILTERS.items()
            if plugin in listable
        ]
        rows.append(
            {
                "name": member.name,
                "profile": member.profile,
                "last": mine[0]["at"] if mine else None,
                "entries": mine[:SHOWN_PER_MEMBER],
                "more": max(0, len(mine) - SHOWN_PER_MEMBER),
                "links": links,
                "you": member.name == viewer.name,
            }
        )
    return rows
