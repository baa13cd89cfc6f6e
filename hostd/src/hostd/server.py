"""Adapting a ``Host`` to the official MCP SDK's low-level ``Server``.

The host sits on the SDK's public low-level server rather than ``MCPServer`` because it
validates arguments and builds the envelope itself: ``MCPServer`` would answer argument
errors with its own text and check error results against the output schema.
"""

from __future__ import annotations

import json
import logging
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

from hostd.context import SamplingResult

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from hostd.host import Host

logger = logging.getLogger("hostd.server")

INSTRUCTIONS = (
    "hostd serves tools from its installed plugins. Every tool answers one JSON envelope: "
    "status, message, the tool's fields, metadata; errors carry error.code and error.hint."
)


def hostd_version() -> str:
    try:
        return version("hostd")
    except PackageNotFoundError:  # running from a source tree
        return "0"


class SdkChannel:
    """The client, as one tool call sees it: progress, sampling (when declared)."""

    def __init__(self, request: ServerRequestContext[Any, Any]) -> None:
        self._request = request

    @property
    def can_sample(self) -> bool:
        capabilities = self._request.session.client_capabilities
        return bool(
            capabilities and capabilities.sampling is not None and self._request.session.can_send_request
        )

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        try:
            await self._request.session.report_progress(progress, total, message)
        except Exception:  # progress is best effort: never fail a call because of it
            logger.debug("progress notification not delivered", exc_info=True)

    async def sample(self, prompt: str, system: str | None, max_tokens: int) -> SamplingResult:
        message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await self._request.session.create_message(
                    [message], max_tokens=max_tokens, system_prompt=system
                )
        except MCPError as exc:
            return SamplingResult(available=False, reason=f"the client declined: {exc.message}")
        except Exception as exc:
            logger.warning("sampling request failed: %s", exc)
            return SamplingResult(available=False, reason=f"sampling failed: {type(exc).__name__}")
        content = result.content
        text = content.text if isinstance(content, types.TextContent) else None
        if not text:
            return SamplingResult(available=False, reason="the client's model returned no text")
        return SamplingResult(available=True, text=text, model=result.model)


async def client_roots(request: ServerRequestContext[Any, Any]) -> list[str] | None:
    """The client's roots as URIs, or ``None`` when it did not declare the capability."""
    capabilities = request.session.client_capabilities
    if capabilities is None or capabilities.roots is None or not request.session.can_send_request:
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            result = await request.session.list_roots()
    except Exception as exc:
        # The configured allowed_roots still apply: roots are never the only line of defence.
        logger.warning("client declared roots but roots/list failed: %s", exc)
        return None
    return [str(root.uri) for root in result.roots]


def tool_definitions(host: Host) -> list[types.Tool]:
    return [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.input_schema,
            output_schema=spec.output_schema,
            annotations=types.ToolAnnotations(
                title=spec.title,
                read_only_hint=spec.annotations["readOnlyHint"],
                destructive_hint=spec.annotations["destructiveHint"],
                idempotent_hint=spec.annotations["idempotentHint"],
                open_world_hint=spec.annotations["openWorldHint"],
            ),
        )
        for spec in host.tools.values()
    ]


def envelope_result(envelope: dict[str, Any], is_error: bool) -> types.CallToolResult:
    text = json.dumps(envelope, ensure_ascii=False)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=envelope,
        is_error=is_error,
    )


def build_server(host: Host) -> Server[Any]:
    """A low-level SDK server whose tools are the host's; start-up is the caller's job."""
    listed = types.ListToolsResult(tools=tool_definitions(host))

    async def on_list_tools(
        request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Every tool fits on one page, so no cursor was ever handed out: any cursor is invalid.
        if params is not None and params.cursor is not None:
            raise MCPError(
                types.INVALID_PARAMS,
                host.text(
                    en="Invalid cursor: hostd lists every tool on one page; call tools/list with no cursor.",
                    zh="无效的游标：hostd 在一页中列出全部工具；请不带游标调用 tools/list。",
                ),
            )
        return listed

    async def on_call_tool(
        request: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        spec = host.tools.get(params.name)
        if spec is None:
            raise MCPError(
                types.INVALID_PARAMS,
                f"Unknown tool: {params.name}. Available tools: {', '.join(sorted(host.tools))}",
            )
        roots = await client_roots(request) if spec.uses_roots else None
        envelope, is_error = await host.call(
            params.name, params.arguments, channel=SdkChannel(request), client_roots=roots
        )
        return envelope_result(envelope, is_error)

    return Server(
        "hostd",
        version=hostd_version(),
        title="hostd",
        instructions=INSTRUCTIONS,
        on_list_tools=on_list_tools,
        on_call_tool=on_call_tool,
    )
