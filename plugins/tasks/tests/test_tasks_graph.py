"""The dependency graph: get_task_graph (Mermaid), get_critical_path, and get_next_task's
prefer="unblocks_most", on both stores."""

from __future__ import annotations

from typing import Any

import pytest
from hostd_testing import Client, Connect, envelope_ok, ok
from tasks_support import create, walk_to

pytestmark = pytest.mark.anyio


async def _plan(client: Client) -> None:
    """a <- b <- c and a <- d (each waits on the one before); e alone and most urgent; a parent p
    with subtasks s1 <- s2."""
    await create(client, "a", task_id="a")
    await create(client, "b", task_id="b", depends_on=["a"])
    await create(client, "c", task_id="c", depends_on=["b"])
    await create(client, "d", task_id="d", depends_on=["a"])
    await create(client, "e", task_id="e", priority="P0")
    await create(client, "p", task_id="p")
    await ok(
        client,
        "split_task",
        task_id="p",
        subtasks=[
            {"title": "s1", "task_id": "s1"},
            {"title": 's2 "<b>"', "task_id": "s2", "depends_on": ["s1"]},
        ],
    )


def _item(
    task_id: str, unblocks: int, *, title: str | None = None, status: str = "pending", priority: str = "P2"
) -> dict[str, Any]:
    return {
        "task_id": task_id,
        "title": title or task_id,
        "status": status,
        "priority": priority,
        "unblocks": unblocks,
    }


async def test_the_critical_path_and_what_unblocks_the_most(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await _plan(client)
        whole = await ok(client, "get_critical_path")
        of_p = await ok(client, "get_critical_path", task_id="p")
        await walk_to(client, "a", "completed")
        of_c = await ok(client, "get_critical_path", task_id="c")
        done = await ok(client, "get_critical_path", task_id="a")
    assert whole == envelope_ok(
        "The list can be done after 3 steps, one after another: a -> b -> c. "
        "Ready now, a unblocks the most (3).",
        task_id=None,
        critical_path=[_item("a", 3), _item("b", 1), _item("c", 0)],
        steps=3,
        unblocks_most=[_item("a", 3), _item("s1", 2), _item("e", 0, priority="P0")],
    )
    assert [t["task_id"] for t in of_p["critical_path"]] == ["s1", "s2", "p"]
    assert of_c["critical_path"] == [_item("b", 1), _item("c", 0)]
    assert [t["task_id"] for t in of_c["unblocks_most"]] == ["s1", "b", "e", "d"]  # then the most urgent
    assert done["critical_path"] == []
    assert done["steps"] == 0
    assert done["message"].startswith("Task a has no unfinished work.")


async def test_get_next_task_can_prefer_what_unblocks_the_most(connect: Connect) -> None:
    async with connect() as client:
        await _plan(client)
        usual = await ok(client, "get_next_task")
        preferred = await ok(client, "get_next_task", prefer="unblocks_most")
        claimed = await ok(client, "get_next_task", prefer="unblocks_most", claim=True)
        after = await ok(client, "get_next_task", prefer="unblocks_most")
    assert usual["task"]["task_id"] == "e"
    assert preferred["task"]["task_id"] == "a"
    assert preferred["claimed"] is False
    assert claimed["task"]["task_id"] == "a"
    assert claimed["task"]["status"] == "in_progress"
    assert after["task"]["task_id"] == "s1"  # a is taken; s1 unblocks s2 and p


async def test_prefer_unblocks_most_with_nothing_ready_says_why(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        await create(client, "a", task_id="a")
        await create(client, "b", task_id="b", depends_on=["a"])
        await walk_to(client, "a", "in_progress")
        answer = await ok(client, "get_next_task", prefer="unblocks_most")
    assert answer["task"] is None
    assert answer["reason"] == "waiting_on_dependencies"


@pytest.mark.served
async def test_the_graph_as_mermaid(connect: Connect) -> None:
    async with connect() as client:
        await _plan(client)
        await walk_to(client, "d", "blocked")
        whole = await ok(client, "get_task_graph")
        around_b = await ok(client, "get_task_graph", task_id="b")
        await walk_to(client, "e", "completed")
        without = await ok(client, "get_task_graph")
        with_done = await ok(client, "get_task_graph", include_completed=True)
    mermaid = whole["mermaid"]
    assert mermaid.startswith("flowchart LR\n")
    # in list order: e (P0), then the P2 tasks by creation
    assert (
        '  n0["e: e"]:::pending\n  n1["a: a"]:::pending\n  n2["b: b"]:::pending\n  n3["c: c"]:::pending\n'
        in mermaid
    )
    assert '["d: d"]:::blocked' in mermaid
    assert '["s2: s2 #quot;#lt;b#gt;#quot;"]' in mermaid  # quotes and brackets cannot break out
    assert "  n1 --> n2\n" in mermaid
    assert "  n2 --> n3\n" in mermaid
    assert " -.-> " in mermaid  # a subtask to its parent
    assert "  class n1,n2,n3 critical\n" in mermaid
    assert whole == envelope_ok(
        "Drew 8 tasks; the critical path has 3 steps.",
        mermaid=mermaid,
        tasks_shown=8,
        tasks_total=8,
        truncated=False,
        critical_path=[_item("a", 3), _item("b", 1), _item("c", 0)],
    )
    assert (around_b["tasks_shown"], [t["task_id"] for t in around_b["critical_path"]]) == (3, ["a", "b"])
    assert without["tasks_total"] == 7
    assert with_done["tasks_total"] == 8
    assert '["e: e"]:::completed' in with_done["mermaid"]
