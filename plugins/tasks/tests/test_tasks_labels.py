"""Labels as a resource template, ``task-label://{label}``, on both stores: read as the tasks
carrying the label, and completed with the label of the most recently changed task first, then
the most used; a deleted task's labels are not offered."""

from __future__ import annotations

import mcp_types as types
import pytest
from hostd_testing import Connect, ok

pytestmark = pytest.mark.anyio

LABELS = types.ResourceTemplateReference(type="ref/resource", uri="task-label://{label}")


async def test_labels_complete_by_recency_then_use_and_read_as_their_tasks(
    connect_in_memory: Connect,
) -> None:
    async with connect_in_memory() as client:
        for task_id, carried in [("t1", ["backend"]), ("t2", ["bug", "backend"]), ("t3", ["build"])]:
            await ok(client, "create_task", title=f"Do {task_id}", task_id=task_id, labels=carried)
        await ok(client, "create_task", title="Gone", task_id="t4", labels=["bygone"])
        await ok(client, "delete_task", task_id="t4")

        async def completed(value: str) -> list[str]:
            answer = await client.complete(LABELS, {"name": "label", "value": value})
            values: list[str] = answer.completion.values
            return values

        assert await completed("b") == ["build", "backend", "bug"]  # t3 newest; then t2's: backend used twice
        assert await completed("BU") == ["build", "bug"]
        assert await completed("x") == []
        await ok(client, "update_task", task_id="t1", title="Do t1 now")
        assert await completed("") == ["backend", "build", "bug"]
        read = (await client.read_resource("task-label://backend")).contents[0]
        assert isinstance(read, types.TextResourceContents)
        assert read.text.splitlines()[0] == "# Tasks labelled backend"
        assert sorted(line.split("]")[0] for line in read.text.splitlines()[2:]) == ["- [t1", "- [t2"]
        for value in ["%", "_", "'; DROP TABLE task_labels; --", "\U0010ffff", "a\x00b", "x" * 5000]:
            assert await completed(value) == []
