"""``NotifyChannel``: messages between processes through PostgreSQL's LISTEN/NOTIFY, on a real
server. Two channels stand for two processes: each hears what the other sends (and its own, which
the caller filters); a listening connection the server ends is reopened; a payload too large for
NOTIFY is refused before anything is sent; an unreachable database is a ``False``, not an error."""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable

import anyio
import pytest
from hostd_db.notify import MAX_PAYLOAD_BYTES, NotifyChannel
from hostd_testing.postgres import PostgresServer

pytestmark = pytest.mark.anyio

CHANNEL = "hostd_notify_test"


def collector() -> tuple[list[str], Callable[[str], Awaitable[None]]]:
    heard: list[str] = []

    async def receive(payload: str) -> None:
        heard.append(payload)

    return heard, receive


async def until(condition: Callable[[], bool]) -> None:
    with anyio.fail_after(20):
        while not condition():
            await anyio.sleep(0.02)


async def test_two_processes_hear_each_other_and_a_dropped_listener_comes_back(
    postgres_server: PostgresServer,
) -> None:
    url = postgres_server.create_database("notify")
    first_heard, first_receive = collector()
    second_heard, second_receive = collector()
    first = NotifyChannel(url, CHANNEL, first_receive)
    second = NotifyChannel(url, CHANNEL, second_receive)
    async with anyio.create_task_group() as group:
        for channel in (first, second):
            started = anyio.Event()
            group.start_soon(functools.partial(channel.run, started=started.set))
            await started.wait()
        assert first.listening
        assert second.listening
        assert await first.send("from the first")
        await until(lambda: "from the first" in second_heard and "from the first" in first_heard)

        database = url.rsplit("/", 1)[1]
        postgres_server.psql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE application_name = 'hostd-notify-{CHANNEL}' AND query LIKE 'LISTEN%'",
            database,
        )
        await until(lambda: second.connections_opened == 2 and second.listening)
        await until(lambda: first.connections_opened == 2 and first.listening)
        assert await first.send("after the drop")  # the sender's own connection was kept
        await until(lambda: "after the drop" in second_heard)
        with pytest.raises(ValueError, match="at most"):
            await second.send("x" * (MAX_PAYLOAD_BYTES + 1))
        group.cancel_scope.cancel()
    await first.aclose()
    await second.aclose()
    assert second_heard == ["from the first", "after the drop"]


async def test_an_unreachable_database_is_reported_not_raised() -> None:
    channel = NotifyChannel(
        "postgresql://nobody@127.0.0.1:1/nothing", CHANNEL, collector()[1], connect_timeout_s=1
    )
    assert await channel.send("lost") is False
    async with anyio.create_task_group() as group:
        started = anyio.Event()
        group.start_soon(lambda: channel.run(started=started.set))
        await started.wait()  # the first attempt failed: the retries go on behind
        assert not channel.listening
        group.cancel_scope.cancel()
    assert channel.connections_opened == 0
