"""Quotas across replicas: three ``hostd serve`` replicas behind nginx, sharing one PostgreSQL
database, draw a member's calls from one bucket, so what a member gets accepted over a time is
the configured rate (within 10%), not three times it; another member's bucket is untouched.

The HTTP request rate (429 before the body is read) is shared the same way.

The rate is scaled to seconds (600 calls a minute, burst 10, for 6 s) so the test takes seconds,
not a minute: the bucket arithmetic is the same.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from hostd_testing.postgres import PostgresServer
from team_cluster import (
    MODERN,
    NGINX_INSTALL,
    Balancer,
    Replica,
    TeamClient,
    find_nginx,
    free_port,
    start_together,
)

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

MEMBERS = {"busy": "busy-member-token-0123456789", "calm": "calm-member-token-0123456789"}
PER_MINUTE, BURST, SECONDS = 600, 10, 6.0


#: The HTTP request rate test: a minute's worth of burst, one request a second after it.
REQUESTS_PER_MINUTE = 60


def _cluster(
    postgres_server: PostgresServer,
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    limits: dict[str, Any],
) -> Iterator[str]:
    nginx = find_nginx()
    if nginx is None:
        if os.environ.get("HOSTD_REQUIRE_NGINX") == "1":
            pytest.fail(f"nginx is required (HOSTD_REQUIRE_NGINX=1) but not installed: {NGINX_INSTALL}")
        pytest.skip(f"nginx is not installed: {NGINX_INSTALL}")
    folder: Path = tmp_path_factory.mktemp(name)
    (folder / "tokens.yaml").write_text(yaml.safe_dump(MEMBERS), encoding="utf-8")
    transport = {"type": "http", "stateless": True, "tokens_file": str(folder / "tokens.yaml")}
    config = folder / "hostd.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(folder / "data"),
                "storage": {"url_env": "HOSTD_DATABASE_URL"},
                "limits": limits,
                "profiles": {"team": {"plugins": ["tasks"], "transport": transport}},
            }
        ),
        encoding="utf-8",
    )
    env = {
        "HOSTD_DATABASE_URL": postgres_server.create_database(name),
        "HOSTD_CACHE_DIR": str(folder / "cache"),
    }
    replicas = [Replica(config, free_port(), env, folder / f"replica-{i}.log") for i in range(3)]
    balancer = Balancer(nginx, folder / "nginx", free_port())
    try:
        start_together(replicas)
        balancer.start([replica.port for replica in replicas])
        yield balancer.url
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()


@pytest.fixture(scope="module")
def balancer_url(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    limits = {"per_member": {"calls_per_minute": PER_MINUTE, "burst": BURST}}
    yield from _cluster(postgres_server, tmp_path_factory, "quotas", limits)


@pytest.fixture(scope="module")
def request_rate_url(
    postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    per_member = {"calls_per_minute": 1_000_000, "requests_per_minute": REQUESTS_PER_MINUTE}
    yield from _cluster(postgres_server, tmp_path_factory, "request_rate", {"per_member": per_member})


async def test_a_members_accepted_calls_follow_the_shared_rate(balancer_url: str) -> None:
    outcomes: Counter[str] = Counter()
    busy = TeamClient(balancer_url, MEMBERS["busy"], MODERN)
    started = time.monotonic()

    async def caller() -> None:
        while time.monotonic() - started < SECONDS:
            answer = await busy.call("get_task_stats", {})
            outcomes["ok" if answer["status"] == "success" else answer["error"]["code"]] += 1

    try:
        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(caller)
        elapsed = time.monotonic() - started
    finally:
        await busy.aclose()
    expected = BURST + PER_MINUTE / 60 * elapsed
    assert outcomes["RATE_LIMITED"] > outcomes["ok"]  # the member asked for far more than the rate
    assert set(outcomes) == {"ok", "RATE_LIMITED"}
    assert abs(outcomes["ok"] - expected) <= 0.1 * expected, (outcomes, expected)
    calm = TeamClient(balancer_url, MEMBERS["calm"], MODERN)
    try:
        assert (await calm.call("get_task_stats", {}))["status"] == "success"
    finally:
        await calm.aclose()


async def test_a_members_http_requests_follow_the_shared_rate(request_rate_url: str) -> None:
    """429 with Retry-After over the member's request rate, counted once for the three replicas:
    per replica the member would get about three times the rate through the balancer."""
    import httpx2

    busy = TeamClient(request_rate_url, MEMBERS["busy"], MODERN)
    body, headers = busy._body("get_task_stats", {})
    headers = {
        **headers,
        "Authorization": f"Bearer {MEMBERS['busy']}",
        "Accept": "application/json, text/event-stream",
    }
    statuses: Counter[int] = Counter()
    retry_after: set[str] = set()
    started = time.monotonic()

    async def caller(http: httpx2.AsyncClient) -> None:
        while time.monotonic() - started < SECONDS:
            response = await http.post(request_rate_url, json=body, headers=headers)
            statuses[response.status_code] += 1
            if response.status_code == 429:
                retry_after.add(response.headers.get("retry-after", ""))

    async with httpx2.AsyncClient(timeout=httpx2.Timeout(30)) as http:
        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(caller, http)
        elapsed = time.monotonic() - started
        calm_headers = {**headers, "Authorization": f"Bearer {MEMBERS['calm']}"}
        calm = await http.post(request_rate_url, json=body, headers=calm_headers)
    await busy.aclose()
    expected = REQUESTS_PER_MINUTE + REQUESTS_PER_MINUTE / 60 * elapsed
    assert set(statuses) == {200, 429}, statuses
    assert statuses[429] > statuses[200]  # the member asked for far more than the rate
    assert abs(statuses[200] - expected) <= 0.1 * expected, (statuses, expected)
    assert retry_after, retry_after
    assert all(value.isdigit() and int(value) >= 1 for value in retry_after), retry_after
    assert calm.status_code == 200  # another member's bucket is untouched
