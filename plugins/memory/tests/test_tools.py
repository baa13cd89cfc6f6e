"""Every tool and rule of the memory spec, through the official client over an in-memory host."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hostd_testing import call, error_code, ok
from mcp_types import CallToolResult, TextContent
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio

# The filters list_memories and search_memory share (issue 16).
FILTERS = ("tags", "created_after", "created_before", "updated_after", "updated_before")


async def test_all_eighteen_tools_are_listed_with_the_spec_parameters(memory_client: MemoryClient) -> None:
    expected = {
        "read_memory": {"uri", "cursor"},
        "create_memory": {"uri", "content", "priority", "disclosure", "tags"},
        "update_memory": {
            "uri",
            "content",
            "old_string",
            "new_string",
            "append",
            "priority",
            "disclosure",
            "status",
            "tags",
        },
        "delete_memory": {"uri", "force"},
        "search_memory": {
            "query",
            "domain",
            "limit",
            "priority_min",
            "priority_max",
            *FILTERS,
            "cursor",
            "author",
        },
        "preload_memory": {"context_type", "context_data"},
        "save_session": {"title", "summary"},
        "list_memories": {
            "domain",
            "status",
            "limit",
            "priority_min",
            "priority_max",
            "cursor",
            *FILTERS,
            "linked_to",
            "author",
        },
        "get_memory_stats": set(),
        "export_memories": {
            "domain",
            "include_versions",
            "include_relations",
            "output_path",
            "overwrite",
            "limit",
            "cursor",
        },
        "import_memories": {"data", "strategy", "input_path"},
        "add_alias": {"target_uri", "alias_uri"},
        "link_memories": {"from_uri", "to_uri", "relation"},
        "unlink_memories": {"from_uri", "to_uri", "relation"},
        "get_memory_versions": {"uri", "limit", "cursor"},
        "rollback_memory": {"uri", "version"},
        "diff_versions": {"uri", "version1", "version2"},
        "list_rollbacks": {"uri", "limit", "cursor"},
    }
    async with memory_client() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == set(expected)
    for name, parameters in expected.items():
        assert set(tools[name].input_schema["properties"]) == parameters, name
        for prop in tools[name].input_schema["properties"].values():
            assert prop.get("description"), name
    hints = {name: tool.annotations for name, tool in tools.items() if tool.annotations is not None}
    assert set(hints) == set(tools)
    assert hints["search_memory"].read_only_hint is True
    assert hints["delete_memory"].destructive_hint is True
    assert hints["create_memory"].destructive_hint is False
    assert hints["link_memories"].idempotent_hint is True
    assert hints["unlink_memories"].destructive_hint is True


@pytest.mark.smoke
async def test_create_then_read_returns_content_record_versions_and_counts_access(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        created = await ok(
            client,
            "create_memory",
            uri="project://config",
            content="port 8080",
            priority=2,
            disclosure="when editing the server",
        )
        assert created["uri"] == "project://config"
        assert created["id"] >= 1
        assert created["created_at"]
        assert created["memory"]["version"] == 1
        first = await ok(client, "read_memory", uri="project://config")
        second = await ok(client, "read_memory", uri="project://config/")
    assert first["content"] == "port 8080"
    assert first["memory"]["priority"] == 2
    assert first["memory"]["disclosure"] == "when editing the server"
    assert first["memory"]["access_count"] == 1
    assert second["memory"]["access_count"] == 2
    assert [v["version"] for v in first["recent_versions"]] == [1]
    assert first["recent_versions"][0]["change"] == "created"


async def test_uris_are_normalised_so_trailing_and_doubled_slashes_name_one_memory(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="Project://a//b/", content="x")
        assert await error_code(client, "create_memory", uri="project://a/b", content="y") == "ALREADY_EXISTS"
        read = await ok(client, "read_memory", uri="  project://a/b  ")
    assert read["uri"] == "project://a/b"


@pytest.mark.parametrize(
    "uri",
    [
        "no-scheme",
        "://path",
        "UPPER_CASE://x",
        "project://",
        "project:///",
        "project://a/../b",
        "project://a/./b",
        "bad domain://x",
        "project://has space",
        "project://tab\there",
        "x" * 700,
        "project://a\x00b",
        "dom_ain://x",
    ],
)
async def test_invalid_uris_are_invalid_argument_with_the_valid_form(
    memory_client: MemoryClient, uri: str
) -> None:
    async with memory_client() as client:
        envelope = await call(client, "create_memory", uri=uri, content="x")
    assert envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
    assert "domain://" in envelope["error"]["hint"] or "at most" in envelope["error"]["hint"]


async def test_system_domain_is_read_only(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        assert (
            await error_code(client, "create_memory", uri="system://mine", content="x") == "PERMISSION_DENIED"
        )
        await ok(client, "create_memory", uri="a://b", content="x")
        assert (
            await error_code(client, "add_alias", target_uri="a://b", alias_uri="system://b")
            == "PERMISSION_DENIED"
        )
        assert await error_code(client, "delete_memory", uri="system://boot") == "PERMISSION_DENIED"
        assert await error_code(client, "read_memory", uri="system://nothing") == "NOT_FOUND"


async def test_update_modes_patch_append_replace_metadata_and_status(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://t", content="alpha beta")
        patch = await ok(client, "update_memory", uri="n://t", old_string="beta", new_string="gamma")
        append = await ok(client, "update_memory", uri="n://t", content="delta", append=True)
        metadata = await ok(client, "update_memory", uri="n://t", priority=1, disclosure="always")
        status = await ok(client, "update_memory", uri="n://t", status="deprecated")
        replace = await ok(client, "update_memory", uri="n://t", content="new", priority=3)
        read = await ok(client, "read_memory", uri="n://t")
        versions = await ok(client, "get_memory_versions", uri="n://t")
    assert [patch["mode"], append["mode"], metadata["mode"], status["mode"], replace["mode"]] == [
        "patch",
        "append",
        "metadata",
        "status",
        "replace",
    ]
    assert append["memory"]["version"] == 3
    assert read["content"] == "new"
    assert read["memory"]["priority"] == 3
    assert read["memory"]["status"] == "deprecated"
    assert [v["change"] for v in versions["versions"]] == [
        "replace",
        "status",
        "metadata",
        "append",
        "patch",
        "created",
    ]
    assert versions["current_version"] == 6
    assert versions["total"] == 6


async def test_patch_must_match_exactly_once_else_conflict_with_the_count(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://t", content="ab ab ab")
        twice = await call(client, "update_memory", uri="n://t", old_string="ab", new_string="x")
        never = await call(client, "update_memory", uri="n://t", old_string="zz", new_string="x")
        read = await ok(client, "read_memory", uri="n://t")
    assert twice["error"]["code"] == "CONFLICT"
    assert twice["error"]["details"]["occurrences"] == 3
    assert "3" in twice["message"]
    assert never["error"]["code"] == "CONFLICT"
    assert never["error"]["details"]["occurrences"] == 0
    assert read["content"] == "ab ab ab"
    assert read["memory"]["version"] == 1


@pytest.mark.parametrize(
    "arguments",
    [
        {"old_string": "a"},
        {"new_string": "a"},
        {"old_string": "a", "new_string": "b", "content": "c"},
        {"old_string": "a", "new_string": "b", "append": True},
        {"append": True},
        {},
        {"old_string": "", "new_string": "b"},
    ],
)
async def test_contradictory_update_arguments_are_invalid_argument(
    memory_client: MemoryClient, arguments: dict[str, object]
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://t", content="a")
        assert await error_code(client, "update_memory", uri="n://t", **arguments) == "INVALID_ARGUMENT"


async def test_update_that_changes_nothing_keeps_the_version(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://t", content="same", priority=4)
        same = await ok(client, "update_memory", uri="n://t", content="same", priority=4)
    assert same["memory"]["version"] == 1
    assert "nothing changed" in same["message"]


async def test_soft_delete_hides_everywhere_keeps_versions_and_rollback_restores(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://gone", content="secret marmalade", priority=0)
        deleted = await ok(client, "delete_memory", uri="n://gone")
        assert deleted["action"] == "soft_deleted"
        assert deleted["memory"]["status"] == "deleted"
        missing = await call(client, "read_memory", uri="n://gone")
        search = await ok(client, "search_memory", query="marmalade")
        listed = await ok(client, "list_memories")
        boot = await ok(client, "read_memory", uri="system://boot")
        rollbacks = await ok(client, "list_rollbacks", uri="n://gone")
        restored = await ok(client, "rollback_memory", uri="n://gone", version=1)
        again = await ok(client, "read_memory", uri="n://gone")
    assert missing["error"]["code"] == "NOT_FOUND"
    assert missing["error"]["details"]["deleted"] is True
    assert "rollback_memory" in missing["error"]["hint"]
    assert search["hits"] == []
    assert listed["memories"] == []
    assert boot["memories"] == []
    assert [r["version"] for r in rollbacks["rollbacks"]] == [1]
    assert rollbacks["current_version"] == 2
    assert restored["new_version"] == 3
    assert again["memory"]["status"] == "active"
    assert again["content"] == "secret marmalade"


async def test_force_delete_removes_memory_versions_and_aliases(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://x", content="one")
        await ok(client, "update_memory", uri="n://x", content="two")
        await ok(client, "add_alias", target_uri="n://x", alias_uri="n://y")
        removed = await ok(client, "delete_memory", uri="n://x", force=True)
        assert await error_code(client, "read_memory", uri="n://y") == "NOT_FOUND"
        assert await error_code(client, "get_memory_versions", uri="n://x") == "NOT_FOUND"
        recreated = await ok(client, "create_memory", uri="n://y", content="free again")
    assert removed["action"] == "removed"
    assert removed["removed_versions"] == 2
    assert removed["removed_aliases"] == ["n://y"]
    assert recreated["memory"]["version"] == 1


async def test_deleting_an_alias_removes_only_the_alias(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="core://agent/my_user", content="likes tea")
        await ok(client, "add_alias", target_uri="core://agent/my_user", alias_uri="user://profile")
        deleted = await ok(client, "delete_memory", uri="user://profile")
        still = await ok(client, "read_memory", uri="core://agent/my_user")
    assert deleted["action"] == "alias_removed"
    assert deleted["target_uri"] == "core://agent/my_user"
    assert "alias" in deleted["message"]
    assert still["memory"]["aliases"] == []
    assert still["memory"]["status"] == "active"


async def test_aliases_read_their_target_chain_to_the_real_memory_and_never_cycle(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="project://config", content="cfg")
        await ok(client, "add_alias", target_uri="project://config", alias_uri="config://main")
        chained = await ok(client, "add_alias", target_uri="config://main", alias_uri="cfg://short")
        read = await ok(client, "read_memory", uri="cfg://short")
        cycle = await call(client, "add_alias", target_uri="cfg://short", alias_uri="project://config")
        taken = await call(client, "add_alias", target_uri="project://config", alias_uri="config://main")
        missing = await call(client, "add_alias", target_uri="project://none", alias_uri="x://y")
        same = await call(client, "add_alias", target_uri="project://config", alias_uri="project://config/")
        create_on_alias = await call(client, "create_memory", uri="config://main", content="dup")
    assert chained["target_uri"] == "project://config"
    assert read["uri"] == "project://config"
    assert read["via_alias"] == "cfg://short"
    assert read["content"] == "cfg"
    assert sorted(read["relations"]["aliases"]) == ["cfg://short", "config://main"]
    assert cycle["error"]["code"] == "ALREADY_EXISTS"
    assert taken["error"]["code"] == "ALREADY_EXISTS"
    assert missing["error"]["code"] == "NOT_FOUND"
    assert same["error"]["code"] == "INVALID_ARGUMENT"
    assert create_on_alias["error"]["code"] == "ALREADY_EXISTS"
    assert create_on_alias["error"]["details"]["target"] == "project://config"


async def test_relations_list_mentioned_uris_and_memories_that_mention_this_one(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="project://db", content="postgres 16")
        await ok(
            client, "create_memory", uri="project://api", content="uses project://db, see also wiki://none."
        )
        await ok(client, "create_memory", uri="project://other", content="mentions project://db/extra only")
        api = await ok(client, "read_memory", uri="project://api")
        db = await ok(client, "read_memory", uri="project://db")
    assert api["relations"]["mentions"] == [
        {"uri": "project://db", "exists": True},
        {"uri": "wiki://none", "exists": False},
    ]
    assert db["relations"]["mentioned_by"] == ["project://api"]


async def test_versions_diff_and_rollback_of_an_earlier_version_and_of_a_rollback(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="v://m", content="line one\nline two\n", priority=5)
        await ok(
            client, "update_memory", uri="v://m", content="line one\nline 2\n", priority=1, disclosure="d"
        )
        diff = await ok(client, "diff_versions", uri="v://m", version1=1, version2=2)
        current = await ok(client, "diff_versions", uri="v://m", version1=2, version2=2)
        rollbacks = await ok(client, "list_rollbacks", uri="v://m")
        rolled = await ok(client, "rollback_memory", uri="v://m", version=1)
        again = await ok(client, "rollback_memory", uri="v://m", version=2)
        read = await ok(client, "read_memory", uri="v://m")
        missing = await call(client, "rollback_memory", uri="v://m", version=99)
        versions = await ok(client, "get_memory_versions", uri="v://m", limit=2)
    assert diff["content1"] == "line one\nline two\n"
    assert diff["content2"] == "line one\nline 2\n"
    assert "-line two" in diff["diff"]
    assert "+line 2" in diff["diff"]
    assert diff["identical"] is False
    assert current["identical"] is True
    oldest = rollbacks["rollbacks"][-1]
    assert oldest["version"] == 1
    assert oldest["lines_added"] == 1
    assert oldest["lines_removed"] == 1
    assert oldest["priority_change"] == "1 -> 5"
    assert oldest["disclosure_changed"] is True
    assert [r["version"] for r in rollbacks["rollbacks"]] == [1]
    assert rollbacks["current_version"] == 2
    assert rollbacks["rollbacks"][0]["current"] is False
    assert rollbacks["rollbacks"][0]["content_changed"]
    assert rolled["new_version"] == 3
    assert again["new_version"] == 4
    assert rolled["changed"] is True
    assert again["changed"] is True
    assert read["content"] == "line one\nline 2\n"
    assert read["memory"]["priority"] == 1
    assert read["memory"]["disclosure"] == "d"
    assert missing["error"]["code"] == "NOT_FOUND"
    assert missing["error"]["details"]["current_version"] == 4
    assert [v["version"] for v in versions["versions"]] == [4, 3]
    assert versions["total"] == 4
    assert versions["versions"][0]["change"] == "rollback"
    assert versions["versions"][0]["size"] == 16


async def test_list_orders_by_importance_then_recency_filters_and_pages(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        for i, priority in enumerate([5, 1, 5, 9, 1]):
            await ok(
                client, "create_memory", uri=f"d{i % 2}://m{i}", content=f"memory {i}", priority=priority
            )
        await ok(client, "update_memory", uri="d0://m2", status="archived")
        everything = await ok(client, "list_memories")
        archived = await ok(client, "list_memories", status="archived")
        ranged = await ok(client, "list_memories", priority_min=1, priority_max=5, domain="d0")
        page1 = await ok(client, "list_memories", limit=2)
        page2 = await ok(client, "list_memories", limit=2, cursor=page1["next_cursor"])
        page3 = await ok(client, "list_memories", limit=2, cursor=page2["next_cursor"])
        # A cursor is bound to the listing and its filters, not to the page size.
        resized = await ok(client, "list_memories", limit=3, cursor=page1["next_cursor"])
        wrong = await call(client, "list_memories", limit=2, status="active", cursor=page1["next_cursor"])
        foreign = await call(client, "search_memory", query="memory", cursor=page1["next_cursor"])
        bad_range = await call(client, "list_memories", priority_min=6, priority_max=2)
    uris = [m["memory"]["uri"] for m in everything["memories"]]
    assert uris == ["d0://m4", "d1://m1", "d0://m2", "d0://m0", "d1://m3"]
    assert [m["memory"]["uri"] for m in archived["memories"]] == ["d0://m2"]
    assert [m["memory"]["uri"] for m in ranged["memories"]] == ["d0://m4", "d0://m2", "d0://m0"]
    paged = [m["memory"]["uri"] for p in (page1, page2, page3) for m in p["memories"]]
    assert paged == uris
    assert page1["truncated"]
    assert not page3["truncated"]
    assert page3["next_cursor"] is None
    assert [m["memory"]["uri"] for m in resized["memories"]] == uris[2:]
    assert wrong["error"]["code"] == "INVALID_ARGUMENT"
    assert bad_range["error"]["code"] == "INVALID_ARGUMENT"
    assert wrong["error"]["details"] == {"argument": "cursor", "reason": "other_filters"}
    assert foreign["error"]["details"] == {"argument": "cursor", "reason": "other_listing"}


async def test_boot_index_and_recent_views(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="core://me", content="I am the agent", priority=0)
        await ok(client, "create_memory", uri="core://user", content="the user", priority=2)
        await ok(client, "create_memory", uri="project://low", content="low", priority=7)
        await ok(client, "update_memory", uri="project://low", content="low, changed")
        boot = await ok(client, "read_memory", uri="system://boot")
        index = await ok(client, "read_memory", uri="system://index")
        recent = await ok(client, "read_memory", uri="system://recent")
        recent2 = await ok(client, "read_memory", uri="system://recent/2")
        too_many = await call(client, "read_memory", uri="system://recent/101")
    assert [(m["memory"]["uri"], m["content"]) for m in boot["memories"]] == [
        ("core://me", "I am the agent"),
        ("core://user", "the user"),
    ]
    assert index["index"] == [
        {
            "domain": "core",
            "memories": [{"uri": "core://me", "priority": 0}, {"uri": "core://user", "priority": 2}],
        },
        {"domain": "project", "memories": [{"uri": "project://low", "priority": 7}]},
    ]
    assert recent["memories"][0]["memory"]["uri"] == "project://low"
    assert len(recent["memories"]) == 3
    assert [m["memory"]["uri"] for m in recent2["memories"]] == ["project://low", "core://user"]
    assert too_many["error"]["code"] == "INVALID_ARGUMENT"


def _text_block(result: CallToolResult) -> str:
    """The text of a result's first content block (the envelope as JSON text)."""
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


async def test_large_views_stay_within_the_budget_and_page_with_a_cursor(memory_client: MemoryClient) -> None:
    async with memory_client(budget=2_000) as client:
        for i in range(60):
            await ok(
                client,
                "create_memory",
                uri=f"bulk://item/{i:03d}",
                content=f"content {i} " * 20,
                priority=i % 3,
            )
        seen: list[str] = []
        cursor = None
        pages = 0
        while True:
            arguments = {"uri": "system://index"} | ({"cursor": cursor} if cursor else {})
            envelope = await client.call_tool("read_memory", arguments)
            assert len(_text_block(envelope)) <= 2_000
            page = envelope.structured_content
            seen += [m["uri"] for g in page["index"] for m in g["memories"]]
            pages += 1
            cursor = page["next_cursor"]
            if not page["truncated"]:
                break
        boot1 = await ok(client, "read_memory", uri="system://boot")
        boot2 = await ok(client, "read_memory", uri="system://boot", cursor=boot1["next_cursor"])
        export1 = await client.call_tool("export_memories", {})
    assert pages > 1
    assert seen == sorted(seen)
    assert len(seen) == 60
    assert boot1["truncated"]
    assert boot2["memories"]
    assert boot1["memories"][-1] != boot2["memories"][0]
    assert len(_text_block(export1)) <= 2_000
    assert export1.structured_content["truncated"]


async def test_long_content_reads_in_pages(memory_client: MemoryClient) -> None:
    content = "".join(f"第{i}行：内容 line {i}\n" for i in range(3_000))
    async with memory_client(budget=10_000) as client:
        await ok(client, "create_memory", uri="big://doc", content=content)
        parts = []
        cursor = None
        while True:
            page = await ok(client, "read_memory", uri="big://doc", **({"cursor": cursor} if cursor else {}))
            parts.append(page["content"])
            cursor = page["next_cursor"]
            if cursor is None:
                break
        stats = await ok(client, "get_memory_stats")
    assert "".join(parts) == content
    assert len(parts) > 2
    assert stats["most_read"] == [{"uri": "big://doc", "access_count": 1}]


async def test_save_session_records_and_creates_a_dated_session_memory(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        with_summary = await ok(
            client, "save_session", title="Refactor Auth 模块!", summary="moved login to auth/"
        )
        same_title = await ok(client, "save_session", title="Refactor Auth 模块!", summary="second")
        bare = await ok(client, "save_session")
        read = await ok(client, "read_memory", uri=with_summary["memory"]["uri"])
    uri = with_summary["session"]["memory_uri"]
    assert uri.startswith("session://")
    assert uri.endswith("/refactor-auth-模块")
    assert len(uri.split("://")[1].split("/")[0]) == 10
    assert same_title["memory"]["uri"] == uri + "-2"
    assert bare["memory"] is None
    assert bare["session"]["memory_uri"] is None
    assert bare["session"]["title"]
    assert "moved login to auth/" in read["content"]
    assert with_summary["session"]["id"] < same_title["session"]["id"] < bare["session"]["id"]


async def test_stats_count_statuses_domains_accesses_versions_and_size(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://1", content="x")
        await ok(client, "create_memory", uri="a://2", content="y")
        await ok(client, "create_memory", uri="b://1", content="z")
        await ok(client, "update_memory", uri="a://2", status="archived")
        await ok(client, "delete_memory", uri="b://1")
        await ok(client, "read_memory", uri="a://1")
        await ok(client, "read_memory", uri="a://1")
        await ok(client, "add_alias", target_uri="a://1", alias_uri="c://1")
        stats = await ok(client, "get_memory_stats")
    assert stats["total"] == 2
    assert stats["by_status"] == {"active": 1, "deprecated": 0, "archived": 1, "deleted": 1}
    assert stats["by_domain"] == {"a": 2}
    assert stats["total_accesses"] == 2
    assert stats["most_read"] == [{"uri": "a://1", "access_count": 2}]
    assert stats["version_count"] == 5
    assert stats["alias_count"] == 1
    assert stats["database_bytes"] > 0


async def test_preload_finds_core_and_related_memories_with_reasons(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="core://rules", content="Always run tests", priority=0)
        await ok(
            client, "create_memory", uri="project://auth", content="src/auth/login.py handles OAuth tokens"
        )
        await ok(client, "create_memory", uri="project://folder", content="the auth folder is owned by Li")
        await ok(
            client,
            "create_memory",
            uri="debug://econn",
            content="ConnectionRefusedError when redis is down: start it with docker compose up redis",
        )
        await ok(
            client,
            "create_memory",
            uri="tips://deploy",
            content="use the blue-green script",
            disclosure="when the user wants to deploy",
        )
        await ok(client, "create_memory", uri="notes://other", content="nothing related")
        file = await ok(
            client, "preload_memory", context_type="file", context_data="/home/me/app/src/auth/login.py"
        )
        folder = await ok(
            client, "preload_memory", context_type="directory", context_data="/home/me/app/src/auth"
        )
        error = await ok(
            client,
            "preload_memory",
            context_type="error",
            context_data="ConnectionRefusedError: [Errno 111] 127.0.0.1:6379 in /srv/x/y.py line 42",
        )
        intent = await ok(
            client, "preload_memory", context_type="intent", context_data="I want to deploy the app"
        )
    assert [c["memory"]["uri"] for c in file["core"]] == ["core://rules"]
    related = {r["uri"]: r["reasons"] for r in file["related"]}
    assert next(iter(related)) == "project://auth"
    assert any("auth/login.py" in reason for reason in related["project://auth"])
    assert "project://folder" in related
    assert "notes://other" not in related
    assert [r["uri"] for r in folder["related"]][:2] == ["project://auth", "project://folder"]
    assert error["related"][0]["uri"] == "debug://econn"
    assert "111" not in error["search_terms"]
    assert "6379" not in " ".join(error["search_terms"])
    deploy = next(r for r in intent["related"] if r["uri"] == "tips://deploy")
    assert any("disclosure" in reason for reason in deploy["reasons"])


async def test_messages_follow_the_host_language(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        created = await ok(client, "create_memory", uri="a://b", content="x")
        missing = await call(client, "read_memory", uri="a://none")
        conflict = await call(client, "update_memory", uri="a://b", old_string="q", new_string="r")
    assert "已创建" in created["message"]
    assert "没有记忆" in missing["message"]
    assert "search_memory" in missing["error"]["hint"]
    assert "次" in conflict["message"]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("a\nb", "a\nc"),  # neither ends with a newline
        ("a\nb\n", "a\nb"),  # the newline at the end is removed
        ("a\nb", "a\nb\n"),  # a newline at the end is added
        ("one", "two\n"),
        ("x\ny\nz", "w\ny\nz"),  # the last line is unchanged context without a newline
        ("a\u2028b\r\nc", "a\u2028B\r\nc\n"),  # lines end at "\n" only, as for patch
    ],
)
async def test_diff_versions_is_a_unified_diff_that_patch_applies(
    memory_client: MemoryClient, tmp_path: Path, old: str, new: str
) -> None:
    patch_program = shutil.which("patch")
    if patch_program is None:
        pytest.skip("the patch program is not installed")
    async with memory_client() as client:
        await ok(client, "create_memory", uri="rep://d", content=old)
        await ok(client, "update_memory", uri="rep://d", content=new)
        diff = await ok(client, "diff_versions", uri="rep://d", version1=1, version2=2)
    original = tmp_path / "v1.txt"
    original.write_bytes(old.encode())
    (tmp_path / "v1-to-v2.diff").write_bytes(diff["diff"].encode())
    patched = tmp_path / "patched.txt"
    subprocess.run(
        [patch_program, "--silent", "--output", str(patched), str(original), str(tmp_path / "v1-to-v2.diff")],
        check=True,
        capture_output=True,
    )
    assert patched.read_bytes() == new.encode()


async def test_diff_of_a_patched_last_line_without_newline_keeps_the_lines_apart(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="rep://d", content="a\nb")
        await ok(client, "update_memory", uri="rep://d", old_string="b", new_string="c")
        diff = await ok(client, "diff_versions", uri="rep://d", version1=1, version2=2)
    assert diff["diff"].splitlines()[-4:] == [
        "-b",
        "\\ No newline at end of file",
        "+c",
        "\\ No newline at end of file",
    ]


async def test_read_reports_the_access_it_counts_with_its_time(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        created = await ok(client, "create_memory", uri="n://t", content="x")
        first = await ok(client, "read_memory", uri="n://t")
        second = await ok(client, "read_memory", uri="n://t")
        listed = await ok(client, "list_memories")
    assert created["memory"]["access_count"] == 0
    assert created["memory"]["last_accessed_at"] is None
    assert first["memory"]["access_count"] == 1
    assert first["memory"]["last_accessed_at"] is not None
    assert first["memory"]["last_accessed_at"] >= created["memory"]["created_at"]
    assert second["memory"]["access_count"] == 2
    assert second["memory"]["last_accessed_at"] > first["memory"]["last_accessed_at"]
    stored = listed["memories"][0]["memory"]
    assert (stored["access_count"], stored["last_accessed_at"]) == (2, second["memory"]["last_accessed_at"])


async def test_rollback_to_the_current_state_changes_nothing_and_is_not_offered(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="r://m", content="one")
        await ok(client, "update_memory", uri="r://m", content="two", priority=3)
        offered = await ok(client, "list_rollbacks", uri="r://m")
        to_current = await ok(client, "rollback_memory", uri="r://m", version=2)
        to_first = await ok(client, "rollback_memory", uri="r://m", version=1)
        to_first_again = await ok(client, "rollback_memory", uri="r://m", version=1)
        offered_later = await ok(client, "list_rollbacks", uri="r://m", limit=1)
        versions = await ok(client, "get_memory_versions", uri="r://m")
    assert [r["version"] for r in offered["rollbacks"]] == [1]
    assert offered["current_version"] == 2
    assert not any(r["current"] for r in offered["rollbacks"])
    assert to_current["changed"] is False
    assert to_current["new_version"] == 2
    assert to_current["restored_version"] == 2
    assert "nothing changed" in to_current["message"]
    assert to_first["changed"] is True
    assert to_first["new_version"] == 3
    assert to_first_again["changed"] is False
    assert to_first_again["new_version"] == 3
    assert to_first_again["memory"]["version"] == 3
    assert [r["version"] for r in offered_later["rollbacks"]] == [2]
    assert versions["total"] == 3
    assert [v["change"] for v in versions["versions"]] == [
        "rollback",
        "replace",
        "created",
    ]


async def test_rollback_that_changes_nothing_says_so_in_chinese(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        await ok(client, "create_memory", uri="r://m", content="一")
        same = await ok(client, "rollback_memory", uri="r://m", version=1)
    assert same["changed"] is False
    assert "未作改动" in same["message"]
    assert not re.search("[A-Za-z]{3,}", same["message"].replace("r://m", ""))


@pytest.mark.parametrize("blank", [" ", "  \n\t ", "\u3000\r\n"])
async def test_blank_content_is_refused_on_create_replace_and_patch(
    memory_client: MemoryClient, blank: str
) -> None:
    async with memory_client() as client:
        created = await call(client, "create_memory", uri="n://blank", content=blank)
        missing = await error_code(client, "read_memory", uri="n://blank")
        await ok(client, "create_memory", uri="n://t", content="keep me")
        replaced = await call(client, "update_memory", uri="n://t", content=blank)
        emptied = await call(client, "update_memory", uri="n://t", content="")
        patched = await call(client, "update_memory", uri="n://t", old_string="keep me", new_string=blank)
        read = await ok(client, "read_memory", uri="n://t")
    for envelope, argument in ((created, "content"), (replaced, "content"), (emptied, "content")):
        assert envelope["error"]["code"] == "INVALID_ARGUMENT", envelope
        assert envelope["error"]["details"]["argument"] == argument
        assert envelope["error"]["hint"]
    assert patched["error"]["code"] == "INVALID_ARGUMENT"
    assert patched["error"]["details"]["argument"] == "new_string"
    assert patched["error"]["hint"]
    assert missing == "NOT_FOUND"
    assert read["content"] == "keep me"
    assert read["memory"]["version"] == 1


async def test_blank_content_is_refused_in_chinese(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        refused = await call(client, "create_memory", uri="n://blank", content=" \n ")
    assert refused["error"]["code"] == "INVALID_ARGUMENT"
    assert "空白" in refused["message"]
    assert "空白" in refused["error"]["message"]
    words = refused["message"] + refused["error"]["hint"]
    assert not re.search("[A-Za-z]{3,}", words.replace("content", "").replace("delete_memory", ""))


@pytest.mark.parametrize(
    ("context_type", "path"),
    [
        ("file", "/home/dev/hostd/src/hostd/cli.py"),
        ("directory", "/home/dev/Hostd/src/hostd"),
        ("file", "/work/cli/cli.py"),  # the stem is also a folder
    ],
)
async def test_preload_of_a_path_repeating_a_name_looks_for_each_term_once(
    memory_client: MemoryClient, context_type: str, path: str
) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="project://cli", content="hostd cli entry point")
        preloaded = await ok(client, "preload_memory", context_type=context_type, context_data=path)
    terms = [t.lower() for t in preloaded["search_terms"]]
    assert len(terms) == len(set(terms)), terms
    [related] = preloaded["related"]
    assert related["uri"] == "project://cli"
    assert len(related["reasons"]) == len(set(related["reasons"])), related["reasons"]
    assert any("hostd" in reason.lower() or "cli" in reason for reason in related["reasons"])
