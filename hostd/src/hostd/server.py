"""Adapting a ``Host`` to the official MCP SDK's low-level ``Server``.

The host sits on the SDK's public low-level server rather than ``MCPServer`` because it
validates arguments and builds the envelope itself: ``MCPServer`` would answer argument
errors with its own text and check error results against the output schema.
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import os
import warnings
from collections.abc import Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, TypeVar

import mcp_types as types
from hostd_errors import CodedError, Text
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import is_version_at_least
from pydantic import BaseModel, ValidationError

from hostd import client_log
from hostd.api import SamplingResult
from hostd.context import CALLING_MEMBER, ClientInputNeeded
from hostd.errors import HostError
from hostd.members import Member
from hostd.prompts import PromptImage, PromptInfo
from hostd.resources import ResourceBlob, ResourceInfo, ResourceKind, ResourceLink, ResourceText
from hostd.subscriptions import ResourceChanges, SubscriptionService
from hostd.tools import bounded_text, for_the_model
from hostd.web.icon import icon_svg

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from hostd.config import TransportConfig
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


AnswerT = TypeVar("AnswerT", bound=BaseModel)

# From this revision on the server may not send requests to the client: it asks for roots
# and sampling inside a tool call's result (input_required) and the client calls again.
INPUT_REQUIRED_VERSION = "2026-07-28"
ROOTS_KEY = "roots"
_STATE_VERSION = 1


class InputRound:
    """One round of a ``tools/call`` on the 2026-07-28 protocol: the client's answers so far,
    and the questions this round still has for it.

    The client answers only the questions of the round before, so earlier answers ride in
    ``requestState`` (sealed by the SDK's ``RequestStateBoundary``) and each question is asked
    once. A tool is run again from the start on every round, so it must ask the same question
    the same way (the wechat digest's prompt is built from the articles alone).
    """

    def __init__(self, answers: dict[str, Any]) -> None:
        self._answers = answers
        self.questions: dict[str, types.InputRequest] = {}

    @classmethod
    def of(cls, params: types.CallToolRequestParams, host: Host) -> InputRound:
        """Earlier answers from the state, plus the answers to the questions asked last round."""
        answers, asked = _decode_state(params.request_state)
        for key, response in (params.input_responses or {}).items():
            if key not in asked:
                continue  # only questions this server asked are answered
            if not isinstance(response, _answer_models(key)):
                raise MCPError(
                    types.INVALID_PARAMS,
                    Text(
                        en=f"inputResponses[{key!r}] does not answer the {_method_of(key)} request "
                        "it was asked.",
                        zh=f"inputResponses[{key!r}] 不是对所提 {_method_of(key)} 请求的回答。",
                    ).render(host.language),
                )
            answers[key] = response.model_dump(by_alias=True, mode="json", exclude_none=True)
        return cls(answers)

    def answer(self, key: str, model: type[AnswerT]) -> AnswerT | None:
        raw = self._answers.get(key)
        if raw is None:
            return None
        try:
            return model.model_validate(raw)
        except ValidationError:  # state from an older build: ask again
            return None

    def ask(self, key: str, request: types.InputRequest) -> None:
        self.questions[key] = request

    def input_required(self) -> types.InputRequiredResult:
        state = {"v": _STATE_VERSION, "answers": self._answers, "asked": sorted(self.questions)}
        return types.InputRequiredResult(
            input_requests=dict(self.questions),
            request_state=json.dumps(state, separators=(",", ":"), ensure_ascii=True),
        )


def _decode_state(request_state: str | None) -> tuple[dict[str, Any], set[str]]:
    """Answers and asked keys from a ``requestState`` the boundary has already verified."""
    if not request_state:
        return {}, set()
    try:
        state = json.loads(request_state)
        answers, asked = state["answers"], state["asked"]
        if state["v"] != _STATE_VERSION or not isinstance(answers, dict) or not isinstance(asked, list):
            raise ValueError("unexpected shape")
    except (ValueError, KeyError, TypeError):
        return {}, set()  # a state this build did not write: start over
    return answers, {key for key in asked if isinstance(key, str)}


def _answer_models(key: str) -> tuple[type[BaseModel], ...]:
    """What may answer the question under ``key`` (a model's content may be one block or a list)."""
    if key == ROOTS_KEY:
        return (types.ListRootsResult,)
    return (types.CreateMessageResult, types.CreateMessageResultWithTools)


def _method_of(key: str) -> str:
    return "roots/list" if key == ROOTS_KEY else "sampling/createMessage"


def speaks_input_required(request: ServerRequestContext[Any, Any]) -> bool:
    """Whether this call's protocol revision asks the client through results, not requests."""
    return is_version_at_least(request.session.protocol_version, INPUT_REQUIRED_VERSION)


def _sampling_params(prompt: str, system: str | None, max_tokens: int) -> types.CreateMessageRequestParams:
    message = types.SamplingMessage(role="user", content=types.TextContent(type="text", text=prompt))
    return types.CreateMessageRequestParams(messages=[message], system_prompt=system, max_tokens=max_tokens)


def _sampling_key(params: types.CreateMessageRequestParams) -> str:
    """The same question gets the same key in every round, so its answer is found again."""
    rendered = json.dumps(params.model_dump(by_alias=True, mode="json", exclude_none=True), sort_keys=True)
    return "sample-" + hashlib.sha256(rendered.encode()).hexdigest()[:32]


def _sampling_result(
    result: types.CreateMessageResult | types.CreateMessageResultWithTools,
) -> SamplingResult:
    blocks = result.content if isinstance(result.content, list) else [result.content]
    text = "".join(block.text for block in blocks if isinstance(block, types.TextContent))
    if not text:
        return SamplingResult(
            available=False,
            reason=Text(en="the client's model returned no text", zh="客户端模型没有返回文字"),
        )
    return SamplingResult(available=True, text=text, model=result.model)


class SdkChannel:
    """The client, as one tool call sees it: progress, sampling (when declared).

    Before 2026-07-28 sampling is a request to the client; from it on, ``input_round`` is set
    and a question without an answer yet ends the round (``ClientInputNeeded``).
    """

    def __init__(
        self, request: ServerRequestContext[Any, Any], input_round: InputRound | None = None
    ) -> None:
        self._request = request
        self._round = input_round

    @property
    def can_sample(self) -> bool:
        capabilities = self._request.session.client_capabilities
        declared = bool(capabilities and capabilities.sampling is not None)
        return declared and (self._round is not None or self._request.session.can_send_request)

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        try:
            await self._request.session.report_progress(progress, total, message)
        except Exception:  # progress is best effort: never fail a call because of it
            logger.debug("progress notification not delivered", exc_info=True)

    async def sample(self, prompt: str, system: str | None, max_tokens: int) -> SamplingResult:
        params = _sampling_params(prompt, system, max_tokens)
        if self._round is not None:
            key = _sampling_key(params)
            answer = self._round.answer(key, types.CreateMessageResultWithTools)
            if answer is None:
                self._round.ask(key, types.CreateMessageRequest(params=params))
                raise ClientInputNeeded(key)
            return _sampling_result(answer)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                result = await self._request.session.create_message(
                    params.messages, max_tokens=max_tokens, system_prompt=system
                )
        except MCPError as exc:
            return SamplingResult(
                available=False,
                reason=Text(en="the client declined: {why}", zh="客户端拒绝了请求：{why}").format(
                    why=exc.message
                ),
            )
        except Exception as exc:
            logger.warning("sampling request failed: %s", exc)
            return SamplingResult(
                available=False,
                reason=Text(en="sampling failed ({kind})", zh="采样失败（{kind}）").format(
                    kind=type(exc).__name__
                ),
            )
        return _sampling_result(result)


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


def roots_from_round(request: ServerRequestContext[Any, Any], input_round: InputRound) -> list[str] | None:
    """The client's roots on 2026-07-28: answered, ``None`` when not declared; else asked for."""
    capabilities = request.session.client_capabilities
    if capabilities is None or capabilities.roots is None:
        return None
    answer = input_round.answer(ROOTS_KEY, types.ListRootsResult)
    if answer is None:
        input_round.ask(ROOTS_KEY, types.ListRootsRequest())
        raise ClientInputNeeded(ROOTS_KEY)
    return [str(root.uri) for root in answer.roots]


def _only_input_needed(exc: BaseException) -> bool:
    """True when everything that ended the call was a question for the client (also in groups)."""
    if isinstance(exc, BaseExceptionGroup):
        _, rest = exc.split(ClientInputNeeded)
        return rest is None
    return isinstance(exc, ClientInputNeeded)


def svg_icon(svg: str) -> types.Icon:
    """An SVG icon inline (a ``data:`` URI): no client needs the network to show it."""
    return types.Icon(
        src="data:image/svg+xml;base64," + base64.b64encode(svg.encode()).decode(),
        mime_type="image/svg+xml",
        sizes=["any"],
    )


def tool_definitions(host: Host) -> list[types.Tool]:
    icons = {plugin: [svg_icon(svg)] for plugin, svg in host.icons.items()}
    return [
        types.Tool(
            name=spec.name,
            title=spec.title,
            description=spec.description,
            input_schema=spec.listed_schema,
            output_schema=spec.output_schema,
            icons=icons.get(spec.plugin),
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


def resource_error(host: Host, exc: CodedError, uri: str | None = None) -> MCPError:
    """A plugin's refusal while listing or reading resources, as a JSON-RPC error in the host's language."""
    message, hint, details = exc.rendered(host.language)
    text = message + (f" {hint}" if hint else "")
    data = {"code": exc.code, **(details or {}), **({"uri": uri} if uri else {})}
    if exc.code == "NOT_FOUND":
        return MCPError(RESOURCE_NOT_FOUND, text, data)
    if exc.code == "INVALID_ARGUMENT":
        return MCPError(types.INVALID_PARAMS, text, data)
    return MCPError(types.INTERNAL_ERROR, text, data)


def request_member(request: ServerRequestContext[Any, Any]) -> Member | None:
    """The member whose token the HTTP guard accepted for this request; ``None`` off HTTP or
    on a loopback bind without tokens (the call is then the local user's)."""
    scope = getattr(request.request, "scope", None)
    if not isinstance(scope, dict):
        return None  # stdio: no HTTP request, nothing more to look at on every call
    from hostd.transports import MEMBER_SCOPE_KEY

    member = scope.get(MEMBER_SCOPE_KEY)
    return member if isinstance(member, Member) else None


class ProfileTools:
    """Which of the served tools a member limited to a profile may see and call.

    A member's profile is another profile of the same config: its tools are those the served
    profile also serves under the same name from the same plugin. Worked out once per profile
    (plugins are loaded, not started) and kept.
    """

    def __init__(self, host: Host) -> None:
        self._host = host
        self._by_profile: dict[str, frozenset[str]] = {}

    def allowed(self, member: Member | None) -> frozenset[str] | None:
        """The tool names this member may use, ``None`` for every served tool."""
        if member is None or member.profile is None or member.profile == self._host.loaded.profile_name:
            return None
        if member.profile not in self._by_profile:
            self._by_profile[member.profile] = self._tools_of(member.profile)
        return self._by_profile[member.profile]

    def _tools_of(self, profile_name: str) -> frozenset[str]:
        import dataclasses

        from hostd.host import Host

        loaded = self._host.loaded
        profile = loaded.config.profiles.get(profile_name)
        if profile is None:  # the tokens file was checked against the config: cannot happen
            return frozenset()
        limited = dataclasses.replace(loaded, profile_name=profile_name, profile=profile)
        # In-line plugins (tests, embedding) count as installed for the other profile too.
        extra = {name: self._host.manager.get_plugin(name) for name in self._host._extra_plugins}
        other = Host(limited, cwd=self._host.cwd, extra_plugins=extra)
        served = self._host.tools
        return frozenset(
            name
            for name, spec in other.tools.items()
            if name in served and served[name].plugin == spec.plugin
        )


def request_state_security(transport: TransportConfig | None) -> RequestStateSecurity:
    """What seals the 2026-07-28 ``requestState``: a per-process key, or the replicas' shared secret.

    With a per-process key, a client's next round must reach the same replica: another one
    refuses the state. ``transport.state_secret_env`` names a secret every replica shares.
    The state is bound to the member, so one member cannot replay another's.
    """

    def bound_member(request: ServerRequestContext[Any, Any]) -> str | None:
        member = request_member(request)
        return member.name if member else None

    if transport is None or not transport.state_secret_env:
        return RequestStateSecurity(keys=[os.urandom(32)], bind_principal=bound_member)
    secret = os.environ.get(transport.state_secret_env, "")
    if len(secret.encode()) < 32:
        raise HostError(
            f"transport.state_secret_env names ${transport.state_secret_env}, which must hold a secret of at "
            "least 32 bytes, the same on every replica "
            '(make one with: python -c "import secrets; print(secrets.token_hex(32))")'
        )
    return RequestStateSecurity(keys=[secret], bind_principal=bound_member)


async def release_call_arguments(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    """Outermost middleware: once a ``tools/call`` is answered, let go of its arguments and body.

    Until a connection's next message arrives, the SDK's message loop keeps the last request: its
    parsed params (the arguments) and, over HTTP, the Starlette request with the whole body cached.
    With 30 MB arguments that kept two payloads resident between calls, on top of the next call's.
    """
    try:
        return await call_next(ctx)
    finally:
        if ctx.method == "tools/call":
            params = ctx.params
            arguments = params.get("arguments") if isinstance(params, dict) else None
            if isinstance(arguments, dict):
                arguments.clear()  # the answer is built: nothing reads them any more
            if getattr(ctx.request, "_body", None) is not None:
                ctx.request._body = b""  # type: ignore[union-attr]  # Starlette's cache of the body read once


def build_server(host: Host, transport: TransportConfig | None = None) -> Server[Any]:
    """A low-level SDK server whose tools are the host's; start-up is the caller's job.

    ``transport`` (the profile's section) supplies the shared ``requestState`` secret, if any.
    """
    listed = types.ListToolsResult(tools=tool_definitions(host))
    profile_tools = ProfileTools(host)
    security = request_state_security(transport)

    def unknown_tool(name: str, available: list[str]) -> MCPError:
        name = bounded_text(name)
        return MCPError(
            types.INVALID_PARAMS,
            Text(
                en=f"Unknown tool: {name}. Available tools: {', '.join(available)}",
                zh=f"未知工具：{name}。可用工具：{', '.join(available)}",
            ).render(host.language),
        )

    async def on_list_tools(
        request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        # Every tool fits on one page, so no cursor was ever handed out: any cursor is invalid.
        if params is not None and params.cursor is not None:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: hostd lists every tool on one page; call tools/list with no cursor.",
                    zh="无效的游标：hostd 在一页中列出全部工具；请不带游标调用 tools/list。",
                ).render(host.language),
            )
        allowed = profile_tools.allowed(request_member(request))
        if allowed is None:
            return listed
        return types.ListToolsResult(tools=[tool for tool in listed.tools if tool.name in allowed])

    async def on_call_tool(
        request: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        member = request_member(request)
        allowed = profile_tools.allowed(member)
        spec = host.tools.get(params.name)
        if spec is None or (allowed is not None and params.name not in allowed):
            # A tool outside the member's profile is answered exactly as one that does not exist.
            raise unknown_tool(params.name, sorted(allowed if allowed is not None else host.tools))
        calling = CALLING_MEMBER.set(member.name if member else None)
        try:
            return await _call(request, params, spec.uses_roots)
        finally:
            CALLING_MEMBER.reset(calling)

    async def _call(
        request: ServerRequestContext[Any, Any], params: types.CallToolRequestParams, uses_roots: bool
    ) -> types.CallToolResult | types.InputRequiredResult:
        links: list[ResourceLink] = []
        if not speaks_input_required(request):
            roots = await client_roots(request) if uses_roots else None
            envelope, is_error = await host.call(
                params.name, params.arguments, channel=SdkChannel(request), client_roots=roots, links=links
            )
            return envelope_result(envelope, is_error, links)
        input_round = InputRound.of(params, host)
        try:
            roots = roots_from_round(request, input_round) if uses_roots else None
            envelope, is_error = await host.call(
                params.name,
                params.arguments,
                channel=SdkChannel(request, input_round),
                client_roots=roots,
                links=links,
            )
        except BaseException as exc:
            if not (input_round.questions and _only_input_needed(exc)):
                raise
            return input_round.input_required()
        return envelope_result(envelope, is_error, links)

    def served_kinds(request: ServerRequestContext[Any, Any]) -> list[ResourceKind]:
        return host.served_resource_kinds(profile_tools.allowed(request_member(request)))

    async def on_list_resources(
        request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        member = request_member(request)
        calling = CALLING_MEMBER.set(member.name if member else None)
        try:
            items, next_cursor = await host.list_resources(
                served_kinds(request), params.cursor if params else None
            )
        except ValueError:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: pass nextCursor exactly as resources/list gave it, or no cursor.",
                    zh="无效的游标：请原样传入 resources/list 给出的 nextCursor，或不带游标。",
                ).render(host.language),
            ) from None
        except CodedError as exc:
            raise resource_error(host, exc) from None
        finally:
            CALLING_MEMBER.reset(calling)
        return types.ListResourcesResult(
            resources=[resource_of(item) for item in items], next_cursor=next_cursor
        )

    async def on_list_resource_templates(
        request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        if params is not None and params.cursor is not None:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: every resource template is on one page; ask without a cursor.",
                    zh="无效的游标：全部资源模板在一页中；请不带游标请求。",
                ).render(host.language),
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
                for kind in served_kinds(request)
            ]
        )

    async def on_read_resource(
        request: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        member = request_member(request)
        calling = CALLING_MEMBER.set(member.name if member else None)
        try:
            found = await host.read_resource(served_kinds(request), str(params.uri))
        except CodedError as exc:
            raise resource_error(host, exc, str(params.uri)) from None
        finally:
            CALLING_MEMBER.reset(calling)
        return types.ReadResourceResult(contents=[resource_contents(found)])

    def input_schema(name: str) -> dict[str, Any] | None:
        """The called tool's input schema, for the SDK's check of a 2026-07-28 call's Mcp-Param
        headers. Without this hook the SDK runs (and serialises) a whole tools/list for every
        tools/call to find it, which cost more than most calls. A tool outside the member's
        profile has none, as in the list they see."""
        from hostd.transports import REQUEST_MEMBER

        spec = host.tools.get(name)
        allowed = profile_tools.allowed(REQUEST_MEMBER.get())
        if spec is None or (allowed is not None and name not in allowed):
            return None
        return spec.listed_schema

    async def on_list_prompts(
        request: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        if params is not None and params.cursor is not None:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(
                    en="Invalid cursor: every prompt is on one page; ask without a cursor.",
                    zh="无效的游标：全部提示在一页中；请不带游标请求。",
                ).render(host.language),
            )
        sources = host.served_prompt_sources(profile_tools.allowed(request_member(request)))
        return types.ListPromptsResult(
            prompts=[prompt_of(info) for _, info in await host.list_prompts(sources)]
        )

    async def on_get_prompt(
        request: ServerRequestContext[Any, Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        member = request_member(request)
        sources = host.served_prompt_sources(profile_tools.allowed(member))
        calling = CALLING_MEMBER.set(member.name if member else None)
        try:
            rendered = await host.get_prompt(sources, params.name, dict(params.arguments or {}))
        except KeyError:
            raise MCPError(
                types.INVALID_PARAMS,
                Text(en=f"Unknown prompt: {params.name}.", zh=f"未知提示：{params.name}。").render(
                    host.language
                ),
                {"name": params.name},
            ) from None
        except CodedError as exc:
            error = resource_error(host, exc)
            raise MCPError(
                types.INVALID_PARAMS if exc.code == "NOT_FOUND" else error.error.code,
                error.error.message,
                error.error.data,
            ) from None
        finally:
            CALLING_MEMBER.reset(calling)
        messages = [
            types.PromptMessage(role="user", content=prompt_content(part)) for part in rendered.messages
        ]
        return types.GetPromptResult(description=rendered.description, messages=messages)

    async def on_completion(
        request: ServerRequestContext[Any, Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        member = request_member(request)
        ref = params.ref
        calling = CALLING_MEMBER.set(member.name if member else None)
        try:
            values = await host.complete(
                profile_tools.allowed(member),
                template=ref.uri if isinstance(ref, types.ResourceTemplateReference) else None,
                prompt=ref.name if isinstance(ref, types.PromptReference) else None,
                argument=params.argument.name,
                prefix=params.argument.value,
                arguments=dict(params.context.arguments or {}) if params.context else {},
            )
        except CodedError as exc:
            raise resource_error(host, exc) from None
        finally:
            CALLING_MEMBER.reset(calling)
        shown = values[:MAX_COMPLETIONS]
        # A source may stop one past the page (memory's index queries do): then the total is
        # not known, and only has_more is said.
        total = len(values) if len(values) <= MAX_COMPLETIONS else None
        return types.CompleteResult(
            completion=types.Completion(values=shown, total=total, has_more=len(values) > len(shown))
        )

    async def check_subscribable(request: ServerRequestContext[Any, Any], uri: str) -> None:
        """A URI may be subscribed to when this member could read it: the same answer as
        resources/read for one their profile does not serve, or that does not exist."""
        member = request_member(request)
        calling = CALLING_MEMBER.set(member.name if member else None)
        try:
            await host.read_resource(served_kinds(request), uri)
        except CodedError as exc:
            raise resource_error(host, exc, uri) from None
        finally:
            CALLING_MEMBER.reset(calling)

    subscriptions = None
    if host.resource_kinds:
        changes = ResourceChanges.for_config(host.loaded)
        host.changes = changes
        subscriptions = SubscriptionService(changes, check_subscribable, host.language)

    log_levels = client_log.SessionLevels()
    client_log.install()

    async def on_set_logging_level(
        request: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        log_levels.set(request, params.level)
        return types.EmptyResult()

    # logging/setLevel is deprecated from 2026-07-28 on (the SDK warns when it is handled), and
    # still the way every earlier protocol version sets the level: hostd serves both.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = Server(
            "hostd",
            version=hostd_version(),
            title="hostd",
            instructions=INSTRUCTIONS,
            get_tool_input_schema=input_schema,
            on_list_tools=on_list_tools,
            on_call_tool=on_call_tool,
            on_list_resources=on_list_resources if host.resource_kinds else None,
            on_list_resource_templates=on_list_resource_templates if host.resource_kinds else None,
            on_read_resource=on_read_resource if host.resource_kinds else None,
            on_subscribe_resource=subscriptions.subscribe if subscriptions else None,
            on_unsubscribe_resource=subscriptions.unsubscribe if subscriptions else None,
            on_subscriptions_listen=subscriptions.listen if subscriptions else None,
            on_list_prompts=on_list_prompts if host.prompt_sources else None,
            on_get_prompt=on_get_prompt if host.prompt_sources else None,
            on_completion=on_completion if host.resource_kinds or host.prompt_sources else None,
            on_set_logging_level=on_set_logging_level,
            icons=[SERVER_ICON],
        )
    # The answers carried between rounds come back from the client: the SDK seals them
    # (integrity, expiry, bound to the tool and its arguments) under a key of this process,
    # or under the replicas' shared secret.
    server.middleware.append(RequestStateBoundary(security, default_audience="hostd"))
    server.middleware.insert(0, release_call_arguments)
    server.middleware.append(client_log.middleware(log_levels))
    if subscriptions is not None:
        server.middleware.append(subscriptions.offer_only_where_possible)
    return server
