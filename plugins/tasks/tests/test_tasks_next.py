"""get_next_task: urgency order, dependencies, claiming, and why nothing is offered."""

from __future__ import annotations

import pytest
from hostd_testing import Connect, ok
from tasks_support import create, walk_to

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
async def test_most_urgent_first_then_oldest(connect: Connect) -> None:
    async with connect() as client:
        for title, priority in [
            ("p2 old", "P2"),
            ("p0 old", "P0"),
            ("p1", "P1"),
            ("p0 new", "P0"),
            ("p2 new", "P2"),
        ]:
            await create(client, title, priority=priority)
        order = []
        for _ in range(5):
            answer = await ok(client, "get_next_task", claim=True)
            order.append(answer["task"]["title"])
    assert order == ["p0 old", "p0 new", "p1", "p2 old", "p2 new"]


async def test_without_claim_the_task_stays_pending(connect: Connect) -> None:
    async with connect() as client:
        task = await create(client, "only")
        first = await ok(client, "get_next_task")
        second = await ok(client, "get_next_task", claim=False)
    assert first["task"] == second["task"] == task
    assert first["claimed"] is False
    assert "claim=true" in first["message"]


async def test_claim_moves_the_task_to_in_progress(connect: Connect) -> None:
    async with connect() as client:
        task = await create(client, "take me")
        answer = await ok(client, "get_next_task", claim=True)
        listed = await ok(client, "list_tasks", status="in_progress")
    assert answer["claimed"] is True
    assert answer["task"]["task_id"] == task["task_id"]
    assert answer["task"]["status"] == "in_progress"
    assert [t["task_id"] for t in listed["tasks"]] == [task["task_id"]]


async def test_a_task_waits_until_every_dependency_is_completed(connect: Connect) -> None:
    async with connect() as client:
        a = await create(client, "a", priority="P2")
        b = await create(client, "b", priority="P2")
        urgent = await create(client, "urgent", priority="P0", depends_on=[a["task_id"], b["task_id"]])
        assert (await ok(client, "get_next_task"))["task"]["task_id"] == a["task_id"]
        await walk_to(client, a["task_id"], "completed")
        assert (await ok(client, "get_next_task"))["task"]["task_id"] == b["task_id"]
        await walk_to(client, b["task_id"], "failed")
        answer = await ok(client, "get_next_task")
        assert answer["task"] is None, "a failed dependency is not a completed one"
        assert answer["reason"] == "waiting_on_dependencies"
        await ok(client, "update_task_status", task_id=b["task_id"], new_status="pending")
        await walk_to(client, b["task_id"], "completed")
        assert (await ok(client, "get_next_task"))["task"]["task_id"] == urgent["task_id"]


async def test_a_reopened_dependency_holds_its_dependents_again(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        base = await create(client, "base", priority="P2")
        await walk_to(client, base["task_id"], "completed")
        top = await create(client, "top", priority="P0", depends_on=[base["task_id"]])
        assert (await ok(client, "get_next_task"))["task"]["task_id"] == top["task_id"]
        await ok(client, "update_task_status", task_id=base["task_id"], new_status="pending")
        assert (await ok(client, "get_next_task"))["task"]["task_id"] == base["task_id"]


async def test_an_empty_list_offers_nothing_and_says_so(connect: Connect) -> None:
    async with connect() as client:
        answer = await ok(client, "get_next_task", claim=True)
    assert answer["task"] is None
    assert answer["claimed"] is False
    assert answer["reason"] == "empty"
    assert "empty" in answer["message"]


async def test_everything_waiting_on_dependencies_is_explained(connect: Connect) -> None:
    async with connect() as client:
        base = await create(client, "base")
        await walk_to(client, base["task_id"], "in_progress")
        await create(client, "after 1", depends_on=[base["task_id"]])
        await create(client, "after 2", depends_on=[base["task_id"]])
        answer = await ok(client, "get_next_task", claim=True)
        still = await ok(client, "list_tasks", status="pending")
    assert answer["task"] is None
    assert answer["reason"] == "waiting_on_dependencies"
    assert "2 pending tasks wait on dependencies" in answer["message"]
    assert still["total"] == 2, "nothing may be claimed when nothing is ready"


async def test_nothing_pending_is_explained(connect: Connect) -> None:
    async with connect() as client:
        done = await create(client, "done")
        await walk_to(client, done["task_id"], "completed")
        stuck = await create(client, "stuck")
        await walk_to(client, stuck["task_id"], "blocked")
        answer = await ok(client, "get_next_task")
    assert answer["task"] is None
    assert answer["reason"] == "none_pending"
    assert "1 blocked" in answer["message"]


async def test_blocked_and_failed_tasks_are_never_offered(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        blocked = await create(client, "blocked", priority="P0")
        await walk_to(client, blocked["task_id"], "blocked")
        failed = await create(client, "failed", priority="P0")
        await walk_to(client, failed["task_id"], "failed")
        plain = await create(client, "plain", priority="P2")
        answer = await ok(client, "get_next_task")
    assert answer["task"]["task_id"] == plain["task_id"]
