"""End to end: real ``hostd serve`` processes over stdio and HTTP, the fuzz check, two servers at once."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import anyio
import pytest
from conftest import PLUGIN, config_for, ok, sample_session, thought
from hostd_testing import HttpServer, fuzz_tools, in_memory_client, served_client, write_config

pytestmark = pytest.mark.anyio


async def test_fuzz_every_tool(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)) as client:
        await sample_session(client, "a")  # so generated session ids sometimes hit a real session
        report = await fuzz_tools(client, seed=7, rounds=8)
        assert report.calls > 0 and not report.failures, report.failures
        assert report.codes.get("OK", 0) > 0 and report.codes.get("INVALID_ARGUMENT", 0) > 0


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_real_server_over_stdio(tmp_path: Path, hostd_roots: Path, mode: str) -> None:
    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    async with served_client(config, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names == {
            "sequential_thinking",
            "create_session",
            "get_session",
            "list_sessions",
            "delete_session",
            "restore_session",
            "update_session_status",
            "resume_session",
            "list_templates",
            "export_session",
            "import_session",
            "visualize_session",
        }
        await sample_session(client, "trip")
        first = await ok(client, "sequential_thinking", **thought(1, 2))
        assert first["session_id"].startswith("default-")
        written = await ok(
            client, "export_session", session_id="trip", format="html", output_path="trip.html"
        )
        assert Path(written["output_path"]).read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    # A new server process finds everything again.
    async with served_client(config, mode=mode) as client:
        page = await ok(client, "get_session", session_id="trip")
        assert page["session"]["thought_count"] == 8
        second = await ok(client, "sequential_thinking", **thought(2, 2))
        assert second["session_id"] == first["session_id"] and second["thoughtHistoryLength"] == 2


async def test_served_list_sessions_reflects_the_journal(tmp_path: Path, hostd_roots: Path) -> None:
    from test_sessions import list_reflects_the_journal

    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    async with served_client(config) as client:
        await list_reflects_the_journal(client)
    # Another process that only reads the index and journals sees the same.
    async with served_client(config) as client:
        listed = await ok(client, "list_sessions")
        assert listed["sessions"][1]["session_id"] == "older"
        assert (listed["sessions"][1]["thought_count"], listed["sessions"][1]["branches"]) == (3, ["alt"])


async def test_real_server_over_http(tmp_path: Path, hostd_roots: Path) -> None:
    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    with HttpServer.start(config) as server:
        async with server.client() as client:
            answer = await ok(client, "sequential_thinking", **thought(1, 1, session_id="web"))
            assert answer["thoughtHistoryLength"] == 1
            listed = await ok(client, "list_sessions")
            assert [s["session_id"] for s in listed["sessions"]] == ["web"]


async def test_hostd_call_cli(tmp_path: Path, hostd_roots: Path) -> None:
    import subprocess
    import sys

    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    arguments = json.dumps(thought(1, 1, session_id="cli"))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hostd",
            "--config",
            str(config),
            "call",
            "sequential_thinking",
            "--json",
            arguments,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session_id"] == "cli"


@pytest.mark.slow
async def test_two_server_processes_add_200_thoughts_each(tmp_path: Path, hostd_roots: Path) -> None:
    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    ready = [anyio.Event(), anyio.Event()]
    start = anyio.Event()
    order: list[str] = []

    async def writer(index: int) -> None:
        async with served_client(config) as client:
            await client.list_tools()
            ready[index].set()
            await start.wait()  # the barrier: both servers are up before either writes
            for number in range(1, 201):
                answer = await ok(
                    client,
                    "sequential_thinking",
                    **thought(number, 200, f"w{index}-{number}", session_id="shared"),
                )
                order.append(f"w{index}")
                assert answer["session_id"] == "shared"

    async with anyio.create_task_group() as group:
        group.start_soon(writer, 0)
        group.start_soon(writer, 1)
        for event in ready:
            await event.wait()
        start.set()
    switches = sum(1 for x, y in itertools.pairwise(order) if x != y)
    assert switches > 10, "the two servers did not overlap"
    async with served_client(config) as client:
        contents, cursor = [], None
        while True:
            page = await ok(
                client, "get_session", session_id="shared", **({"cursor": cursor} if cursor else {})
            )
            contents += [t["content"] for t in page["thoughts"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert len(contents) == 400 and len(set(contents)) == 400
    for index in (0, 1):
        assert [c for c in contents if c.startswith(f"w{index}-")] == [f"w{index}-{n}" for n in range(1, 201)]
