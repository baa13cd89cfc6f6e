"""Members' long-lived streams on a real ``hostd serve``.

Revocation reaches open streams (issue 32, item 6): a member removed from the tokens file, or
whose token is replaced, loses every stream they hold open (the Streamable HTTP GET stream of a
session, a legacy SSE stream, a 2026-07-28 ``subscriptions/listen``) within seconds, and hears no
more ``notifications/resources/updated``; another member's streams stay open and keep hearing
theirs. Listens count against the cap per member (item 8) however their method is spelled; the
other streams' cap is in ``hostd/tests/test_member_limits.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import yaml
from hostd_testing import HttpServer, write_config

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
MODERN = "2026-07-28"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: The watch checks every second and the tokens file is looked at once a second: a few seconds.
WITHIN_SECONDS = 8


def serve(tmp_path: Path, **transport: Any) -> tuple[Path, Path]:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({"alice": ALICE, "bob": BOB}), encoding="utf-8")
    profiles = {"default": {"plugins": ["memory"], "transport": {"tokens_file": str(tokens), **transport}}}
    return write_config(tmp_path, config={"profiles": profiles, "language": "en"}), tokens


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }


def modern_headers(token: str, method: str) -> dict[str, str]:
    return {
        **HEADERS,
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": method,
    }


async def update_memory(
    http: httpx2.AsyncClient, url: str, token: str, content: str, *, create: bool = False
) -> None:
    tool = "create_memory" if create else "update_memory"
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": tool,
            "arguments": {"uri": "notes://a", "content": content},
            "_meta": modern_meta(),
        },
    }
    answer = await http.post(
        url, json=body, headers={**modern_headers(token, "tools/call"), "Mcp-Name": tool}
    )
    assert answer.status_code == 200, answer.text
    assert '\\"status\\":\\"success\\"' in answer.text, answer.text


class Stream:
    """One open streaming response, read in the background: its data lines and when it ended."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.status = 0
        self.data: list[dict[str, Any]] = []
        self.ended_at: float | None = None
        self.opened = anyio.Event()
        self.heard = anyio.Event()
        self.session: str | None = None  # the session a GET /mcp stream belongs to

    def updates(self) -> list[str]:
        return [
            str(item["params"]["uri"])
            for item in self.data
            if item.get("method") == "notifications/resources/updated"
        ]

    async def read(self, http: httpx2.AsyncClient, method: str, url: str, **request: Any) -> None:
        try:
            async with http.stream(method, url, **request) as response:
                self.status = response.status_code
                self.opened.set()
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip().startswith("{"):
                        self.data.append(json.loads(line[5:]))
                        self.heard.set()
                        self.heard = anyio.Event()
        except httpx2.HTTPError:
            pass  # a cut stream may end in a transport error: ended all the same
        finally:
            self.ended_at = time.monotonic()
            self.opened.set()


async def open_session(http: httpx2.AsyncClient, url: str, token: str) -> str:
    """A handshake-era session (2025-11-25), subscribed to ``memory://notes/a``; its id."""
    auth = {**HEADERS, "Authorization": f"Bearer {token}"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
    answer = await http.post(url, json=initialize, headers=auth)
    assert answer.status_code == 200, answer.text
    session = answer.headers["mcp-session-id"]
    with_session = {**auth, "Mcp-Session-Id": session, "MCP-Protocol-Version": "2025-11-25"}
    done = await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=with_session
    )
    assert done.status_code == 202, done.text
    subscribe = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "resources/subscribe",
        "params": {"uri": "memory://notes/a"},
    }
    answer = await http.post(url, json=subscribe, headers=with_session)
    assert answer.status_code == 200, answer.text
    assert '"result"' in answer.text, answer.text
    return session


@asynccontextmanager
async def streams_of(http: httpx2.AsyncClient, server: HttpServer, token: str) -> AsyncIterator[list[Stream]]:
    """A member's three kinds of stream, open: GET /mcp of a subscribed session, GET /sse, a listen."""
    session = await open_session(http, server.url, token)
    get_stream, sse, listen = Stream("GET /mcp"), Stream("GET /sse"), Stream("subscriptions/listen")
    get_stream.session = session
    listen_body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "subscriptions/listen",
        "params": {"notifications": {"resourceSubscriptions": ["memory://notes/a"]}, "_meta": modern_meta()},
    }
    auth = {"Authorization": f"Bearer {token}"}
    async with anyio.create_task_group() as group:
        group.start_soon(
            lambda: get_stream.read(
                http,
                "GET",
                server.url,
                headers={
                    **auth,
                    "Accept": "text/event-stream",
                    "Mcp-Session-Id": session,
                    "MCP-Protocol-Version": "2025-11-25",
                },
            )
        )
        group.start_soon(
            lambda: sse.read(
                http, "GET", f"{server.base}/sse", headers={**auth, "Accept": "text/event-stream"}
            )
        )
        group.start_soon(
            lambda: listen.read(
                http,
                "POST",
                server.url,
                json=listen_body,
                headers=modern_headers(token, "subscriptions/listen"),
            )
        )
        streams = [get_stream, sse, listen]
        with anyio.fail_after(30):
            for stream in streams:
                await stream.opened.wait()
            while not listen.data:  # the listen's acknowledgement: it is in place
                await listen.heard.wait()
        assert [stream.status for stream in streams] == [200, 200, 200]
        try:
            yield streams
        finally:
            group.cancel_scope.cancel()


async def heard_update(streams: list[Stream], names: set[str]) -> None:
    with anyio.fail_after(30):
        for stream in streams:
            if stream.name in names:
                while "memory://notes/a" not in stream.updates():
                    await stream.heard.wait()


@pytest.mark.parametrize("change", ["removed", "rotated"])
async def test_a_members_open_streams_end_when_their_token_goes(tmp_path: Path, change: str) -> None:
    config, tokens = serve(tmp_path)
    with HttpServer.start(config) as server:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)))
            await update_memory(http, server.url, BOB, "first", create=True)
            alice = await stack.enter_async_context(streams_of(http, server, ALICE))
            bob = await stack.enter_async_context(streams_of(http, server, BOB))
            await update_memory(http, server.url, BOB, "second")  # both hear it while both are in
            await heard_update(alice, {"GET /mcp", "subscriptions/listen"})
            await heard_update(bob, {"GET /mcp", "subscriptions/listen"})

            members: dict[str, Any] = {"bob": BOB}
            if change == "rotated":
                members["alice"] = "alice-new-token-0123456789"
            tokens.write_text(yaml.safe_dump(members), encoding="utf-8")
            changed_at = time.monotonic()
            with anyio.move_on_after(WITHIN_SECONDS):
                while any(stream.ended_at is None for stream in alice):
                    await anyio.sleep(0.1)
            still_open = [stream.name for stream in alice if stream.ended_at is None]
            assert still_open == [], f"alice's streams still open {WITHIN_SECONDS} s after she was {change}"
            assert all(
                stream.ended_at is not None and stream.ended_at - changed_at < WITHIN_SECONDS
                for stream in alice
            )

            heard_before = [stream.updates() for stream in alice]
            for stream in bob:
                stream.data.clear()
            await update_memory(http, server.url, BOB, "third")
            await heard_update(bob, {"GET /mcp", "subscriptions/listen"})  # bob's streams still serve
            assert [stream.ended_at for stream in bob] == [None, None, None]
            assert [stream.updates() for stream in alice] == heard_before  # nothing more reached alice

            old = await http.get(
                f"{server.base}/sse",
                headers={"Authorization": f"Bearer {ALICE}", "Accept": "text/event-stream"},
            )
            assert old.status_code == 401  # and her old token opens nothing new
            if change == "rotated":  # her new token reopens her session's stream, which hears again
                reopened = Stream("GET /mcp")
                async with anyio.create_task_group() as group:
                    group.start_soon(
                        lambda: reopened.read(
                            http,
                            "GET",
                            server.url,
                            headers={
                                "Authorization": f"Bearer {members['alice']}",
                                "Accept": "text/event-stream",
                                "Mcp-Session-Id": str(alice[0].session),
                                "MCP-Protocol-Version": "2025-11-25",
                            },
                        )
                    )
                    with anyio.fail_after(30):
                        await reopened.opened.wait()
                    assert reopened.status == 200
                    await update_memory(http, server.url, BOB, "fourth")
                    await heard_update([reopened], {"GET /mcp"})
                    group.cancel_scope.cancel()
        server.process.terminate()
        _, err = server.process.communicate(timeout=60)
    log = err.decode()
    assert log.count("ended a stream") == 3, log
    assert "Traceback" not in log, log


def listen_bytes(spelling: str) -> bytes:
    """A listen to ``memory://notes/a`` whose method name is written as ``spelling`` (raw JSON)."""
    meta = json.dumps(modern_meta())
    params = f'{{"notifications": {{"resourceSubscriptions": ["memory://notes/a"]}}, "_meta": {meta}}}'
    return f'{{"jsonrpc": "2.0", "id": 9, "method": "{spelling}", "params": {params}}}'.encode()


async def test_listens_count_against_max_streams_per_member_however_spelled(tmp_path: Path) -> None:
    """``transport.max_streams_per_member`` counts listens as the parsed request names them: a
    method written with JSON escapes is a listen too."""
    config, _ = serve(tmp_path, max_streams_per_member=2)
    with HttpServer.start(config) as server:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)))
            await update_memory(http, server.url, ALICE, "first", create=True)
            headers = modern_headers(ALICE, "subscriptions/listen")
            for spelling in ("subscriptions/listen", "subscriptions\\/\\u006cisten"):
                response = await stack.enter_async_context(
                    http.stream("POST", server.url, content=listen_bytes(spelling), headers=headers)
                )
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
            refused = [
                await http.post(server.url, content=listen_bytes("subscriptions\\/listen"), headers=headers),
                await http.get(
                    f"{server.base}/sse",
                    headers={"Authorization": f"Bearer {ALICE}", "Accept": "text/event-stream"},
                ),
            ]
            for answer in refused:
                assert answer.status_code == 429
                assert answer.headers["retry-after"] == "5"
                assert "transport.max_streams_per_member" in answer.text
            bobs = await stack.enter_async_context(
                http.stream(
                    "POST",
                    server.url,
                    content=listen_bytes("subscriptions/listen"),
                    headers=modern_headers(BOB, "subscriptions/listen"),
                )
            )
            assert bobs.status_code == 200  # the cap is per member: bob's are his own
