"""A memory's history: get_memory_versions, list_rollbacks, rollback_memory and diff_versions."""

from __future__ import annotations

from typing import Annotated

from hostd.paging import (
    DEFAULT_LIMIT,
    Cursor,
    Limit,
    decode_cursor,
    encode_cursor,
    fill_within_budget,
    int_position,
)
from pydantic import Field

from hostd import Text, ToolContext
from hostd_memory.models import (
    MAX_VERSION,
    DiffVersionsOutput,
    ListRollbacksOutput,
    MemoryVersionsOutput,
    RollbackMemoryOutput,
    RollbackOption,
    Settings,
)
from hostd_memory.resources import resource_uri, touched
from hostd_memory.tools.answers import (
    budget_of,
    clip,
    record,
    version_summary,
)
from hostd_memory.tools.arguments import (
    UriArg,
    memory_uri,
    writable_uri,
)


def get_memory_versions(
    ctx: ToolContext[Settings], uri: UriArg, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> MemoryVersionsOutput:
    """A memory's versions, newest first: time, change note, size, preview."""
    from hostd_memory.store import memory_store

    parsed = memory_uri(uri, "uri")
    arguments = {"uri": str(parsed)}
    before = int_position(decode_cursor(cursor, "get_memory_versions", arguments))
    memory, versions, total = memory_store(ctx).versions(str(parsed), limit=limit + 1, before=before)
    summaries, cut = fill_within_budget([version_summary(v) for v in versions[:limit]], budget_of(ctx))
    more = cut or len(versions) > limit
    return MemoryVersionsOutput(
        uri=memory.uri,
        current_version=memory.version,
        total=total,
        versions=summaries,
        truncated=more,
        next_cursor=encode_cursor("get_memory_versions", arguments, summaries[-1].version) if more else None,
    ).with_message(
        Text(
            en=f"{memory.uri} is at version {memory.version}; {total} version(s) in all.",
            zh=f"{memory.uri} 当前为版本 {memory.version}，共 {total} 个版本。",
        )
    )


def list_rollbacks(
    ctx: ToolContext[Settings], uri: UriArg, limit: Limit = DEFAULT_LIMIT, cursor: Cursor = None
) -> ListRollbacksOutput:
    """Versions a memory can roll back to, newest first, with what each would change."""
    import difflib

    from hostd_memory.store import memory_store

    parsed = memory_uri(uri, "uri")
    arguments = {"uri": str(parsed)}
    before = int_position(decode_cursor(cursor, "list_rollbacks", arguments))
    memory, versions, total = memory_store(ctx).versions(
        str(parsed), limit=limit + 1, before=before, include_current=False
    )
    total -= 1  # the current version is no target
    current_lines = memory.content.splitlines()
    options = []
    for version in versions[:limit]:
        added = removed = 0
        if version.content != memory.content:
            for line in difflib.ndiff(current_lines, version.content.splitlines()):
                added += line.startswith("+ ")
                removed += line.startswith("- ")
        summary = version_summary(version)
        options.append(
            RollbackOption(
                **summary.model_dump(),
                content_changed=version.content != memory.content,
                lines_added=added,
                lines_removed=removed,
                priority_change=f"{memory.priority} -> {version.priority}"
                if version.priority != memory.priority
                else None,
                disclosure_changed=version.disclosure != memory.disclosure,
                tags_changed=version.tags != memory.tags,
            )
        )
    options, cut = fill_within_budget(options, budget_of(ctx))
    more = cut or len(versions) > limit
    return ListRollbacksOutput(
        uri=memory.uri,
        current_version=memory.version,
        total=total,
        rollbacks=options,
        truncated=more,
        next_cursor=encode_cursor("list_rollbacks", arguments, options[-1].version) if more else None,
    ).with_message(
        Text(
            en=f"{memory.uri}: {len(options)} version(s) to roll back to (current {memory.version}).",
            zh=f"{memory.uri}：可回滚的版本 {len(options)} 个（当前版本 {memory.version}）。",
        )
    )


def rollback_memory(
    ctx: ToolContext[Settings],
    uri: UriArg,
    version: Annotated[int, Field(description="Version to restore", ge=1, le=MAX_VERSION)],
) -> RollbackMemoryOutput:
    """Restore a version's content, priority and disclosure as a new version; also undeletes."""
    from hostd_memory.store import memory_store

    parsed = writable_uri(uri, "uri")
    memory, restored, changed = memory_store(ctx).rollback(str(parsed), version, author=ctx.member)
    if changed:
        ctx.resource_changed(resource_uri(memory.uri))
        touched(ctx, memory.uri, memory.tags)
    result = RollbackMemoryOutput(
        uri=memory.uri,
        restored_version=restored.version,
        new_version=memory.version,
        changed=changed,
        memory=record(memory),
    )
    if not changed:
        return result.with_message(
            Text(
                en=f"{memory.uri} already holds version {version}'s state; nothing changed "
                f"(still version {memory.version}).",
                zh=f"{memory.uri} 已是版本 {version} 的状态，未作改动（仍为版本 {memory.version}）。",
            )
        )
    return result.with_message(
        Text(
            en=f"{memory.uri} restored to version {version}'s state as version {memory.version}.",
            zh=f"{memory.uri} 已恢复为版本 {version} 的状态，新版本为 {memory.version}。",
        )
    )


NO_NEWLINE_MARK = "\\ No newline at end of file\n"


def _unified_diff(old: str, new: str, fromfile: str, tofile: str) -> str:
    """A unified diff ``patch`` applies: difflib leaves a last line without a newline unterminated,
    which glues it to the next diff line, so each such line gets the marker diff(1) writes. Lines
    end at a line feed only, as patch reads them (str.splitlines also splits at CR, U+2028, ...)."""
    import difflib

    def lines_of(text: str) -> list[str]:
        *whole, last = text.split("\n")
        return [f"{line}\n" for line in whole] + ([last] if last else [])

    lines = difflib.unified_diff(lines_of(old), lines_of(new), fromfile=fromfile, tofile=tofile)
    return "".join(line if line.endswith("\n") else f"{line}\n{NO_NEWLINE_MARK}" for line in lines)


def diff_versions(
    ctx: ToolContext[Settings],
    uri: UriArg,
    version1: Annotated[int, Field(description="Older version", ge=1, le=MAX_VERSION)],
    version2: Annotated[int, Field(description="Newer version", ge=1, le=MAX_VERSION)],
) -> DiffVersionsOutput:
    """Two versions of a memory in full and as a unified diff."""
    from hostd_memory.store import memory_store

    parsed = memory_uri(uri, "uri")
    memory, first, second = memory_store(ctx).version_pair(str(parsed), version1, version2)
    diff = _unified_diff(
        first.content, second.content, f"{memory.uri}@v{version1}", f"{memory.uri}@v{version2}"
    )
    share = max(500, budget_of(ctx) // 3)
    content1, cut1 = clip(first.content, share)
    content2, cut2 = clip(second.content, share)
    diff_text, cut3 = clip(diff, share)
    return DiffVersionsOutput(
        uri=memory.uri,
        version1=version1,
        version2=version2,
        content1=content1,
        content2=content2,
        author1=first.author,
        author2=second.author,
        diff=diff_text,
        identical=first.content == second.content,
        truncated=cut1 or cut2 or cut3,
    ).with_message(
        Text(
            en=f"{memory.uri}: version {version1} and {version2} "
            f"{'have the same content' if first.content == second.content else 'differ'}.",
            zh=f"{memory.uri}：版本 {version1} 与 {version2} "
            f"{'内容相同' if first.content == second.content else '内容不同'}。",
        )
    )
