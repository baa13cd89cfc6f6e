"""Subscriptions across replicas: two stateless ``hostd serve`` replicas sharing one PostgreSQL
database (``storage``) behind nginx running ``deploy/nginx.conf``. A change made through one replica
reaches a 2026-07-28 ``subscriptions/listen`` held by the other, through the database's
LISTEN/NOTIFY (one listening connection per replica, reopened when the database drops it); the
handshake era cannot subscribe on a stateless server and is told so.
"""

from __future__ import annotations

import os
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import yaml
from hostd_testing import envelope_of
from hostd_testing.postgres import PostgresServer
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, Subscription
from mcp.shared.exceptions import MCPError
from team_cluster import NGINX_INSTALL, Balancer, Replica, find_nginx, free_port, start_together

pytestmark = [pytest.mark.anyio, pytest.mark.slow]  # a database, two servers and nginx
MODERN = "2026-07-28"
LISTENER = "hostd-notify-hostd_resources"  # the listening connections' application_name


@dataclass
class Team:
    balancer: Balancer
    replicas: list[Replica]
    server: PostgresServer
    database: str

    def url(self, replica: int | None = None) -> str:
        """The balancer's address, or one replica's own."""
        if replica is None:
            return self.balancer.url
        return f"http://127.0.0.1:{self.replicas[replica].port}/mcp"

    def listeners(self) -> list[int]:
        """The backend pids of the replicas' listening connections."""
        out = self.server.psql(
            f"SELECT pid FROM pg_stat_activity WHERE datname = '{self.database}' "
            f"AND application_name = '{LISTENER}' AND query LIKE 'LISTEN%'",
            self.database,
        )
        return [int(line) for line in out.split() if line.strip().isdigit()]


@pytest.fixture(scope="module")
def team(postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Team]:
    nginx = find_nginx()
    if nginx is None:
        if os.environ.get("HOSTD_REQUIRE_NGINX") == "1":
            pytest.fail(f"nginx is required (HOSTD_REQUIRE_NGINX=1) but not installed: {NGINX_INSTALL}")
        pytest.skip(f"nginx is not installed: {NGINX_INSTALL}")
    url = postgres_server.create_database("subs")
    folder = tmp_path_factory.mktemp("subs-team")
    config = folder / "hostd.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(folder / "data"),
                "language": "en",
                "storage": {"url_env": "HOSTD_DATABASE_URL"},
                "profiles": {
                    "team": {
                        "plugins": ["memory", "deep-thinking", "tasks"],
                        "transport": {"type": "http", "stateless": True},
                    }
                },
            }
        ),
        encoding="utf-8",
    )
    env = {"HOSTD_DATABASE_URL": url, "HOSTD_CACHE_DIR": str(folder / "cache")}
    replicas = [Replica(config, free_port(), env, folder / f"replica-{i}.log") for i in range(2)]
    balancer = Balancer(nginx, folder / "nginx", free_port())
    try:
        start_together(replicas)
        # The template names three upstreams: the first replica twice.
        balancer.start([replicas[0].port, replicas[1].port, replicas[0].port])
        yield Team(balancer, replicas, postgres_server, url.rsplit("/", 1)[1])
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()


@asynccontextmanager
async def connect(url: str, mode: str = MODERN) -> AsyncIterator[Client]:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(timeout=httpx2.Timeout(30, read=300)) as http,
        Client(streamable_http_client(url, http_client=http), mode=mode) as client,
    ):
        yield client


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    with anyio.fail_after(60):
        envelope = envelope_of(await client.call_tool(tool, arguments))
    assert envelope["status"] == "success", envelope


async def heard(subscription: Subscription, uri: str, into: list[str]) -> None:
    with anyio.move_on_after(30):
        while uri not in into:
            event = await subscription.__anext__()
            assert isinstance(event, ResourceUpdated), event
            into.append(event.uri)
    assert uri in into, f"no notification for {uri} in 30 s; heard {into}"


async def make_records(client: Client, suffix: str) -> list[str]:
    await call(client, "create_memory", {"uri": f"team://{suffix}", "content": "first"})
    await call(client, "create_task", {"title": f"Task {suffix}", "task_id": f"t-{suffix}"})
    thought = {"thought": "Start.", "thoughtNumber": 1, "totalThoughts": 3, "nextThoughtNeeded": True}
    await call(client, "sequential_thinking", {"session_id": f"s-{suffix}", **thought})
    return [f"memory://team/{suffix}", f"task://t-{suffix}", f"thinking://s-{suffix}"]


async def change_records(client: Client, suffix: str) -> None:
    await call(client, "update_memory", {"uri": f"team://{suffix}", "content": "second"})
    await call(client, "update_task_status", {"task_id": f"t-{suffix}", "new_status": "in_progress"})
    thought = {"thought": "Then.", "thoughtNumber": 2, "totalThoughts": 3, "nextThoughtNeeded": True}
    await call(client, "sequential_thinking", {"session_id": f"s-{suffix}", **thought})


async def test_a_change_on_one_replica_reaches_a_listener_on_the_other(team: Team) -> None:
    """Listening on replica 1, changes through replica 0 (its own port) arrive; an unrelated
    record's change does not."""
    async with connect(team.url(0)) as writer, connect(team.url(1)) as listener:
        watched = await make_records(writer, "a")
        unrelated = await make_records(writer, "b")
        got: list[str] = []
        async with listener.listen(resource_subscriptions=[*watched, unrelated[0]]) as subscription:
            await change_records(writer, "b")  # only its memory is listened to: the marker
            await heard(subscription, unrelated[0], got)
            got.clear()
            await change_records(writer, "a")
            await call(writer, "update_memory", {"uri": "team://b", "content": "marker"})
            for uri in [*watched, unrelated[0]]:
                await heard(subscription, uri, got)
    assert set(got) == {*watched, unrelated[0]}
    assert not {unrelated[1], unrelated[2]} & set(got)


async def test_through_the_balancer_in_both_eras(team: Team) -> None:
    """Behind nginx the listen lands on one replica and changes made on each replica reach it (one
    of them through the database); the handshake era is not offered subscribe and is told why."""
    async with connect(team.url(0)) as first, connect(team.url(1)) as second:
        on_first = await make_records(first, "c")
        on_second = await make_records(second, "d")
        got: list[str] = []
        async with (
            connect(team.url()) as client,
            client.listen(resource_subscriptions=[*on_first, *on_second]) as subscription,
        ):
            await change_records(first, "c")
            await change_records(second, "d")
            for uri in [*on_first, *on_second]:
                await heard(subscription, uri, got)
    async with connect(team.url(), mode="legacy") as legacy:
        resources = legacy.server_capabilities.resources
        assert resources is not None
        assert not resources.subscribe
        with pytest.raises(MCPError) as refused:
            import warnings

            from mcp.shared.exceptions import MCPDeprecationWarning

            with warnings.catch_warnings():
                warnings.simplefilter("ignore", MCPDeprecationWarning)
                await legacy.subscribe_resource(on_first[0])
    assert refused.value.error.code == types.INVALID_REQUEST
    assert refused.value.error.data == {"code": "NOT_SUPPORTED", "method": "resources/subscribe"}


async def test_the_listening_connection_comes_back_after_the_database_drops_it(team: Team) -> None:
    """``pg_terminate_backend`` on every replica's listening connection: each opens a new one, and
    a change through one replica again reaches a listener on the other."""
    before = team.listeners()
    assert len(before) == 2, before  # one listening connection per replica
    team.server.psql(f"SELECT pg_terminate_backend(pid) FROM unnest(ARRAY{before}) AS pid", team.database)
    deadline = time.monotonic() + 30
    while True:
        after = team.listeners()
        if len(after) == 2 and not set(after) & set(before):
            break
        assert time.monotonic() < deadline, f"listeners not back in 30 s: {after}"
        await anyio.sleep(0.1)
    async with connect(team.url(0)) as writer, connect(team.url(1)) as listener:
        watched = await make_records(writer, "e")
        got: list[str] = []
        async with listener.listen(resource_subscriptions=watched) as subscription:
            await change_records(writer, "e")
            for uri in watched:
                await heard(subscription, uri, got)
    for replica in team.replicas:
        assert "listening on hostd_resources again" in Path(replica.log).read_text()
