"""Endpoints for operators: ``/metrics`` on the server's own port answers only the members
``transport.metrics.operators`` names (403 for every other member: the metrics name every tool,
those a member's profile hides included, and every member). A server with no member source at
all (loopback, no tokens) has no members to tell apart, so there it stays open like its tools.

The metrics port of its own (``transport.metrics.port``) has no token; it answers only requests
whose Host is its own address, loopback, or one of ``transport.metrics.allowed_hosts`` (421 for
others, as the server port does against DNS rebinding).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from hostd.core.ops_settings import MetricsConfig
    from hostd.protocol.guard import HttpPolicy

logger = logging.getLogger("hostd.metrics")


class OperatorsOnly:
    """``app`` for the members ``transport.metrics.operators`` names; 403 for every other member.

    A class: Starlette calls a plain function endpoint with a ``Request``, an object as ASGI.
    """

    def __init__(self, app: ASGIApp, policy: HttpPolicy) -> None:
        settings = policy.transport.metrics
        self.app = app
        self.policy = policy
        self.operators = frozenset(settings.operators if settings is not None else ())

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        from hostd.protocol.guard import MEMBER_SCOPE_KEY

        member = scope.get(MEMBER_SCOPE_KEY)
        if member is None and not self.policy.requires_token:
            await self.app(scope, receive, send)  # no members at all: loopback only, open like the tools
            return
        if member is not None and member.name in self.operators:
            await self.app(scope, receive, send)
            return
        from starlette.responses import PlainTextResponse

        logger.info("refused /metrics to member %s: not an operator", getattr(member, "name", "?"))
        reason = self.policy.text(
            en="Forbidden: /metrics is for the operators named in transport.metrics.operators",
            zh="禁止访问：/metrics 仅供 transport.metrics.operators 中列出的运维人员使用",
        )
        await PlainTextResponse(reason, status_code=403)(scope, receive, send)


def metrics_host_check(
    settings: MetricsConfig, matches: Callable[[str, list[str]], bool]
) -> Callable[[int], Callable[[str], bool]]:
    """For the metrics port once bound: whether a Host header may reach it."""
    from hostd.core.config import LOOPBACK_HOSTS
    from hostd.core.ops_settings import WILDCARD_HOSTS

    def bracketed(name: str) -> str:
        bare = name.strip("[]")
        return f"[{bare}]" if ":" in bare else bare

    names = [] if settings.host in WILDCARD_HOSTS else [bracketed(settings.host)]
    names += sorted({bracketed(name) for name in LOOPBACK_HOSTS})

    def for_port(port: int) -> Callable[[str], bool]:
        patterns = [*settings.allowed_hosts, *names, *(f"{name}:{port}" for name in names)]
        return lambda value: matches(value, patterns)

    return for_port
