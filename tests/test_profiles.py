"""One install, several IDE profiles: each real server exposes exactly its profile's tools."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import envelope_of, inspector_cli, served_client, write_config

pytestmark = pytest.mark.anyio

PROFILES = {
    "cursor": {
        "plugins": ["summary-writer", "memory"],
        "tools": {"memory": {"include": ["read_memory", "create_memory", "search_memory"]}},
    },
    "claude-desktop": {
        "plugins": ["memory", "deep-thinking", "tasks"],
        "tools": {
            "memory": {"exclude": ["import_memories", "export_memories"]},
            "tasks": {"prefix": "todo_"},
        },
    },
}


@pytest.fixture
def config_path(tmp_path: Path, every_plugin: list[str]) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    return write_config(
        tmp_path, config={"profiles": PROFILES, "allowed_roots": [str(root)], "language": "en"}
    )


async def tool_names(config_path: Path, profile: str) -> set[str]:
    async with served_client(config_path, env={"HOSTD_PROFILE": profile}) as client:
        return {tool.name for tool in (await client.list_tools()).tools}


@pytest.mark.smoke
async def test_each_profile_serves_exactly_its_tools(config_path: Path) -> None:
    cursor = await tool_names(config_path, "cursor")
    assert cursor == {"update_summary", "read_memory", "create_memory", "search_memory"}
    claude = await tool_names(config_path, "claude-desktop")
    assert "sequential_thinking" in claude
    assert "todo_create_task" in claude
    assert "create_task" not in claude
    assert "import_memories" not in claude
    assert "update_summary" not in claude
    assert "read_memory" in claude
    assert not any(name.startswith("read_wechat") for name in claude | cursor)


async def test_profiles_share_one_data_dir_per_plugin(config_path: Path, tmp_path: Path) -> None:
    async with served_client(config_path, env={"HOSTD_PROFILE": "cursor"}) as client:
        created = await client.call_tool(
            "create_memory", {"uri": "project://shared", "content": "seen by both"}
        )
        assert not created.is_error, envelope_of(created)
    async with served_client(config_path, env={"HOSTD_PROFILE": "claude-desktop"}) as client:
        read = envelope_of(await client.call_tool("read_memory", {"uri": "project://shared"}))
    assert read["content"] == "seen by both" or read.get("memory", {}).get("content") == "seen by both"


async def test_tasks_and_thinking_link_through_services(config_path: Path) -> None:
    async with served_client(config_path, env={"HOSTD_PROFILE": "claude-desktop"}) as client:
        thought = envelope_of(
            await client.call_tool(
                "sequential_thinking",
                {
                    "thought": "Plan the release",
                    "thoughtNumber": 1,
                    "totalThoughts": 2,
                    "nextThoughtNeeded": True,
                    "session_id": "release-plan",
                },
            )
        )
        assert thought["session_id"] == "release-plan"
        task = envelope_of(await client.call_tool("todo_create_task", {"title": "Ship it", "priority": "P0"}))
        task_id = task["task"]["task_id"] if "task_id" in task["task"] else task["task"]["id"]
        missing = await client.call_tool("todo_link_task_session", {"task_id": task_id, "session_id": "nope"})
        assert missing.is_error
        assert envelope_of(missing)["error"]["code"] == "NOT_FOUND"
        linked = await client.call_tool(
            "todo_link_task_session", {"task_id": task_id, "session_id": "release-plan"}
        )
        assert not linked.is_error, envelope_of(linked)
        session = envelope_of(await client.call_tool("get_session", {"session_id": "release-plan"}))
    assert task_id in json.dumps(session, ensure_ascii=False)


@pytest.mark.slow
@pytest.mark.npm
def test_inspector_cli_lists_every_plugins_tools_and_calls_them(
    tmp_path: Path, every_plugin: list[str]
) -> None:
    command = inspector_cli()
    root = tmp_path / "notes"
    root.mkdir()
    config = write_config(tmp_path, config={"allowed_roots": [str(root)]})
    hostd = str(Path(sys.executable).with_name("hostd"))

    def inspector(*method: str) -> dict[str, Any]:
        done = subprocess.run(
            [
                *command,
                "--cli",
                "-e",
                f"HOSTD_CONFIG={config}",
                hostd,
                "serve",
                *method,
            ],
            capture_output=True,
            text=True,
            timeout=600,
            env={**os.environ},
        )
        assert done.returncode == 0, done.stderr[-2000:]
        answer: dict[str, Any] = json.loads(done.stdout)
        return answer

    names = {tool["name"] for tool in inspector("--method", "tools/list")["tools"]}
    assert {
        "update_summary",
        "read_wechat_articles",
        "create_memory",
        "sequential_thinking",
        "create_task",
    } <= names
    calls = [
        ["update_summary", "content=from the inspector", f"file_path={root / 'i.md'}"],
        ["create_memory", "uri=project://inspector", "content=hello"],
        [
            "sequential_thinking",
            "thought=one",
            "thoughtNumber=1",
            "totalThoughts=1",
            "nextThoughtNeeded=false",
        ],
        ["create_task", "title=from the inspector"],
        ["summarize_articles", f"input_dir={root}"],
    ]
    for tool, *arguments in calls:
        args = [part for argument in arguments for part in ("--tool-arg", argument)]
        answer = inspector("--method", "tools/call", "--tool-name", tool, *args)
        assert answer["structuredContent"]["status"] in ("success", "error"), answer
        if tool != "summarize_articles":
            assert answer["isError"] is False, answer
    assert (root / "i.md").read_text(encoding="utf-8").startswith("from the inspector")


def test_a_call_finds_its_input_schema_without_a_tools_list(tmp_path: Path, every_plugin: list[str]) -> None:
    """The SDK checks a 2026-07-28 call's Mcp-Param headers against the called tool's input schema.
    hostd hands it that schema as tools/list shows it to the member (their profile): without the hook the SDK
    runs (and serialises) a whole tools/list on every call to find it, which cost more than the
    calls themselves under load (bench/bench_team.py)."""
    from hostd.core.config import config_from_mapping
    from hostd.core.host import Host
    from hostd.core.identity import Member, acting_as
    from hostd.protocol.server import build_server

    profiles = {
        "default": {"plugins": ["tasks"]},
        "readonly": {"plugins": ["tasks"], "tools": {"tasks": {"include": ["list_tasks"]}}},
    }
    host = Host(config_from_mapping({"profiles": profiles}, data_dir=tmp_path))
    lookup = build_server(host).get_tool_input_schema
    assert lookup is not None
    assert lookup("create_task") == host.tools["create_task"].listed_schema != {}
    assert lookup("no_such_tool") is None
    with acting_as(Member("bob", profile="readonly")):
        assert lookup("create_task") is None  # outside bob's profile: as if it did not exist
        assert lookup("list_tasks") == host.tools["list_tasks"].listed_schema
