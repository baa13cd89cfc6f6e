"""The HTTP guard: one ASGI middleware in front of every route, so Streamable HTTP, SSE and the
dashboard share it: Host (421) and Origin (403) checks against DNS rebinding on every bind, a
bearer / X-API-Key token compared in constant time or an OAuth access token (401), the scopes a
parsed call needs (403), the member's request rate (429), their stream cap, a request body cap
(413) and a body deadline (408). Every refusal is recorded in the host's call pipeline."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Collection, Sequence
from typing import TYPE_CHECKING, Any

import anyio
from hostd_errors import Text

from hostd.core.config import LOOPBACK_HOSTS, TransportConfig
from hostd.core.errors import HostError
from hostd.core.icon import FAVICON_PATH
from hostd.core.identity import Member, acting_as
from hostd.core.pipeline import request_wait
from hostd.protocol.throttle import refusals_counted, signin_attempt, too_many_signins
from hostd.team.members import member_directory_from_env

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Message, Receive, Scope, Send

    from hostd.core.access import AccessPolicy
    from hostd.core.pipeline import CallPipeline
    from hostd.protocol.oauth_resource import Refusal, ResourceServer
    from hostd.team.auth.verifier import Admitted
    from hostd.team.metrics import Metrics
    from hostd.team.quotas import RequestRate


logger = logging.getLogger("hostd.transport")

#: Where the guard leaves the authenticated ``Member`` in the ASGI scope: the SDK runs a stateful
#: session's handlers in the task that opened it, so the server reads the member of each request
#: from its scope and sets ``hostd.core.identity.CURRENT_MEMBER`` for the call from it.
MEMBER_SCOPE_KEY = "hostd.member"
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
LOOPBACK_HOST_PATTERNS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")


def host_matches(value: str, patterns: Sequence[str]) -> bool:
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
        from hostd.team.signins import FailedSignIns

        #: Refused tokens per client address (``transport.failed_signins_per_minute``).
        self.signins = FailedSignIns(transport.failed_signins_per_minute)

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
        if not host_matches(host, self.allowed_hosts):
            return 421, self.text(
                en="Misdirected request: Host not allowed (transport.allowed_hosts)",
                zh="请求指向错误：不允许该 Host（transport.allowed_hosts）",
            )
        origin = headers.get("origin")
        if origin and not host_matches(origin, self.allowed_origins):
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
        from hostd.protocol.streams import StreamWatch

        self.app = app
        self.policy = policy
        self.in_flight = RequestsInFlight()
        #: Members' long-lived streams: the cap per member, and their end on revocation.
        self.streams = StreamWatch(policy)
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
        signing_in = signin_attempt(scope, headers, self.cookie_prefix if cookie_page else None)
        if signing_in is not None:  # failed sign-ins from this address: 429 before any check
            if wait := self.policy.signins.retry_after(signing_in):
                await self._refuse(scope, receive, send, too_many_signins(self.policy, wait))
                return
            if cookie_page:  # the dashboard's form answers 401 to a wrong token itself
                send = refusals_counted(send, self.policy.signins, signing_in)
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
            wait = await request_wait(rate, member[0].name)
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
        held = None
        if refusal is None and member:
            held, refusal = self.streams.open(scope, member[0], admitted, pending)
        if refusal is not None:
            if refusal[0] == 401 and signing_in is not None:
                self.policy.signins.failed(signing_in)
            self._record_refusal(member[0] if member else None, refusal[0], refused_tool)
            await self._refuse(scope, receive, send, refusal)
            return

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        with acting_as(member[0] if member else None):
            if held is None:
                await self.app(scope, replay, send)
            else:  # a stream: counted against the member's cap, and cut if they are revoked
                await self.streams.serve(held, self.app, scope, replay, send)

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
