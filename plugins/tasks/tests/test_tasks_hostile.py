"""Hostile input: bad ids, huge text, SQL-looking text, odd characters; and the fuzz check."""

from __future__ import annotations

from typing import Any

import pytest
from hostd_testing import Connect, fuzz_tools, ok
from tasks_support import create, refused

pytestmark = pytest.mark.anyio

BAD_IDS = ["a/b", "../x", "..", ".", ".hidden", "x" * 65, "a\x00b", "a b", "a\\b", "任务", "", "t-1/"]


@pytest.mark.parametrize("task_id", BAD_IDS, ids=repr)
async def test_bad_task_ids_are_refused_everywhere(connect_in_memory: Connect, task_id: str) -> None:
    async with connect_in_memory() as client:
        await create(client, "existing", task_id="ok-1")
        calls: list[tuple[str, dict[str, Any], str]] = [
            ("create_task", {"title": "x", "task_id": task_id}, "task_id"),
            ("create_task", {"title": "x", "depends_on": [task_id]}, "depends_on.0"),
            ("update_task_status", {"task_id": task_id, "new_status": "in_progress"}, "task_id"),
            ("link_task_session", {"task_id": task_id, "session_id": "s-1"}, "task_id"),
            ("link_task_session", {"task_id": "ok-1", "session_id": task_id}, "session_id"),
            ("create_task", {"title": "x", "parent_id": task_id}, "parent_id"),
            ("update_task", {"task_id": task_id, "title": "x"}, "task_id"),
            ("update_task", {"task_id": "ok-1", "depends_on": [task_id]}, "depends_on.0"),
            ("delete_task", {"task_id": task_id}, "task_id"),
            ("get_task", {"task_id": task_id}, "task_id"),
            ("split_task", {"task_id": task_id, "subtasks": [{"title": "x"}]}, "task_id"),
            (
                "split_task",
                {"task_id": "ok-1", "subtasks": [{"title": "x", "task_id": task_id}]},
                "subtasks.0.task_id",
            ),
            ("list_tasks", {"parent_id": task_id}, "parent_id"),
            ("list_tasks", {"created_by": task_id}, "created_by"),
            ("list_tasks", {"claimed_by": task_id}, "claimed_by"),
        ]
        if task_id:  # "" is how update_task makes a task top-level, so it is a valid parent_id there
            calls.append(("update_task", {"task_id": "ok-1", "parent_id": task_id}, "parent_id"))
        for tool, arguments, argument in calls:
            error = await refused(client, tool, "INVALID_ARGUMENT", **arguments)
            assert error["details"]["argument"] == argument, (tool, error)
        listed = await ok(client, "list_tasks")
    assert listed["total"] == 1
    assert listed["tasks"][0]["linked_session_id"] is None


@pytest.mark.parametrize("task_id", ["a", "A.b-c_d", "x" * 64, "0", "-lead", "a..b", "v1.2.3"])
async def test_ids_within_the_rule_are_accepted(connect_in_memory: Connect, task_id: str) -> None:
    async with connect_in_memory() as client:
        task = await create(client, "fine", task_id=task_id)
    assert task["task_id"] == task_id


@pytest.mark.served
async def test_a_one_megabyte_description_is_refused_and_nothing_is_stored(connect: Connect) -> None:
    async with connect() as client:
        error = await refused(
            client, "create_task", "INVALID_ARGUMENT", title="big", description="x" * 1_000_000
        )
        listed = await ok(client, "list_tasks")
    assert error["details"]["argument"] == "description"
    assert "20000" in error["hint"]
    assert listed["total"] == 0


async def test_the_longest_allowed_description_round_trips(connect_in_memory: Connect) -> None:
    text = ("描述" * 10_000)[:20_000]
    async with connect_in_memory() as client:
        task = await create(client, "long", description=text)
        listed = await ok(client, "list_tasks")
    assert task["description"] == text
    assert listed["tasks"][0]["description"] == text


@pytest.mark.parametrize(
    "text",
    [
        "'; DROP TABLE tasks; --",
        "Robert'); DELETE FROM task_dependencies; --",
        "emoji 😀🔥 and 中文",
        "nul\x00inside",
        "line\r\nbreaks\tand\u200bzero-width",
        '{"status": "completed"}',
    ],
    ids=repr,
)
async def test_odd_text_is_stored_literally(connect_in_memory: Connect, text: str) -> None:
    async with connect_in_memory() as client:
        task = await create(client, text[:200], description=text)
        listed = await ok(client, "list_tasks")
        stats = await ok(client, "get_task_stats")
    assert listed["tasks"] == [task]
    assert task["description"] == text
    assert task["title"] == text[:200].strip()
    assert stats["total"] == 1


@pytest.mark.served
async def test_a_one_megabyte_note_is_refused_and_nothing_is_stored(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "noted", task_id="n")
        error = await refused(
            client,
            "update_task",
            "INVALID_ARGUMENT",
            task_id="n",
            append_note="x" * 1_000_000,
            title="renamed",
        )
        task = (await ok(client, "get_task", task_id="n"))["task"]
    assert error["details"]["argument"] == "append_note"
    assert "5000" in error["hint"]
    assert task["notes"] == []
    assert task["title"] == "noted"


async def test_notes_past_the_total_cap_are_too_long_and_nothing_is_stored(connect: Connect) -> None:
    """Each note may be 5,000 characters, but a task holds at most 20,000 of them in all."""
    async with connect() as client:
        await create(client, "noted", task_id="n")
        for n in range(4):
            await ok(client, "update_task", task_id="n", append_note=str(n) * 5_000)
        error = await refused(
            client, "update_task", "TOO_LONG", task_id="n", append_note="one more", priority="P0"
        )
        task = (await ok(client, "get_task", task_id="n"))["task"]
    assert error["details"] == {
        "argument": "append_note",
        "task_id": "n",
        "notes_characters": 20_000,
        "limit": 20_000,
    }
    assert "description" in error["hint"]
    assert len(task["notes"]) == 4
    assert task["priority"] == "P2"


async def test_too_long_in_chinese(connect_in_memory: Connect) -> None:
    async with connect_in_memory(language="zh") as client:
        await create(client, "noted", task_id="n")
        for n in range(4):
            await ok(client, "update_task", task_id="n", append_note=str(n) * 5_000)
        error = await refused(client, "update_task", "TOO_LONG", task_id="n", append_note="再来")
    assert error["message"].startswith("任务 'n' 的备注已有 20000 个字符")
    assert "description" in error["hint"]
    assert "Put" not in error["hint"]


@pytest.mark.parametrize(
    ("tool", "arguments", "argument"),
    [
        # Bounds and types of the arguments themselves: tests/test_argument_checks.py, every tool.
        ("update_task", {"task_id": "t-1", "depends_on": [1, 2]}, "depends_on.0"),
        ("update_task", {"task_id": "t-1", "title": "   "}, "title"),
        ("split_task", {"task_id": "t-1", "subtasks": [{}]}, "subtasks.0.title"),
    ],
)
async def test_wrong_shapes_are_invalid_and_named(
    connect_in_memory: Connect, tool: str, arguments: dict[str, object], argument: str
) -> None:
    async with connect_in_memory() as client:
        error = await refused(client, tool, "INVALID_ARGUMENT", **arguments)
    assert error["details"]["argument"] == argument


@pytest.mark.smoke
async def test_fuzz_in_memory(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "seed", task_id="task-1")
        report = await fuzz_tools(client, seed=6, rounds=8)
    assert report.calls > 0, report.failures
    assert not report.failures, report.failures
    assert "INVALID_ARGUMENT" in report.codes
    assert "OK" in report.codes


async def test_fuzz_with_subtasks_labels_and_notes_in_the_list(connect_in_memory: Connect) -> None:
    """The fuzz again with a richer list, so the new tools meet parents, dependencies and notes."""
    async with connect_in_memory() as client:
        await create(client, "seed", task_id="task-1", labels=["seed"])
        await create(client, "child", task_id="task-2", parent_id="task-1")
        await ok(client, "update_task", task_id="task-2", append_note="note")
        report = await fuzz_tools(client, seed=15, rounds=12)
    assert report.calls > 0, report.failures
    assert not report.failures, report.failures
    assert "INVALID_ARGUMENT" in report.codes
    assert "OK" in report.codes


async def test_fuzz_through_a_real_server(connect_served: Connect) -> None:
    async with connect_served() as client:
        await create(client, "seed", task_id="task-1")
        report = await fuzz_tools(client, seed=61, rounds=4)
    assert report.calls > 0, report.failures
    assert not report.failures, report.failures
