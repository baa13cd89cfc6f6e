"""Shaping the store's rows into answers: records, previews, core entries, version summaries,
and filling a page within the answer budget.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from hostd.paging import (
    ENVELOPE_ALLOWANCE,
    size_of,
)

from hostd import Text, ToolContext
from hostd_memory.models import (
    CoreMemory,
    ListedMemory,
    MemoryRecord,
    Settings,
    Status,
    VersionSummary,
)

if TYPE_CHECKING:
    from hostd_memory.store import MemoryRow, VersionRow

R = TypeVar("R")

PREVIEW_CHARS = 120
CORE_CONTENT_CHARS = 4_000


def budget_of(ctx: ToolContext[Settings]) -> int:
    """Characters an answer's items may take (the envelope's own fields aside)."""
    return ctx.settings.max_answer_chars - ENVELOPE_ALLOWANCE


def record(memory: MemoryRow) -> MemoryRecord:
    return MemoryRecord(
        id=memory.id,
        uri=memory.uri,
        domain=memory.domain,
        path=memory.path,
        aliases=list(memory.aliases),
        tags=list(memory.tags),
        priority=memory.priority,
        disclosure=memory.disclosure,
        status=cast(Status, memory.status),
        access_count=memory.access_count,
        last_accessed_at=memory.last_accessed_at,
        created_at=memory.created_at,
        updated_at=memory.updated_at,
        version=memory.version,
        author=memory.author,
    )


def clip(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to ``limit`` characters, and whether it was cut."""
    if len(text) <= limit:
        return text, False
    return text[: max(0, limit - 1)] + "…", True


def preview(text: str, limit: int = PREVIEW_CHARS) -> str:
    return clip(" ".join(text[: limit * 4].split()), limit)[0]


def listed(memory: MemoryRow) -> ListedMemory:
    return ListedMemory(memory=record(memory), size=len(memory.content), preview=preview(memory.content))


def core_entry(memory: MemoryRow, limit: int = CORE_CONTENT_CHARS) -> CoreMemory:
    content, cut = clip(memory.content, limit)
    return CoreMemory(
        memory=record(memory),
        size=len(memory.content),
        preview=preview(memory.content),
        content=content,
        content_truncated=cut,
    )


def version_summary(version: VersionRow) -> VersionSummary:
    return VersionSummary(
        version=version.version,
        current=version.current,
        created_at=version.created_at,
        change=version.change,
        change_note=version.change_note,
        priority=version.priority,
        disclosure=version.disclosure,
        status=cast(Status, version.status),
        tags=list(version.tags),
        size=len(version.content),
        preview=preview(version.content),
        author=version.author,
    )


def collect(
    fetch: Callable[[Any, int], list[R]],
    key: Callable[[R], Any],
    convert: Callable[[R], Any],
    after: Any,
    *,
    budget: int,
    max_items: int,
    size: Callable[[Any], int] = size_of,
) -> tuple[list[Any], Any, bool]:
    """Fetch rows batch by batch, keeping what fits the budget: (items, last key, more left). The first
    item always goes in, so a page is never empty while rows remain."""
    items: list[Any] = []
    used = 0
    last = after
    while len(items) < max_items:
        want = min(50, max_items - len(items))
        rows = fetch(last, want + 1)
        for row in rows[:want]:
            item = convert(row)
            cost = size(item)
            if items and used + cost > budget:
                return items, last, True
            items.append(item)
            used += cost
            last = key(row)
        if len(rows) <= want:
            return items, last, False
    return items, last, True


def rank_key(memory: MemoryRow) -> list[Any]:
    return [memory.priority, memory.updated_at, memory.id]


def paged_message(count: int, more: bool, *, en: str, zh: str) -> Text:
    """ "<count> <what>", and that more remain when the page is not the last."""
    if more:
        return Text(
            en=f"{count} {en}; more remain: pass next_cursor.",
            zh=f"{count} {zh}；还有更多，请传入 next_cursor。",
        )
    return Text(en=f"{count} {en}.", zh=f"{count} {zh}。")
