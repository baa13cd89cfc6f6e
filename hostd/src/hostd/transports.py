"""Serving a host over stdio, Streamable HTTP (``/mcp``) and legacy SSE (``/sse``).

HTTP guards live in one ASGI middleware in front of every route, so Streamable HTTP and
SSE share them: Host (421) and Origin (403) checks against DNS rebinding on every bind,
a bearer / X-API-Key token compared in constant time (401), and a request body cap (413).
"""

from __future__ import annotations

import hmac
import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from hostd.config import LOOPBACK_HOSTS, TransportConfig
from hostd.errors import HostError
from hostd.i18n import pick

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.types import ASGIApp, Receive, Scope, Send

logger = logging.getLogger("hostd.transport")

LOOPBACK_HOST_PATTERNS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")


def _is_parse_error(exc: BaseException) -> bool:
    """Whether the SDK rejected a line for not being JSON at all (else: JSON, but not a message)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return True  # e.g. undecodable bytes: nothing could be parsed
    return any(error["type"] == "json_invalid" for error in exc.errors(include_url=False))


def protocol_error_for(exc: BaseException, language: str) -> Any:
    """The JSON-RPC 2.0 answer to a line the SDK could not read: -32700 or -32600, with ``id: null``.

    The id is null because it cannot be trusted from a line that failed to parse or validate.
    """
    import mcp_types as types

    if _is_parse_error(exc):
        code = types.PARSE_ERROR
        message = pick(
            language,
            en="Parse error: the line is not valid JSON; send one JSON-RPC 2.0 message per line.",
            zh="解析错误：该行不是有效的 JSON；请每行发送一条 JSON-RPC 2.0 消息。",
        )
    else:
        code = types.INVALID_REQUEST
        message = pick(
            language,
            en="Invalid Request: the line is JSON but not a JSON-RPC 2.0 request, notification or response.",
            zh="无效请求：该行是 JSON，但不是 JSON-RPC 2.0 的请求、通知或响应。",
        )
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message))


class _MalformedLinesAnswered:
    """The SDK's stdin stream, minus the lines that were not JSON-RPC: each is answered and logged.

    The SDK hands such a line to the session as an exception and the session drops it, so a
    client waiting on it would hang; JSON-RPC 2.0 asks for a Parse error / Invalid Request
    with ``id: null``, after which serving goes on. The detail goes to stderr for a person
    debugging an IDE integration. A wrapper rather than a relay task keeps the per-message
    cost at one call.
    """

    def __init__(self, inner: Any, answers: Any, language: str) -> None:
        self._inner = inner
        self._answers = answers
        self._language = language

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's context from the stream
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            logger.warning("answered a line on stdin that is not JSON-RPC: %s", str(item)[:300])
            await self._answers.send(SessionMessage(protocol_error_for(item, self._language)))

    def __aiter__(self) -> _MalformedLinesAnswered:
        return self

    async def __anext__(self) -> Any:
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _MalformedLinesAnswered:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


async def serve_stdio(server: Server[Any], language: str = "en") -> None:
    """Serve one client on this process's stdin/stdout (stdout carries JSON-RPC only).

    ``language`` is the host's: the one protocol errors for unreadable lines are written in.
    """
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read_stream, write_stream):
        await server.run(
            _MalformedLinesAnswered(read_stream, write_stream, language),
            write_stream,
            server.create_initialization_options(),
        )


def _matches(value: str, patterns: Sequence[str]) -> bool:
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and value[len(pattern) - 1 :].isdigit():
            return True
    return False


class HttpPolicy:
    """What an HTTP bind accepts; built and checked before the server starts."""

    def __init__(self, transport: TransportConfig) -> None:
        self.transport = transport
        loopback = transport.host in LOOPBACK_HOSTS
        self.token: str | None = None
        if transport.token_env:
            token = os.environ.get(transport.token_env, "")
            if not token:
                raise HostError(
                    f"transport.token_env names ${transport.token_env}, but it is empty or unset: "
                    "export the token before starting the server"
                )
            self.token = token
        if not loopback and self.token is None:
            raise HostError(
                f"refusing to listen on {transport.host}: a non-loopback bind needs a token "
                "(set transport.token_env to an environment variable holding it)"
            )
        if not loopback and not transport.allowed_hosts:
            raise HostError(
                f"refusing to listen on {transport.host}: a non-loopback bind needs transport.allowed_hosts "
                "(the Host values clients will send, e.g. ['mcp.example.internal:8765'])"
            )
        self.allowed_hosts = [*transport.allowed_hosts, *LOOPBACK_HOST_PATTERNS]
        self.allowed_origins = [
            *transport.allowed_origins,
            *(f"{scheme}://{host}" for host in self.allowed_hosts for scheme in ("http", "https")),
        ]
        self.max_body_bytes = transport.max_body_bytes

    def check(self, headers: dict[str, str]) -> tuple[int, str] | None:
        """``None`` when the request may pass, else the status and reason to refuse it."""
        host = headers.get("host", "")
        if not _matches(host, self.allowed_hosts):
            return 421, "Misdirected request: Host not allowed"
        origin = headers.get("origin")
        if origin and not _matches(origin, self.allowed_origins):
            return 403, "Forbidden: Origin not allowed"
        if self.token is not None:
            presented = ""
            authorization = headers.get("authorization", "")
            if authorization[:7].lower() == "bearer ":
                presented = authorization[7:].strip()
            elif "x-api-key" in headers:
                presented = headers["x-api-key"].strip()
            if not hmac.compare_digest(presented.encode(), self.token.encode()):
                return 401, "Unauthorized: send the token as 'Authorization: Bearer <token>' or 'X-API-Key'"
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return 413, f"Request body too large (limit {self.max_body_bytes} bytes)"
        return None


class GuardMiddleware:
    """Applies an ``HttpPolicy`` to every HTTP request before any route sees it."""

    def __init__(self, app: ASGIApp, policy: HttpPolicy) -> None:
        from mcp.server.transport_security import RequestBodyLimitMiddleware

        # Bodies without Content-Length (chunked) are counted as they stream in.
        self.app = RequestBodyLimitMiddleware(app, policy.max_body_bytes)
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        refusal = self.policy.check(headers)
        if refusal is None:
            await self.app(scope, receive, send)
            return
        status, reason = refusal
        from starlette.responses import PlainTextResponse

        extra = {"WWW-Authenticate": 'Bearer realm="hostd"'} if status == 401 else None
        logger.info("refused %s %s: %s", scope.get("method"), scope.get("path"), reason)
        await PlainTextResponse(reason, status_code=status, headers=extra)(scope, receive, send)


def build_http_app(server: Server[Any], policy: HttpPolicy) -> ASGIApp:
    """Streamable HTTP at ``/mcp`` and legacy SSE at ``/sse`` (+ ``/messages/``), guarded."""
    from mcp.server.sse import SseServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import Mount, Route

    manager = StreamableHTTPSessionManager(app=server, max_request_body_size=policy.max_body_bytes)
    sse = SseServerTransport("/messages/", max_request_body_size=policy.max_body_bytes)

    async def sse_endpoint(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (
            read_stream,
            write_stream,
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return Response()

    app = Starlette(
        routes=[
            Route("/mcp", endpoint=StreamableHTTPASGIApp(manager)),
            Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
        ],
        lifespan=lambda _app: manager.run(),
    )
    return GuardMiddleware(app, policy)


async def serve_http(server: Server[Any], transport: TransportConfig) -> None:
    """Serve Streamable HTTP and SSE on the configured address until interrupted."""
    import uvicorn

    policy = HttpPolicy(transport)
    app = build_http_app(server, policy)
    config = uvicorn.Config(
        app, host=transport.host, port=transport.port, log_level="warning", lifespan="on", access_log=False
    )
    logger.warning(
        "hostd listening on http://%s:%s/mcp (Streamable HTTP) and /sse (legacy SSE)%s",
        transport.host,
        transport.port,
        " with token auth" if policy.token else "",
    )
    await uvicorn.Server(config).serve()
