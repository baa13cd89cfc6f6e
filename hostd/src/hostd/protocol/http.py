"""Serving a host over Streamable HTTP (``/mcp``) and legacy SSE (``/sse``) behind the guard, with
the load balancer's probes, the dashboard and ``/metrics``; what happens before a request exists
(header deadline, keep-alive idle time, the cap on open connections) lives in a subclass of
uvicorn's h11 protocol; SIGTERM stops in order."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from hostd.core.errors import HostError
from hostd.core.icon import favicon_route

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from hostd.team.health import Readiness

from hostd.protocol.guard import GuardMiddleware, HttpPolicy, RequestsInFlight, host_matches
from hostd.protocol.stdio import return_large_blocks_to_the_system

logger = logging.getLogger("hostd.transport")


def reads_a_resource(body: bytes) -> bool:
    """Whether a POST's body is one JSON-RPC ``resources/read`` request (parsed, not guessed from
    the bytes; the bytes only spare the parse for every other request)."""
    if b"resources/read" not in body:
        return False
    try:
        message = json.loads(body)
    except ValueError:
        return False  # the SDK answers the parse error
    return isinstance(message, dict) and message.get("method") == "resources/read"


class McpEndpoint:
    """The SDK's Streamable HTTP, with its answer at the session cap made clear (and translated).

    On a stateless server a ``resources/read`` is answered as plain JSON (``plain_endpoint``)
    instead of one server-sent event: a document such as the session view (Mermaid inside, about
    5 MB) is larger than clients take in one event (the Python SDK's client: 1 MiB), and a read
    has nothing to stream before its answer.

    A class: Starlette calls a plain function endpoint with a ``Request``, an object as ASGI.
    """

    def __init__(
        self, sdk_endpoint: ASGIApp, policy: HttpPolicy, plain_endpoint: ASGIApp | None = None
    ) -> None:
        self.sdk_endpoint = sdk_endpoint
        self.plain_endpoint = plain_endpoint
        self.policy = policy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.plain_endpoint is not None and scope["method"] == "POST":
            await self._routed(scope, receive, send, self.plain_endpoint)
            return
        headers = scope["headers"]
        stateless = self.policy.transport.stateless
        opening = not stateless and not any(key == b"mcp-session-id" for key, _ in headers)
        if not opening:
            await self.sdk_endpoint(scope, receive, send)
            return
        refused = False

        async def unless_refused(message: Message) -> None:
            nonlocal refused
            if message["type"] == "http.response.start" and message["status"] == 503:
                refused = True  # the SDK's only 503 for a request opening a session: the cap
            if not refused:
                await send(message)

        await self.sdk_endpoint(scope, receive, unless_refused)
        if refused:
            await self.policy.too_many_sessions()(scope, receive, send)

    async def _routed(self, scope: Scope, receive: Receive, send: Send, plain_endpoint: ASGIApp) -> None:
        """A stateless POST to the endpoint its request needs (the guard has read the whole body
        into its first message; it is handed on unchanged)."""
        first = await receive()
        pending = [first]

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        plain = first["type"] == "http.request" and reads_a_resource(first.get("body", b""))
        await (plain_endpoint if plain else self.sdk_endpoint)(scope, replay, send)


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

    def session_manager(*, json_response: bool = False) -> StreamableHTTPSessionManager:
        made = StreamableHTTPSessionManager(
            app=server,
            max_request_body_size=policy.max_body_bytes,
            stateless=transport.stateless,
            max_sessions=transport.max_sessions,
            session_idle_timeout=transport.session_idle_timeout,
            json_response=json_response,
        )
        if isinstance(made.asgi_app, RequestBodyLimitMiddleware):
            # GuardMiddleware already capped and read the body; the SDK's own limiter would copy it
            # twice more (a bytearray and bytes of it) and hold both for the whole request.
            made.asgi_app = made.asgi_app.app  # type: ignore[assignment]
        return made

    manager = session_manager()
    # Stateless: reads answered as plain JSON (McpEndpoint). A stateful session lives in one manager.
    plain_manager = session_manager(json_response=True) if transport.stateless else None
    sse = SseServerTransport("/messages/", max_request_body_size=policy.max_body_bytes)

    async def sse_endpoint(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (
            read_stream,
            write_stream,
        ):
            await server.run(read_stream, write_stream, server.create_initialization_options())
        return Response()

    metrics = policy.metrics
    extra_routes: list[Route] = []
    if metrics is not None:
        metrics.live.sessions = lambda: len(manager._server_instances)  # the SDK keeps no count of its own
        if transport.metrics is None or transport.metrics.port is None:  # on this port, for operators
            from hostd.protocol.operators import OperatorsOnly

            extra_routes.append(Route("/metrics", endpoint=OperatorsOnly(metrics, policy), methods=["GET"]))

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    async def readyz(request: Request) -> Response:
        reason = await anyio.to_thread.run_sync(readiness.reason_not_ready) if readiness else None
        if reason is None:
            return PlainTextResponse("ready")
        return PlainTextResponse("not ready", status_code=503, headers={"Retry-After": "1"})

    app = Starlette(
        routes=[
            Route(
                "/mcp",
                endpoint=McpEndpoint(
                    StreamableHTTPASGIApp(manager),
                    policy,
                    StreamableHTTPASGIApp(plain_manager) if plain_manager is not None else None,
                ),
            ),
            Route("/sse", endpoint=sse_endpoint, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
            Route("/healthz", endpoint=healthz, methods=["GET", "HEAD"]),
            Route("/readyz", endpoint=readyz, methods=["GET", "HEAD"]),
            *([favicon_route(), Mount("/ui", app=dashboard)] if dashboard is not None else []),
            *extra_routes,
        ],
        lifespan=lambda _app: _running(manager, plain_manager),
    )
    return GuardMiddleware(app, policy, cookie_prefix="/ui" if dashboard is not None else None)


@contextlib.asynccontextmanager
async def _running(*managers: StreamableHTTPSessionManager | None) -> AsyncIterator[None]:
    """The session managers' task groups, for the app's lifespan."""
    async with contextlib.AsyncExitStack() as stack:
        for manager in managers:
            if manager is not None:
                await stack.enter_async_context(manager.run())
        yield


def _raw_response(status: str, reason: str, *extra_headers: str) -> bytes:
    """A whole HTTP/1.1 response for a connection that never got as far as a request."""
    body = reason.encode()
    head = [f"HTTP/1.1 {status}", "Content-Type: text/plain; charset=utf-8", "Connection: close"]
    head += [*extra_headers, f"Content-Length: {len(body)}"]
    return ("\r\n".join(head) + "\r\n\r\n").encode() + body


def _connection_refusals(policy: HttpPolicy) -> tuple[bytes, bytes]:
    """The whole answers to a connection whose headers never came (408) and to one over the cap (503)."""
    transport = policy.transport
    header_timeout, max_connections = transport.header_timeout, transport.max_connections
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
    return header_timed_out, too_many


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
    header_timed_out, too_many = _connection_refusals(policy)

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
    # The metrics port first: once the server's port accepts a connection, /metrics answers too.
    stop_metrics = _serve_metrics_port(policy)
    try:
        listener = bind_listener(transport.host, transport.port, "transport.port")
    except BaseException:
        if stop_metrics is not None:
            stop_metrics()
        raise
    loop = asyncio.get_running_loop()
    if hasattr(signal, "SIGHUP"):
        loop.add_signal_handler(signal.SIGHUP, policy.members.reload)
    # uvicorn handles SIGTERM itself (graceful shutdown), then raises it again for the handler it
    # found: with the default one the process would die there, before the plugins shut down. Ours
    # also stops a server that is not serving yet: a SIGTERM between "listening" and uvicorn's own
    # handlers would otherwise be lost, and the process would never stop.
    bound = listener.getsockname()[1]
    http_server = _GracefulServer(config, app.in_flight)

    def stop_on_signal(signum: int, frame: Any) -> None:
        logger.info("shut down on signal %d", signum)
        http_server.should_exit = True

    in_main_thread = threading.current_thread() is threading.main_thread()
    previous_sigterm = signal.signal(signal.SIGTERM, stop_on_signal) if in_main_thread else None
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
        await http_server.serve([listener])
    finally:
        listener.close()
        if stop_metrics is not None:
            stop_metrics()
        if hasattr(signal, "SIGHUP"):
            loop.remove_signal_handler(signal.SIGHUP)
        if in_main_thread:
            signal.signal(signal.SIGTERM, previous_sigterm)


def _serve_metrics_port(policy: HttpPolicy) -> Callable[[], None] | None:
    """``/metrics`` on its own port (``transport.metrics.port``), answering only its own Host
    names; the function that stops it, or ``None`` when the metrics are on the server's port."""
    transport = policy.transport
    if policy.metrics is None or transport.metrics is None or transport.metrics.port is None:
        return None
    from hostd.protocol.operators import metrics_host_check
    from hostd.team.metrics import serve_on_own_port

    return serve_on_own_port(
        policy.metrics,
        transport.metrics.host,
        transport.metrics.port,
        metrics_host_check(transport.metrics, host_matches),
        policy.text(
            en="Misdirected request: Host not allowed (transport.metrics.allowed_hosts)",
            zh="请求指向错误：不允许该 Host（transport.metrics.allowed_hosts）",
        ),
    )


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
