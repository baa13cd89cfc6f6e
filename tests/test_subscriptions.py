"""Resource subscriptions end to end: the official Python SDK client subscribes to a memory, a task
and a thinking session of a real ``hostd serve`` and hears ``notifications/resources/updated``
when a tool call changes one, and nothing for an unrelated record or after it stopped listening;
in both protocol eras (``resources/subscribe`` up to 2025-11-25, ``subscriptions/listen`` from
2026-07-28), over stdio and HTTP. What the protocol cannot carry is refused clearly (the handshake
era's subscribe on a stateless server), and hostile subscriptions get structured errors.

The replicas case (a change on one replica heard on another through PostgreSQL's LISTEN/NOTIFY,
behind nginx) is in ``test_subscriptions_team.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from hostd_testing import HttpServer, envelope_of, served_client, write_config
from mcp import Client
from mcp.client.subscriptions import ResourceUpdated, Subscription
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

pytestmark = pytest.mark.anyio

LEGACY, MODERN = "legacy", "2026-07-28"
TOKENS = {"alice": "alice-token-0123456789", "bob": "bob-token-0123456789ab"}
THOUGHT = {"thought": "Start.", "thoughtNumber": 1, "totalThoughts": 3, "nextThoughtNeeded": True}


def config(tmp_path: Path, **transport: Any) -> Path:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"alice: {TOKENS['alice']}\nbob: {{token: {TOKENS['bob']}, profile: tasks-only}}\n", encoding="utf-8"
    )
    profiles = {
        "default": {
            "plugins": ["memory", "deep-thinking", "tasks"],
            "transport": {"tokens_file": str(tokens), **transport},
        },
        "tasks-only": {"plugins": ["tasks"]},
    }
    return write_config(tmp_path, config={"profiles": profiles, "language": "en"})


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    with anyio.fail_after(60):
        envelope = envelope_of(await client.call_tool(tool, arguments))
    assert envelope["status"] == "success", envelope
    return envelope


class Heard:
    """The URIs of the ``notifications/resources/updated`` a handshake-era client received."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._changed = anyio.Event()

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(str(message.params.uri))
            self._changed.set()
            self._changed = anyio.Event()

    async def until(self, uri: str) -> None:
        with anyio.move_on_after(30):
            while uri not in self.uris:
                await self._changed.wait()
        assert uri in self.uris, f"no notification for {uri} in 30 s; heard {self.uris}"


async def heard_on(subscription: Subscription, uri: str, into: list[str]) -> None:
    """Events of a listen stream into ``into`` until ``uri`` is among them."""
    with anyio.fail_after(30):
        while uri not in into:
            event = await subscription.__anext__()
            assert isinstance(event, ResourceUpdated), event
            into.append(event.uri)


class Records:
    """A memory, a task and a thinking session to subscribe to, and one of each that is not."""

    def __init__(self, client: Client) -> None:
        self.client = client

    async def create(self, suffix: str) -> list[str]:
        await call(self.client, "create_memory", {"uri": f"notes://{suffix}", "content": "first"})
        task = await call(self.client, "create_task", {"title": f"Task {suffix}", "task_id": f"t-{suffix}"})
        await call(self.client, "sequential_thinking", {"session_id": f"s-{suffix}", **THOUGHT})
        return [f"memory://notes/{suffix}", f"task://{task['task']['task_id']}", f"thinking://s-{suffix}"]

    async def change(self, suffix: str, step: int) -> None:
        await call(self.client, "update_memory", {"uri": f"notes://{suffix}", "content": f"edit {step}"})
        await call(self.client, "update_task", {"task_id": f"t-{suffix}", "title": f"Task {suffix} {step}"})
        thought = {**THOUGHT, "thought": f"Step {step}.", "thoughtNumber": 1 + step}
        await call(self.client, "sequential_thinking", {"session_id": f"s-{suffix}", **thought})


def legacy_subscribe(client: Client) -> tuple[Callable[..., Any], Callable[..., Any]]:
    """The SDK marks resources/subscribe deprecated (it is gone in 2026-07-28); the handshake era has it."""

    async def subscribe(uri: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.subscribe_resource(uri)

    async def unsubscribe(uri: str) -> None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            await client.unsubscribe_resource(uri)

    return subscribe, unsubscribe


async def check_handshake_era(client: Client, heard: Heard) -> None:
    """Subscribed records are heard of, the unrelated ones not; after unsubscribing, nothing."""
    assert client.server_capabilities.resources is not None
    assert client.server_capabilities.resources.subscribe is True
    records = Records(client)
    watched = await records.create("a")
    unrelated = await records.create("b")
    subscribe, unsubscribe = legacy_subscribe(client)
    for uri in watched:
        await subscribe(uri)
    await records.change("b", 1)
    await records.change("a", 1)
    for uri in watched:
        await heard.until(uri)
    assert not set(unrelated) & set(heard.uris)
    assert sorted(set(heard.uris)) == sorted(watched)

    for uri in watched:
        await unsubscribe(uri)
    await subscribe(unrelated[0])  # the marker: heard once everything before it was sent
    heard.uris.clear()
    await records.change("a", 2)
    await call(client, "update_memory", {"uri": "notes://b", "content": "marker"})
    await heard.until(unrelated[0])
    assert heard.uris == [unrelated[0]]


async def check_listen_era(client: Client) -> None:
    """The same in 2026-07-28, with subscriptions/listen; a new listen hears only its own URIs."""
    records = Records(client)
    watched = await records.create("a")
    unrelated = await records.create("b")
    got: list[str] = []
    async with client.listen(resource_subscriptions=watched) as subscription:
        assert subscription.honored.resource_subscriptions == watched
        await records.change("b", 1)
        await records.change("a", 1)
        for uri in watched:
            await heard_on(subscription, uri, got)
    assert sorted(set(got)) == sorted(watched)

    later: list[str] = []
    async with client.listen(resource_subscriptions=[unrelated[0]]) as subscription:
        await records.change("a", 2)
        await call(client, "update_memory", {"uri": "notes://b", "content": "marker"})
        await heard_on(subscription, unrelated[0], later)
    assert later == [unrelated[0]]


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_over_stdio(tmp_path: Path, every_plugin: list[str], mode: str) -> None:
    heard = Heard()
    async with served_client(config(tmp_path), mode=mode, message_handler=heard) as client:
        if mode == LEGACY:
            await check_handshake_era(client, heard)
        else:
            await check_listen_era(client)


@asynccontextmanager
async def http_client(
    http: HttpServer, mode: str, member: str = "alice", **options: Any
) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {TOKENS[member]}"}
    async with http.client(mode=mode, headers=headers, **options) as client:
        yield client


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_over_stateful_http(tmp_path: Path, every_plugin: list[str], mode: str) -> None:
    """A session (the handshake era's GET stream) carries the notifications; 2026-07-28 listens."""
    heard = Heard()
    with HttpServer.start(config(tmp_path)) as http:
        async with http_client(http, mode, message_handler=heard) as client:
            if mode == LEGACY:
                await check_handshake_era(client, heard)
            else:
                await check_listen_era(client)


async def test_stateless_http_listens_and_refuses_the_handshake_subscribe(
    tmp_path: Path, every_plugin: list[str]
) -> None:
    """Stateless HTTP keeps no connection: the handshake era is not offered subscribe and is told
    why if it asks; 2026-07-28's listen is its own stream and works."""
    with HttpServer.start(config(tmp_path, stateless=True)) as http:
        async with http_client(http, LEGACY) as client:
            await Records(client).create("legacy")
            resources = client.server_capabilities.resources
            assert resources is not None
            assert not resources.subscribe
            subscribe, unsubscribe = legacy_subscribe(client)
            for attempt in (subscribe, unsubscribe):
                with pytest.raises(MCPError) as refused:
                    await attempt("memory://notes/legacy")
                assert refused.value.error.code == types.INVALID_REQUEST
                assert refused.value.error.data == {"code": "NOT_SUPPORTED", "method": "resources/subscribe"}
                assert "stateless" in refused.value.error.message
                assert "subscriptions/listen" in refused.value.error.message
        async with http_client(http, MODERN) as client:
            await check_listen_era(client)


def listen_or_subscribe(client: Client, mode: str) -> Callable[[list[str]], AbstractAsyncContextManager[Any]]:
    """Subscribe to ``uris`` the era's way, as a block (the handshake era subscribes one by one)."""
    subscribe, _ = legacy_subscribe(client)

    @asynccontextmanager
    async def subscribed(uris: list[str]) -> AsyncIterator[Any]:
        if mode == MODERN:
            async with client.listen(resource_subscriptions=uris) as subscription:
                yield subscription
            return
        for uri in uris:
            await subscribe(uri)
        yield None

    return subscribed


@pytest.mark.parametrize("mode", [LEGACY, MODERN])
async def test_hostile_subscriptions_get_clear_errors(
    tmp_path: Path, every_plugin: list[str], mode: str
) -> None:
    with HttpServer.start(config(tmp_path)) as http:
        async with http_client(http, mode) as alice:
            await call(alice, "create_memory", {"uri": "team://secret", "content": "not for bob"})
            await call(alice, "create_task", {"title": "Shared", "task_id": "shared"})
            subscribed = listen_or_subscribe(alice, mode)
            cases = {
                "malformed": "not a uri at all",
                "unknown scheme": "ftp://example/x",
                "no such record": "task://no-such-task",
                "huge": "memory://notes/" + "x" * 100_000,
            }
            errors = {}
            for name, uri in cases.items():
                with pytest.raises(MCPError) as refused:
                    async with subscribed([uri]):
                        pass
                errors[name] = (refused.value.error.code, (refused.value.error.data or {}).get("code"))
            # the server answers on: a valid subscription still works after the refusals
            async with subscribed(["task://shared"]):
                pass
            if mode == MODERN:
                with pytest.raises(MCPError) as too_many:
                    async with alice.listen(resource_subscriptions=[f"task://t{i}" for i in range(101)]):
                        pass
            else:
                subscribe, unsubscribe = legacy_subscribe(alice)
                bulk = [{"uri": f"bulk://n/{i}", "content": f"note {i}"} for i in range(99)]
                document = {"format": "hostd-memory-export", "version": 2, "memories": bulk}
                await call(alice, "import_memories", {"data": document})
                for i in range(99):  # task://shared is the 100th
                    await subscribe(f"memory://bulk/n/{i}")
                await subscribe("task://shared")  # again: no new subscription, no refusal
                with pytest.raises(MCPError) as too_many:
                    await subscribe("memory://team/secret")
                await unsubscribe("memory://bulk/n/0")
                await subscribe("memory://team/secret")  # room again
        async with http_client(http, mode, member="bob") as bob:
            with pytest.raises(MCPError) as hidden:
                async with listen_or_subscribe(bob, mode)(["memory://team/secret"]):
                    pass
            async with listen_or_subscribe(bob, mode)(["task://shared"]):
                pass
    missing = -32602 if mode == MODERN else -32002  # each revision's code for a missing resource
    assert errors == {
        "malformed": (missing, "NOT_FOUND"),
        "unknown scheme": (missing, "NOT_FOUND"),
        "no such record": (missing, "NOT_FOUND"),
        "huge": (types.INVALID_PARAMS, "INVALID_ARGUMENT"),
    }
    assert too_many.value.error.code == types.INVALID_PARAMS
    assert too_many.value.error.data == {"code": "TOO_MANY_SUBSCRIPTIONS", "limit": 100}
    assert "At most 100" in too_many.value.error.message
    # a resource bob's profile does not serve is answered as one that does not exist
    assert (hidden.value.error.code, (hidden.value.error.data or {}).get("code")) == (missing, "NOT_FOUND")


async def test_a_stopping_server_ends_listens_gracefully(tmp_path: Path, every_plugin: list[str]) -> None:
    """On SIGTERM an open listen is ended with its final result (the client knows to listen again)
    rather than holding the stop for the grace period and then being cut."""
    import signal

    with HttpServer.start(config(tmp_path, shutdown_grace_seconds=600)) as http:
        async with http_client(http, MODERN) as client:
            watched = await Records(client).create("a")
            async with client.listen(resource_subscriptions=watched) as subscription:
                http.process.send_signal(signal.SIGTERM)
                with anyio.fail_after(60):  # a guard: without the graceful end this waits 600 s
                    events = [event async for event in subscription]
            assert events == []
        assert http.process.wait(timeout=60) == 0


async def test_a_dashboard_action_is_announced_like_the_tool(tmp_path: Path, every_plugin: list[str]) -> None:
    """A dashboard page's call goes through the host's call pipeline (surface ``ui``): what it
    changes reaches the subscribers as the tool call's would; a refused edit reaches none."""
    from hostd.core.config import config_from_mapping
    from hostd.core.host import Host
    from hostd.core.identity import Member
    from hostd.core.pipeline import ToolCall
    from hostd.protocol.server import build_server
    from hostd_errors import CodedError

    raw = {"profiles": {"default": {"plugins": ["memory"]}}, "language": "en"}
    host = Host(config_from_mapping(raw, data_dir=tmp_path / "data"))
    build_server(host)  # the server gives the host its change feed
    assert host.changes is not None
    heard: list[str] = []
    host.changes.subscribe(lambda event: heard.append(getattr(event, "uri", "")))  # type: ignore[attr-defined]
    host.startup()
    ann = Member("ann")

    async def page_call(tool: str, arguments: dict[str, object]) -> object:
        return await host.pipeline.call_for_view(ToolCall(tool, arguments, ann, "ui"))

    try:
        await page_call("create_memory", {"uri": "ui://page", "content": "one", "tags": ["ui"]})
        heard.clear()
        with pytest.raises(CodedError):
            await page_call("update_memory", {"uri": "ui://none", "content": "x"})
        assert heard == []
        await page_call("update_memory", {"uri": "ui://page", "content": "two"})
    finally:
        host.shutdown()
    assert sorted(heard) == ["memory-tag://ui", "memory://ui/page"]


async def test_over_legacy_sse(tmp_path: Path, every_plugin: list[str]) -> None:
    """The legacy SSE transport (``/sse``) is a connection of its own, also on a stateless server:
    ``resources/subscribe`` works there."""
    from mcp.client.sse import sse_client

    heard = Heard()
    with HttpServer.start(config(tmp_path, stateless=True)) as http:
        headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
        transport = sse_client(f"{http.base}/sse", headers=headers)
        async with Client(transport, mode=LEGACY, message_handler=heard) as client:
            await check_handshake_era(client, heard)


async def test_two_feeds_on_one_database_hear_each_other_once(postgres_server: Any) -> None:
    """``ResourceChanges`` as two processes would hold it: what one publishes reaches the other's
    listeners through PostgreSQL, in order, and its own listeners once (not a second time when its
    own NOTIFY comes back: PostgreSQL delivers in commit order, so it has come back before the
    other's message arrives)."""
    from hostd.protocol.subscriptions import ResourceChanges

    url = postgres_server.create_database("feeds")
    first, second = ResourceChanges(url), ResourceChanges(url)
    heard: dict[str, list[str]] = {"first": [], "second": []}
    first.subscribe(lambda event: heard["first"].append(getattr(event, "uri", "")))
    second.subscribe(lambda event: heard["second"].append(getattr(event, "uri", "")))
    uris = [f"task://burst-{n}" for n in range(50)]
    async with first.running(), second.running():
        assert first.channel is not None
        assert first.channel.listening
        assert second.channel is not None
        assert second.channel.listening
        await first.resources_updated([*uris, uris[0]])  # a repeat in one call is sent once
        with anyio.fail_after(20):
            while len(heard["second"]) < len(uris):
                await anyio.sleep(0.02)
        await second.resources_updated(["memory://from/second"])
        with anyio.fail_after(20):
            while "memory://from/second" not in heard["first"]:
                await anyio.sleep(0.02)
    assert heard["second"] == [*uris, "memory://from/second"]
    assert heard["first"] == [*uris, "memory://from/second"]  # its own burst once, not twice
