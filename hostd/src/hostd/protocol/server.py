"""Adapting a ``Host`` to the official MCP SDK's low-level ``Server``.

The host sits on the SDK's public low-level server rather than ``MCPServer`` because it
validates arguments and builds the envelope itself: ``MCPServer`` would answer argument
errors with its own text and check error results against the output schema.
"""

from __future__ import annotations

import logging
import os
import warnings
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.shared.exceptions import MCPDeprecationWarning

from hostd.core.errors import HostError
from hostd.protocol import client_log
from hostd.protocol.adapters import SERVER_ICON, request_member
from hostd.protocol.handlers import McpHandlers
from hostd.protocol.subscriptions import ResourceChanges, SubscriptionService
from hostd.protocol.tasks_extension import install_tasks

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from hostd.core.config import TransportConfig
    from hostd.core.host import Host

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


async def advertise_only_what_is_sent(ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
    """Middleware: ``server/discover`` (2026-07-28) says ``listChanged`` for no list, because hostd
    sends no list-changed notification (its tool, prompt and template lists are fixed while it runs,
    and a change to a memory, task or session reaches that resource's subscribers as an update)."""
    result = await call_next(ctx)
    if ctx.method == "server/discover":
        capabilities = (
            result.get("capabilities") if isinstance(result, dict) else getattr(result, "capabilities", None)
        )
        for name in ("tools", "prompts", "resources"):
            section = (
                capabilities.get(name)
                if isinstance(capabilities, dict)
                else getattr(capabilities, name, None)
            )
            if isinstance(section, dict):
                section.pop("listChanged", None)
                section.pop("list_changed", None)
            elif section is not None:
                section.list_changed = None
    return result


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


#: The MCP Apps extension's identifier.
APPS_EXTENSION = "io.modelcontextprotocol/ui"


def build_server(host: Host, transport: TransportConfig | None = None) -> Server[Any]:
    """A low-level SDK server whose tools are the host's; start-up is the caller's job.

    ``transport`` (the profile's section) supplies the shared ``requestState`` secret, if any.
    """
    handlers = McpHandlers(host)
    security = request_state_security(transport)
    subscriptions = None
    if host.resource_kinds:
        changes = ResourceChanges.for_config(host.loaded)
        host.changes = changes
        subscriptions = SubscriptionService(changes, handlers.check_subscribable, host.language)

    log_levels = client_log.SessionLevels()
    client_log.install()

    async def on_set_logging_level(
        request: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        log_levels.set(request, params.level)
        return types.EmptyResult()

    resources, prompts = bool(host.resource_kinds), bool(host.prompt_sources)
    views = bool(handlers.apps.views)
    # logging/setLevel is deprecated from 2026-07-28 on (the SDK warns when it is handled), and
    # still the way every earlier protocol version sets the level: hostd serves both.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        server: Server[Any] = Server(
            "hostd",
            version=hostd_version(),
            title="hostd",
            instructions=INSTRUCTIONS,
            get_tool_input_schema=handlers.input_schema,
            on_list_tools=handlers.on_list_tools,
            on_call_tool=handlers.on_call_tool,
            on_list_resources=handlers.on_list_resources if resources else None,
            on_list_resource_templates=handlers.on_list_resource_templates if resources else None,
            on_read_resource=handlers.on_read_resource if resources or views else None,
            on_subscribe_resource=subscriptions.subscribe if subscriptions else None,
            on_unsubscribe_resource=subscriptions.unsubscribe if subscriptions else None,
            on_subscriptions_listen=subscriptions.listen if subscriptions else None,
            on_list_prompts=handlers.on_list_prompts if prompts else None,
            on_get_prompt=handlers.on_get_prompt if prompts else None,
            on_completion=handlers.on_completion if resources or prompts else None,
            on_set_logging_level=on_set_logging_level,
            icons=[SERVER_ICON],
        )
    # The answers carried between rounds come back from the client: the SDK seals them
    # (integrity, expiry, bound to the tool and its arguments) under a key of this process,
    # or under the replicas' shared secret.
    if views:  # MCP Apps (SEP-2133's extensions map): the tools' _meta.ui names their views
        server.extensions[APPS_EXTENSION] = {}
    server.middleware.append(RequestStateBoundary(security, default_audience="hostd"))
    server.middleware.insert(0, release_call_arguments)
    server.middleware.append(client_log.middleware(log_levels))
    server.middleware.append(advertise_only_what_is_sent)
    if subscriptions is not None:
        server.middleware.append(subscriptions.offer_only_where_possible)
    install_tasks(server, host, handlers, transport, subscriptions)
    return server
