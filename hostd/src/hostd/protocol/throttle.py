"""The guard's side of throttling failed sign-ins (``hostd.team.signins``): which requests are a
sign-in attempt, and from which address; the 429 a throttled address gets.

An attempt is a request presenting a credential: an ``Authorization`` or ``X-API-Key`` header on
the token-guarded paths, or the dashboard's sign-in form posted. Requests with no credential are
no attempt (a client's first request without a token is how OAuth discovery starts).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from starlette.types import Message, Scope, Send

    from hostd.protocol.guard import HttpPolicy
    from hostd.team.signins import FailedSignIns


def client_address(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def signin_attempt(scope: Scope, headers: dict[str, str], cookie_prefix: str | None) -> str | None:
    """The client's address when the request presents a credential, else ``None``.

    ``cookie_prefix`` is the dashboard's path when the request is for one of its pages: there
    only the sign-in form's POST presents one.
    """
    if cookie_prefix is not None:
        attempt = scope["method"] == "POST" and scope["path"].rstrip("/") == f"{cookie_prefix}/signin"
    else:
        attempt = "authorization" in headers or "x-api-key" in headers
    return client_address(scope) if attempt else None


def too_many_signins(policy: HttpPolicy, wait: int) -> tuple[int, str, dict[str, str]]:
    limit = policy.transport.failed_signins_per_minute
    return (
        429,
        policy.text(
            en=f"Too many failed sign-ins from this address (limit {limit} a minute, "
            f"transport.failed_signins_per_minute); retry in {wait} s",
            zh=f"来自此地址的登录失败次数过多（每分钟上限 {limit} 次，transport.failed_signins_per_minute）；"
            f"请在 {wait} 秒后重试",
        ),
        {"Retry-After": str(wait), "Connection": "close"},
    )


def refusals_counted(send: Send, signins: FailedSignIns, address: str) -> Send:
    """``send``, counting a 401 answer as a failed sign-in of ``address``."""

    async def counting(message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 401:
            signins.failed(address)
        await send(message)

    return counting
