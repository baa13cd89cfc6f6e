"""Quotas: token buckets per member and per member and tool (a refused call is RATE_LIMITED
with ``retry_after``), an HTTP request rate per member (429 with Retry-After before the body is
read), and buckets shared by replicas through the team database."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hostd.core.ops_settings import LimitsConfig
from hostd.team.ops_databases import QUOTA_MIGRATIONS as MIGRATIONS
from hostd.team.quotas import DatabaseBuckets, MemoryBuckets, Quotas
from hostd_testing import HttpServer, envelope_of, write_config
from team_support import install_team_plugins, write_tokens

pytestmark = pytest.mark.anyio

ALICE = "alice-quota-token-0123456789"
BOB = "bob-quota-token-0123456789ab"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_bucket_gives_its_burst_then_refills_evenly() -> None:
    clock = Clock()
    buckets = MemoryBuckets(clock)
    assert [buckets.take("k", 3, 0.5) for _ in range(3)] == [0.0, 0.0, 0.0]
    assert buckets.take("k", 3, 0.5) == pytest.approx(2.0)  # one token every 2 s
    clock.now += 1.0
    assert buckets.take("k", 3, 0.5) == pytest.approx(1.0)
    clock.now += 1.0
    assert buckets.take("k", 3, 0.5) == 0.0
    clock.now += 3600
    assert [buckets.take("k", 3, 0.5) for _ in range(4)][-1] > 0  # never more than the burst
    assert buckets.take("other", 3, 0.5) == 0.0  # buckets are per key


def test_tool_and_member_limits_are_both_applied() -> None:
    config = LimitsConfig.model_validate(
        {
            "per_member": {"calls_per_minute": 60, "burst": 5},
            "tools": {"echo": {"calls_per_minute": 6, "burst": 1}},
        }
    )
    quotas = Quotas(config, MemoryBuckets(Clock()))
    assert quotas.retry_after("alice", "echo") == 0
    assert quotas.retry_after("alice", "echo") == pytest.approx(10.0)  # 6 a minute
    assert quotas.retry_after("bob", "echo") == 0  # per member
    assert [quotas.retry_after("alice", "whoami") for _ in range(4)] == [0, 0, 0, 0]
    assert quotas.retry_after("alice", "whoami") == pytest.approx(1.0)  # 5 taken: echo's one and these 4


async def test_a_served_call_over_quota_is_rate_limited(tmp_path: Path) -> None:
    env = install_team_plugins(tmp_path)
    tokens = write_tokens(tmp_path / "tokens.yaml", {"alice": ALICE, "bob": BOB})
    config = write_config(
        tmp_path,
        config={
            "limits": {
                "per_member": {"calls_per_minute": 6, "burst": 3},
                "tools": {"echo": {"calls_per_minute": 1}},
            },
            "profiles": {
                "default": {
                    "plugins": ["probe", "team"],
                    "transport": {"type": "http", "tokens_file": str(tokens)},
                }
            },
        },
    )
    with HttpServer.start(config, env=env) as server:
        async with server.client(headers={"Authorization": f"Bearer {ALICE}"}) as client:
            first = envelope_of(await client.call_tool("echo", {"text": "a"}))
            second = envelope_of(await client.call_tool("echo", {"text": "b"}))
            whoami = [envelope_of(await client.call_tool("whoami", {})) for _ in range(3)]
        async with server.client(headers={"Authorization": f"Bearer {BOB}"}) as client:
            bobs = envelope_of(await client.call_tool("whoami", {}))
    assert first["status"] == "success"
    assert second["status"] == "error"
    assert second["error"]["code"] == "RATE_LIMITED"
    assert 55 <= second["error"]["details"]["retry_after"] <= 60  # one a minute
    assert second["error"]["details"]["tool"] == "echo"
    assert "limits" in second["error"]["hint"]
    # burst 3: echo took one, two whoami pass, the third waits ~10 s (6 a minute).
    assert [w["status"] for w in whoami] == ["success", "success", "error"]
    assert 0 < whoami[2]["error"]["details"]["retry_after"] <= 10
    assert bobs["member"] == "bob"  # another member's bucket is full


def test_a_limit_naming_no_served_tool_is_a_config_error(tmp_path: Path) -> None:
    """Issue 32: a ``limits.tools`` entry under the plugin's own name, where the profile serves the
    tool with a prefix, limited nothing and ``config check`` said ok. ``config check`` and ``serve``
    now refuse it (exit 2), naming the key and the names the profile serves."""
    env = install_team_plugins(tmp_path)

    def hostd(limits: dict[str, Any], *command: str) -> subprocess.CompletedProcess[str]:
        config = write_config(
            tmp_path,
            config={
                "limits": {"tools": limits},
                "profiles": {"default": {"plugins": ["probe"], "tools": {"probe": {"prefix": "p_"}}}},
            },
        )
        return subprocess.run(
            [sys.executable, "-m", "hostd", *command, "--config", str(config)],
            env={**os.environ, **env},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )

    served = "p_ask, p_count_slowly, p_echo, p_fail, p_noisy, p_where"
    for command in (("config", "check"), ("serve",)):
        refused = hostd({"echo": {"calls_per_minute": 1}}, *command)
        assert (refused.returncode, refused.stdout) == (2, ""), command
        assert refused.stderr == (
            "hostd: limits.tools.echo: no profile serves a tool of that name\n"
            f"  profile 'default' serves: {served}\n"
            "name each tool as the profile serves it (with the profile's prefix, if it adds one)\n"
        ), command
    checked = hostd({"p_echo": {"calls_per_minute": 1}}, "config", "check")
    assert checked.returncode == 0, checked.stderr
    assert "profile default: ok (1 plugins, 6 tools)" in checked.stdout


def raw_request(port: int, token: str, content_length: int) -> bytes:
    """Headers announcing a body that is never sent: only an answer before the body ends this."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(
            (
                "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\n"
                f"Authorization: Bearer {token}\r\nContent-Length: {content_length}\r\n\r\n"
            ).encode()
        )
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


def test_http_requests_over_the_members_rate_get_429_before_the_body(tmp_path: Path) -> None:
    import httpx2

    env = install_team_plugins(tmp_path)
    tokens = write_tokens(tmp_path / "tokens.yaml", {"alice": ALICE, "bob": BOB})
    transport: dict[str, Any] = {"type": "http", "tokens_file": str(tokens), "body_timeout": 30}
    config = write_config(
        tmp_path,
        config={
            "limits": {"per_member": {"calls_per_minute": 1000, "requests_per_minute": 2}},
            "profiles": {"default": {"plugins": ["team"], "transport": transport}},
        },
    )
    with HttpServer.start(config, env=env) as server:
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"Authorization": f"Bearer {ALICE}", "Accept": "application/json, text/event-stream"}
        for _ in range(2):
            assert httpx2.post(server.url, json=ping, headers=headers, timeout=10).status_code != 429
        answer = raw_request(server.port, ALICE, 1000)  # would wait 30 s for the body if it were read
        assert answer.startswith(b"HTTP/1.1 429")
        assert b"retry-after: " in answer.lower()
        seconds = int(answer.lower().split(b"retry-after: ")[1].split(b"\r\n")[0])
        assert 1 <= seconds <= 30
        assert (
            httpx2.post(
                server.url, json=ping, headers={**headers, "Authorization": f"Bearer {BOB}"}, timeout=10
            ).status_code
            != 429
        )


def test_replicas_share_buckets_through_the_team_database(postgres_url: str) -> None:
    from hostd_db import PostgresDatabase

    replicas = [DatabaseBuckets(PostgresDatabase(postgres_url, "quotas", MIGRATIONS)) for _ in range(3)]
    taken: list[float] = []
    lock = threading.Lock()
    barrier = threading.Barrier(3)

    def draw(buckets: DatabaseBuckets) -> None:
        barrier.wait()
        for _ in range(10):
            wait = buckets.take("member:alice", 12, 0.001)
            with lock:
                taken.append(wait)

    threads = [threading.Thread(target=draw, args=(buckets,)) for buckets in replicas]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sum(1 for wait in taken if wait == 0) == 12  # 30 tries, one bucket of 12 across the replicas
    assert all(wait > 100 for wait in taken if wait)  # one token back every 1000 s
    assert replicas[0].take("member:bob", 12, 0.001) == 0
    for buckets in replicas:
        buckets.close()
