"""get_task: the record, every change with its time, dependencies both ways, subtasks, linked session."""

from __future__ import annotations

import getpass
from datetime import datetime

import pytest
from hostd_testing import Connect, ok
from tasks_support import SUMMARY, FakeSessions, SessionsPlugin, create, new_session, refused

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
@pytest.mark.served
async def test_history_records_every_kind_of_change_in_order(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "dep", task_id="dep")
        await create(client, "work", task_id="w", priority="P0")
        await ok(client, "update_task", task_id="w", title="work, renamed", depends_on=["dep"])
        await ok(client, "update_task", task_id="w", depends_on=[])
        await ok(client, "get_next_task", claim=True)  # w is the most urgent ready task
        await ok(client, "update_task_status", task_id="w", new_status="blocked")
        await ok(client, "link_task_session", task_id="w", session_id="s-1")
        await ok(client, "split_task", task_id="w", subtasks=[{"title": "part", "task_id": "part"}])
        await ok(client, "delete_task", task_id="part")
        details = await ok(client, "get_task", task_id="w")
    events = [(entry["event"], entry["details"]) for entry in details["history"]]
    assert events == [
        ("created", {"title": "work", "priority": "P0"}),
        (
            "edited",
            {
                "title": {"from": "work", "to": "work, renamed"},
                "depends_on": {"from": [], "to": ["dep"]},
            },
        ),
        ("edited", {"depends_on": {"from": ["dep"], "to": []}}),
        ("claimed", {"from": "pending", "to": "in_progress"}),
        ("status", {"from": "in_progress", "to": "blocked"}),
        ("linked", {"session_id": "s-1", "previous_session_id": None}),
        ("split", {"subtasks": ["part"]}),
    ]
    stamps = [datetime.fromisoformat(entry["at"]) for entry in details["history"]]
    assert stamps == sorted(stamps)
    assert all(stamp.utcoffset() is not None for stamp in stamps)
    assert all(entry["by"] == getpass.getuser() for entry in details["history"])  # the local member
    assert details["history_total"] == len(events)
    assert details["task"]["status"] == "blocked"
    assert details["deleted_at"] is None


async def test_dependencies_both_ways_and_subtasks(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "base", task_id="base")
        await create(client, "middle", task_id="mid", depends_on=["base"])
        await create(client, "top", task_id="top", depends_on=["mid"], priority="P0")
        await create(client, "child", task_id="kid", parent_id="mid")
        middle = await ok(client, "get_task", task_id="mid")
    assert middle["depends_on"] == [{"task_id": "base", "title": "base", "status": "pending"}]
    assert middle["dependents"] == [{"task_id": "top", "title": "top", "status": "pending"}]
    assert middle["subtasks"] == [{"task_id": "kid", "title": "child", "status": "pending"}]
    assert middle["task"]["subtasks"]["total"] == 1
    assert "1 history entry, 1 dependency, 1 dependent, 1 subtask." in middle["message"]


async def test_the_linked_session_comes_from_deep_thinking(connect_in_memory: Connect) -> None:
    sessions = FakeSessions({"plan-1": SUMMARY})
    async with connect_in_memory(
        ["tasks", "fake-deep-thinking"], extra_plugins={"fake-deep-thinking": SessionsPlugin(sessions)}
    ) as client:
        await create(client, "linked", task_id="l")
        await create(client, "alone", task_id="a")
        await ok(client, "link_task_session", task_id="l", session_id="plan-1")
        linked = await ok(client, "get_task", task_id="l")
        alone = await ok(client, "get_task", task_id="a")
    assert linked["session_checked"] is True
    assert linked["session"] == SUMMARY
    assert alone["session"] is None
    assert alone["session_checked"] is False


async def test_without_deep_thinking_the_link_is_shown_unchecked(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "linked", task_id="l")
        await ok(client, "link_task_session", task_id="l", session_id="s-9")
        linked = await ok(client, "get_task", task_id="l")
    assert linked["task"]["linked_session_id"] == "s-9"
    assert linked["session"] is None
    assert linked["session_checked"] is False


async def test_an_unknown_task_is_not_found(connect: Connect) -> None:
    async with connect() as client:
        error = await refused(client, "get_task", "NOT_FOUND", task_id="ghost")
        bad = await refused(client, "get_task", "INVALID_ARGUMENT", task_id="../x")
    assert error["details"] == {"task_id": "ghost"}
    assert bad["details"]["argument"] == "task_id"


async def test_get_task_in_chinese(connect_in_memory: Connect) -> None:
    async with connect_in_memory(language="zh") as client:
        await create(client, "报告", task_id="r")
        shown = await ok(client, "get_task", task_id="r")
        await ok(client, "delete_task", task_id="r")
        deleted = await ok(client, "get_task", task_id="r")
    assert (
        shown["message"]
        == "任务 r「报告」（P2，pending）：1 条历史记录，依赖 0 个任务，被 0 个任务依赖，0 个子任务。"
    )
    assert deleted["message"] == "任务 r「报告」已被删除；以下是它最后的记录和历史。"


@pytest.mark.together
async def test_with_deep_thinking_loaded_get_task_shows_the_real_session(connect: Connect) -> None:
    pytest.importorskip("hostd_deep_thinking")
    async with connect(["deep-thinking", "tasks"]) as client:
        session_id = await new_session(client)
        await create(client, "think first", task_id="t")
        await ok(client, "link_task_session", task_id="t", session_id=session_id)
        shown = await ok(client, "get_task", task_id="t")
    assert shown["session_checked"] is True
    assert shown["session"]["session_id"] == session_id
    assert shown["history"][-1]["event"] == "linked"
