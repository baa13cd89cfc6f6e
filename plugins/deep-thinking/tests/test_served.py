"""End to end: real ``hostd serve`` processes over stdio and HTTP, the fuzz check, two servers at once."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from deep_thinking_support import PLUGIN, config_for, sample_session, thought
from hostd_testing import (
    HttpServer,
    fuzz_tools,
    in_memory_client,
    ok,
    prompt_text,
    served_client,
    write_config,
)

pytestmark = pytest.mark.anyio


async def test_fuzz_every_tool(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)) as client:
        await sample_session(client, "a")  # so generated session ids sometimes hit a real session
        report = await fuzz_tools(client, seed=7, rounds=8)
        assert report.calls > 0, report.failures
        assert not report.failures, report.failures
        assert report.codes.get("OK", 0) > 0
        assert report.codes.get("INVALID_ARGUMENT", 0) > 0


async def test_fuzz_the_new_tools_harder(hostd_data_dir: Path, hostd_roots: Path) -> None:
    """search_thoughts, summarize_session and the new arguments (stage, tags, filters, templates) with
    many generated arguments, over labelled sessions, a built index and user template files good and bad."""
    templates = hostd_data_dir / PLUGIN / "templates"
    templates.mkdir(parents=True)
    (templates / "mine.yaml").write_text(
        "name: Mine\nsteps:\n  - {title: A, guidance: B}\n", encoding="utf-8"
    )
    (templates / "bad.yaml").write_text("name: [", encoding="utf-8")
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)) as client:
        await sample_session(client, "a")
        await ok(
            client, "sequential_thinking", **thought(1, 1, "标签", session_id="a", stage="x", tags=["y"])
        )
        await ok(client, "search_thoughts", query="trip")
        old_tools = {tool.name for tool in (await client.list_tools()).tools} - {
            "search_thoughts",
            "summarize_session",
            "sequential_thinking",
            "get_session",
            "create_session",
            "list_templates",
        }
        report = await fuzz_tools(client, seed=15, rounds=40, skip=frozenset(old_tools))
        assert report.calls > 200, report.failures
        assert not report.failures, report.failures
        assert report.codes.get("OK", 0) > 0
        assert report.codes.get("INVALID_ARGUMENT", 0) > 0
        assert (await ok(client, "search_thoughts", query="trip"))["hits"]  # the server and index still work


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
            "search_thoughts",
            "summarize_session",
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
        assert second["session_id"] == first["session_id"]
        assert second["thoughtHistoryLength"] == 2


def summary_model(prompts: list[str]) -> Any:
    """The client's model for summarize_session: one known answer."""

    async def sample(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompts.append(prompt_text(params))
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text="Served summary."), model="m"
        )

    return sample


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_new_tools_and_fields_over_stdio(tmp_path: Path, hostd_roots: Path, mode: str) -> None:
    """search_thoughts, summarize_session (with and without the client's model), stage/tags and a user
    template, through a real server process; a second process finds what the first wrote."""
    config = write_config(tmp_path, [PLUGIN], config=config_for(hostd_roots))
    data = tmp_path / "data" / PLUGIN / "templates"
    data.mkdir(parents=True)
    (data / "triage.yaml").write_text(
        "name: Triage\nsteps:\n  - {title: Sort, guidance: By impact}\n  - {title: Act, guidance: Now}\n",
        encoding="utf-8",
    )
    (data / "broken.json").write_text('{"name": 1', encoding="utf-8")
    prompts: list[str] = []
    async with served_client(config, mode=mode, sampling_callback=summary_model(prompts)) as client:
        listed = await ok(client, "list_templates")
        assert "triage" in [t["template_id"] for t in listed["templates"]]
        assert [(p["field"], Path(p["file"]).name) for p in listed["invalid_templates"]] == [
            ("(file)", "broken.json")
        ]
        created = await ok(client, "create_session", name="Pager", template_id="triage", session_id="pager")
        assert created["session"]["total_thoughts"] == 2
        step = await ok(
            client,
            "sequential_thinking",
            **thought(
                1, 2, "数据库告警: disk full on db-3", session_id="pager", stage="analysis", tags=["ops"]
            ),
        )
        assert step["next_step"]["title"] == "Act"
        await ok(
            client,
            "sequential_thinking",
            **thought(2, 2, "Free space, then resize", more=False, session_id="pager"),
        )
        hits = await ok(client, "search_thoughts", query="告警")
        assert [(h["session_id"], h["thought_number"], h["stage"]) for h in hits["hits"]] == [
            ("pager", 1, "analysis")
        ]
        page = await ok(client, "get_session", session_id="pager", tags=["ops"])
        assert [t["sequence"] for t in page["thoughts"]] == [1]
        sampled = await ok(client, "summarize_session", session_id="pager")
        assert sampled["summarizer"] == "sampling"
        assert sampled["summary"].strip() == "Served summary."
    assert len(prompts) == 1
    assert "disk full" in prompts[0]
    async with served_client(config, mode=mode) as plain:
        structural = await ok(plain, "summarize_session", session_id="pager")
        assert structural["summarizer"] == "structural"
        assert structural["stages"][0]["stage"] == "analysis"
        assert [h["session_id"] for h in (await ok(plain, "search_thoughts", query="resize"))["hits"]] == [
            "pager"
        ]
        await ok(plain, "delete_session", session_id="pager")
        assert (await ok(plain, "search_thoughts", query="resize"))["hits"] == []
        huge = await plain.call_tool("search_thoughts", {"query": "x" * 1_000_000})
        assert huge.is_error
        assert huge.structured_content["error"]["code"] == "TOO_LONG"


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
async def test_two_server_processes_add_200_thoughts_each(
    tmp_path: Path, hostd_roots: Path, backend: dict[str, Any]
) -> None:
    config = write_config(tmp_path, [PLUGIN], config={**config_for(hostd_roots), **backend})
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
        contents, sequences, cursor = [], [], None
        while True:
            page = await ok(
                client, "get_session", session_id="shared", **({"cursor": cursor} if cursor else {})
            )
            contents += [t["content"] for t in page["thoughts"]]
            sequences += [t["sequence"] for t in page["thoughts"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert len(contents) == 400
    assert len(set(contents)) == 400
    assert sequences == list(range(1, 401))  # unique and without gaps
    for index in (0, 1):
        assert [c for c in contents if c.startswith(f"w{index}-")] == [f"w{index}-{n}" for n in range(1, 201)]
