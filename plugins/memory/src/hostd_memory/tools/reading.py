"""read_memory (one memory, or the system views boot, index and recent), list_memories and
get_memory_stats.
"""

from __future__ import annotations

import dataclasses
import re
from typing import TYPE_CHECKING, Annotated, Literal

from hostd.paging import DEFAULT_LIMIT, Cursor, Limit, bad_cursor, decode_cursor, encode_cursor, int_position
from pydantic import Field

from hostd import Text, ToolContext, ToolError
from hostd_memory.models import (
    IndexEntry,
    IndexGroup,
    Link,
    ListMemoriesOutput,
    MemoryStatsOutput,
    MentionedUri,
    MostRead,
    ReadMemoryOutput,
    RelatedMemory,
    Relations,
    Settings,
)
from hostd_memory.tools.answers import (
    budget_of,
    collect,
    core_entry,
    listed,
    paged_message,
    preview,
    rank_key,
    record,
    version_summary,
)
from hostd_memory.tools.arguments import (
    AuthorFilter,
    CreatedAfter,
    CreatedBefore,
    DomainArg,
    PriorityMax,
    PriorityMin,
    TagsFilter,
    UpdatedAfter,
    UpdatedBefore,
    UriArg,
    listing_filters,
    uri_argument,
)
from hostd_memory.uris import MemoryUri

if TYPE_CHECKING:
    from hostd_memory.store import MemoryStore
    from hostd_memory.store.rows import MemoryRow

RECENT_DEFAULT = 10
RECENT_MAX = 100


def read_memory(
    ctx: ToolContext[Settings],
    uri: UriArg,
    cursor: Cursor = None,
) -> ReadMemoryOutput:
    """Read a memory with its versions, aliases, links and related memories (counts an access). Special URIs:
    system://boot, system://index, system://recent[/N].
    """
    from hostd_memory.store import memory_store

    parsed = uri_argument(uri, "uri")
    store = memory_store(ctx)
    if parsed.is_system:
        return _read_system(ctx, store, parsed, cursor)
    return _read_one(ctx, store, str(parsed), cursor)


def relations_of(store: MemoryStore, memory: MemoryRow, *, related: bool) -> Relations:
    """What ``read_memory`` says links to and from ``memory`` (with ``related``, the memories
    sharing rare tags or terms with it too)."""
    from hostd_memory.store import mentioned_relations

    links_to, linked_from = store.links_of(memory.id)
    return Relations(
        aliases=list(memory.aliases),
        mentions=[MentionedUri(uri=u, exists=e) for u, e in mentioned_relations(store, memory)][:20],
        mentioned_by=store.mentioned_by(memory),
        links_to=[Link(uri=u, relation=r) for u, r in links_to],
        linked_from=[Link(uri=u, relation=r) for u, r in linked_from],
        related=[
            RelatedMemory(
                uri=other.uri,
                priority=other.priority,
                tags=other.tags,
                shared_tags=tags,
                shared_terms=terms,
                preview=preview(other.content),
            )
            for other, tags, terms in store.related(memory)
        ]
        if related
        else [],
    )


def _read_one(
    ctx: ToolContext[Settings], store: MemoryStore, uri: str, cursor: str | None
) -> ReadMemoryOutput:
    memory, via = store.resolve(uri)
    # Bound to the version read: a cursor from before a change would cut the new content anywhere.
    pages_of = {"uri": uri, "memory": memory.id, "version": memory.version}
    position = decode_cursor(cursor, "read_memory", pages_of)
    offset = int(position) if isinstance(position, int) and position >= 0 else 0
    if cursor is None:
        memory.access_count, memory.last_accessed_at = store.count_access(memory.id)
    page_size = max(1_000, budget_of(ctx) - 6_000)
    page = memory.content[offset : offset + page_size]
    more = offset + page_size < len(memory.content)
    _, versions, _ = store.versions(memory.uri, limit=5)
    relations = relations_of(store, memory, related=cursor is None)
    result = ReadMemoryOutput(
        uri=memory.uri,
        kind="memory",
        via_alias=via,
        memory=record(memory),
        content=page,
        content_offset=offset,
        content_length=len(memory.content),
        recent_versions=[version_summary(v) for v in versions],
        relations=relations,
        truncated=more,
        next_cursor=encode_cursor("read_memory", pages_of, offset + page_size) if more else None,
    )
    note_en = f" (via alias {via})" if via else ""
    note_zh = f"（经由别名 {via}）" if via else ""
    more_en = " The content continues: pass next_cursor." if more else ""
    more_zh = " 内容未完，请传入 next_cursor 继续读取。" if more else ""
    return result.with_message(
        Text(
            en=f"Read {memory.uri}{note_en}, version {memory.version}.{more_en}",
            zh=f"已读取 {memory.uri}{note_zh}，版本 {memory.version}。{more_zh}",
        )
    )


def _read_system(
    ctx: ToolContext[Settings], store: MemoryStore, uri: MemoryUri, cursor: str | None
) -> ReadMemoryOutput:
    budget = budget_of(ctx)
    match = re.fullmatch(r"recent(?:/(\d{1,6}))?", uri.path)
    if uri.path == "boot":
        after = decode_cursor(cursor, "read_memory", {"uri": str(uri)})
        items, last, more = collect(
            lambda a, n: store.core_memories(a, n), rank_key, core_entry, after, budget=budget, max_items=500
        )
        result = ReadMemoryOutput(
            uri=str(uri),
            kind="boot",
            memories=items,
            truncated=more,
            next_cursor=encode_cursor("read_memory", {"uri": str(uri)}, last) if more else None,
        )
        return result.with_message(paged_message(len(items), more, en="core memories", zh="条核心记忆"))
    if uri.path == "index":
        after = decode_cursor(cursor, "read_memory", {"uri": str(uri)})
        entries, last, more = collect(
            lambda a, n: store.index_page(a, n),
            lambda r: r[0],
            lambda r: IndexEntry(uri=r[0], priority=r[2]),
            after,
            budget=budget,
            max_items=2_000,
        )
        groups: list[IndexGroup] = []
        for entry in entries:
            domain = entry.uri.split("://", 1)[0]
            if not groups or groups[-1].domain != domain:
                groups.append(IndexGroup(domain=domain, memories=[]))
            groups[-1].memories.append(entry)
        result = ReadMemoryOutput(
            uri=str(uri),
            kind="index",
            index=groups,
            truncated=more,
            next_cursor=encode_cursor("read_memory", {"uri": str(uri)}, last) if more else None,
        )
        return result.with_message(paged_message(len(entries), more, en="active URIs", zh="个活跃 URI"))
    if match:
        wanted = int(match.group(1)) if match.group(1) else RECENT_DEFAULT
        if not 1 <= wanted <= RECENT_MAX:
            raise ToolError(
                "INVALID_ARGUMENT",
                Text(
                    en=f"system://recent/N takes N from 1 to {RECENT_MAX} (got {wanted}).",
                    zh=f"system://recent/N 的 N 取值 1 到 {RECENT_MAX}（收到 {wanted}）。",
                ),
                hint=Text(en="e.g. system://recent/20", zh="例如 system://recent/20"),
                details={"argument": "uri", "max": RECENT_MAX},
            )
        position = decode_cursor(cursor, "read_memory", {"uri": str(uri)})
        after, left = (None, wanted)
        if isinstance(position, dict):
            left_then = int_position(position.get("left"))
            if left_then is None:
                raise bad_cursor("malformed")
            after, left = position.get("after"), left_then
        items, last, more = collect(
            lambda a, n: store.recent_page(a, n),
            lambda m: [m.updated_at, m.id],
            listed,
            after,
            budget=budget,
            max_items=max(1, left),
        )
        left -= len(items)
        more = more and left > 0
        result = ReadMemoryOutput(
            uri=str(uri),
            kind="recent",
            memories=items,
            truncated=more,
            next_cursor=encode_cursor("read_memory", {"uri": str(uri)}, {"after": last, "left": left})
            if more
            else None,
        )
        return result.with_message(
            paged_message(len(items), more, en="recently changed memories", zh="条最近修改的记忆")
        )
    raise ToolError(
        "NOT_FOUND",
        Text(en=f"{uri} is not a system view.", zh=f"{uri} 不是系统视图。"),
        hint=Text(
            en="System URIs: system://boot, system://index, system://recent, system://recent/N.",
            zh="系统 URI：system://boot、system://index、system://recent、system://recent/N。",
        ),
        details={
            "uri": str(uri),
            "valid": ["system://boot", "system://index", "system://recent", "system://recent/N"],
        },
    )


def list_memories(
    ctx: ToolContext[Settings],
    domain: DomainArg = None,
    status: Annotated[
        Literal["active", "deprecated", "archived"] | None,
        Field(description="Only this status"),
    ] = None,
    limit: Limit = DEFAULT_LIMIT,
    priority_min: PriorityMin = None,
    priority_max: PriorityMax = None,
    cursor: Cursor = None,
    tags: TagsFilter = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    updated_after: UpdatedAfter = None,
    updated_before: UpdatedBefore = None,
    linked_to: Annotated[
        str | None,
        Field(
            description="Only memories linked to or from this URI",
            min_length=1,
            max_length=600,
        ),
    ] = None,
    author: AuthorFilter = None,
) -> ListMemoriesOutput:
    """List memories, most important (priority 0) first, then most recently updated."""
    from hostd_memory.store import memory_store

    def linked_id() -> int:
        assert linked_to is not None
        return memory_store(ctx).resolve(str(uri_argument(linked_to, "linked_to")))[0].id

    filters = listing_filters(
        domain=domain,
        status=status,
        priority_min=priority_min,
        priority_max=priority_max,
        tags=tags,
        linked_to=linked_id if linked_to is not None else None,
        created_after=created_after,
        created_before=created_before,
        updated_after=updated_after,
        updated_before=updated_before,
        author=author,
    )
    store = memory_store(ctx)
    # Every filter argument, as normalised (limit and cursor aside): a cursor serves only these.
    arguments = {**dataclasses.asdict(filters), "tags": list(filters.tags)}
    after = decode_cursor(cursor, "list_memories", arguments)
    items, last, more = collect(
        lambda a, n: store.list_page(filters, a, n),
        rank_key,
        listed,
        after,
        budget=budget_of(ctx),
        max_items=limit,
    )
    return ListMemoriesOutput(
        count=len(items),
        memories=items,
        truncated=more,
        next_cursor=encode_cursor("list_memories", arguments, last) if more else None,
    ).with_message(paged_message(len(items), more, en="memories", zh="条记忆"))


def get_memory_stats(ctx: ToolContext[Settings]) -> MemoryStatsOutput:
    """Totals by status, domain and tag, most read memories, versions, aliases, links, sessions and database
    size.
    """
    from hostd_memory.store import memory_store

    stats = memory_store(ctx).stats()
    total = sum(count for status, count in stats["by_status"].items() if status != "deleted")
    result = MemoryStatsOutput(
        total=total,
        by_status=stats["by_status"],
        by_domain=stats["by_domain"],
        total_accesses=stats["total_accesses"],
        most_read=[MostRead(uri=u, access_count=c) for u, c in stats["most_read"]],
        version_count=stats["version_count"],
        alias_count=stats["alias_count"],
        session_count=stats["session_count"],
        database_bytes=stats["database_bytes"],
        by_tag=stats["by_tag"],
        tag_count=stats["tag_count"],
        link_count=stats["link_count"],
    )
    return result.with_message(
        Text(
            en=f"{total} memories in {len(stats['by_domain'])} domain(s).",
            zh=f"共 {total} 条记忆，分布在 {len(stats['by_domain'])} 个域。",
        )
    )
