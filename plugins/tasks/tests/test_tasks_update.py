"""update_task: what is given changes, the whole task comes back, cycles and unknown tasks are refused."""

from __future__ import annotations

import pytest
from hostd_testing import Connect, ok
from tasks_support import RECORD_KEYS, create, refused, walk_to

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
@pytest.mark.served
async def test_every_field_changes_and_the_whole_task_comes_back(connect: Connect) -> None:
    async with connect() as client:
        dep = await create(client, "dependency", task_id="dep")
        parent = await create(client, "parent", task_id="parent")
        task = await create(client, "first title", task_id="t", priority="P2")
        answer = await ok(
            client,
            "update_task",
            task_id="t",
            title="  second title ",
            description="now with details",
            priority="P0",
            depends_on=["dep"],
            parent_id="parent",
            labels=["Backend", "urgent", "backend"],
            acceptance="the tests pass",
            append_note="started looking",
        )
        listed = await ok(client, "list_tasks", parent_id="parent")
    updated = answer["task"]
    assert set(updated) == RECORD_KEYS
    assert updated["title"] == "second title"
    assert updated["description"] == "now with details"
    assert updated["priority"] == "P0"
    assert updated["depends_on"] == [dep["task_id"]]
    assert updated["parent_id"] == parent["task_id"]
    assert updated["labels"] == ["backend", "urgent"]
    assert updated["acceptance"] == "the tests pass"
    assert [note["text"] for note in updated["notes"]] == ["started looking"]
    assert updated["status"] == task["status"] == "pending"
    assert updated["created_at"] == task["created_at"]
    assert updated["updated_at"] > task["updated_at"]
    assert answer["changed"] == sorted(
        ["title", "description", "priority", "depends_on", "parent_id", "labels", "acceptance", "append_note"]
    )
    assert listed["tasks"] == [updated]


async def test_only_what_is_given_changes(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(
            client, "keep", task_id="k", description="d", priority="P1", labels=["x"], acceptance="a"
        )
        answer = await ok(client, "update_task", task_id="k", priority="P0")
    task = answer["task"]
    assert (task["title"], task["description"], task["labels"], task["acceptance"]) == (
        "keep",
        "d",
        ["x"],
        "a",
    )
    assert task["priority"] == "P0"
    assert answer["changed"] == ["priority"]


async def test_the_same_values_again_change_nothing(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        before = await create(client, "same", task_id="s", priority="P1")
        answer = await ok(client, "update_task", task_id="s", title="same", priority="P1")
        details = await ok(client, "get_task", task_id="s")
    assert answer["changed"] == []
    assert answer["task"] == before
    assert "nothing changed" in answer["message"]
    assert [entry["event"] for entry in details["history"]] == ["created"]


async def test_notes_are_appended_in_order(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "noted", task_id="n")
        for text in ["one", "二", "three"]:
            await ok(client, "update_task", task_id="n", append_note=text)
        task = (await ok(client, "get_task", task_id="n"))["task"]
    assert [note["text"] for note in task["notes"]] == ["one", "二", "three"]
    stamps = [note["at"] for note in task["notes"]]
    assert stamps == sorted(stamps)


async def test_an_empty_list_drops_dependencies_and_labels_and_empty_parent_detaches(
    connect_in_memory: Connect,
) -> None:
    async with connect_in_memory() as client:
        await create(client, "dep", task_id="dep")
        await create(client, "parent", task_id="p")
        await create(client, "child", task_id="c", depends_on=["dep"], parent_id="p", labels=["x"])
        answer = await ok(client, "update_task", task_id="c", depends_on=[], labels=[], parent_id="")
        parent = (await ok(client, "get_task", task_id="p"))["task"]
    assert answer["task"]["depends_on"] == []
    assert answer["task"]["labels"] == []
    assert answer["task"]["parent_id"] is None
    assert parent["subtasks"] is None


async def test_nothing_to_change_is_invalid(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "x", task_id="x")
        error = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="x")
    assert "update_task_status" in error["hint"]


async def test_an_unknown_task_is_not_found(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        error = await refused(client, "update_task", "NOT_FOUND", task_id="ghost", title="x")
    assert error["details"]["task_id"] == "ghost"


async def test_an_unknown_dependency_is_invalid_and_named(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "a", task_id="a")
        await create(client, "b", task_id="b")
        error = await refused(
            client,
            "update_task",
            "INVALID_ARGUMENT",
            task_id="b",
            depends_on=["a", "ghost"],
            title="new",
        )
        after = (await ok(client, "get_task", task_id="b"))["task"]
    assert error["details"] == {"argument": "depends_on", "missing": ["ghost"]}
    assert "ghost" in error["message"]
    assert after["depends_on"] == [], "nothing is half-written"
    assert after["title"] == "b", "nothing is half-written"


async def test_a_dependency_cycle_through_several_tasks_is_refused_with_its_path(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "a", task_id="a")
        await create(client, "b", task_id="b", depends_on=["a"])
        await create(client, "c", task_id="c", depends_on=["b"])
        error = await refused(
            client, "update_task", "INVALID_ARGUMENT", task_id="a", depends_on=["c"], priority="P0"
        )
        after = (await ok(client, "get_task", task_id="a"))["task"]
    assert error["details"] == {"argument": "depends_on", "cycle": ["a", "c", "b", "a"]}
    assert "a -> c -> b -> a" in error["message"]
    assert after["depends_on"] == [], "nothing is half-written"
    assert after["priority"] == "P2", "nothing is half-written"


async def test_a_task_depending_on_itself_through_update_is_a_cycle(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "a", task_id="a")
        error = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="a", depends_on=["a"])
    assert error["details"]["cycle"] == ["a", "a"]


async def test_a_task_made_its_own_ancestor_is_refused(connect: Connect) -> None:
    async with connect() as client:
        await create(client, "root", task_id="root")
        await create(client, "mid", task_id="mid", parent_id="root")
        await create(client, "leaf", task_id="leaf", parent_id="mid")
        error = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="root", parent_id="leaf")
        itself = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="root", parent_id="root")
        root = (await ok(client, "get_task", task_id="root"))["task"]
    assert error["details"] == {"argument": "parent_id", "cycle": ["leaf", "root", "mid", "leaf"]}
    assert itself["details"]["cycle"] == ["root", "root"]
    assert root["parent_id"] is None


async def test_a_task_depending_on_its_own_ancestor_is_a_cycle(connect_in_memory: Connect) -> None:
    """The parent waits on its subtask; the subtask waiting on the parent would wait forever."""
    async with connect_in_memory() as client:
        await create(client, "parent", task_id="p")
        await create(client, "child", task_id="c", parent_id="p")
        through_update = await refused(
            client, "update_task", "INVALID_ARGUMENT", task_id="c", depends_on=["p"]
        )
        through_create = await refused(
            client,
            "create_task",
            "INVALID_ARGUMENT",
            title="x",
            task_id="x",
            parent_id="c",
            depends_on=["p"],
        )
        listed = await ok(client, "list_tasks")
    assert through_update["details"]["cycle"] == ["c", "p", "c"]
    assert through_create["details"]["cycle"] == ["x", "p", "c", "x"]
    assert listed["total"] == 2


async def test_a_cycle_mixing_dependencies_and_subtasks_is_refused(connect_in_memory: Connect) -> None:
    """p waits on its subtask s, s depends on a: a depending on p would close the loop."""
    async with connect_in_memory() as client:
        await create(client, "a", task_id="a")
        await create(client, "p", task_id="p")
        await create(client, "s", task_id="s", parent_id="p", depends_on=["a"])
        error = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="a", depends_on=["p"])
        reparent = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="p", parent_id="a")
        fine = await ok(client, "update_task", task_id="p", depends_on=["a"])
    assert error["details"]["cycle"] == ["a", "p", "s", "a"]
    assert reparent["details"] == {"argument": "parent_id", "cycle": ["a", "p", "s", "a"]}
    assert fine["task"]["depends_on"] == ["a"]


async def test_an_unknown_parent_is_not_found(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "x", task_id="x")
        error = await refused(client, "update_task", "NOT_FOUND", task_id="x", parent_id="ghost")
        created = await refused(client, "create_task", "NOT_FOUND", title="y", parent_id="ghost")
    assert error["details"] == {"argument": "parent_id", "task_id": "ghost"}
    assert created["details"]["argument"] == "parent_id"


async def test_editing_keeps_the_status_and_a_claimed_task_stays_claimed(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "work", task_id="w")
        await walk_to(client, "w", "in_progress")
        answer = await ok(client, "update_task", task_id="w", append_note="halfway")
    assert answer["task"]["status"] == "in_progress"


async def test_messages_in_chinese(connect_in_memory: Connect) -> None:
    async with connect_in_memory(language="zh") as client:
        await create(client, "a", task_id="a")
        await create(client, "b", task_id="b", depends_on=["a"])
        updated = await ok(client, "update_task", task_id="a", title="新标题")
        cycle = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="a", depends_on=["b"])
        missing = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="a", depends_on=["x"])
        nothing = await refused(client, "update_task", "INVALID_ARGUMENT", task_id="a")
    assert updated["message"] == "已更新任务 a：title。"
    assert "依赖环" in cycle["message"]
    assert "父任务" in cycle["hint"]
    assert "不存在" in missing["message"]
    assert "没有要更改的内容" in nothing["message"]
    assert "update_task_status" in nothing["hint"]
    for text in (cycle["message"], cycle["hint"], missing["hint"]):
        assert not any(word in text for word in ("cannot", "task waits", "Create", "would")), text
