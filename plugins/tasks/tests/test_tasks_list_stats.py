"""list_tasks (order, filters, total, cursor) and get_task_stats."""

from __future__ import annotations

import pytest
from dirty_equals import IsList, IsStr
from hostd.paging import encode_cursor
from hostd_testing import Connect, check_paging, envelope_ok, ok
from tasks_support import create, refused, walk_to

pytestmark = pytest.mark.anyio


async def seed(client: object) -> dict[str, str]:
    """Six tasks of mixed priority and status; returns title -> id."""
    ids = {}
    for title, priority, status in [
        ("a", "P2", "pending"),
        ("b", "P0", "completed"),
        ("c", "P1", "pending"),
        ("d", "P0", "pending"),
        ("e", "P2", "blocked"),
        ("f", "P1", "in_progress"),
    ]:
        task = await create(client, title, priority=priority)  # type: ignore[arg-type]
        await walk_to(client, task["task_id"], status)  # type: ignore[arg-type]
        ids[title] = task["task_id"]
    return ids


@pytest.mark.smoke
async def test_list_is_most_urgent_first_then_oldest(connect: Connect) -> None:
    async with connect() as client:
        await seed(client)
        listed = await ok(client, "list_tasks")
    assert [t["title"] for t in listed["tasks"]] == ["b", "d", "c", "f", "a", "e"]
    assert listed["total"] == 6
    assert listed["next_cursor"] is None
    assert listed["truncated"] is False


async def test_list_filters_by_status_and_priority(connect: Connect) -> None:
    async with connect() as client:
        await seed(client)
        pending = await ok(client, "list_tasks", status="pending")
        p1 = await ok(client, "list_tasks", priority="P1")
        both = await ok(client, "list_tasks", status="pending", priority="P2")
    assert [t["title"] for t in pending["tasks"]] == ["d", "c", "a"]
    assert pending["total"] == 3
    assert [t["title"] for t in p1["tasks"]] == ["c", "f"]
    assert [t["title"] for t in both["tasks"]] == ["a"]
    assert both["total"] == 1


@pytest.mark.served
async def test_the_cursor_walks_every_task_once(connect: Connect) -> None:
    """hostd-testing's paging rule, four at a time: every task once, in order, on every page the
    same total; the cursor bound to list_tasks and its filters."""
    async with connect() as client:
        await seed(client)
        walked = await check_paging(
            client,
            "list_tasks",
            "tasks",
            page_size=4,
            other_filters={"priority": "P1"},
            key=lambda t: t["title"],
        )
    assert [t["title"] for t in walked] == ["b", "d", "c", "f", "a", "e"]


async def test_the_cursor_keeps_the_filter_order(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        for n in range(7):
            await create(client, f"p{n % 3}-{n}", priority=f"P{n % 3}")
        first = await ok(client, "list_tasks", limit=2, priority="P0")
        second = await ok(client, "list_tasks", limit=2, priority="P0", cursor=first["next_cursor"])
    assert [t["title"] for t in first["tasks"]] == ["p0-0", "p0-3"]
    assert [t["title"] for t in second["tasks"]] == ["p0-6"]
    assert second["next_cursor"] is None


#: list_tasks' filters, all omitted: what a cursor of the unfiltered list is bound to.
NO_FILTERS = dict.fromkeys(
    ["status", "priority", "label", "parent_id", "query", "created_by", "claimed_by"], None
)


@pytest.mark.parametrize(
    "cursor",
    [
        "abc",
        "3:1",  # the readable cursors of before are not cursors any more
        "0:",
        ":5",
        "0:1:2",
        "0:" + "9" * 19,
        "-1:5",
        "x" * 3000,
        # Bound to the right listing and filters, but holding no list position:
        encode_cursor("list_tasks", NO_FILTERS, [3, 1]),
        encode_cursor("list_tasks", NO_FILTERS, [0, -1]),
        encode_cursor("list_tasks", NO_FILTERS, "0:5"),
        encode_cursor("list_tasks", NO_FILTERS, [0, 1, 2]),
        encode_cursor("list_tasks", NO_FILTERS, [True, 1]),
    ],
)
async def test_a_malformed_cursor_is_invalid(connect_in_memory: Connect, cursor: str) -> None:
    async with connect_in_memory() as client:
        error = await refused(client, "list_tasks", "INVALID_ARGUMENT", cursor=cursor)
    assert error["details"]["argument"] == "cursor"


async def test_a_cursor_from_other_filters_or_another_listing_is_refused(
    connect_in_memory: Connect,
) -> None:
    """A cursor resumes the listing it was made for, with the same filters, and nothing else."""
    async with connect_in_memory() as client:
        for n in range(6):
            await create(client, f"t{n}", priority=f"P{n % 2}", labels=["x"])
        first = await ok(client, "list_tasks", limit=1, priority="P0")
        cursor = first["next_cursor"]
        assert cursor
        assert first["truncated"] is True
        other_filters = [
            {"priority": "P1"},
            {},
            {"priority": "P0", "status": "pending"},
            {"priority": "P0", "label": "x"},
            {"priority": "P0", "query": "t0"},
            {"priority": "P0", "created_by": "someone"},
        ]
        refusals = [
            await refused(client, "list_tasks", "INVALID_ARGUMENT", **filters, limit=1, cursor=cursor)
            for filters in other_filters
        ]
        foreign = encode_cursor("list_memories", {"priority": "P0"}, [0, 1])
        other_listing = await refused(client, "list_tasks", "INVALID_ARGUMENT", priority="P0", cursor=foreign)
        # The same filters (a label in another case is the same label) still resume the list.
        again = await ok(client, "list_tasks", limit=1, priority="P0", cursor=cursor)
    for error in refusals:
        assert error["details"] == {"argument": "cursor", "reason": "other_filters"}, error
    assert other_listing["details"] == {"argument": "cursor", "reason": "other_listing"}
    assert [t["title"] for t in again["tasks"]] == ["t2"]


async def test_limit_defaults_to_20_and_pages_the_rest(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        for n in range(25):
            await create(client, f"t{n}")
        first = await ok(client, "list_tasks")
        rest = await ok(client, "list_tasks", cursor=first["next_cursor"])
        whole = await ok(client, "list_tasks", limit=100)
    page = {"message": IsStr, "total": 25}
    assert first == envelope_ok(**page, tasks=IsList(length=20), next_cursor=IsStr, truncated=True)
    assert rest == envelope_ok(**page, tasks=IsList(length=5), next_cursor=None, truncated=False)
    every = first["tasks"] + rest["tasks"]
    assert whole == envelope_ok(**page, tasks=every, next_cursor=None, truncated=False)


async def test_stats_count_by_status_and_priority(connect: Connect) -> None:
    async with connect() as client:
        ids = await seed(client)
        waiting = await create(client, "g", priority="P0", depends_on=[ids["e"]])
        stats = await ok(client, "get_task_stats")
    assert stats["total"] == 7
    assert stats["by_status"] == {"pending": 4, "in_progress": 1, "completed": 1, "failed": 0, "blocked": 1}
    assert stats["by_priority"] == {"P0": 3, "P1": 2, "P2": 2}
    assert stats["completion_rate"] == pytest.approx(1 / 7, abs=1e-4)
    assert stats["waiting_on_dependencies"] == 1
    assert stats["oldest_pending_task_id"] == ids["a"]
    assert stats["oldest_pending_age_seconds"] >= 0
    assert waiting["task_id"] != stats["oldest_pending_task_id"]
    assert "7 tasks" in stats["message"]


async def test_stats_of_an_empty_list(connect: Connect) -> None:
    async with connect() as client:
        stats = await ok(client, "get_task_stats")
    assert stats["total"] == 0
    assert set(stats["by_status"].values()) == {0}
    assert stats["completion_rate"] is None
    assert stats["oldest_pending_task_id"] is None
    assert stats["oldest_pending_age_seconds"] is None
    assert "No tasks" in stats["message"]


async def test_oldest_pending_follows_creation_not_priority(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        old = await create(client, "old and unimportant", priority="P2")
        await create(client, "new and urgent", priority="P0")
        stats = await ok(client, "get_task_stats")
        await walk_to(client, old["task_id"], "in_progress")
        after = await ok(client, "get_task_stats")
    assert stats["oldest_pending_task_id"] == old["task_id"]
    assert after["oldest_pending_task_id"] != old["task_id"]
