"""Between the host's types and the SDK's: tool definitions, envelopes as results, resources,
prompts and their errors, and the member of a request."""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import mcp_types as types
from hostd_errors import CodedError
from mcp.shared.exceptions import MCPError

from hostd.core.icon import icon_svg
from hostd.core.identity import Member
from hostd.core.prompts import PromptImage, PromptInfo
from hostd.core.resources import ResourceBlob, ResourceInfo, ResourceLink, ResourceText
from hostd.core.tools import for_the_model

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from hostd.core.host import Host


def svg_icon(svg: str) -> types.Icon:
    """An SVG icon inline (a ``data:`` URI): no client needs the network to show it."""
    return types.Icon(
        src="data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode(),
        mime_type="image/svg+xml",
        sizes=["any"],
    )


def tool_definitions(host: Host, views: Mapping[str, str] | None = None) -> list[types.Tool]:
    """The tools as ``tools/list`` shows them: the listed (lighter) input and output schemas, and
    each plugin's icon once.

    MCP has no place for a group's icon, and a ``data:`` icon on every tool sent the same few
    SVGs dozens of times in each list (a URL would need the network, which a stdio client may
    not have, and a list that differs by transport could not be cached alike). So a plugin's
    icon goes inline on its first listed tool only; the server's own icon is in ``serverInfo``.
    The display title is the tool's ``title`` (every era hostd speaks has it), not repeated in
    the annotations. ``views`` maps a tool to its view inside the chat (MCP Apps): that tool's
    ``_meta.ui.resourceUri``, and nothing more.
    """
    icons = {plugin: [svg_icon(svg)] for plugin, svg in host.icons.items()}
    shown: set[str] = set()
    tools: list[types.Tool] = []
    for spec in host.tools.values():
        first = spec.plugin not in shown
        shown.add(spec.plugin)
        tools.append(
            types.Tool(
                name=spec.name,
                title=spec.title,
                description=spec.description,
                input_schema=spec.listed_schema,
                output_schema=spec.listed_output_schema,
                icons=icons.get(spec.plugin) if first else None,
                annotations=types.ToolAnnotations(
                    read_only_hint=spec.annotations["readOnlyHint"],
                    destructive_hint=spec.annotations["destructiveHint"],
                    idempotent_hint=spec.annotations["idempotentHint"],
                    open_world_hint=spec.annotations["openWorldHint"],
                ),
                _meta={"ui": {"resourceUri": views[spec.name]}} if views and spec.name in views else None,
            )
        )
    return tools


def envelope_result(
    envelope: dict[str, Any], is_error: bool, links: Sequence[ResourceLink] = ()
) -> types.CallToolResult:
    text = json.dumps(for_the_model(envelope), ensure_ascii=False, separators=(",", ":"))
    blocks: list[types.ContentBlock] = [types.TextContent(type="text", text=text)]
    blocks += [
        types.ResourceLink(
            type="resource_link",
            uri=link.uri,
            name=link.name,
            title=link.title,
            description=link.description,
            mime_type=link.mime_type,
        )
        for link in links
    ]
    return types.CallToolResult(
        content=blocks,
        structured_content=envelope,
        is_error=is_error,
    )


#: At most this many values in one completion answer (MCP's limit).
MAX_COMPLETIONS = 100

#: hostd's icon, served inline so no client needs the network to show it.
SERVER_ICON = svg_icon(icon_svg())


def prompt_of(info: PromptInfo) -> types.Prompt:
    return types.Prompt(
        name=info.name,
        title=info.title,
        description=info.description,
        arguments=[
            types.PromptArgument(name=a.name, description=a.description, required=a.required)
            for a in info.arguments
        ],
    )


def resource_contents(
    found: ResourceText | ResourceBlob,
) -> types.TextResourceContents | types.BlobResourceContents:
    """A read resource as MCP contents: text as it is, bytes base64-encoded as ``blob``."""
    if isinstance(found, ResourceBlob):
        blob = base64.b64encode(found.blob).decode("ascii")
        return types.BlobResourceContents(uri=found.uri, mime_type=found.mime_type, blob=blob)
    return types.TextResourceContents(uri=found.uri, mime_type=found.mime_type, text=found.text)


def prompt_content(part: str | PromptImage | ResourceText | ResourceBlob) -> types.ContentBlock:
    """One message of a rendered prompt as MCP content: a text, an image or an embedded resource."""
    if isinstance(part, str):
        return types.TextContent(type="text", text=part)
    if isinstance(part, PromptImage):
        data = base64.b64encode(part.data).decode("ascii")
        return types.ImageContent(type="image", data=data, mime_type=part.mime_type)
    return types.EmbeddedResource(type="resource", resource=resource_contents(part))


#: JSON-RPC error code of a resource that does not exist (MCP's resources/read).
RESOURCE_NOT_FOUND = -32002


def resource_of(item: ResourceInfo) -> types.Resource:
    annotations = types.Annotations(last_modified=item.updated_at) if item.updated_at else None
    return types.Resource(
        uri=item.uri,
        name=item.name,
        title=item.title,
        description=item.description,
        mime_type=item.mime_type,
        size=item.size,
        annotations=annotations,
    )


def resource_error(host: Host, exc: CodedError, uri: str | None = None, *, modern: bool = False) -> MCPError:
    """A plugin's refusal while listing or reading resources, as a JSON-RPC error in the host's language.

    A resource that does not exist is -32002 up to 2025-11-25 and -32602 (invalid params) from
    2026-07-28 on (``modern``), as each revision's Resources section says."""
    message, hint, details = exc.rendered(host.language)
    text = message + (f" {hint}" if hint else "")
    data = {"code": exc.code, **(details or {}), **({"uri": uri} if uri else {})}
    if exc.code == "NOT_FOUND":
        return MCPError(types.INVALID_PARAMS if modern else RESOURCE_NOT_FOUND, text, data)
    if exc.code == "INVALID_ARGUMENT":
        return MCPError(types.INVALID_PARAMS, text, data)
    return MCPError(types.INTERNAL_ERROR, text, data)


def request_member(request: ServerRequestContext[Any, Any]) -> Member | None:
    """The member whose token the HTTP guard accepted for this request; ``None`` off HTTP or
    on a loopback bind without tokens (the call is then the local user's)."""
    scope = getattr(request.request, "scope", None)
    if not isinstance(scope, dict):
        return None  # stdio: no HTTP request, nothing more to look at on every call
    from hostd.protocol.guard import MEMBER_SCOPE_KEY

    member = scope.get(MEMBER_SCOPE_KEY)
    return member if isinstance(member, Member) else None
