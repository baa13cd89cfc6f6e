"""The SDK's request handlers: tools, resources, prompts and completions for the member of each
request, through the host's call pipeline and offerings."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Literal

import mcp_types as types
from hostd_errors import CodedError, Text
from mcp.shared.exceptions import MCPError

from hostd.core.identity import CURRENT_MEMBER
from hostd.core.pipeline import ToolAnswer, ToolCall
from hostd.core.resources import not_found
from hostd.core.tools import bounded_text
from hostd.protocol.adapters import (
    MAX_COMPLETIONS,
    envelope_result,
    prompt_content,
    prompt_of,
    request_member,
    resource_contents,
    resource_error,
    resource_of,
    tool_definitions,
)
from hostd.protocol.input_rounds import (
    InputRound,
    SdkChannel,
    client_roots,
    only_input_needed,
    roots_from_round,
    speaks_input_required,
)
from hostd.web.apps import APP_MIME_TYPE, AppViews

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from hostd.core.host import Host

logger = logging.getLogger("hostd.server")

#: How long (ms) a client may keep the tool and resource-template lists (2026-07-28's ``ttlMs``).
#: They are fixed while hostd runs (it sends no list-changed notification), so the bound is only
#: for a restart with another config or version: a client sees that within ten minutes.
LIST_TTL_MS = 600_000
#: The prompt list's: the thinking templates include the user's template files, read again when
#: they change, so a client keeps it a minute.
PROMPT_LIST_TTL_MS = 60_000


class McpHandlers:
    """The SDK's request handlers for one host: each hands its work to the host's call pipeline
    (tools) or offerings (resources, prompts, completions) for the member of the request."""

    def __init__(self, host: Host) -> None:
        self.host = host
        self.policy = host.access
        self.apps = AppViews(host)
        self.listed = types.ListToolsResult(
            tools=tool_definitions(host, self.apps.by_tool), ttl_ms=LIST_TTL_MS, cache_scope=self.list_scope
        )

    @property
    def list_scope(self) -> Literal["public", "private"]:
        """The tool and template lists' ``cacheScope``: ``public`` (a shared cache may hand them to
        anyone) only when every member is shown the same ones, else ``private``: with members'
        profiles over HTTP one member's list is not another's."""
        return "public" if self.policy.lists_alike else "private"

    def unknown_tool(self, name: str, available: list[str]) -> MCPError:
        name = bounded_text(name)
        return MCPError(
            types.INVALID_PARAMS,
            Text(
                en=f"Unknown tool: {name}. Available tools: {', '.join(available)}",
                zh=f"未知工具：{name}。可用工具：{', '.join(available)}",
            ).render(self.host.language),
        )

    async def on_list_tools(
        self, request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Every tool fits on one page, so no cursor was ever handed out: any cursor is invalid.
        if params is not None and params.cursor is not None:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: hostd lists every tool on one page; call tools/list with no cursor.",
                    zh="无效的游标：hostd 在一页中列出全部工具；请不带游标调用 tools/list。",
                ).render(self.host.language),
            )
        allowed = self.policy.tools_for(request_member(request))
        if allowed is None:
            return self.listed
        return types.ListToolsResult(
            tools=[tool for tool in self.listed.tools if tool.name in allowed],
            ttl_ms=LIST_TTL_MS,
            cache_scope=self.list_scope,
        )

    async def on_call_tool(
        self, request: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        member = request_member(request)
        call = ToolCall(params.name, params.arguments, member, "mcp")
        spec = self.host.tools.get(params.name)
        # The client's roots are asked only for a call the member may make (asking costs a round trip).
        uses_roots = spec is not None and spec.uses_roots and self.policy.may(member, params.name)
        input_round = InputRound.of(params, self.host) if speaks_input_required(request) else None
        if input_round is None:
            call.client_roots = await client_roots(request) if uses_roots else None
            call.channel = SdkChannel(request)
        else:
            call.channel = SdkChannel(request, input_round)
        try:
            if input_round is not None and uses_roots:  # may ask the client for its roots first
                call.client_roots = roots_from_round(request, input_round)
            answer = await self.host.pipeline.call_tool(call)
        except BaseException as exc:
            if input_round is None or not (input_round.questions and only_input_needed(exc)):
                raise
            return input_round.input_required()
        return self.result_of(call, answer)

    def result_of(self, call: ToolCall, answer: ToolAnswer) -> types.CallToolResult:
        """The ``tools/call`` result of the pipeline's answer (a plain call's, or a task's)."""
        if answer.refusal is not None and answer.refusal.reason != "missing_scope":
            # A tool outside the member's profile is answered exactly as one that does not exist.
            allowed = self.policy.tools_for(call.member)
            raise self.unknown_tool(call.tool, sorted(allowed if allowed is not None else self.host.tools))
        return envelope_result(answer.envelope, answer.is_error, call.links)

    async def on_list_resources(
        self, request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        try:
            items, next_cursor = await self.host.offerings.list_resources(
                request_member(request), params.cursor if params else None
            )
        except ValueError:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: pass nextCursor exactly as resources/list gave it, or no cursor.",
                    zh="无效的游标：请原样传入 resources/list 给出的 nextCursor，或不带游标。",
                ).render(self.host.language),
            ) from None
        except CodedError as exc:
            raise resource_error(self.host, exc) from None
        return types.ListResourcesResult(
            resources=[resource_of(item) for item in items], next_cursor=next_cursor
        )

    async def on_list_resource_templates(
        self, request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        if params is not None and params.cursor is not None:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: every resource template is on one page; ask without a cursor.",
                    zh="无效的游标：全部资源模板在一页中；请不带游标请求。",
                ).render(self.host.language),
            )
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=kind.uri_template,
                    name=kind.name,
                    title=kind.title,
                    description=kind.description,
                    mime_type=kind.mime_type,
                )
                for kind in self.host.offerings.resource_kinds(request_member(request))
            ],
            ttl_ms=LIST_TTL_MS,
            cache_scope=self.list_scope,
        )

    async def on_read_resource(
        self, request: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri).startswith("ui://"):
            return self.read_view(request, str(params.uri))
        try:
            found = await self.host.offerings.read_resource(request_member(request), str(params.uri))
        except CodedError as exc:
            modern = speaks_input_required(request)
            raise resource_error(self.host, exc, str(params.uri), modern=modern) from None
        except Exception:
            # Never the exception's own text (it may name the data folder's paths): logged here.
            logger.exception("resources/read of %r failed", str(params.uri)[:200])
            text = Text(
                en="Reading the resource failed; see the server's log.", zh="读取资源失败，详见服务器日志。"
            )
            raise MCPError(
                types.INTERNAL_ERROR, text.render(self.host.language), {"code": "INTERNAL"}
            ) from None
        return types.ReadResourceResult(contents=[resource_contents(found)])

    def read_view(self, request: ServerRequestContext[Any, Any], uri: str) -> types.ReadResourceResult:
        """A view inside the chat (MCP Apps), rendered for the member of the connection: one whose
        profile does not serve the view's tool is answered as for a resource that does not exist."""
        member = request_member(request)
        view = self.apps.serves(member, uri)
        if view is None:
            raise resource_error(self.host, not_found(uri), uri, modern=speaks_input_required(request))
        html = self.apps.document(view, member, self.host.language)
        contents = types.TextResourceContents(
            uri=uri, mime_type=APP_MIME_TYPE, text=html, _meta={"ui": {"prefersBorder": False}}
        )
        return types.ReadResourceResult(contents=[contents])

    def input_schema(self, name: str) -> dict[str, Any] | None:
        """The called tool's input schema, for the SDK's check of a 2026-07-28 call's Mcp-Param
        headers. Without this hook the SDK runs (and serialises) a whole tools/list for every
        tools/call to find it, which cost more than most calls. A tool outside the member's
        profile has none, as in the list they see (the HTTP guard set the member of the request)."""
        if not self.policy.lists(CURRENT_MEMBER.get(), name):
            return None
        return self.host.tools[name].listed_schema

    async def on_list_prompts(
        self, request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        if params is not None and params.cursor is not None:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: every prompt is on one page; ask without a cursor.",
                    zh="无效的游标：全部提示在一页中；请不带游标请求。",
                ).render(self.host.language),
            )
        prompts = await self.host.offerings.list_prompts(request_member(request))
        # Private always: a prompt may be the member's own (a template file in their plugin room).
        return types.ListPromptsResult(
            prompts=[prompt_of(info) for _, info in prompts],
            ttl_ms=PROMPT_LIST_TTL_MS,
            cache_scope="private",
        )

    async def on_get_prompt(
        self, request: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        try:
            rendered = await self.host.offerings.get_prompt(
                request_member(request), params.name, dict(params.arguments or {})
            )
        except KeyError:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(en=f"Unknown prompt: {params.name}.", zh=f"未知提示：{params.name}。").render(
                    self.host.language
                ),
                {"name": params.name},
            ) from None
        except CodedError as exc:
            error = resource_error(self.host, exc)
            raise MCPError(
                types.INVALID_PARAMS if exc.code == "NOT_FOUND" else error.error.code,
                error.error.message,
                error.error.data,
            ) from None
        messages = [
            types.PromptMessage(role="user", content=prompt_content(part)) for part in rendered.messages
        ]
        return types.GetPromptResult(description=rendered.description, messages=messages)

    async def on_completion(
        self, request: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        ref = params.ref
        try:
            values = await self.host.offerings.complete(
                request_member(request),
                template=ref.uri if isinstance(ref, types.ResourceTemplateReference) else None,
                prompt=ref.name if isinstance(ref, types.PromptReference) else None,
                argument=params.argument.name,
                prefix=params.argument.value,
                arguments=dict(params.context.arguments or {}) if params.context else {},
            )
        except CodedError as exc:
            raise resource_error(self.host, exc) from None
        shown = values[:MAX_COMPLETIONS]
        # A source may stop one past the page (memory's index queries do): then the total is
        # not known, and only has_more is said.
        total = len(values) if len(values) <= MAX_COMPLETIONS else None
        return types.CompleteResult(
            completion=types.Completion(values=shown, total=total, has_more=len(values) > len(shown))
        )

    async def check_subscribable(self, request: ServerRequestContext[Any, Any], uri: str) -> None:
        """A URI may be subscribed to when this member could read it: the same answer as
        resources/read for one their profile does not serve, or that does not exist."""
        try:
            await self.host.offerings.read_resource(request_member(request), uri)
        except CodedError as exc:
            raise resource_error(self.host, exc, uri, modern=speaks_input_required(request)) from None
