"""The tools through ``hostd call`` (a clean process per call), and messages in Chinese."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import Connect, ok, write_config
from tasks_support import create, refused, walk_to


def hostd_call(config: Path, tool: str, *arguments: str) -> tuple[int, dict[str, Any]]:
    completed = subprocess.run(
        [sys.executable, "-m", "hostd", "call", "--config", str(config), tool, *arguments],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.stdout, completed.stderr
    return completed.returncode, json.loads(completed.stdout)


@pytest.mark.parametrize(
    "plugins",
    [
        pytest.param(["tasks"], id="alone"),
        pytest.param(["deep-thinking", "tasks"], id="with-deep-thinking", marks=pytest.mark.together),
    ],
)
def test_every_tool_through_hostd_call(tmp_path: Path, plugins: list[str]) -> None:
    if "deep-thinking" in plugins:
        pytest.importorskip("hostd_deep_thinking")
    config = write_config(tmp_path, plugins, config={"language": "en"})
    code, first = hostd_call(config, "create_task", "--arg", "title=Plan", "--arg", "priority=P0")
    assert code == 0, first
    code, second = hostd_call(
        config, "create_task", "--json", json.dumps({"title": "Do", "depends_on": [first["task"]["task_id"]]})
    )
    assert code == 0, second
    assert second["task"]["depends_on"] == [first["task"]["task_id"]]
    code, listed = hostd_call(config, "list_tasks", "--arg", "limit=10")
    assert code == 0
    assert listed["total"] == 2
    code, claimed = hostd_call(config, "get_next_task", "--arg", "claim=true")
    assert code == 0
    assert claimed["task"]["task_id"] == first["task"]["task_id"]
    code, done = hostd_call(
        config,
        "update_task_status",
        "--arg",
        f"task_id={first['task']['task_id']}",
        "--arg",
        "new_status=completed",
    )
    assert code == 0
    assert done["task"]["status"] == "completed"
    code, refused_move = hostd_call(
        config,
        "update_task_status",
        "--arg",
        f"task_id={first['task']['task_id']}",
        "--arg",
        "new_status=failed",
    )
    assert code == 1
    assert refused_move["error"]["code"] == "CONFLICT"
    code, stats = hostd_call(config, "get_task_stats")
    assert code == 0
    assert stats["by_status"]["completed"] == 1
    code, linked = hostd_call(
        config,
        "link_task_session",
        "--arg",
        f"task_id={second['task']['task_id']}",
        "--arg",
        "session_id=s-1",
    )
    if "deep-thinking" in plugins:
        assert code == 1
        assert linked["error"]["code"] == "NOT_FOUND"
    else:
        assert code == 0
        assert linked["session_checked"] is False


@pytest.mark.anyio
@pytest.mark.served
async def test_messages_follow_the_host_language(connect: Connect) -> None:
    async with connect(language="zh") as client:
        created = await ok(client, "create_task", title="写报告")
        task_id = created["task"]["task_id"]
        nothing = await ok(client, "get_next_task", claim=True)
        await walk_to(client, task_id, "completed")
        conflict = await refused(
            client, "update_task_status", "CONFLICT", task_id=task_id, new_status="blocked"
        )
        same = await ok(client, "update_task_status", task_id=task_id, new_status="completed")
        empty = await ok(client, "get_next_task")
        linked = await ok(client, "link_task_session", task_id=task_id, session_id="s-1")
        stats = await ok(client, "get_task_stats")
        missing = await refused(
            client, "update_task_status", "NOT_FOUND", task_id="nope", new_status="pending"
        )
    assert created["message"].startswith("已创建任务")
    assert nothing["message"].startswith("已领取任务")
    assert "只能变为：pending" in conflict["message"]
    assert "未做任何更改" in same["message"]
    assert "没有待执行的任务" in empty["message"]
    assert "无法核实该会话" in linked["message"]
    assert "完成率 100.0%" in stats["message"]
    assert "不存在" in missing["message"]
    assert "list_tasks" in missing["hint"]


@pytest.mark.anyio
async def test_english_is_the_other_language(connect_in_memory: Connect) -> None:
    async with connect_in_memory(language="en") as client:
        task = await create(client, "write")
        same = await ok(client, "update_task_status", task_id=task["task_id"], new_status="pending")
    assert same["message"] == f"Task {task['task_id']} is already pending; nothing changed."
