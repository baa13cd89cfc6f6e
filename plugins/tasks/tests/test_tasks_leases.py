"""Claims are leases: the answer says until when; the holder renews and releases; a lease that
lapses puts the task back to pending on its own, counted and in the history; a late update from
the member whose lease lapsed is refused once someone else holds the task.

Every test runs on both stores (``backend``). Members are switched inside one process through
``LOGNAME`` (the host takes the local login name as the member of in-process calls). Leases here
are 1-3 s (the minimum is 1 s), and the tests wait for them by polling, never by fixed sleeps.
"""

from __future__ import annotations

import itertools
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import anyio
import pytest
from hostd_testing import Client, Connect, ok
from tasks_support import create, refused

pytestmark = pytest.mark.anyio


def moment(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture
def act_as(monkeypatch: pytest.MonkeyPatch) -> Any:
    def switch(member: str) -> None:
        monkeypatch.setenv("LOGNAME", member)

    return switch


async def wait_until_pending(client: Client, task_id: str, *, within: float = 15.0) -> dict[str, Any]:
    """get_task until the task reads pending (its lease lapsed); its answer."""
    give_up = time.monotonic() + within
    while True:
        answer = await ok(client, "get_task", task_id=task_id)
        if answer["task"]["status"] == "pending" or time.monotonic() > give_up:
            return answer
        await anyio.sleep(0.1)


@pytest.mark.served
async def test_a_claim_says_until_when_and_bad_lease_lengths_are_refused(
    connect: Connect, act_as: Any
) -> None:
    act_as("alice")
    async with connect() as client:
        await create(client, "work", task_id="w")
        before = datetime.now(UTC)
        claimed = await ok(client, "get_next_task", claim=True, lease_seconds=600)
        listed = await ok(client, "list_tasks", claimed_by="alice")
        shown = await ok(client, "get_task", task_id="w")
        too_short = await refused(client, "get_next_task", "INVALID_ARGUMENT", claim=True, lease_seconds=0)
        too_long = await refused(client, "renew_claim", "INVALID_ARGUMENT", task_id="w", lease_seconds=86_401)
    task = claimed["task"]
    expires = moment(task["lease_expires_at"])
    # The database's clock set it (SQLite: this machine's), 600 s from the claim
    assert before + timedelta(seconds=599) <= expires <= datetime.now(UTC) + timedelta(seconds=601)
    assert (task["claimed_by"], task["claim_count"], task["expired_claims"]) == ("alice", 1, 0)
    assert task["lease_expires_at"] in claimed["message"]
    assert "renew_claim" in claimed["message"]
    assert listed["tasks"][0]["lease_expires_at"] == task["lease_expires_at"]
    assert shown["task"]["lease_expires_at"] == task["lease_expires_at"]
    assert f"Held by alice until {task['lease_expires_at']}" in shown["message"]
    assert too_short["details"]["argument"] == "lease_seconds"
    assert too_long["details"]["argument"] == "lease_seconds"


async def test_a_lapsed_lease_returns_the_task_to_pending_counted_and_in_history(
    connect_in_memory: Connect, act_as: Any
) -> None:
    act_as("alice")
    async with connect_in_memory() as client:
        await create(client, "work", task_id="w")
        claimed = (await ok(client, "get_next_task", claim=True, lease_seconds=1))["task"]
        still = await ok(client, "get_task", task_id="w")
        lapsed = await wait_until_pending(client, "w")
        listed = await ok(client, "list_tasks", status="pending")
        stats = await ok(client, "get_task_stats")
    assert still["task"]["status"] == "in_progress"
    task = lapsed["task"]
    assert (task["status"], task["claimed_by"], task["lease_expires_at"]) == ("pending", None, None)
    assert (task["claim_count"], task["expired_claims"]) == (1, 1)
    last = lapsed["history"][-1]
    assert (last["event"], last["by"]) == ("lease_expired", None)
    assert last["details"] == {"holder": "alice", "from": "in_progress", "to": "pending"}
    assert moment(last["at"]) == moment(claimed["lease_expires_at"]), "dated when the lease lapsed"
    assert [t["task_id"] for t in listed["tasks"]] == ["w"]
    assert stats["by_status"]["pending"] == 1
    assert stats["by_status"]["in_progress"] == 0


async def test_a_late_update_is_refused_naming_the_holder_and_nothing_is_applied(
    connect_in_memory: Connect, act_as: Any
) -> None:
    async with connect_in_memory() as client:
        act_as("alice")
        await create(client, "work", task_id="w")
        await ok(client, "get_next_task", claim=True, lease_seconds=1)
        await wait_until_pending(client, "w")
        act_as("bob")
        bobs = (await ok(client, "get_next_task", claim=True, lease_seconds=600))["task"]
        act_as("alice")
        late_status = await refused(
            client, "update_task_status", "CONFLICT", task_id="w", new_status="completed"
        )
        late_note = await refused(client, "update_task", "CONFLICT", task_id="w", append_note="done!")
        late_renew = await refused(client, "renew_claim", "CONFLICT", task_id="w")
        late_release = await refused(client, "release_claim", "CONFLICT", task_id="w")
        after = await ok(client, "get_task", task_id="w")
        act_as("bob")
        finished = await ok(client, "update_task_status", task_id="w", new_status="completed")
        act_as("alice")
        after_done = await refused(client, "update_task", "CONFLICT", task_id="w", title="mine")
    assert bobs["task_id"] == "w"
    assert bobs["claim_count"] == 2
    for error in (late_status, late_note, late_renew, late_release, after_done):
        assert error["details"]["holder"] == "bob"
        assert error["details"]["member"] == "alice"
        assert "bob" in error["message"]
        assert "expired" in error["message"]
    assert after["task"]["notes"] == []
    assert after["task"]["status"] == "in_progress"
    assert after["task"]["claimed_by"] == "bob"
    assert after["task"]["lease_expires_at"] == bobs["lease_expires_at"], "alice renewed nothing"
    assert finished["task"]["status"] == "completed"


async def test_after_a_lapse_nobody_took_the_holder_may_claim_again_but_not_finish_unclaimed(
    connect_in_memory: Connect, act_as: Any
) -> None:
    act_as("alice")
    async with connect_in_memory() as client:
        await create(client, "work", task_id="w")
        await ok(client, "get_next_task", claim=True, lease_seconds=1)
        await wait_until_pending(client, "w")
        finish = await refused(client, "update_task_status", "CONFLICT", task_id="w", new_status="completed")
        noted = await ok(client, "update_task", task_id="w", append_note="still on it")
        again = await ok(
            client, "update_task_status", task_id="w", new_status="in_progress", lease_seconds=600
        )
        done = await ok(client, "update_task_status", task_id="w", new_status="completed")
    assert finish["details"]["holder"] is None
    assert "pending again" in finish["message"]
    assert noted["task"]["notes"][0]["text"] == "still on it"
    assert again["task"]["claimed_by"] == "alice"
    assert again["task"]["claim_count"] == 2
    assert done["task"]["status"] == "completed"
    assert done["task"]["lease_expires_at"] is None


async def test_renewals_keep_a_slow_task(connect_in_memory: Connect, act_as: Any) -> None:
    """A 2 s lease renewed every ~0.5 s (renew_claim, a note, the same status again) outlives 4 s."""
    async with connect_in_memory() as client:
        act_as("alice")
        await create(client, "slow", task_id="slow")
        first = (await ok(client, "get_next_task", claim=True, lease_seconds=2))["task"]
        started = time.monotonic()
        renewals = [
            ("renew_claim", {"task_id": "slow"}),
            ("update_task", {"task_id": "slow", "append_note": "half way"}),
            ("update_task_status", {"task_id": "slow", "new_status": "in_progress"}),
        ]
        seen = [first["lease_expires_at"]]
        n = 0
        while time.monotonic() - started < 4.0:
            await anyio.sleep(0.5)
            tool, arguments = renewals[n % len(renewals)]
            answer = await ok(client, tool, **arguments)
            seen.append(answer["task"]["lease_expires_at"])
            n += 1
        act_as("bob")
        offered = await ok(client, "get_next_task", claim=True)
        held = await ok(client, "get_task", task_id="slow")
    assert all(moment(b) > moment(a) for a, b in itertools.pairwise(seen)), seen
    assert offered["task"] is None
    assert offered["reason"] == "none_pending"
    task = held["task"]
    assert (task["status"], task["claimed_by"], task["expired_claims"]) == ("in_progress", "alice", 0)
    assert [h["event"] for h in held["history"]].count("lease_expired") == 0


async def test_release_gives_the_task_back_and_only_the_holder_may(
    connect_in_memory: Connect, act_as: Any
) -> None:
    async with connect_in_memory() as client:
        act_as("alice")
        await create(client, "work", task_id="w")
        await ok(client, "get_next_task", claim=True)
        act_as("bob")
        not_bobs = await refused(client, "release_claim", "CONFLICT", task_id="w")
        not_renewed = await refused(client, "renew_claim", "CONFLICT", task_id="w")
        act_as("alice")
        released = await ok(client, "release_claim", task_id="w")
        again = await refused(client, "release_claim", "CONFLICT", task_id="w")
        details = await ok(client, "get_task", task_id="w")
    assert not_bobs["details"]["holder"] == "alice"
    assert "alice holds it" in not_bobs["message"]
    assert not_renewed["details"]["holder"] == "alice"
    assert released["task"]["status"] == "pending"
    assert released["lease_expires_at"] is None
    assert released["task"]["claimed_by"] is None
    assert "nobody holds it" in again["message"]
    assert (details["history"][-1]["event"], details["history"][-1]["by"]) == ("released", "alice")


async def test_lease_refusals_in_chinese(connect_in_memory: Connect, act_as: Any) -> None:
    async with connect_in_memory(language="zh") as client:
        act_as("alice")
        await create(client, "work", task_id="w")
        await ok(client, "get_next_task", claim=True, lease_seconds=1)
        await wait_until_pending(client, "w")
        act_as("bob")
        claimed = await ok(client, "get_next_task", claim=True)
        act_as("alice")
        late = await refused(client, "update_task_status", "CONFLICT", task_id="w", new_status="completed")
    assert "领取有效期至" in claimed["message"]
    assert "alice 对任务 w 的领取已过期，现由 bob 持有" in late["message"]
    assert "get_next_task" in late["hint"]


async def test_the_lease_tools_are_described_and_annotated_as_what_they_do(
    connect_in_memory: Connect,
) -> None:
    async with connect_in_memory() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for name, idempotent in (("renew_claim", False), ("release_claim", True)):
        tool = tools[name]
        assert tool.title
        assert tool.description
        assert tool.annotations is not None
        hints = tool.annotations
        assert (hints.read_only_hint, hints.destructive_hint, hints.idempotent_hint) == (
            False,
            False,
            idempotent,
        )
    lease = tools["get_next_task"].input_schema["properties"]["lease_seconds"]
    assert (lease["minimum"], lease["maximum"]) == (1, 86400)
    assert "tasks.lease_seconds" in str(lease.get("description"))
