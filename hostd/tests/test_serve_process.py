"""A real ``hostd serve`` process answering the official SDK client over stdio and HTTP."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostd_testing import HttpServer, envelope_of, served_client, write_config
from hostd_testing.raw_stdio import handshake, initialize, raw_stdio_server, request, tools_call

pytestmark = pytest.mark.anyio
ERAS = ["legacy", "2026-07-28"]


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return write_config(tmp_path, ["probe"], config={"allowed_roots": [str(tmp_path)]})


@pytest.mark.smoke
@pytest.mark.parametrize("loop", ["uvloop", "asyncio"])
@pytest.mark.parametrize("mode", ERAS)
async def test_stdio_both_eras(
    config_path: Path, probe_install: dict[str, str], mode: str, loop: str
) -> None:
    env = {**probe_install, "HOSTD_EVENT_LOOP": loop}
    async with served_client(config_path, env=env, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "echo" in names
        envelope = envelope_of(await client.call_tool("echo", {"text": "über", "times": 2}))
        assert envelope["text"] == "überüber"
        noisy = await client.call_tool("noisy", {})  # stray output must not break the protocol
        assert noisy.is_error is False
        assert envelope_of(await client.call_tool("echo", {"text": "after"}))["text"] == "after"


def test_stdio_survives_garbage_lines_and_unknown_methods(
    config_path: Path, probe_install: dict[str, str]
) -> None:
    with raw_stdio_server(config_path, env=probe_install) as server:
        server.send(
            *handshake("t"),
            "this line is not JSON at all",
            '{"jsonrpc": "2.0", "id": 99, "method": ',
            "[1, 2, 3]",
            request(2, "no/such/method"),
            tools_call(3, "echo", {"text": "ok"}),
        )
        # stdin stays open, as an IDE keeps it, until all are answered; stdout carries JSON-RPC only
        by_id = {answer.get("id"): answer for answer in server.read_until({1, 2, 3})}
        _, err = server.finish()
    assert by_id[1]["result"]["serverInfo"]["name"] == "hostd"
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[3]["result"]["structuredContent"]["text"] == "ok"
    assert "not JSON-RPC" in err.decode()


# --- HTTP ----------------------------------------------------------------------------------

INITIALIZE = initialize(1)
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def token_server(tmp_path: Path, probe_install: dict[str, str]) -> Any:
    config = {"profiles": {"default": {"plugins": ["probe"], "transport": {"token_env": "PROBE_TOKEN"}}}}
    path = write_config(tmp_path, config=config)
    with HttpServer.start(path, env={**probe_install, "PROBE_TOKEN": "s3cret-token"}) as server:
        yield server


def post(server: HttpServer, headers: dict[str, str], body: bytes | None = None) -> Any:
    import httpx2

    data = body if body is not None else json.dumps(INITIALIZE).encode()
    return httpx2.post(server.url, content=data, headers={**MCP_HEADERS, **headers}, timeout=30)


def test_http_requires_the_token(token_server: HttpServer) -> None:
    assert post(token_server, {}).status_code == 401
    assert post(token_server, {"Authorization": "Bearer wrong"}).status_code == 401
    assert post(token_server, {"X-API-Key": "s3cret-tokenX"}).status_code == 401
    assert post(token_server, {"Authorization": "Bearer s3cret-token"}).status_code == 200
    assert post(token_server, {"X-API-Key": "s3cret-token"}).status_code == 200


def test_http_checks_origin_and_host(token_server: HttpServer) -> None:
    auth = {"Authorization": "Bearer s3cret-token"}
    assert post(token_server, {**auth, "Origin": "https://evil.example"}).status_code == 403
    assert post(token_server, {**auth, "Origin": f"http://127.0.0.1:{token_server.port}"}).status_code == 200
    assert post(token_server, {**auth, "Host": "evil.example"}).status_code == 421
    assert post(token_server, {**auth, "Host": f"attacker.test:{token_server.port}"}).status_code == 421


def test_http_caps_request_bodies(token_server: HttpServer) -> None:
    huge = (
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "'
        + b"x" * (33 * 1024 * 1024)
        + b'"}}'
    )
    assert post(token_server, {"Authorization": "Bearer s3cret-token"}, huge).status_code == 413


@pytest.mark.parametrize("mode", ERAS)
async def test_http_official_client_both_eras(token_server: HttpServer, mode: str) -> None:
    async with token_server.client(headers={"Authorization": "Bearer s3cret-token"}, mode=mode) as client:
        assert envelope_of(await client.call_tool("echo", {"text": "http"}))["text"] == "http"


async def test_twenty_http_clients_at_once_are_all_answered(token_server: HttpServer) -> None:
    answers: dict[int, str] = {}

    async def one(index: int) -> None:
        async with token_server.client(headers={"X-API-Key": "s3cret-token"}) as client:
            result = await client.call_tool("count_slowly", {"steps": 3})
            assert result.is_error is False
            answers[index] = envelope_of(await client.call_tool("echo", {"text": f"c{index}"}))["text"]

    with anyio.fail_after(120):
        async with anyio.create_task_group() as group:
            for index in range(20):
                group.start_soon(one, index)
    assert answers == {index: f"c{index}" for index in range(20)}


async def test_legacy_sse_transport(tmp_path: Path, probe_install: dict[str, str]) -> None:
    from mcp import Client
    from mcp.client.sse import sse_client

    path = write_config(tmp_path, ["probe"])
    with HttpServer.start(path, env=probe_install, extra_args=("--transport", "sse")) as server:
        async with Client(sse_client(f"{server.base}/sse"), mode="legacy") as client:
            assert envelope_of(await client.call_tool("echo", {"text": "sse"}))["text"] == "sse"


@pytest.mark.parametrize(
    ("transport", "expected"),
    [
        ({"type": "http", "host": "0.0.0.0", "allowed_hosts": ["h:1"]}, "needs a token"),
        ({"type": "http", "host": "0.0.0.0", "token_env": "PROBE_TOKEN"}, "needs transport.allowed_hosts"),
        ({"type": "http", "token_env": "UNSET_TOKEN_VARIABLE"}, "empty or unset"),
    ],
)
def test_unsafe_binds_refuse_to_start(
    tmp_path: Path, probe_install: dict[str, str], transport: dict[str, Any], expected: str
) -> None:
    path = write_config(
        tmp_path, config={"profiles": {"default": {"plugins": ["probe"], "transport": transport}}}
    )
    env = {**os.environ, **probe_install, "PROBE_TOKEN": "t"}
    env.pop("UNSET_TOKEN_VARIABLE", None)
    done = subprocess.run(
        [sys.executable, "-m", "hostd", "serve", "--config", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2
    assert expected in done.stderr
