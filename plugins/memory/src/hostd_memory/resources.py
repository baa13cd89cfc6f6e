"""Memories as MCP resources: ``memory://<domain>/<path>`` for the memory ``<domain>://<path>``.

Listed through the ``list_memories`` tool (same order, same paging, deleted ones left out) and
read through the store's ``resolve`` (an alias reads its memory; reading is not counted as an
access, unlike ``read_memory``). The text is the content under a front matter of its record.
"""

from __future__ import annotations

import json

from hostd import ResourceInfo, ResourceLink, ResourcePage, ResourceText, Text, ToolContext, ToolError
from hostd_memory.models import Settings
from hostd_memory.uris import InvalidUri, parse_uri

TEMPLATE = "memory://{domain}/{+path}"
MIME_TYPE = "text/markdown"
PAGE = 50


def resource_uri(memory_uri: str) -> str:
    """The resource URI of the memory ``domain://path``."""
    domain, path = memory_uri.split("://", 1)
    return f"memory://{domain}/{path}"


def memory_link(memory_uri: str) -> ResourceLink:
    """A link to a memory, for a tool's answer."""
    return ResourceLink(uri=resource_uri(memory_uri), name=memory_uri, mime_type=MIME_TYPE)


def list_resources(ctx: ToolContext[Settings], cursor: str | None) -> ResourcePage:
    from hostd_memory.tools.reading import list_memories

    page = list_memories(ctx, limit=PAGE, cursor=cursor)
    return ResourcePage(
        resources=[
            ResourceInfo(
                uri=resource_uri(item.memory.uri),
                name=item.memory.uri,
                description=item.preview,
                mime_type=MIME_TYPE,
                size=item.size,
                updated_at=item.memory.updated_at,
            )
            for item in page.memories
        ],
        next_cursor=page.next_cursor,
    )


def read_resource(ctx: ToolContext[Settings], params: dict[str, str]) -> ResourceText:
    from hostd_memory.store import memory_store

    wanted = f"{params['domain']}://{params['path']}"
    try:
        memory_uri = str(parse_uri(wanted))
    except InvalidUri:
        raise ToolError(
            "NOT_FOUND", Text(en=f"No memory {wanted}.", zh=f"没有记忆 {wanted}。"), details={"uri": wanted}
        ) from None
    memory, _ = memory_store(ctx).resolve(memory_uri)
    record = {
        "uri": memory.uri,
        "priority": memory.priority,
        "status": memory.status,
        "tags": memory.tags,
        "aliases": memory.aliases,
        "disclosure": memory.disclosure,
        "version": memory.version,
        "author": memory.author,
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }
    front = "\n".join(
        f"{key}: {json.dumps(value, ensure_ascii=False)}"
        for key, value in record.items()
        if value not in (None, "", [])
    )
    return ResourceText(
        uri=resource_uri(memory.uri), text=f"---\n{front}\n---\n\n{memory.content}", mime_type=MIME_TYPE
    )


#: Values one completion answers at most (MCP shows 100; one more says there are more).
COMPLETION_LIMIT = 101


def complete_argument(
    ctx: ToolContext[Settings], argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    """Domains, or paths within the chosen domain, starting with ``prefix``, most recently changed
    first; from index queries that stop at a page, whatever the number of memories."""
    from hostd_memory.store import memory_store

    store = memory_store(ctx)
    if argument == "domain":
        return store.recent_domains(prefix, COMPLETION_LIMIT)
    if argument == "path":
        domain = arguments.get("domain")
        return store.recent_paths(domain, prefix, COMPLETION_LIMIT) if domain else []
    return []
