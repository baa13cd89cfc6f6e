"""The plugin through real ``hostd serve`` processes (stdio and HTTP), and the fuzz check."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from conftest import MemoryClient, ok
from hostd_testing import HttpServer, envelope_of, fuzz_tools, served_client, write_config

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_every_tool_through_a_real_stdio_server(tmp_path: Path, mode: str) -> None:
    config = write_config(tmp_path, ["memory"], config={"language": "en", "allowed_roots": [str(tmp_path)]})
    async with served_client(config, mode=mode) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert len(names) == 18
        await ok(client, "create_memory", uri="core://me", content="服务进程里的记忆", priority=0)
        await ok(client, "update_memory", uri="core://me", content=" 追加", append=True)
        await ok(client, "add_alias", target_uri="core://me", alias_uri="user://me")
        read = await ok(client, "read_memory", uri="user://me")
        found = await ok(client, "search_memory", query="记忆")
        short = await ok(client, "search_memory", query="忆")
        await ok(client, "preload_memory", context_type="intent", context_data="服务进程")
        session = await ok(client, "save_session", title="stdio", summary="it works")
        listed = await ok(client, "list_memories")
        stats = await ok(client, "get_memory_stats")
        exported = await ok(client, "export_memories", include_versions=True)
        versions = await ok(client, "get_memory_versions", uri="core://me")
        rollbacks = await ok(client, "list_rollbacks", uri="core://me")
        diff = await ok(client, "diff_versions", uri="core://me", version1=1, version2=2)
        rolled = await ok(client, "rollback_memory", uri="core://me", version=1)
        await ok(client, "delete_memory", uri=session["memory"]["uri"])
        imported = await ok(client, "import_memories", data=exported, strategy="skip")
    assert read["content"] == "服务进程里的记忆\n 追加" and read["via_alias"] == "user://me"
    assert found["hits"][0]["uri"] == "core://me" and short["hits"][0]["uri"] == "core://me"
    assert listed["count"] == 2 and stats["total"] == 2 and versions["current_version"] == 2
    assert rollbacks["rollbacks"][-1]["version"] == 1 and "+服务进程里的记忆" in diff["diff"]
    assert rolled["new_version"] == 3 and imported["skipped"] == 2 and imported["created"] == 0


async def test_twenty_http_clients_at_once_against_one_server(tmp_path: Path) -> None:
    config = write_config(tmp_path, ["memory"], config={"language": "en"})
    results: dict[int, list[str]] = {}

    async def one_client(server: HttpServer, n: int) -> None:
        async with server.client() as client:
            uris = []
            for i in range(5):
                created = await ok(
                    client, "create_memory", uri=f"http://client{n}/{i}", content=f"客户端 {n} 第 {i} 条"
                )
                uris.append(created["uri"])
            await ok(client, "update_memory", uri="shared://counter", content=f"client {n}", append=True)
            found = await ok(client, "search_memory", query=f"客户端 {n} 第", domain="http", limit=100)
            assert set(uris) <= {hit["uri"] for hit in found["hits"]}
            results[n] = uris

    with HttpServer.start(config) as server:
        async with server.client() as setup:
            await ok(setup, "create_memory", uri="shared://counter", content="start")
        async with anyio.create_task_group() as group:
            for n in range(20):
                group.start_soon(one_client, server, n)
        async with server.client() as check:
            stats = await ok(check, "get_memory_stats")
            versions = await ok(check, "get_memory_versions", uri="shared://counter", limit=100)
    assert len(results) == 20 and stats["by_domain"] == {"http": 100, "shared": 1}
    assert versions["current_version"] == 21 and versions["total"] == 21


async def test_fuzz_check_never_answers_internal(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://b", content="seed")
        report = await fuzz_tools(client, seed=7, rounds=8)
    assert report.calls > 0 and not report.failures, report.failures


async def test_fuzz_check_in_chinese_with_another_seed(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        report = await fuzz_tools(client, seed=20260, rounds=6)
        envelope = envelope_of(await client.call_tool("get_memory_stats", {}))
    assert report.calls > 0 and not report.failures, report.failures
    assert envelope["status"] == "success"
