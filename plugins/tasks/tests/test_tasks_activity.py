"""list_task_activity: the newest changes across all tasks, newest first, with who and when; one
member's only on request; deleted tasks kept (title null); limits refused as arguments."""

from __future__ import annotations

import getpass

import pytest
from hostd_testing import Connect, ok
from tasks_support import create, refused

pytestmark = pytest.mark.anyio


@pytest.mark.served
async def test_the_newest_changes_across_tasks_newest_first(connect: Connect) -> None:
    me = getpass.getuser()
    async with connect() as client:
        assert (await ok(client, "list_task_activity"))["entries"] == []
        await create(client, "first", task_id="a")
        await create(client, "second 第二", task_id="b", depends_on=["a"])
        await ok(client, "update_task_status", task_id="a", new_status="in_progress")
        await ok(client, "update_task_status", task_id="a", new_status="completed")
        await create(client, "gone", task_id="c")
        await ok(client, "delete_task", task_id="c")
        answer = await ok(client, "list_task_activity", limit=5)
        everything = await ok(client, "list_task_activity", limit=100)
        mine = await ok(client, "list_task_activity", member=me)
        nobody = await ok(client, "list_task_activity", member="nobody-here")
        for bad in (0, 101):
            await refused(client, "list_task_activity", "INVALID_ARGUMENT", limit=bad)
        await refused(client, "list_task_activity", "INVALID_ARGUMENT", member="no spaces")
    seen = [(e["task_id"], e["event"], e["details"].get("to")) for e in answer["entries"]]
    assert seen == [
        ("c", "deleted", None),
        ("c", "created", None),
        ("a", "status", "completed"),
        ("a", "status", "in_progress"),  # moving it there claims it (claimed_by the mover)
        ("b", "created", None),
    ]
    assert [e["task_id"] for e in everything["entries"]] == ["c", "c", "a", "a", "b", "a"]
    assert all(e["by"] == me for e in everything["entries"])
    times = [e["at"] for e in everything["entries"]]
    assert times == sorted(times, reverse=True)
    titles = {e["task_id"]: e["title"] for e in everything["entries"]}
    assert titles == {"a": "first", "b": "second 第二", "c": None}  # c was deleted since
    assert mine["entries"] == everything["entries"][:20]
    assert nobody["entries"] == []
