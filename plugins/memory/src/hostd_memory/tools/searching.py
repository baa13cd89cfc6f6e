"""search_memory (ranked full-text search with filters) and preload_memory (what to know
before working on a file, folder, error or intent).
"""

from __future__ import annotations

import dataclasses
from typing import Annotated, Literal, cast

from hostd.paging import (
    Cursor,
    Limit,
    decode_cursor,
    encode_cursor,
    fill_within_budget,
    int_position,
    size_of,
)
from pydantic import Field

from hostd import Text, ToolContext, ToolError
from hostd_memory.models import (
    PreloadItem,
    PreloadMemoryOutput,
    SearchHit,
    SearchMemoryOutput,
    Settings,
    Status,
)
from hostd_memory.tools.answers import (
    budget_of,
    clip,
    core_entry,
    preview,
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
    listing_filters,
)

#: A search answers its best hits: 10 by default (the paging rule allows 1-100), which keeps a
#: default answer near 700 tokens; more come with ``limit`` or the next page.
SEARCH_LIMIT = 10


def search_memory(
    ctx: ToolContext[Settings],
    query: Annotated[
        str,
        Field(
            description="Plain-text words (no operators), Chinese or English, 1 to 1,000 characters",
            min_length=1,
            max_length=1_000,
        ),
    ],
    domain: DomainArg = None,
    limit: Limit = SEARCH_LIMIT,
    priority_min: PriorityMin = None,
    priority_max: PriorityMax = None,
    tags: TagsFilter = None,
    created_after: CreatedAfter = None,
    created_before: CreatedBefore = None,
    updated_after: UpdatedAfter = None,
    updated_before: UpdatedBefore = None,
    cursor: Cursor = None,
    author: AuthorFilter = None,
) -> SearchMemoryOutput:
    """Full-text search (BM25) over URIs, contents and disclosures, Chinese or English, with a snippet per
    hit. Deleted memories are never returned.
    """
    from hostd_memory import search as search_text
    from hostd_memory.store import memory_store

    filters = listing_filters(
        domain=domain,
        priority_min=priority_min,
        priority_max=priority_max,
        tags=tags,
        created_after=created_after,
        created_before=created_before,
        updated_after=updated_after,
        updated_before=updated_before,
        author=author,
    )
    plan = search_text.plan_query(query)
    if plan.empty:
        stripped = query.strip()
        if not stripped:
            raise ToolError(
                "INVALID_ARGUMENT",
                Text(en="The query is empty.", zh="查询为空。"),
                hint=Text(en="Give some words to look for.", zh="请给出要查找的词。"),
                details={"argument": "query"},
            )
        plan = search_text.QueryPlan(terms=[stripped], strict_scan=[stripped])
    # The ranking has no keyset: a page starts after the hits given so far (its position).
    arguments = {"query": query, **dataclasses.asdict(filters), "tags": list(filters.tags)}
    given = int_position(decode_cursor(cursor, "search_memory", arguments)) or 0
    hits = memory_store(ctx).search(plan, filters, given + limit + 1)
    shown = [
        SearchHit(
            uri=h.memory.uri,
            priority=h.memory.priority,
            status=cast(Status, h.memory.status),
            disclosure=clip(h.memory.disclosure, 300)[0],
            aliases=h.memory.aliases,
            tags=h.memory.tags,
            snippet=search_text.snippet(h.memory.content, plan.terms),
            score=round(h.score, 4),
            matched="any_term" if h.stage == "any_term" else "all_terms",
            updated_at=h.memory.updated_at,
        )
        for h in hits[given : given + limit]
    ]
    taken, cut = fill_within_budget(shown, budget_of(ctx))
    more = cut or len(hits) > given + limit
    return SearchMemoryOutput(
        query=query,
        terms=plan.terms,
        count=len(taken),
        hits=taken,
        truncated=more,
        next_cursor=encode_cursor("search_memory", arguments, given + len(taken)) if more else None,
    ).with_message(
        Text(
            en=f"{len(taken)} memor{'y' if len(taken) == 1 else 'ies'} found for {query!r}.",
            zh=f"找到 {len(taken)} 条与 {query!r} 相关的记忆。",
        )
    )


def preload_memory(
    ctx: ToolContext[Settings],
    context_type: Annotated[
        Literal["file", "directory", "error", "intent"],
        Field(description="What context_data is"),
    ],
    context_data: Annotated[
        str, Field(description="The path, error message or intent", min_length=1, max_length=20_000)
    ],
) -> PreloadMemoryOutput:
    """Load the core memories and those related to what you are about to work on (a file, directory, error or
    intent), each with why it matched.
    """
    from hostd_memory.preload import related_memories
    from hostd_memory.store import memory_store

    store = memory_store(ctx)
    budget = budget_of(ctx)
    core_rows = store.core_memories(None, 30)
    found, terms = related_memories(store, context_type, context_data, exclude={m.id for m in core_rows})
    core, core_cut = fill_within_budget([core_entry(m, 1_500) for m in core_rows], budget // 2)
    related_items = [
        PreloadItem(
            uri=m.uri,
            priority=m.priority,
            tags=m.tags,
            reasons=reasons,
            preview=preview(m.content),
        )
        for m, reasons in found
    ]
    related, related_cut = fill_within_budget(
        related_items,
        budget - sum(size_of(c) for c in core),
        size=lambda item: size_of(item, ctx.language),  # its reasons as the answer writes them
    )
    return PreloadMemoryOutput(
        context_type=context_type,
        search_terms=terms,
        core=core,
        related=related,
        truncated=core_cut or related_cut or len(core_rows) >= 30,
    ).with_message(
        Text(
            en=f"{len(core)} core and {len(related)} related memories for this {context_type}.",
            zh=f"为该 {context_type} 加载了 {len(core)} 条核心记忆和 {len(related)} 条相关记忆。",
        )
    )
