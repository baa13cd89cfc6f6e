"""Serving a team behind a load balancer: stateless HTTP, bounded sessions, health probes, a
requestState secret shared by replicas, and a graceful stop on SIGTERM (real processes)."""

from __future__ import annotations

import json
import os
import signal
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hostd_testing import HttpServer, envelope_of, root_for, write_config
from team_support import (
    INITIALIZE,
    MCP_HEADERS,
    MODERN,
    call_modern,
    install_team_plugins,
    post,
    sse_messages,
)

pytestmark = pytest.mark.anyio
SECRET = "0123456789abcdef0123456789abcdef-shared"


def _config(tmp_path: Path, transport: dict[str, Any], **extra: Any) -> Path:
    roots = tmp_path / "allowed"
    roots.mkdir(exist_ok=True)
    return write_config(
        tmp_path,
        config={
            "language": "en",
            "allowed_roots": [str(roots)],
            "profiles": {"default": {"plugins": ["probe", "team"], "transport": transport}},
            **extra,
        },
    )


@pytest.fixture
def stateless(tmp_path: Path) -> Iterator[HttpServer]:
    with HttpServer.start(
        _config(tmp_path, {"stateless": True}), env=install_team_plugins(tmp_path)
    ) as server:
        yield server


def test_stateless_hands_out_no_session(stateless: HttpServer) -> None:
    response = post(stateless.url, INITIALIZE)
    assert response.status_code == 200
    assert "mcp-session-id" not in response.headers


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_stateless_serves_both_eras_with_progress(stateless: HttpServer, mode: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with stateless.client(mode=mode) as client:
        assert "echo" in {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("count_slowly", {"steps": 4}, progress_callback=on_progress)
    assert envelope_of(result)["steps"] == 4
    assert seen == [1, 2, 3, 4]  # the answer streams: progress reaches the client


async def test_stateless_2025_era_never_waits_for_the_client(stateless: HttpServer, tmp_path: Path) -> None:
    """No session, so no way to ask the client: sampling is unavailable and roots are the configured ones."""
    asked: list[str] = []

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        asked.append("sampling")
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="x"), model="m"
        )

    async def roots(context: Any) -> types.ListRootsResult:
        asked.append("roots")
        return types.ListRootsResult(roots=[root_for(tmp_path)])

    async with stateless.client(mode="legacy", sampling_callback=sample, list_roots_callback=roots) as client:
        with anyio.fail_after(10):
            answer = envelope_of(await client.call_tool("ask", {"prompt": "hi?"}))
            where = envelope_of(await client.call_tool("where", {}))
    assert answer["available"] is False
    assert where["roots"] == [str((tmp_path / "allowed").resolve())]
    assert asked == []


# --- requestState across replicas -----------------------------------------------------------------


@pytest.mark.parametrize("shared_secret", [True, False])
def test_a_second_round_on_another_replica(tmp_path: Path, shared_secret: bool) -> None:
    transport: dict[str, Any] = {"stateless": True}
    if shared_secret:
        transport["state_secret_env"] = "HOSTD_STATE_SECRET"
    config = _config(tmp_path, transport)
    env = {**install_team_plugins(tmp_path), "HOSTD_STATE_SECRET": SECRET}
    with HttpServer.start(config, env=env) as first, HttpServer.start(config, env=env) as second:
        asked = call_modern(first.url, "ask", {"prompt": "two words?"}, {"sampling": {}})["result"]
        assert asked["resultType"] == "input_required"
        ((key, _),) = asked["inputRequests"].items()
        reply = {"role": "assistant", "content": {"type": "text", "text": "green tea"}, "model": "m"}
        retry = call_modern(
            second.url,
            "ask",
            {"prompt": "two words?"},
            {"sampling": {}},
            inputResponses={key: reply},
            requestState=asked["requestState"],
        )
    if shared_secret:
        assert retry["result"]["structuredContent"]["text"] == "green tea"
    else:  # the other replica cannot open a state sealed under the first one's own key
        assert retry["error"]["code"] == -32602


def test_a_short_state_secret_stops_start_up(tmp_path: Path) -> None:
    import subprocess
    import sys

    config = _config(tmp_path, {"stateless": True, "state_secret_env": "HOSTD_STATE_SECRET"})
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hostd",
            "serve",
            "--config",
            str(config),
            "--transport",
            "http",
            "--port",
            "0",
        ],
        env={**os.environ, **install_team_plugins(tmp_path), "HOSTD_STATE_SECRET": "too short"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "at least 32 bytes" in done.stderr
    assert "too short" not in done.stderr


# --- sessions ------------------------------------------------------------------------------------


def _rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


@pytest.mark.parametrize(
    ("language", "words", "refusals"),
    [
        # The cap's cost is measured once, with far more refusals than the cap; the other
        # language needs one refusal to show its words.
        ("en", "Too many open sessions (limit 20", 200),
        ("zh", "打开的会话过多（上限 20", 1),
    ],
)
def test_sessions_are_capped_with_a_clear_answer(
    tmp_path: Path, language: str, words: str, refusals: int
) -> None:
    import httpx2

    config = _config(tmp_path, {"max_sessions": 20}, language=language)
    with HttpServer.start(config, env=install_team_plugins(tmp_path)) as server, httpx2.Client() as client:
        opened = [post(server.url, INITIALIZE, client=client) for _ in range(20)]
        assert all(response.status_code == 200 for response in opened)
        baseline = _rss_kib(server.process.pid)
        for _ in range(refusals):  # each refused, at no lasting cost
            refused = post(server.url, INITIALIZE, client=client)
            assert refused.status_code == 503
            assert refused.headers["retry-after"] == "1"
            reason = sse_messages(refused)[0]["error"]["message"]
            assert reason.startswith(words)
            assert "transport.max_sessions" in reason
        assert _rss_kib(server.process.pid) < baseline + 8 * 1024
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        for response in opened:  # the sessions already open are served as before
            headers = {"Mcp-Session-Id": response.headers["mcp-session-id"]}
            assert post(server.url, ping, headers, client=client).status_code == 200


def test_idle_sessions_are_reaped(tmp_path: Path) -> None:
    config = _config(tmp_path, {"max_sessions": 5, "session_idle_timeout": 1.0})
    with HttpServer.start(config, env=install_team_plugins(tmp_path)) as server:
        sessions = [post(server.url, INITIALIZE).headers["mcp-session-id"] for _ in range(5)]
        assert post(server.url, INITIALIZE).status_code == 503
        # Nobody comes back: after the idle timeout the sessions are gone and room is made.
        deadline = time.monotonic() + 10
        while post(server.url, INITIALIZE).status_code != 200:
            assert time.monotonic() < deadline, "idle sessions were not reaped"
            time.sleep(0.2)
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert post(server.url, ping, {"Mcp-Session-Id": sessions[0]}).status_code == 404


# --- health -------------------------------------------------------------------------------------


def test_health_probes_need_no_token_and_say_nothing_else(tmp_path: Path) -> None:
    import httpx2

    config = _config(tmp_path, {"token_env": "TEAM_TOKEN"})
    env = {**install_team_plugins(tmp_path), "TEAM_TOKEN": "a-token-of-the-team-0000"}
    with HttpServer.start(config, env=env) as server:
        assert post(server.url, INITIALIZE).status_code == 401
        for path, body in (("/healthz", "ok"), ("/readyz", "ready")):
            response = httpx2.get(server.base + path, headers={"Host": "10.1.2.3:9999"}, timeout=10)
            assert response.status_code == 200
            assert response.text == body
            assert set(response.headers) <= {"content-type", "content-length", "date"}


def test_readiness_answers_not_ready_with_the_reason_only_in_the_log(
    caplog: pytest.LogCaptureFixture,
) -> None:
    from hostd.team.health import PluginsStarted, Readiness

    plugins = PluginsStarted()
    readiness = Readiness()
    readiness.add("plugins", plugins)
    readiness.add("storage", lambda: None)
    assert readiness.reason_not_ready() == "plugins: the plugins have not started (or are shutting down)"
    plugins.started = True
    assert readiness.reason_not_ready() is None

    def unreachable() -> str | None:
        raise ConnectionError("db01:5432 refused")

    readiness.add("storage", unreachable)
    assert "db01:5432 refused" in (readiness.reason_not_ready() or "")
    assert "db01:5432 refused" in caplog.text


async def test_readyz_is_503_when_a_check_fails() -> None:
    import httpx2
    from hostd.core.config import TransportConfig
    from hostd.protocol.guard import HttpPolicy
    from hostd.protocol.http import build_http_app
    from hostd.team.health import Readiness
    from mcp.server.lowlevel import Server

    readiness = Readiness()
    readiness.add("storage", lambda: "database unreachable: db01")
    app = build_http_app(Server("t"), HttpPolicy(TransportConfig(type="http")), readiness)
    async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://x") as client:
        response = await client.get("/readyz")
    assert response.status_code == 503
    assert response.text == "not ready"


# --- SIGTERM ------------------------------------------------------------------------------------


def _refuses_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return False
    except ConnectionRefusedError:
        return True


def _stream_call(url: str, headers: dict[str, str], under_way: threading.Event, lines: list[str]) -> None:
    """POST a slow call and read its SSE answer to the end, as a proxy in front would."""
    import httpx2

    body = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "tools/call",
        "params": {"name": "linger", "arguments": {"seconds": 2}, "_meta": {"progressToken": "p"}},
    }
    with httpx2.stream(
        "POST", url, content=json.dumps(body), headers={**MCP_HEADERS, **headers}, timeout=30
    ) as r:
        for line in r.iter_lines():
            lines.append(line)
            if "notifications/progress" in line:
                under_way.set()


@pytest.mark.slow
@pytest.mark.parametrize("stateless", [True, False])
def test_sigterm_finishes_calls_in_flight_then_exits_0(tmp_path: Path, stateless: bool) -> None:
    config = _config(tmp_path, {"stateless": stateless, "shutdown_grace_seconds": 20})
    with HttpServer.start(config, env=install_team_plugins(tmp_path)) as server:
        headers = {"MCP-Protocol-Version": "2025-11-25"}
        if not stateless:  # a session, with its long-lived GET stream open as clients keep it
            opened = post(server.url, INITIALIZE)
            headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]
            post(server.url, {"jsonrpc": "2.0", "method": "notifications/initialized"}, headers)
            listening = threading.Thread(target=_hold_get_stream, args=(server.url, headers), daemon=True)
            listening.start()
        under_way, lines = threading.Event(), list[str]()
        calling = threading.Thread(target=_stream_call, args=(server.url, headers, under_way, lines))
        calling.start()
        assert under_way.wait(10)
        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 5
        while not _refuses_connections(server.port):  # new connections: refused at once
            assert time.monotonic() < deadline, "still accepting connections after SIGTERM"
            time.sleep(0.05)
        assert calling.is_alive(), "the call in flight was cut short"
        calling.join(30)
        answers = [json.loads(line[5:]) for line in lines if line.startswith("data:") and '"id":5' in line]
        assert json.loads(answers[0]["result"]["content"][0]["text"])["seconds"] == 2
        assert server.process.wait(timeout=30) == 0
        assert time.monotonic() - signalled < 10, "the open GET stream held the stop to the end of the grace"
        assert (tmp_path / "data" / "team" / "shutdown-ran").read_text() == "yes"


def _hold_get_stream(url: str, headers: dict[str, str]) -> None:
    import httpx2

    try:
        with httpx2.stream("GET", url, headers={**MCP_HEADERS, **headers}, timeout=60) as response:
            for _ in response.iter_lines():
                pass
    except httpx2.HTTPError:
        pass
