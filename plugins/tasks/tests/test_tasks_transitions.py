"""update_task_status: every from/to pair of the issue's table, in-process and in a real server."""

from __future__ import annotations

import itertools

import pytest
from hostd_testing import Client, Connect, call, ok
from tasks_support import ALLOWED, STATUSES, create, refused, walk_to

pytestmark = pytest.mark.anyio

PAIRS = list(itertools.product(STATUSES, STATUSES))


async def check_move(client: Client, start: str, target: str) -> None:
    """Bring a fresh task to ``start``, ask for ``target``, check the answer against the table."""
    task = await create(client, f"{start} -> {target}")
    await walk_to(client, task["task_id"], start)
    before = (await ok(client, "list_tasks", status=start))["tasks"]
    before_record = next(t for t in before if t["task_id"] == task["task_id"])
    arguments = {"task_id": task["task_id"], "new_status": target}
    envelope = await call(client, "update_task_status", **arguments)
    is_error = envelope["status"] == "error"
    allowed_from_start = sorted(t for s, t in ALLOWED if s == start)
    if start == target:
        assert not is_error, envelope
        assert envelope["changed"] is False
        after_record = dict(envelope["task"])
        if start == "in_progress":
            # in_progress again by its holder renews the claim's lease, and changes nothing else
            assert after_record.pop("lease_expires_at") >= before_record["lease_expires_at"]
            before_record = {k: v for k, v in before_record.items() if k != "lease_expires_at"}
        assert after_record == before_record, "a no-op must not touch the record (not even updated_at)"
        assert "nothing changed" in envelope["message"]
    elif (start, target) in ALLOWED:
        assert not is_error, envelope
        assert envelope["changed"] is True
        assert envelope["previous_status"] == start
        assert envelope["task"]["status"] == target
        assert envelope["task"]["updated_at"] >= before_record["updated_at"]
        assert sorted(envelope["allowed_next"]) == sorted(t for s, t in ALLOWED if s == target)
    else:
        assert is_error, f"{start} -> {target} must be refused"
        error = envelope["error"]
        assert error["code"] == "CONFLICT"
        assert sorted(error["details"]["allowed_next_statuses"]) == allowed_from_start
        assert error["details"]["current_status"] == start
        assert error["details"]["requested_status"] == target
        for status in allowed_from_start:
            assert status in error["message"]
        after = (await ok(client, "list_tasks", status=start))["tasks"]
        assert before_record in after, "a refused move must leave the task as it was"


def test_the_table_has_eleven_moves() -> None:
    assert len(ALLOWED) == 11
    assert len(PAIRS) == 25


@pytest.mark.parametrize(("start", "target"), PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
async def test_every_pair_in_memory(connect_in_memory: Connect, start: str, target: str) -> None:
    async with connect_in_memory() as client:
        await check_move(client, start, target)


async def test_every_pair_through_a_real_server(connect_served: Connect) -> None:
    async with connect_served() as client:
        for start, target in PAIRS:
            await check_move(client, start, target)


async def test_the_plugin_table_matches_the_issue() -> None:
    from hostd_tasks.rules import TRANSITIONS

    assert {(s, t) for s, targets in TRANSITIONS.items() for t in targets} == ALLOWED


async def test_changing_an_unknown_task_is_not_found(connect: Connect) -> None:
    async with connect() as client:
        error = await refused(
            client, "update_task_status", "NOT_FOUND", task_id="t-404", new_status="completed"
        )
    assert error["details"]["task_id"] == "t-404"


async def test_a_released_task_is_offered_again(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        task = await create(client)
        claimed = await ok(client, "get_next_task", claim=True)
        assert claimed["task"]["task_id"] == task["task_id"]
        await ok(client, "update_task_status", task_id=task["task_id"], new_status="pending")
        offered = await ok(client, "get_next_task")
    assert offered["task"]["task_id"] == task["task_id"]
