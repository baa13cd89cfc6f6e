"""add_alias, link_memories and unlink_memories: other URIs for a memory, and typed links
between memories.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hostd import Text, ToolContext, ToolError
from hostd_memory.models import (
    AddAliasOutput,
    LinkMemoriesOutput,
    Settings,
    UnlinkMemoriesOutput,
)
from hostd_memory.resources import memory_link, resource_uri
from hostd_memory.tools.answers import (
    record,
)
from hostd_memory.tools.arguments import (
    RelationArg,
    relation_name,
    writable_uri,
)

LinkEndArg = Annotated[str, Field(description="Memory URI (or alias)", min_length=1, max_length=600)]


def add_alias(
    ctx: ToolContext[Settings],
    target_uri: Annotated[
        str,
        Field(description="Existing memory URI", min_length=1, max_length=600),
    ],
    alias_uri: Annotated[str, Field(description="New URI leading to it", min_length=1, max_length=600)],
) -> AddAliasOutput:
    """Give a memory another URI, e.g. user://profile for core://agent/my_user."""
    from hostd_memory.store import memory_store

    target = writable_uri(target_uri, "target_uri")
    alias = writable_uri(alias_uri, "alias_uri")
    if alias == target:
        raise ToolError(
            "INVALID_ARGUMENT",
            Text(en="alias_uri is the same URI as target_uri.", zh="alias_uri 与 target_uri 相同。"),
            hint=Text(en="Give the alias a different URI.", zh="请为别名使用不同的 URI。"),
            details={"argument": "alias_uri"},
        )
    memory = memory_store(ctx).add_alias(str(target), str(alias))
    ctx.resource_changed(resource_uri(str(alias)))  # a URI that now reads the memory
    answer = AddAliasOutput(alias_uri=str(alias), target_uri=memory.uri, memory=record(memory))
    return answer.with_links(memory_link(memory.uri)).with_message(
        Text(en=f"{alias} now leads to {memory.uri}.", zh=f"{alias} 现在指向 {memory.uri}。")
    )


def link_memories(
    ctx: ToolContext[Settings], from_uri: LinkEndArg, to_uri: LinkEndArg, relation: RelationArg
) -> LinkMemoriesOutput:
    """Link one memory to another with a named relation; linking again is harmless."""
    from hostd_memory.store import memory_store

    source_uri = writable_uri(from_uri, "from_uri")
    target_uri = writable_uri(to_uri, "to_uri")
    name = relation_name(relation)
    source, target, created = memory_store(ctx).link(str(source_uri), str(target_uri), name)
    if created:  # a memory's links, both ways, are part of what reading it shows
        ctx.resource_changed(resource_uri(source.uri), resource_uri(target.uri))
    result = LinkMemoriesOutput(from_uri=source.uri, to_uri=target.uri, relation=name, created=created)
    if not created:
        return result.with_message(
            Text(
                en=f"{source.uri} already links to {target.uri} ({name}); nothing changed.",
                zh=f"{source.uri} 已链接到 {target.uri}（{name}），未作改动。",
            )
        )
    return result.with_message(
        Text(
            en=f"Linked {source.uri} to {target.uri} ({name}).",
            zh=f"已将 {source.uri} 链接到 {target.uri}（{name}）。",
        )
    )


def unlink_memories(
    ctx: ToolContext[Settings],
    from_uri: LinkEndArg,
    to_uri: LinkEndArg,
    relation: Annotated[
        str | None,
        Field(
            description="Relation to remove; omitted: all",
            min_length=1,
            max_length=100,
        ),
    ] = None,
) -> UnlinkMemoriesOutput:
    """Remove a link between two memories (one relation, or all in that direction)."""
    from hostd_memory.store import memory_store

    source_uri = writable_uri(from_uri, "from_uri")
    target_uri = writable_uri(to_uri, "to_uri")
    name = relation_name(relation) if relation is not None else None
    source, target, removed = memory_store(ctx).unlink(str(source_uri), str(target_uri), name)
    if removed:
        ctx.resource_changed(resource_uri(source.uri), resource_uri(target.uri))
    return UnlinkMemoriesOutput(from_uri=source.uri, to_uri=target.uri, removed=removed).with_message(
        Text(
            en=f"Removed {len(removed)} link(s) from {source.uri} to {target.uri}.",
            zh=f"已删除从 {source.uri} 到 {target.uri} 的 {len(removed)} 个链接。",
        )
    )
