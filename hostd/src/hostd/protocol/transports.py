"""Serving a host over stdio, Streamable HTTP (``/mcp``) and legacy SSE (``/sse``).

HTTP guards live in one ASGI middleware in front of every route, so Streamable HTTP and
SSE share them: Host (421) and Origin (403) checks against DNS rebinding on every bind,
a bearer / X-API-Key token compared in constant time (401), a request body cap (413) and
a body deadline (408). What happens before a request exists (header deadline, keep-alive
idle time, the cap on open connections) lives in a subclass of uvicorn's h11 protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
import threading
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from hostd_errors import Text

from hostd.core.config import LOOPBACK_HOSTS, TransportConfig
from hostd.core.errors import HostError
from hostd.core.icon import FAVICON_PATH, favicon_route
from hostd.core.identity import Member, acting_as
from hostd.team.members import member_directory_from_env

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from hostd.core.access import AccessPolicy
    from hostd.core.pipeline import CallPipeline
    from hostd.protocol.oauth_resource import Refusal, ResourceServer
    from hostd.team.auth.verifier import Admitted
    from hostd.team.health import Readiness
    from hostd.team.metrics import Metrics
    from hostd.team.quotas import RequestRate

logger = logging.getLogger("hostd.transport")

#: Where the guard leaves the authenticated ``Member`` in the ASGI scope: the SDK runs a stateful
#: session's handlers in the task that opened it, so the server reads the member of each request
#: from its scope and sets ``hostd.core.identity.CURRENT_MEMBER`` for the call from it.
MEMBER_SCOPE_KEY = "hostd.member"
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
LOOPBACK_HOST_PATTERNS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")


def _is_parse_error(exc: BaseException) -> bool:
    """Whether the SDK rejected a line for not being JSON at all (else: JSON, but not a message)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return True  # e.g. undecodable bytes: nothing could be parsed
    return any(error["type"] == "json_invalid" for error in exc.errors(include_url=False))


def _is_nested_too_deep(exc: BaseException) -> bool:
    """Whether the line was JSON the reader gave up on for its depth (pydantic's recursion limit)."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return False
    return any(
        error["type"] == "json_invalid"
        and "recursion limit" in str((error.get("ctx") or {}).get("error", ""))
        for error in exc.errors(include_url=False)
    )


def protocol_error_for(exc: BaseException, language: str) -> Any:
    """The JSON-RPC 2.0 answer to a line the SDK could not read: -32700 or -32600, with ``id: null``.

    The id is null because it cannot be trusted from a line that failed to parse or validate.
    """
    import mcp_types as types

    if _is_nested_too_deep(exc):
        code = types.PARSE_ERROR
        message = Text(
            en="Parse error: the line's JSON is nested too deep to be read; send messages whose "
            "arrays and objects nest a few levels, not hundreds.",
            zh="解析错误：该行的 JSON 嵌套过深，无法读取；请让消息中的数组和对象只嵌套几层，而不是数百层。",
        ).render(language)
    elif _is_parse_error(exc):
        code = types.PARSE_ERROR
        message = Text(
            en="Parse error: the line is not valid JSON; send one JSON-RPC 2.0 message per line.",
            zh="解析错误：该行不是有效的 JSON；请每行发送一条 JSON-RPC 2.0 消息。",
        ).render(language)
    else:
        code = types.INVALID_REQUEST
        message = Text(
            en="Invalid Request: the line is JSON but not a JSON-RPC 2.0 request, notification or response.",
            zh="无效请求：该行是 JSON，但不是 JSON-RPC 2.0 的请求、通知或响应。",
        ).render(language)
    return types.JSONRPCError(jsonrpc="2.0", id=None, error=types.ErrorData(code=code, message=message))


class _MalformedLinesAnswered:
    """The SDK's stdin stream, minus the lines that were not JSON-RPC: each is answered and logged.

    The SDK hands such a line to the session as an exception and the session drops it, so a
    client waiting on it would hang; JSON-RPC 2.0 asks for a Parse error / Invalid Request
    with ``id: null``, after which serving goes on. The detail goes to stderr for a person
    debugging an IDE integration. A wrapper rather than a relay task keeps the per-message
    cost at one call.
    """

    def __init__(
        self, inner: Any, answers: Any, language: str, ending: Any = None, grace: float = 0.0
    ) -> None:
        self._inner = inner
        self._answers = answers
        self._language = language
        self._ending = ending  # OpenRequests: at end of input, answer what was read first
        self._grace = grace

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's context from the stream
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Any:
        import anyio
        from mcp.shared.message import SessionMessage

        while True:
            try:
                item = await self._inner.receive()
            except anyio.EndOfStream:
                if self._ending is not None:
                    await self._ending.wait_answered(self._grace)
                raise
            if not isinstance(item, Exception):
                if self._ending is not None:
                    self._ending.read(item)
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


MMAP_THRESHOLD_BYTES = 1024 * 1024


def return_large_blocks_to_the_system() -> None:
    """Make glibc give each block of 1 MiB or more back to the system when it is freed.

    glibc raises its mmap threshold each time it frees a mapped block (up to 32 MiB), after
    which blocks the size of a large request body come from the heap and stay resident once
    freed: a run of 30 MB arguments left ~6x the payload in the server's RSS. A fixed
    threshold stops the adjustment. No-op off glibc (macOS, Windows, musl).
    """
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    m_mmap_threshold = -3  # from glibc's <malloc.h>
    if not mallopt(m_mmap_threshold, MMAP_THRESHOLD_BYTES):
        logger.debug("mallopt(M_MMAP_THRESHOLD) refused; large blocks may stay resident")


async def serve_stdio(server: Server[Any], language: str = "en", grace: float = 30.0) -> None:
    """Serve one client on this process's stdin/stdout (stdout carries JSON-RPC only).

    ``language`` is the host's: the one protocol errors for unreadable lines are written in.
    At end of input, the requests read before it are answered (for at most ``grace`` seconds).
    """
    from mcp.server.stdio import stdio_server

    from hostd.protocol.stdio_pipes import AnswersSeen, OpenRequests, pipe_stdio, pipes_on_both_ends

    return_large_blocks_to_the_system()
    try:
        async with contextlib.AsyncExitStack() as stack:
            if pipes_on_both_ends():  # the usual case: served by the event loop, no thread hand-offs
                stdin, stdout = await stack.enter_async_context(pipe_stdio())
            else:  # a terminal or a file: the SDK's own transport
                stdin, stdout = None, None
            read_stream, write_stream = await stack.enter_async_context(stdio_server(stdin, stdout))
            ending = OpenRequests()
            write_stream = AnswersSeen(write_stream, ending)
            await server.run(
                _MalformedLinesAnswered(read_stream, write_stream, language, ending, grace),
                write_stream,
                server.create_initialization_options(),
            )
    except* BrokenPipeError:
        # The client closed our stdout, so it has gone: the session is over, like EOF on stdin.
        logger.info("the client closed stdout; ending the session")


def _matches(value: str, patterns: Sequence[str]) -> bool:
    for pattern in patterns:
        if value == pattern:
            return True
        if pattern.endswith(":*") and value.startswith(pattern[:-1]) and value[len(pattern) - 1 :].isdigit():
            return True
    return False


class HttpPolicy:
    """What an HTTP bind accepts; built and checked before the server starts."""

    def __init__(
        self, transport: TransportConfig, language: str = "en", known_profiles: Collection[str] = ()
    ) -> None:
        self.transport = transport
        self.language = language  # of the refusal texts; the status codes are what clients act on
        loopback = transport.host in LOOPBACK_HOSTS
        self.members = member_directory_from_env(transport.token_env, transport.tokens_file, known_profiles)
        self.oauth: ResourceServer | None = None
        if transport.oauth is not None:
            from hostd.protocol.oauth_resource import ResourceServer

            self.oauth = ResourceServer(
                transport.oauth,
                host=transport.host,
                port=transport.port,
                loopback=loopback,
                known_profiles=known_profiles,
            )
        if not loopback and not self.requires_token:
            raise HostError(
                f"refusing to listen on {transport.host}: a non-loopback bind needs a token "
                "(set transport.token_env to an environment variable holding it, transport.tokens_file, "
                "or transport.oauth)"
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
        self.body_timeout = transport.body_timeout
        #: HTTP requests per member (``limits.per_member.requests_per_minute``; set by ``hostd serve``).
        self.request_rate: RequestRate | None = None
        #: Prometheus metrics, when ``transport.metrics`` is on (set by ``hostd serve``).
        self.metrics: Metrics | None = None
        #: The host's call pipeline (and its access policy): the guard records its refusals there
        #: and asks the policy which scopes a call needs. Set by ``hostd serve``; an OAuth bind needs it.
        self.pipeline: CallPipeline | None = None

    @property
    def requires_token(self) -> bool:
        return self.members.requires_token or self.oauth is not None

    def text(self, *, en: str, zh: str) -> str:
        return Text(en=en, zh=zh).render(self.language)

    def unauthorized_text(self) -> str:
        return self.text(
            en="Unauthorized: send your token as 'Authorization: Bearer <token>' or 'X-API-Key'",
            zh="未授权：请以 'Authorization: Bearer <令牌>' 或 'X-API-Key' 发送您的令牌",
        )

    def forbidden_scope_text(self) -> str:
        return self.text(
            en="Forbidden: your access token lacks a scope this request needs; sign in again granting it",
            zh="禁止访问：您的访问令牌缺少此请求所需的权限范围；请重新登录并授予该范围",
        )

    def too_large(self) -> tuple[int, str]:
        limit = self.max_body_bytes
        return 413, self.text(
            en=f"Request body too large (limit {limit} bytes, transport.max_body_bytes)",
            zh=f"请求体过大（上限 {limit} 字节，transport.max_body_bytes）",
        )

    def too_many_requests(self, retry_after: int) -> tuple[int, str, dict[str, str]]:
        return (
            429,
            self.text(
                en=f"Too many requests (limits.per_member.requests_per_minute); retry in {retry_after} s",
                zh=f"请求过多（limits.per_member.requests_per_minute）；请在 {retry_after} 秒后重试",
            ),
            {"Retry-After": str(retry_after), **_CLOSE},
        )

    def too_many_sessions(self) -> ASGIApp:
        """503 for one session more than ``max_sessions``, as a JSON-RPC error a client can show."""
        import json

        from starlette.responses import Response

        limit = self.transport.max_sessions
        message = self.text(
            en=f"Too many open sessions (limit {limit}, transport.max_sessions); retry later, "
            "or close sessions you no longer use",
            zh=f"打开的会话过多（上限 {limit}，transport.max_sessions）；请稍后重试，或关闭不再使用的会话",
        )
        body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": message}}
        logger.info("refused a new session: %d open (max_sessions)", limit)
        return Response(
            json.dumps(body, ensure_ascii=False),
            status_code=503,
            media_type="application/json",
            headers={"Retry-After": "1"},
        )

    def check(
        self, headers: dict[str, str], scope_member: list[Member], *, token_required: bool = True
    ) -> tuple[int, str] | None:
        """``None`` when the request may pass, else the status and reason to refuse it.

        The member the token belongs to is appended to ``scope_member``; the token itself is
        never logged. ``token_required`` is false for the dashboard's pages: they sign members
        in with a cookie of their own, after the same Host, Origin and size checks.
        """
        host = headers.get("host", "")
        if not _matches(host, self.allowed_hosts):
            return 421, self.text(
                en="Misdirected request: Host not allowed (transport.allowed_hosts)",
                zh="请求指向错误：不允许该 Host（transport.allowed_hosts）",
            )
        origin = headers.get("origin")
        if origin and not _matches(origin, self.allowed_origins):
            return 403, self.text(
                en="Forbidden: Origin not allowed (transport.allowed_origins)",
                zh="禁止访问：不允许该 Origin（transport.allowed_origins）",
            )
        if self.requires_token and token_required:
            presented = ""
            authorization = headers.get("authorization", "")
            if authorization[:7].lower() == "bearer ":
                presented = authorization[7:].strip()
            elif "x-api-key" in headers:
                presented = headers["x-api-key"].strip()
            member = self.members.identify(presented) if presented and self.members.requires_token else None
            if member is not None:
                scope_member.append(member)
            elif self.oauth is None:  # with OAuth, the guard asks the identity provider's keys next
                return 401, self.unauthorized_text()
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            return self.too_large()
        return None


_CLOSE = {"Connection": "close"}  # a refused body may still be arriving: do not read the rest
#: The outcome a refusal at the door is recorded with (the audit's and the metrics' words).
REFUSAL_OUTCOMES = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 429: "RATE_LIMITED"}


def _session_owner(member: Member) -> Any:
    """The SDK's user for a member: sessions opened by one member refuse every other token."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
    from mcp.server.auth.provider import AccessToken

    return AuthenticatedUser(AccessToken(token="", client_id=member.name, scopes=[]))


class RequestsInFlight:
    """Counts requests that may carry a call (everything but the GET streams), so a graceful
    stop can tell when every call in flight has been answered."""

    def __init__(self) -> None:
        self.count = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def enter(self) -> None:
        self.count += 1
        self._idle.clear()

    def leave(self) -> None:
        self.count -= 1
        if self.count == 0:
            self._idle.set()

    async def wait_idle(self) -> None:
        await self._idle.wait()


class GuardMiddleware:
    """Applies an ``HttpPolicy`` to every HTTP request before any route sees it.

    It also reads the body, once, before the route runs: against the size cap (413, counted as
    it streams in when there is no Content-Length) and the body deadline (408). The route then
    gets it as one message that this middleware no longer holds, so a large body lives in one
    ``bytes`` object for the request, not in a buffer per layer.
    """

    def __init__(self, app: ASGIApp, policy: HttpPolicy, cookie_prefix: str | None = None) -> None:
        self.app = app
        self.policy = policy
        self.in_flight = RequestsInFlight()
        #: Paths below this prefix (the dashboard) sign in with their own cookie, not a token.
        self.cookie_prefix = cookie_prefix

    def _uses_cookie(self, path: str) -> bool:
        prefix = self.cookie_prefix
        if prefix is not None and path == FAVICON_PATH:  # the dashboard's icon: public, as its styles
            return True
        return prefix is not None and (path == prefix or path.startswith(prefix + "/"))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if scope["path"] in PROBE_PATHS:  # the load balancer's probes: no token, no Host check
            await self.app(scope, receive, send)
            return
        oauth = self.policy.oauth
        if oauth is not None and scope["path"] in oauth.metadata_paths:  # how to get a token: public
            await oauth.serve_metadata(scope, receive, send)
            return
        if scope["method"] == "GET":  # a stream of notifications: no call is answered on it
            await self._guarded(scope, receive, send)
            return
        # Counted before anything is awaited, so a graceful stop that finds none in flight has
        # seen every request uvicorn had started (see GracefulServer).
        self.in_flight.enter()
        try:
            await self._guarded(scope, receive, send)
        finally:
            self.in_flight.leave()

    async def _guarded(self, scope: Scope, receive: Receive, send: Send) -> None:
        headers = {key.decode("latin-1").lower(): value.decode("latin-1") for key, value in scope["headers"]}
        member: list[Member] = []
        cookie_page = self._uses_cookie(scope["path"])
        refusal: tuple[int, str] | Refusal | None = self.policy.check(
            headers, member, token_required=not cookie_page
        )
        admitted: Admitted | None = None
        oauth = self.policy.oauth
        if refusal is None and not member and oauth is not None and not cookie_page:
            authorization = headers.get("authorization", "")
            bearer = authorization[7:].strip() if authorization[:7].lower() == "bearer " else None
            admitted, refusal = await oauth.authenticate(bearer, self.policy.unauthorized_text())
            if admitted is not None:
                member.append(dataclasses.replace(admitted.member, scopes=admitted.scopes))
        if member:
            scope[MEMBER_SCOPE_KEY] = member[0]
            # The SDK binds a stateful session to the credential that opened it: the member.
            scope["user"] = _session_owner(member[0])
        rate = self.policy.request_rate
        if refusal is None and member and rate is not None:
            if rate.shared:
                wait = await anyio.to_thread.run_sync(rate.retry_after, member[0].name)
            else:
                wait = rate.retry_after(member[0].name)
            if wait:  # before the body is read: an over-eager client costs no buffer
                refusal = self.policy.too_many_requests(wait)
        if refusal is None:
            pending, refusal = await self._read_body(receive)
        refused_tool = "-"
        if refusal is None and admitted is not None and oauth is not None:
            body = pending[0].get("body", b"") if pending else b""
            scoped = oauth.scope_refusal(member[0], self.access, body, self.policy.forbidden_scope_text())
            if scoped is not None:
                refusal, refused_tool = scoped
        if refusal is not None:
            self._record_refusal(member[0] if member else None, refusal[0], refused_tool)
            await self._refuse(scope, receive, send, refusal)
            return

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        with acting_as(member[0] if member else None):
            await self.app(scope, replay, send)

    @property
    def access(self) -> AccessPolicy:
        pipeline = self.policy.pipeline
        if pipeline is None:  # checked when the app is built; a guard never decides without it
            raise RuntimeError("an OAuth bind needs the host's access policy (HttpPolicy.pipeline)")
        return pipeline.policy

    def _record_refusal(self, member: Member | None, status: int, tool: str) -> None:
        """A 401, 403 or 429 at the door is an attempt too: recorded once, like a refused call."""
        pipeline = self.policy.pipeline
        if pipeline is not None and status in REFUSAL_OUTCOMES:
            pipeline.record_refused_request("mcp", member, REFUSAL_OUTCOMES[status], tool)

    async def _read_body(self, receive: Receive) -> tuple[list[Message], tuple[int, str] | None]:
        """The request's messages (the body joined into one), or why it is refused."""
        import anyio

        chunks: list[bytes] = []
        size = 0
        trailing: list[Message] = []
        with anyio.move_on_after(self.policy.body_timeout) as deadline:
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    trailing.append(message)  # the client went away: the route sees it too
                    break
                chunk = message.get("body", b"")
                size += len(chunk)
                if size > self.policy.max_body_bytes:
                    return [], self.policy.too_large()
                chunks.append(chunk)
                if not message.get("more_body", False):
                    break
        if deadline.cancelled_caught:
            seconds = self.policy.body_timeout
            return [], (
                408,
                self.policy.text(
                    en=f"Request body not received within {seconds:g} s (transport.body_timeout)",
                    zh=f"未在 {seconds:g} 秒内收到完整请求体（transport.body_timeout）",
                ),
            )
        body = b"".join(chunks)  # one chunk: that same object, no copy
        chunks.clear()
        # A client gone mid-body leaves it incomplete (more_body), then its disconnect.
        return [{"type": "http.request", "body": body, "more_body": bool(trailing)}, *trailing], None

    async def _refuse(
        self, scope: Scope, receive: Receive, send: Send, refusal: tuple[int, str] | Refusal
    ) -> None:
        from starlette.responses import PlainTextResponse

        status, reason = refusal[0], refusal[1]
        extra = dict(refusal[2]) if len(refusal) == 3 else {}
        if status == 401 and not extra:
            oauth = self.policy.oauth
            extra = oauth.challenge() if oauth is not None else {"WWW-Authenticate": 'Bearer realm="hostd"'}
        if status in (408, 413):
            extra.update(_CLOSE)
        logger.info("refused %s %s: %s", scope.get("method"), scope.get("path"), reason)
        await PlainTextResponse(reason, status_code=status, headers=extra)(scope, receive, send)


def build_http_app(
    server: Server[Any],
    policy: HttpPolicy,
    readiness: Readiness | None = None,
    dashboard: ASGIApp | None = None,
) -> GuardMiddleware:
    """Streamable HTTP at ``/mcp`` and legacy SSE at ``/sse`` (+ ``/messages/``), guarded;
    ``/healthz`` and ``/readyz`` for load balancers, open and saying nothing but ok / not ready;
    the dashboard at ``/ui`` when given (``transport.dashboard``)."""
    import anyio.to_thread
    from mcp.server.sse import SseServerTransport
    from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
    from mcp.server.transport_security import RequestBodyLimitMiddleware
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Mount, Route

    transport = policy.transport
    if policy.oauth is not None and policy.pipeline is None:
        raise HostError("an OAuth bind needs the host's call pipeline (HttpPolicy.pipeline)")
    manager = StreamableHTTPSessionManager(
        app=server,
        max_request_body_size=policy.max_body_bytes,
        stateless=transport.stateless,
        max_sessions=transport.max_sessions,
        session_idle_timeout=transport.session_idle_timeout,
    )
    if isinstance(manager.asgi_app, RequestBodyLimitMiddleware):
        # GuardMiddleware already capped and read the body; the SDK's own limiter would copy it
        # twice more (a bytearray and bytes of it) and hold both for the whole request.
        manager.asgi_app = manager.asgi_app.app  # type: ignore[assignment]
    sse = SseServerTransport("/messages/", max_request_body_size=policy.max_body_bytes)

    async def sse_endpoint(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (
            read_stream,
            write_stream,
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return Response()

    sdk_endpoint = StreamableHTTPASGIApp(manager)
    metrics = policy.metrics
    extra_routes: list[Route] = []
    if metrics is not None:
        metrics.live.sessions = lambda: len(manager._server_instances)  # the SDK keeps no count of its own
        if transport.metrics is None or transport.metrics.port is None:  # on this port, behind the token
            extra_routes.append(Route("/metrics", endpoint=metrics, methods=["GET"]))

    class McpEndpoint:
        """The SDK's Streamable HTTP, with its answer at the session cap made clear (and translated).

        A class: Starlette calls a plain function endpoint with a ``Request``, an object as ASGI.
        """

        async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
            headers = scope["headers"]
            opening = not transport.stateless and not any(key == b"mcp-session-id" for key, _ in headers)
            if not opening:
                await sdk_endpoint(scope, receive, send)
                return
            refused = False

            async def unless_refused(message: Message) -> None:
                nonlocal refused
                if message["type"] == "http.response.start" and message["status"] == 503:
                    refused = True  # the SDK's only 503 for a request opening a session: the cap
                if not refused:
                    await send(message)

            await sdk_endpoint(scope, receive, unless_refused)
            if refused:
                await policy.too_many_sessions()(scope, receive, send)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        reason = await anyio.to_thread.run_sync(readiness.reason_not_ready) if readiness else None
        if reason is None:
            return PlainTextResponse("ready")
        return PlainTextResponse("not ready", status_code=503, headers={"Retry-After": "1"})

    app = Starlette(
        routes=[
            Route("/mcp", endpoint=McpEndpoint()),
            Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
            Route("/healthz", endpoint=healthz, methods=["GET", "HEAD"]),
            Route("/readyz", endpoint=readyz, methods=["GET", "HEAD"]),
            *([favicon_route(), Mount("/ui", app=dashboard)] if dashboard is not None else []),
            *extra_routes,
        ],
        lifespan=lambda _app: manager.run(),
    )
    return GuardMiddleware(app, policy, cookie_prefix="/ui" if dashboard is not None else None)


def _raw_response(status: str, reason: str, *extra_headers: str) -> bytes:
    """A whole HTTP/1.1 response for a connection that never got as far as a request."""
    body = reason.encode()
    head = [f"HTTP/1.1 {status}", "Content-Type: text/plain; charset=utf-8", "Connection: close"]
    head += [*extra_headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def guarded_protocol(policy: HttpPolicy) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, with the connection limits uvicorn does not have.

    uvicorn arms its keep-alive timer only after a response, so a connection that never
    finishes its headers is kept forever, and it has no cap on open connections (its
    ``limit_concurrency`` answers 503 only once a request's headers are complete). Here:

    - ``header_timeout``: from the connection's opening, or from the first byte of a
      follow-up request, to the end of the request headers; then a 408 and close.
    - ``idle_timeout``: uvicorn's keep-alive, between requests on one connection.
    - ``max_connections``: one more connection is answered 503 and closed at once, before
      anything is read, so it costs no buffer and no task.
    """
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    transport = policy.transport
    header_timeout, idle_timeout = transport.header_timeout, transport.idle_timeout
    max_connections = transport.max_connections
    header_timed_out = _raw_response(
        "408 Request Timeout",
        policy.text(
            en=f"Request headers not received within {header_timeout:g} s (transport.header_timeout)",
            zh=f"未在 {header_timeout:g} 秒内收到完整请求头（transport.header_timeout）",
        ),
    )
    too_many = _raw_response(
        "503 Service Unavailable",
        policy.text(
            en=f"Too many connections (limit {max_connections}, transport.max_connections); retry later",
            zh=f"连接过多（上限 {max_connections}，transport.max_connections）；请稍后重试",
        ),
        "Retry-After: 1",
    )

    class GuardedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.timeout_keep_alive = idle_timeout  # type: ignore[assignment]
            self.header_deadline: asyncio.TimerHandle | None = None
            self.refused = False

        def connection_made(self, connection: asyncio.Transport) -> None:  # type: ignore[override]
            if len(self.connections) >= max_connections:
                self.refused = True
                self.transport = connection
                logger.info("refused a connection: %d open (max_connections)", len(self.connections))
                connection.write(too_many)
                connection.close()
                return
            super().connection_made(connection)
            if policy.metrics is not None:
                policy.metrics.live.connections = self.connections  # uvicorn's set of open connections
            self._await_headers()

        def data_received(self, data: bytes) -> None:
            if self.refused:
                return
            if self.header_deadline is None:
                self._await_headers()  # the first bytes of a follow-up request
            super().data_received(data)
            if self.conn.their_state is not h11.IDLE:  # the headers are in (or the connection is done)
                self._stop_header_deadline()

        def connection_lost(self, exc: Exception | None) -> None:
            self._stop_header_deadline()
            if not self.refused:
                super().connection_lost(exc)

        def on_response_complete(self) -> None:
            self._stop_header_deadline()  # waiting for the next request is idle time, not header time
            super().on_response_complete()

        def _await_headers(self) -> None:
            if self.conn.their_state is h11.IDLE and self.header_deadline is None:
                self.header_deadline = self.loop.call_later(header_timeout, self._headers_timed_out)

        def _stop_header_deadline(self) -> None:
            if self.header_deadline is not None:
                self.header_deadline.cancel()
                self.header_deadline = None

        def _headers_timed_out(self) -> None:
            self.header_deadline = None
            if not self.transport.is_closing() and self.conn.their_state is h11.IDLE:
                logger.info("closed a connection that sent no complete headers in %g s", header_timeout)
                self.transport.write(header_timed_out)
                self.transport.close()

    return GuardedH11Protocol


async def serve_http(
    server: Server[Any],
    policy: HttpPolicy,
    readiness: Readiness | None = None,
    dashboard: ASGIApp | None = None,
) -> None:
    """Serve Streamable HTTP and SSE on the configured address until SIGINT / SIGTERM.

    On SIGTERM the listening socket closes at once (new connections are refused), requests in
    flight get ``shutdown_grace_seconds`` to be answered, then the rest are cut; the caller
    then shuts the plugins down. SIGHUP reloads the tokens file.
    """
    import signal

    import uvicorn

    transport = policy.transport
    app = build_http_app(server, policy, readiness, dashboard)
    _GracefulServer = _graceful_server_class()
    return_large_blocks_to_the_system()
    config = uvicorn.Config(
        app,
        host=transport.host,
        port=transport.port,
        http=guarded_protocol(policy),
        log_level="warning",
        lifespan="on",
        access_log=False,
        server_header=False,  # no software name on any answer, the open health probes included
        timeout_graceful_shutdown=transport.shutdown_grace_seconds,  # type: ignore[arg-type]  # any number works (asyncio.wait_for)
    )
    from hostd.core.environment import bind_listener

    # Bound before anything says "listening": a port in use is one line (exit 3), not a traceback.
    listener = bind_listener(transport.host, transport.port, "transport.port")
    stop_metrics = None
    try:
        if (
            policy.metrics is not None
            and transport.metrics is not None
            and transport.metrics.port is not None
        ):
            from hostd.team.metrics import serve_on_own_port

            stop_metrics = serve_on_own_port(policy.metrics, transport.metrics.host, transport.metrics.port)
    except BaseException:
        listener.close()
        raise
    loop = asyncio.get_running_loop()
    if hasattr(signal, "SIGHUP"):
        loop.add_signal_handler(signal.SIGHUP, policy.members.reload)
    # uvicorn handles SIGTERM itself (graceful shutdown), then raises it again for the handler it
    # found: with the default one the process would die there, before the plugins shut down.
    bound = listener.getsockname()[1]
    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_sigterm = signal.signal(signal.SIGTERM, _already_handled) if in_main_thread else None
    logger.info(
        "hostd listening on http://%s:%s/mcp (Streamable HTTP%s) and /sse (legacy SSE)%s",
        transport.host,
        bound,
        ", stateless" if transport.stateless else "",
        " with OAuth sign-in"
        if policy.oauth
        else " with token auth"
        if policy.members.requires_token
        else "",
    )
    if dashboard is not None:
        logger.info("dashboard at http://%s:%s/ui/", transport.host, bound)
    try:
        await _GracefulServer(config, app.in_flight).serve([listener])
    finally:
        listener.close()
        if stop_metrics is not None:
            stop_metrics()
        if hasattr(signal, "SIGHUP"):
            loop.remove_signal_handler(signal.SIGHUP)
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_sigterm)


def _graceful_server_class() -> type[Any]:
    import uvicorn
    from sse_starlette.sse import AppStatus

    # sse_starlette ends every SSE stream the moment uvicorn is asked to stop, which would cut
    # the answers of calls in flight (Streamable HTTP answers a call on an SSE stream).
    AppStatus.disable_automatic_graceful_drain()  # type: ignore[no-untyped-call]  # sse_starlette is untyped here

    class GracefulServer(uvicorn.Server):
        """uvicorn's server, stopping in order: new connections refused at once (uvicorn), calls
        in flight answered, then the long-lived GET streams, which carry no answer, closed."""

        def __init__(self, config: uvicorn.Config, in_flight: RequestsInFlight) -> None:
            super().__init__(config)
            self.in_flight = in_flight

        async def shutdown(self, sockets: list[Any] | None = None) -> None:
            # This task first runs at uvicorn's first pause in shutdown(), once the listening
            # sockets are closed and every connection told to end after its current request: the
            # requests started by then have all been counted in flight (tasks run in order).
            from hostd.protocol.subscriptions import end_listens

            end_listens()  # a listen never ends by itself: end it gracefully (the client re-listens)
            draining = asyncio.get_running_loop().create_task(self._close_streams_once_answered())
            try:
                await super().shutdown(sockets)
            finally:
                draining.cancel()

        async def _close_streams_once_answered(self) -> None:
            await self.in_flight.wait_idle()
            logger.info("every call in flight is answered; closing the remaining streams")
            AppStatus.should_exit = True

    return GracefulServer


def _already_handled(signum: int, frame: Any) -> None:
    """The SIGTERM uvicorn replays after its graceful shutdown: serving is over, nothing to do."""
    logger.info("shut down on signal %d", signum)
