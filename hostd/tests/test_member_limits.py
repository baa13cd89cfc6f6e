"""Limits per member and per client address on a real ``hostd serve`` (issue 32, item 8): one
member cannot hold more than ``transport.max_streams_per_member`` long-lived streams (SSE, the
session's GET; listens are in tests/test_member_streams.py), and an address that keeps
presenting wrong tokens (bearer, X-API-Key, the dashboard's sign-in form) is told 429."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from hostd_testing import HttpServer, write_config
from team_support import install_team_plugins, write_tokens

pytestmark = pytest.mark.anyio

ALICE = "alice-limits-token-0123456789"
BOB = "bob-limits-token-0123456789ab"
SSE = {"Accept": "text/event-stream"}


@pytest.fixture
def served(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[HttpServer]:
    tokens = write_tokens(tmp_path / "tokens.yaml", {"alice": ALICE, "bob": BOB})
    transport = {"tokens_file": str(tokens), **getattr(request, "param", {})}
    config = write_config(
        tmp_path,
        config={
            "language": "en",
            "profiles": {"default": {"plugins": ["probe", "team"], "transport": transport}},
        },
    )
    with HttpServer.start(config, env=install_team_plugins(tmp_path)) as server:
        yield server


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def open_session(http: httpx2.AsyncClient, url: str, token: str) -> dict[str, str]:
    """A handshake-era session of ``token``'s member: the headers its requests carry."""
    from team_support import INITIALIZE, MCP_HEADERS

    answer = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **bearer(token)})
    assert answer.status_code == 200, answer.text
    session = {"Mcp-Session-Id": answer.headers["mcp-session-id"], "MCP-Protocol-Version": "2025-11-25"}
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    done = await http.post(url, json=initialized, headers={**MCP_HEADERS, **bearer(token), **session})
    assert done.status_code == 202, done.text
    return session


PING = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'


@asynccontextmanager
async def opened(
    http: httpx2.AsyncClient, method: str, url: str, **request: Any
) -> AsyncIterator[httpx2.Response]:
    """A streaming response whose headers are in; closed (the connection with it) on leaving."""
    async with http.stream(method, url, **request) as response:
        yield response


def check_too_many(response: httpx2.Response) -> None:
    assert response.status_code == 429
    assert response.headers["retry-after"] == "5"
    assert response.text == (
        "Too many open streams for one member (limit 2, transport.max_streams_per_member); "
        "close streams you no longer use, or retry in 5 s"
    )


@pytest.mark.parametrize("served", [{"max_streams_per_member": 2}], indirect=True)
async def test_a_member_holds_at_most_max_streams_per_member(served: HttpServer) -> None:
    server = served
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)))
        first = await stack.enter_async_context(
            opened(http, "GET", f"{server.base}/sse", headers={**bearer(ALICE), **SSE})
        )
        assert first.status_code == 200
        session = await open_session(http, server.url, ALICE)
        second = await stack.enter_async_context(
            opened(http, "GET", server.url, headers={**bearer(ALICE), **SSE, **session})
        )
        assert second.status_code == 200, (await second.aread()).decode()
        assert second.headers["content-type"].startswith("text/event-stream")

        another = await open_session(http, server.url, ALICE)
        for url, extra in [(f"{server.base}/sse", SSE), (server.url, {**SSE, **another})]:
            check_too_many(await http.get(url, headers={**bearer(ALICE), **extra}))
        # Calls are no streams: alice still calls tools; and bob's streams are his own.
        from team_support import MCP_HEADERS

        answer = await http.post(
            server.url, content=PING, headers={**bearer(ALICE), **MCP_HEADERS, **session}
        )
        assert answer.status_code == 200, answer.text
        bobs = await stack.enter_async_context(
            opened(http, "GET", f"{server.base}/sse", headers={**bearer(BOB), **SSE})
        )
        assert bobs.status_code == 200

        await first.aclose()  # alice closes one: she may open one again
        with anyio.fail_after(30):
            while True:
                again = await stack.enter_async_context(
                    opened(http, "GET", f"{server.base}/sse", headers={**bearer(ALICE), **SSE})
                )
                if again.status_code == 200:
                    break
                await again.aread()
                check_too_many(again)
                await again.aclose()
                await anyio.sleep(0.2)


def test_a_cap_not_below_max_connections_is_a_config_error(tmp_path: Path) -> None:
    from hostd.core.config import TransportConfig
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="must be below max_connections"):
        TransportConfig(max_connections=10, max_streams_per_member=10)
    assert TransportConfig(max_connections=5).max_streams_per_member == 8  # the default: capped at run time


def signin_refused(answer: httpx2.Response, limit: int) -> None:
    assert answer.status_code == 429
    wait = int(answer.headers["retry-after"])
    assert 1 <= wait <= 60
    assert answer.text == (
        f"Too many failed sign-ins from this address (limit {limit} a minute, "
        f"transport.failed_signins_per_minute); retry in {wait} s"
    )


@pytest.mark.parametrize("served", [{"failed_signins_per_minute": 3}], indirect=True)
def test_wrong_tokens_from_one_address_are_throttled(served: HttpServer) -> None:
    server = served
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with httpx2.Client(timeout=30) as http:
        for _ in range(5):  # no credential at all is no sign-in attempt: never throttled
            assert http.post(server.url, content=ping, headers=headers).status_code == 401
        wrong = ["wrong-token-000000000000", "wrong-token-111111111111"]
        assert http.post(server.url, content=ping, headers={**headers, **bearer(wrong[0])}).status_code == 401
        assert (
            http.post(server.url, content=ping, headers={**headers, "X-API-Key": wrong[1]}).status_code == 401
        )
        assert http.post(server.url, content=ping, headers={**headers, **bearer(wrong[0])}).status_code == 401
        # The minute's failures are spent: every credential from here is refused for a while,
        # the right one included (so guessing learns nothing).
        signin_refused(http.post(server.url, content=ping, headers={**headers, **bearer(ALICE)}), 3)
        signin_refused(http.post(server.url, content=ping, headers={**headers, "X-API-Key": ALICE}), 3)
    other = httpx2.HTTPTransport(local_address="127.0.0.2")  # another client address is not held up
    with httpx2.Client(timeout=30, transport=other) as http:
        answer = http.post(server.url, content=ping, headers={**headers, **bearer(ALICE)})
        assert answer.status_code != 429, answer.text
        assert answer.status_code != 401, answer.text
    started = time.monotonic()
    with httpx2.Client(timeout=30) as http:  # and the first address, once the minute has room again
        while True:
            answer = http.post(server.url, content=ping, headers={**headers, **bearer(ALICE)})
            if answer.status_code != 429:
                break
            assert time.monotonic() - started < 60
            time.sleep(int(answer.headers["retry-after"]))
        assert answer.status_code != 401, answer.text


@pytest.mark.parametrize("served", [{"failed_signins_per_minute": 3, "dashboard": True}], indirect=True)
def test_wrong_tokens_on_the_dashboards_sign_in_form_are_throttled(served: HttpServer) -> None:
    import re

    server = served
    with httpx2.Client(base_url=server.base, timeout=30, follow_redirects=False) as http:

        def sign_in(token: str) -> httpx2.Response:
            page = http.get("/ui/signin")
            assert page.status_code == 200
            found = re.search(r'name="csrf" value="([^"]+)"', page.text)
            assert found is not None
            return http.post(
                "/ui/signin",
                data={"csrf": found.group(1), "token": token, "next": "/ui/"},
            )

        for attempt in range(3):
            assert sign_in(f"wrong-token-{attempt}-0000000000").status_code == 401
        signin_refused(sign_in(ALICE), 3)
        assert http.get("/ui/signin").status_code == 200  # the form itself still shows


def test_failed_signins_refill_evenly_over_the_minute() -> None:
    from hostd.team import signins
    from hostd.team.signins import FailedSignIns

    now = [0.0]
    throttle = FailedSignIns(6, clock=lambda: now[0])  # one failure forgiven every 10 s
    assert throttle.retry_after("10.0.0.1") == 0
    for _ in range(6):
        assert throttle.retry_after("10.0.0.1") == 0
        throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == 10
    assert throttle.retry_after("10.0.0.2") == 0  # per address
    now[0] = 4.0
    assert throttle.retry_after("10.0.0.1") == 6
    now[0] = 10.0
    assert throttle.retry_after("10.0.0.1") == 0  # room for one more
    throttle.failed("10.0.0.1")
    assert throttle.retry_after("10.0.0.1") == 10
    for number in range(signins.MAX_ADDRESSES + 50):  # many addresses: remembered within bounds
        throttle.failed(f"10.1.{number // 256}.{number % 256}")
    assert len(throttle._buckets) <= signins.MAX_ADDRESSES
