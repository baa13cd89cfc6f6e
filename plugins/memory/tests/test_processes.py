"""The plugin through real ``hostd serve`` processes (stdio and HTTP), and the fuzz check."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from hostd_testing import HttpServer, envelope_of, fuzz_tools, ok, served_client, write_config
from memory_support import MemoryClient

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
    assert read["content"] == "服务进程里的记忆\n 追加"
    assert read["via_alias"] == "user://me"
    assert found["hits"][0]["uri"] == "core://me"
    assert short["hits"][0]["uri"] == "core://me"
    assert listed["count"] == 2
    assert stats["total"] == 2
    assert versions["current_version"] == 2
    assert rollbacks["rollbacks"][-1]["version"] == 1
    assert "+服务进程里的记忆" in diff["diff"]
    assert rolled["new_version"] == 3
    assert imported["skipped"] == 2
    assert imported["created"] == 0


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
    assert len(results) == 20
    assert stats["by_domain"] == {"http": 100, "shared": 1}
    assert versions["current_version"] == 21
    assert versions["total"] == 21


async def test_fuzz_check_never_answers_internal(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://b", content="seed")
        report = await fuzz_tools(client, seed=7, rounds=8)
    assert report.calls > 0, report.failures
    assert not report.failures, report.failures


async def test_fuzz_check_in_chinese_with_another_seed(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        report = await fuzz_tools(client, seed=20260, rounds=6)
        envelope = envelope_of(await client.call_tool("get_memory_stats", {}))
    assert report.calls > 0, report.failures
    assert not report.failures, report.failures
    assert envelope["status"] == "success"


async def test_tags_times_links_and_graph_import_through_a_real_stdio_server(tmp_path: Path) -> None:
    """Issue 16's arguments and tools over a real `hostd serve`, in Chinese."""
    import json

    graph = [
        {"type": "entity", "name": "李雷", "entityType": "人物", "observations": ["负责支付"]},
        {"type": "relation", "from": "李雷", "to": "李雷的项目", "relationType": "拥有"},
        {"type": "entity", "name": "李雷的项目", "entityType": "项目", "observations": ["支付网关"]},
    ]
    (tmp_path / "memory.jsonl").write_text("\n".join(json.dumps(g, ensure_ascii=False) for g in graph))
    config = write_config(tmp_path, ["memory"], config={"language": "zh", "allowed_roots": [str(tmp_path)]})
    async with served_client(config) as client:
        await ok(
            client, "create_memory", uri="ops://deploy", content="部署流程 deploy", tags=["运维", "Deploy"]
        )
        await ok(client, "create_memory", uri="ops://rollback", content="回滚流程 deploy", tags=["运维"])
        linked = await ok(
            client, "link_memories", from_uri="ops://rollback", to_uri="ops://deploy", relation="依赖"
        )
        found = await ok(
            client, "search_memory", query="deploy", tags=["deploy", "运维"], created_after="2020-01-01"
        )
        listed = await ok(client, "list_memories", linked_to="ops://deploy", updated_before="9999-12-31")
        bad = envelope_of(await client.call_tool("list_memories", {"created_before": "99999-01-01"}))
        retagged = await ok(client, "update_memory", uri="ops://rollback", tags=["运维", "回滚"])
        by_tags = await ok(client, "list_memories", tags=["回滚"], created_after="2020-01-01")
        windowed = await ok(
            client, "search_memory", query="流程", updated_after="2020-01-01", created_before="9999-01-01"
        )
        read = await ok(client, "read_memory", uri="ops://deploy")
        unlinked = await ok(client, "unlink_memories", from_uri="ops://rollback", to_uri="ops://deploy")
        imported = await ok(client, "import_memories", input_path="memory.jsonl")
        again = await ok(client, "import_memories", input_path="memory.jsonl")
        stats = await ok(client, "get_memory_stats")
    assert linked["created"] is True
    assert [h["uri"] for h in found["hits"]] == ["ops://deploy"]
    assert [m["memory"]["uri"] for m in listed["memories"]] == ["ops://rollback"]
    assert bad["error"]["code"] == "INVALID_ARGUMENT"
    assert "2026-05-01" in bad["error"]["hint"]
    assert read["relations"]["linked_from"] == [{"uri": "ops://rollback", "relation": "依赖"}]
    assert read["relations"]["related"][0]["uri"] == "ops://rollback"
    assert retagged["memory"]["tags"] == ["回滚", "运维"]
    assert retagged["memory"]["version"] == 2
    assert [m["memory"]["uri"] for m in by_tags["memories"]] == ["ops://rollback"]
    assert {h["uri"] for h in windowed["hits"]} == {"ops://deploy", "ops://rollback"}
    assert unlinked["removed"] == ["依赖"]
    assert imported["created"] == 2
    assert imported["links_added"] == 1
    assert again["skipped"] == 2
    assert again["links_added"] == 0
    assert stats["by_tag"] == {"运维": 2, "deploy": 1, "回滚": 1, "人物": 1, "项目": 1}
    assert stats["link_count"] == 1
