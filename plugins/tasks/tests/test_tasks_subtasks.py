"""Subtasks (parent_id, split_task), leaf work from get_next_task, and tasks stuck behind failed work."""

from __future__ import annotations

import pytest
from hostd_testing import Connect, ok
from tasks_support import create, refused, walk_to

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
@pytest.mark.served
async def test_split_creates_the_children_and_the_parent_shows_their_progress(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "release", task_id="rel", priority="P1")
        answer = await ok(
            client,
            "split_task",
            task_id="rel",
            subtasks=[
                {"title": "build", "task_id": "build", "priority": "P0", "labels": ["CI"]},
                {"title": "test", "depends_on": ["build"], "acceptance": "all green"},
                {"title": "announce"},
            ],
        )
        children = await ok(client, "list_tasks", parent_id="rel")
        await walk_to(client, "build", "completed")
        parent = (await ok(client, "get_task", task_id="rel"))["task"]
    subtasks = answer["subtasks"]
    assert [s["title"] for s in subtasks] == ["build", "test", "announce"]
    assert all(s["parent_id"] == "rel" and s["status"] == "pending" for s in subtasks)
    assert subtasks[0]["labels"] == ["ci"]
    assert subtasks[1]["depends_on"] == ["build"]
    assert subtasks[1]["acceptance"] == "all green"
    assert answer["task"]["subtasks"] == {
        "total": 3,
        "by_status": {"pending": 3, "in_progress": 0, "completed": 0, "failed": 0, "blocked": 0},
    }
    assert children["total"] == 3
    assert parent["subtasks"]["by_status"]["completed"] == 1
    assert "3" in answer["message"]
    assert "build" in answer["message"]


async def test_a_split_with_one_bad_subtask_creates_none(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "parent", task_id="p")
        error = await refused(
            client,
            "split_task",
            "NOT_FOUND",
            task_id="p",
            subtasks=[{"title": "fine", "task_id": "fine"}, {"title": "bad", "depends_on": ["ghost"]}],
        )
        blank = await refused(
            client,
            "split_task",
            "INVALID_ARGUMENT",
            task_id="p",
            subtasks=[{"title": "ok"}, {"title": "   "}],
        )
        listed = await ok(client, "list_tasks")
        parent = await ok(client, "get_task", task_id="p")
    assert error["details"]["missing"] == ["ghost"]
    assert blank["details"]["argument"] == "subtasks.1.title"
    assert listed["total"] == 1
    assert parent["task"]["subtasks"] is None
    assert [entry["event"] for entry in parent["history"]] == ["created"]


async def test_split_refusals(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "p", task_id="p")
        missing = await refused(client, "split_task", "NOT_FOUND", task_id="ghost", subtasks=[{"title": "x"}])
        empty = await refused(client, "split_task", "INVALID_ARGUMENT", task_id="p", subtasks=[])
        extra = await refused(
            client,
            "split_task",
            "INVALID_ARGUMENT",
            task_id="p",
            subtasks=[{"title": "x", "parent_id": "q"}],
        )
        twice = await refused(
            client,
            "split_task",
            "ALREADY_EXISTS",
            task_id="p",
            subtasks=[{"title": "a", "task_id": "same"}, {"title": "b", "task_id": "same"}],
        )
        onto_parent = await refused(
            client,
            "split_task",
            "INVALID_ARGUMENT",
            task_id="p",
            subtasks=[{"title": "a", "depends_on": ["p"]}],
        )
        listed = await ok(client, "list_tasks")
    assert missing["details"]["task_id"] == "ghost"
    assert empty["details"]["argument"] == "subtasks"
    assert extra["details"]["argument"].startswith("subtasks.0")
    assert twice["details"]["task_id"] == "same"
    new_id, parent, back = onto_parent["details"]["cycle"]
    assert (parent, back) == ("p", new_id)
    assert listed["total"] == 1


async def test_next_task_hands_out_leaf_work_not_a_parent_with_open_children(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "parent", task_id="p", priority="P0")
        await create(client, "child one", task_id="c1", priority="P2", parent_id="p")
        await create(client, "child two", task_id="c2", priority="P2", parent_id="p")
        order = []
        for _ in range(2):
            answer = await ok(client, "get_next_task", claim=True)
            order.append(answer["task"]["task_id"])
        nothing = await ok(client, "get_next_task")
        for task_id in order:
            await ok(client, "update_task_status", task_id=task_id, new_status="completed")
        last = await ok(client, "get_next_task", claim=True)
    assert order == ["c1", "c2"]
    assert nothing["task"] is None
    assert nothing["reason"] == "waiting_on_dependencies"
    assert last["task"]["task_id"] == "p"


async def test_parent_filter_of_an_unknown_task_is_not_found(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        error = await refused(client, "list_tasks", "NOT_FOUND", parent_id="ghost")
    assert error["details"] == {"argument": "parent_id", "task_id": "ghost"}


async def test_tasks_stuck_behind_failed_work_are_named_and_counted(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "migrate db", task_id="migrate")
        await create(client, "deploy", task_id="deploy", depends_on=["migrate"])
        await create(client, "umbrella", task_id="umb")
        await create(client, "part", task_id="part", parent_id="umb")
        await create(client, "fine", task_id="fine")
        await walk_to(client, "migrate", "failed")
        await walk_to(client, "part", "failed")
        await walk_to(client, "fine", "in_progress")
        answer = await ok(client, "get_next_task")
        stats = await ok(client, "get_task_stats")
        await ok(client, "update_task_status", task_id="migrate", new_status="pending")
        retried = await ok(client, "get_task_stats")
    assert answer["task"] is None
    assert answer["stuck"] == [
        {"task_id": "deploy", "title": "deploy", "failed": ["migrate"], "via_parent": None},
        {"task_id": "umb", "title": "umbrella", "failed": ["part"], "via_parent": None},
    ]
    assert "deploy (migrate)" in answer["message"]
    assert "umb (part)" in answer["message"]
    assert stats["stuck_behind_failed"] == 2
    assert "2 pending tasks are stuck" in stats["message"]
    assert retried["stuck_behind_failed"] == 1


async def test_stuck_messages_in_chinese(connect_in_memory: Connect) -> None:
    async with connect_in_memory(language="zh") as client:
        await create(client, "a", task_id="a")
        await create(client, "b", task_id="b", depends_on=["a"])
        await walk_to(client, "a", "failed")
        answer = await ok(client, "get_next_task")
        stats = await ok(client, "get_task_stats")
        split = await ok(client, "split_task", task_id="b", subtasks=[{"title": "子任务", "task_id": "s"}])
    assert "卡在失败的任务之后" in answer["message"]
    assert "b (a)" in answer["message"]
    assert "1 个待执行任务卡在失败的任务之后" in stats["message"]
    assert split["message"] == "已将任务 b 拆分为 1 个子任务：s。"
    assert "Stuck" not in answer["message"]


async def test_get_next_task_names_stuck_work_even_when_it_offers_a_task(connect: Connect) -> None:
    """Before: with any other task free, ``stuck`` was empty and the message silent about failed work."""
    async with connect() as client:
        await create(client, "migrate db", task_id="migrate", priority="P0")
        await create(client, "release", task_id="release", depends_on=["migrate"])
        await create(client, "write notes", task_id="notes", parent_id="release")
        await create(client, "free work", task_id="free", priority="P1")
        await walk_to(client, "migrate", "failed")
        offered = await ok(client, "get_next_task")
        claimed = await ok(client, "get_next_task", claim=True)
        stats = await ok(client, "get_task_stats")
    # "notes" is a subtask of "release", which waits on failed work: it is named through its parent
    expected = [
        {"task_id": "release", "title": "release", "failed": ["migrate"], "via_parent": None},
        {"task_id": "notes", "title": "write notes", "failed": ["migrate"], "via_parent": "release"},
    ]
    for answer in (offered, claimed):
        assert answer["task"] is not None
        assert answer["task"]["task_id"] in {"free", "notes"}
        assert answer["stuck"] == expected
        assert "2 pending tasks are stuck behind failed work" in answer["message"]
        assert "release (migrate)" in answer["message"]
        assert "notes (via release: migrate)" in answer["message"]
    assert stats["stuck_behind_failed"] == 2


async def test_one_stuck_task_is_counted_in_the_singular(connect_in_memory: Connect) -> None:
    """Before: '1 pending tasks are stuck'."""
    async with connect_in_memory() as client:
        await create(client, "a", task_id="a")
        await create(client, "b", task_id="b", depends_on=["a"])
        await walk_to(client, "a", "failed")
        answer = await ok(client, "get_next_task")
        stats = await ok(client, "get_task_stats")
        split = await ok(client, "split_task", task_id="b", subtasks=[{"title": "one", "task_id": "s"}])
        listed = await ok(client, "list_tasks", status="failed")
    assert "1 pending task is stuck behind failed work" in stats["message"]
    assert stats["message"].startswith("2 tasks:")
    assert "the one pending task waits" in answer["message"]
    assert "1 pending task is stuck behind failed work" in answer["message"]
    assert split["message"] == "Split task b into 1 subtask: s."
    assert listed["message"] == "1 of 1 matching task, most urgent first."
