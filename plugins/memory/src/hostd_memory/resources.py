"""Memories as MCP resources: ``memory://<domain>/<path>`` for the memory ``<domain>://<path>``.

Listed through the ``list_memories`` tool (same order, same paging, deleted ones left out) and
read through the store's ``resolve`` (an alias reads its memory; reading is not counted as an
access, unlike ``read_memory``). The text is the content under a front matter of its record.
"""

from __future__ import annotations

import json
import re
from typing import Any

from hostd import ResourceInfo, ResourceLink, ResourcePage, ResourceText, Text, ToolContext, ToolError
from hostd_memory.models import Settings
from hostd_memory.uris import InvalidUri, parse_uri

TEMPLATE = "memory://{domain}/{+path}"
#: The memories carrying one tag (offered as a template: tags are completed, not listed).
TAG_TEMPLATE = "memory-tag://{tag}"
MIME_TYPE = "text/markdown"
#: A memory's neighbourhood drawn as its dashboard page draws it (``view_graph.memory_graph``):
#: what the memory view inside a chat client shows, read through the client. ``?lang=en|zh`` asks
#: for its words in that language (the server's otherwise); a memory's path never holds a ``?``.
GRAPH_TEMPLATE = "memory-graph://{domain}/{+path}"
#: The two drawings (wide, and narrow for phones) one after the other, as on the page.
GRAPH_MIME_TYPE = "text/html"
_LANGUAGE = re.compile(r"\?lang=(en|zh)$")
PAGE = 50


def resource_uri(memory_uri: str) -> str:
    """The resource URI of the memory ``domain://path``."""
    domain, path = memory_uri.split("://", 1)
    return f"memory://{domain}/{path}"


def tag_uri(tag: str) -> str:
    """The resource URI of the memories tagged ``tag``."""
    return f"memory-tag://{tag}"


def memory_link(memory_uri: str) -> ResourceLink:
    """A link to a memory, for a tool's answer."""
    return ResourceLink(uri=resource_uri(memory_uri), name=memory_uri, mime_type=MIME_TYPE)


def touched(ctx: ToolContext[Any], memory_uri: str, tags: list[str]) -> ResourceLink:
    """A link to a memory a tool changed; its tags' resources (which list it) changed too."""
    ctx.resource_changed(*(tag_uri(tag) for tag in tags))
    return memory_link(memory_uri)


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


def _memory_uri(domain: str, path: str) -> str:
    """The memory URI a resource URI's parts name; NOT_FOUND (as for a missing memory) when they
    do not make one."""
    wanted = f"{domain}://{path}"
    try:
        return str(parse_uri(wanted))
    except InvalidUri:
        raise ToolError(
            "NOT_FOUND", Text(en=f"No memory {wanted}.", zh=f"没有记忆 {wanted}。"), details={"uri": wanted}
        ) from None


def read_resource(ctx: ToolContext[Settings], params: dict[str, str]) -> ResourceText:
    from hostd_memory.store import memory_store

    memory, _ = memory_store(ctx).resolve(_memory_uri(params["domain"], params["path"]))
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


def graph_uri(memory_uri: str, language: str | None = None) -> str:
    """The resource URI of the drawing of ``memory_uri``'s neighbourhood."""
    domain, path = memory_uri.split("://", 1)
    return f"memory-graph://{domain}/{path}" + (f"?lang={language}" if language else "")


def read_graph_resource(ctx: ToolContext[Settings], params: dict[str, str]) -> ResourceText:
    """The drawing of a memory's neighbourhood: the same function and arguments as its dashboard
    page, links to the memories' ``memory://`` resources; empty when nothing links to or from it."""
    from hostd_memory.store import memory_store
    from hostd_memory.tools.reading import relations_of
    from hostd_memory.view_graph import memory_graph

    path, language = params["path"], str(ctx.language)
    asked = _LANGUAGE.search(path)
    if asked:
        path, language = path[: asked.start()], asked.group(1)
    memory_uri = _memory_uri(params["domain"], path)
    store = memory_store(ctx)
    memory, _ = store.resolve(memory_uri)
    drawing = memory_graph(
        memory.uri,
        relations_of(store, memory, related=False),
        url_of=resource_uri,
        say=lambda text: text.render(language),
    )
    return ResourceText(
        uri=graph_uri(memory.uri, language if asked else None),
        text=str(drawing or ""),
        mime_type=GRAPH_MIME_TYPE,
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


def read_tag_resource(ctx: ToolContext[Settings], params: dict[str, str]) -> ResourceText:
    """The memories tagged ``tag``, in ``list_memories``' order (its first page of 50)."""
    from hostd_memory.tools.reading import list_memories

    tag = params["tag"]
    page = list_memories(ctx, tags=[tag], limit=PAGE)
    if not page.memories:
        raise ToolError(
            "NOT_FOUND",
            Text(en=f"No memory is tagged {tag}.", zh=f"没有带标签 {tag} 的记忆。"),
            hint=Text(
                en="Complete the tag argument of memory-tag://{tag} to see the tags in use.",
                zh="请补全 memory-tag://{tag} 的 tag 参数，查看在用的标签。",
            ),
            details={"tag": tag},
        )
    lines = [f"# Memories tagged {tag}", ""]
    lines += [
        f"- [{item.memory.uri}]({resource_uri(item.memory.uri)}): {item.preview}" for item in page.memories
    ]
    if page.next_cursor is not None:
        lines += [
            "",
            f"(first {PAGE}; list_memories with tags=[{json.dumps(tag, ensure_ascii=False)}] pages on)",
        ]
    return ResourceText(uri=tag_uri(tag), text="\n".join(lines) + "\n", mime_type=MIME_TYPE)


def complete_tag(
    ctx: ToolContext[Settings], argument: str, prefix: str, arguments: dict[str, str]
) -> list[str]:
    """Tags in use starting with ``prefix``: the most recently changed memory's first, then the most used."""
    from hostd_memory.store import BadLabel, memory_store
    from hostd_memory.store.rows import normalise_tag

    if argument != "tag":
        return []
    try:  # typed as a tag is written: 'Rust' completes to 'rust'
        spelled = normalise_tag(prefix) if prefix.strip() else ""
    except BadLabel:
        return []
    return memory_store(ctx).recent_tags(spelled, COMPLETION_LIMIT)
