"""create_task: the record it answers, ids (given and generated), titles, priorities, dependencies."""

from __future__ import annotations

import getpass
import re

import pytest
from dirty_equals import IsStr
from hostd_testing import Connect, envelope_ok, ok
from tasks_support import RECORD_KEYS, STAMP, create, refused

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
@pytest.mark.served
async def test_create_answers_the_full_record(connect: Connect) -> None:
    async with connect() as client:
        envelope = await ok(client, "create_task", title="Write the report", description="two pages")
    task_id = envelope["task"]["task_id"]
    assert envelope == envelope_ok(
        f"Created task {task_id} 'Write the report' (P2, pending).",
        task={
            "task_id": IsStr(regex=r"t-[0-9]{1,6}"),
            "title": "Write the report",
            "description": "two pages",
            "status": "pending",
            "priority": "P2",
            "depends_on": [],
            "linked_session_id": None,
            "parent_id": None,
            "labels": [],
            "acceptance": "",
            "notes": [],
            "subtasks": None,
            "created_at": STAMP,
            "updated_at": envelope["task"]["created_at"],
            "created_by": getpass.getuser(),
            "claimed_by": None,
            "lease_expires_at": None,
            "claim_count": 0,
            "expired_claims": 0,
        },
    )
    assert set(envelope["task"]) == RECORD_KEYS


async def test_generated_ids_are_short_readable_and_distinct(connect: Connect) -> None:
    async with connect() as client:
        ids = [(await create(client, f"task {n}"))["task_id"] for n in range(5)]
    assert len(set(ids)) == 5
    assert all(re.fullmatch(r"t-[0-9]{1,6}", task_id) for task_id in ids), ids


async def test_a_given_id_is_kept_and_must_be_new(connect: Connect) -> None:
    async with connect() as client:
        task = await create(client, "first", task_id="release-1.2")
        assert task["task_id"] == "release-1.2"
        error = await refused(client, "create_task", "ALREADY_EXISTS", title="again", task_id="release-1.2")
        assert error["details"]["task_id"] == "release-1.2"
        listed = await ok(client, "list_tasks")
    assert listed["total"] == 1
    assert listed["tasks"][0]["title"] == "first"


async def test_generated_ids_skip_ids_a_caller_already_chose(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        first = await create(client, "generated")
        await create(client, "chosen", task_id="t-2")
        await create(client, "chosen too", task_id="t-4")
        later = [(await create(client, f"generated {n}"))["task_id"] for n in range(3)]
    assert first["task_id"] == "t-1"
    assert "t-2" not in later
    assert "t-4" not in later
    assert len(set(later)) == 3


async def test_a_refused_create_uses_up_no_generated_id(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        first = await create(client, "generated")
        await refused(client, "create_task", "NOT_FOUND", title="x", depends_on=["ghost"])
        await refused(client, "create_task", "NOT_FOUND", title="x", parent_id="ghost")
        second = await create(client, "generated again")
    assert (first["task_id"], second["task_id"]) == ("t-1", "t-2")


@pytest.mark.parametrize("priority", ["P0", "P1", "P2"])
async def test_each_priority_is_accepted(connect_in_memory: Connect, priority: str) -> None:
    async with connect_in_memory() as client:
        task = await create(client, "x", priority=priority)
    assert task["priority"] == priority


async def test_title_may_hold_200_characters(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        task = await create(client, "标" * 200)
    assert task["title"] == "标" * 200


@pytest.mark.parametrize("title", ["   ", "\t\n"])
async def test_blank_titles_are_invalid(connect_in_memory: Connect, title: str) -> None:
    async with connect_in_memory() as client:
        error = await refused(client, "create_task", "INVALID_ARGUMENT", title=title)
        listed = await ok(client, "list_tasks")
    assert error["details"]["argument"] == "title"
    assert listed["total"] == 0


async def test_title_is_trimmed(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        task = await create(client, "  tidy up  ")
    assert task["title"] == "tidy up"


async def test_dependencies_are_kept_in_order_without_repeats(connect: Connect) -> None:
    async with connect() as client:
        a = await create(client, "a")
        b = await create(client, "b")
        c = await create(client, "c", depends_on=[b["task_id"], a["task_id"], b["task_id"]])
    assert c["depends_on"] == [b["task_id"], a["task_id"]]


async def test_dependencies_must_name_existing_tasks(connect: Connect) -> None:
    async with connect() as client:
        a = await create(client, "a")
        error = await refused(
            client, "create_task", "NOT_FOUND", title="b", depends_on=[a["task_id"], "ghost", "t-99"]
        )
        listed = await ok(client, "list_tasks")
    assert error["details"]["missing"] == ["ghost", "t-99"]
    assert error["details"]["argument"] == "depends_on"
    assert listed["total"] == 1


async def test_a_task_depending_on_itself_is_a_cycle(connect: Connect) -> None:
    async with connect() as client:
        error = await refused(
            client,
            "create_task",
            "INVALID_ARGUMENT",
            title="loop",
            task_id="loop",
            depends_on=["loop"],
        )
        listed = await ok(client, "list_tasks")
    assert error["details"]["argument"] == "depends_on"
    assert error["details"]["cycle"] == ["loop", "loop"]
    assert "cycle" in error["message"]
    assert listed["total"] == 0


async def test_a_cycle_through_an_existing_task_cannot_be_formed(connect_in_memory: Connect) -> None:
    """A -> B -> A would need B to name A before A exists: dependencies point only backwards."""
    async with connect_in_memory() as client:
        await create(client, "b", task_id="b")
        await create(client, "a", task_id="a", depends_on=["b"])
        # Re-creating b to depend on a is refused: b already exists, so no edge b -> a can appear.
        await refused(client, "create_task", "ALREADY_EXISTS", title="b", task_id="b", depends_on=["a"])
        listed = await ok(client, "list_tasks")
    by_id = {task["task_id"]: task for task in listed["tasks"]}
    assert by_id["b"]["depends_on"] == []
    assert by_id["a"]["depends_on"] == ["b"]
