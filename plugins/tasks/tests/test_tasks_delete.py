"""delete_task: refused while others need the task, gone from every list once done, kept in history."""

from __future__ import annotations

import getpass
from pathlib import Path

import anyio
import pytest
from hostd_testing import Connect, make_host, ok
from tasks_support import STAMP, create, refused, walk_to

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
@pytest.mark.served
async def test_a_deleted_task_leaves_lists_next_and_stats_but_keeps_its_history(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "keep", task_id="keep", priority="P2")
        doomed = await create(client, "doomed findme", task_id="doomed", priority="P0", labels=["x"])
        await ok(client, "update_task", task_id="doomed", append_note="a note")
        answer = await ok(client, "delete_task", task_id="doomed")
        listed = await ok(client, "list_tasks")
        searched = await ok(client, "list_tasks", query="findme")
        labelled = await ok(client, "list_tasks", label="x")
        following = await ok(client, "get_next_task")
        stats = await ok(client, "get_task_stats")
        details = await ok(client, "get_task", task_id="doomed")
        again = await refused(client, "delete_task", "NOT_FOUND", task_id="doomed")
        edit = await refused(client, "update_task", "NOT_FOUND", task_id="doomed", title="x")
        reuse = await refused(client, "create_task", "ALREADY_EXISTS", title="x", task_id="doomed")
    assert answer["task"]["task_id"] == "doomed"
    assert answer["dropped_from"] == []
    assert [t["task_id"] for t in listed["tasks"]] == ["keep"]
    assert listed["total"] == 1
    assert searched["total"] == 0
    assert labelled["total"] == 0
    assert following["task"]["task_id"] == "keep"
    assert stats["total"] == 1
    assert details["deleted_at"] == STAMP
    assert details["task"]["title"] == doomed["title"]
    assert [entry["event"] for entry in details["history"]] == ["created", "edited", "deleted"]
    assert details["history"][-1]["by"] == getpass.getuser()  # the local member
    assert again == {
        "code": "NOT_FOUND",
        "message": "Task 'doomed' was deleted.",
        "details": {"task_id": "doomed", "deleted_at": details["deleted_at"]},
        "hint": "get_task shows its last record and history; list_tasks shows the existing tasks.",
    }
    assert edit["details"]["task_id"] == "doomed"
    assert reuse["details"]["deleted"] is True


async def test_dependents_block_deletion_unless_their_dependencies_are_dropped(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "base", task_id="base")
        await create(client, "other", task_id="other")
        await create(client, "a", task_id="a", depends_on=["other", "base"])
        await create(client, "b", task_id="b", depends_on=["base"])
        error = await refused(client, "delete_task", "CONFLICT", task_id="base")
        still = await ok(client, "list_tasks")
        answer = await ok(client, "delete_task", task_id="base", drop_dependencies=True)
        a = await ok(client, "get_task", task_id="a")
    assert error["details"]["dependents"] == ["a", "b"]
    assert "a, b" in error["message"]
    assert "drop_dependencies=true" in error["hint"]
    assert still["total"] == 4
    assert answer["dropped_from"] == ["a", "b"]
    assert a["task"]["depends_on"] == ["other"]
    assert a["history"][-1]["event"] == "dependency_dropped"
    assert a["history"][-1]["details"] == {"depends_on": "base", "because": "deleted"}


async def test_an_in_progress_task_needs_the_explicit_flag(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "busy", task_id="busy")
        await walk_to(client, "busy", "in_progress")
        error = await refused(client, "delete_task", "CONFLICT", task_id="busy")
        still = await ok(client, "get_task", task_id="busy")
        await ok(client, "delete_task", task_id="busy", even_if_in_progress=True)
        gone = await ok(client, "list_tasks")
    assert "even_if_in_progress=true" in error["hint"]
    assert still["deleted_at"] is None
    assert gone["total"] == 0


async def test_a_task_with_subtasks_is_not_deleted(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "parent", task_id="p")
        await ok(client, "split_task", task_id="p", subtasks=[{"title": "one", "task_id": "s1"}])
        error = await refused(client, "delete_task", "CONFLICT", task_id="p", drop_dependencies=True)
        await ok(client, "delete_task", task_id="s1")
        parent = (await ok(client, "delete_task", task_id="p"))["task"]
    assert error["details"]["subtasks"] == ["s1"]
    assert "parent_id" in error["hint"]
    assert parent["task_id"] == "p"


async def test_a_generated_id_is_never_handed_out_again(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        first = await create(client, "one")
        await ok(client, "delete_task", task_id=first["task_id"])
        second = await create(client, "two")
    assert second["task_id"] != first["task_id"]


async def test_delete_messages_in_chinese(connect_in_memory: Connect) -> None:
    async with connect_in_memory(language="zh") as client:
        await create(client, "base", task_id="base")
        await create(client, "a", task_id="a", depends_on=["base"])
        conflict = await refused(client, "delete_task", "CONFLICT", task_id="base")
        deleted = await ok(client, "delete_task", task_id="base", drop_dependencies=True)
        gone = await refused(client, "get_task", "NOT_FOUND", task_id="nope")
        was = await refused(client, "update_task", "NOT_FOUND", task_id="base", title="x")
    assert conflict["message"] == "以下任务依赖 base：a。未删除任何内容。"
    assert deleted["message"] == "已删除任务 base「base」。已从以下任务的依赖中移除：a。"
    assert "不存在" in gone["message"]
    assert was["message"] == "任务 'base' 已被删除。"


def test_a_deleted_task_leaves_the_sessions_linked_tasks(hostd_data_dir: Path) -> None:
    """deep-thinking asks tasks.links for a session's tasks: a deleted one is no longer among them."""
    with make_host(["tasks"], data_dir=hostd_data_dir) as host:

        async def scenario() -> None:
            for task_id in ("kept", "gone"):
                for tool, arguments in (
                    ("create_task", {"title": task_id, "task_id": task_id}),
                    ("link_task_session", {"task_id": task_id, "session_id": "s-1"}),
                ):
                    envelope, is_error = await host.call(tool, arguments)
                    assert not is_error, envelope
            envelope, is_error = await host.call("delete_task", {"task_id": "gone"})
            assert not is_error, envelope

        anyio.run(scenario)
        links = host.service("tasks.links")
        assert links is not None
        found = links.tasks_for_session("s-1")
    assert [task["task_id"] for task in found] == ["kept"]
