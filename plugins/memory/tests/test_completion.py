"""completion/complete of memory URIs (``memory://{domain}/{+path}``) on both stores, through the
official client: newest change first, deleted memories never offered, the same answer whether a
prefix is read whole (narrow) or walked newest first (broad); bench/bench_completion.py times it
at 100,000 memories."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest
from hostd_memory.store import tuning
from hostd_testing import ok
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio

TEMPLATE = types.ResourceTemplateReference(type="ref/resource", uri="memory://{domain}/{+path}")

#: (uri, updated_at): the order of the list is not the order of change.
MEMORIES = [
    ("ops://deploy/steps", "2026-03-01T00:00:00Z"),
    ("ops://deploy/rollback", "2026-05-01T00:00:00Z"),
    ("ops://dashboards/latency", "2026-01-01T00:00:00Z"),
    ("ops://部署/笔记", "2026-04-01T00:00:00Z"),
    ("ops://oncall", "2026-02-01T00:00:00Z"),
    ("project://deploy/plan", "2026-06-01T00:00:00Z"),
    ("people://ann", "2025-01-01T00:00:00Z"),
    ("gone://only", "2026-07-01T00:00:00Z"),
]


async def seeded(client: Any) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": uri, "content": f"about {uri}", "priority": 5, "created_at": at, "updated_at": at}
            for uri, at in MEMORIES
        ],
    }
    await ok(client, "import_memories", data=document)
    await ok(client, "delete_memory", uri="ops://deploy/rollback")
    await ok(client, "delete_memory", uri="gone://only")


async def completed(client: Any, argument: str, value: str, **context: str) -> list[str]:
    answer = await client.complete(
        TEMPLATE, {"name": argument, "value": value}, context_arguments=context or None
    )
    values: list[str] = answer.completion.values
    return values


@pytest.mark.parametrize("walk", [False, True], ids=["read-whole", "walked"])
async def test_uris_complete_newest_first_without_deleted_ones(
    memory_client: MemoryClient, monkeypatch: pytest.MonkeyPatch, walk: bool
) -> None:
    if walk:  # every prefix counts as broad: walked newest first
        monkeypatch.setattr(tuning, "COMPLETE_SELECTIVE", 1)
    async with memory_client() as client:
        await seeded(client)
        assert await completed(client, "path", "", domain="ops") == [
            "部署/笔记",
            "deploy/steps",
            "oncall",
            "dashboards/latency",
        ]
        assert await completed(client, "path", "d", domain="ops") == ["deploy/steps", "dashboards/latency"]
        assert await completed(client, "path", "deploy/", domain="ops") == ["deploy/steps"]
        assert await completed(client, "path", "部", domain="ops") == ["部署/笔记"]
        assert await completed(client, "path", "x", domain="ops") == []
        assert await completed(client, "path", "deploy") == [], "no domain chosen yet: nothing to offer"
        # the domain updated last comes first; one whose memories are all deleted is not offered
        assert await completed(client, "domain", "") == ["project", "ops", "people"]
        assert await completed(client, "domain", "p") == ["project", "people"]
        assert await completed(client, "domain", "q") == []


async def test_a_broad_prefix_answers_a_page_and_says_there_is_more(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        document = {
            "format": "hostd-memory-export",
            "version": 2,
            "memories": [
                {
                    "uri": f"many://n/{number:03}",
                    "content": "x",
                    "priority": 5,
                    "updated_at": f"2026-01-01T00:{number // 60:02}:{number % 60:02}Z",
                }
                for number in range(150)
            ],
        }
        await ok(client, "import_memories", data=document)
        answer = await client.complete(
            TEMPLATE, {"name": "path", "value": "n/"}, context_arguments={"domain": "many"}
        )
        narrow = await client.complete(
            TEMPLATE, {"name": "path", "value": "n/14"}, context_arguments={"domain": "many"}
        )
    assert answer.completion.values == [f"n/{number:03}" for number in range(149, 49, -1)]
    assert (answer.completion.has_more, answer.completion.total) == (True, None)
    assert narrow.completion.values == [f"n/{number:03}" for number in range(149, 139, -1)]
    assert (narrow.completion.has_more, narrow.completion.total) == (False, 10)


async def test_hostile_prefixes_are_answered_plainly(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await seeded(client)
        for value in ["%", "_", "'; DROP TABLE memories; --", "\\", "\U0010ffff", "a\x00b", "x" * 5000]:
            assert await completed(client, "path", value, domain="ops") == []
            assert await completed(client, "domain", value) == []
        assert await completed(client, "path", "", domain="\x00") == []


TAG_TEMPLATE = types.ResourceTemplateReference(type="ref/resource", uri="memory-tag://{tag}")


@pytest.mark.parametrize("walk", [False, True], ids=["exact", "walked"])
async def test_tags_complete_by_recency_then_use(
    memory_client: MemoryClient, monkeypatch: pytest.MonkeyPatch, walk: bool
) -> None:
    """The tag of the most recently changed memory first, then the most used; a deleted memory's
    tags are not offered; a prefix is typed as a tag is written. Broad prefixes are ranked over the
    newest memories (all of them here), so both ways answer alike."""
    if walk:
        monkeypatch.setattr(tuning, "COMPLETE_TAG_ROWS", 1)
    tagged = [
        ("a://1", "2026-01-01T00:00:00Z", ["db", "rust"]),
        ("a://2", "2026-02-01T00:00:00Z", ["rust"]),
        ("a://3", "2026-03-01T00:00:00Z", ["release", "ops"]),
        ("a://4", "2026-04-01T00:00:00Z", ["ruby"]),
        ("a://5", "2026-05-01T00:00:00Z", ["ops", "rust"]),
        ("a://6", "2026-06-01T00:00:00Z", ["retired"]),
    ]
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": uri, "content": uri, "priority": 5, "created_at": at, "updated_at": at, "tags": tags}
            for uri, at, tags in tagged
        ],
    }

    async def tags(value: str) -> list[str]:
        answer = await client.complete(TAG_TEMPLATE, {"name": "tag", "value": value})
        values: list[str] = answer.completion.values
        return values

    async with memory_client() as client:
        await ok(client, "import_memories", data=document)
        await ok(client, "delete_memory", uri="a://6")
        assert await tags("") == ["rust", "ops", "ruby", "release", "db"]  # a://5's two: rust used 3 times
        assert await tags("R") == ["rust", "ruby", "release"]
        assert await tags("re") == ["release"]
        assert await tags("zz") == []
        for value in ["%", "_", "'; DROP TABLE memory_tags; --", "\U0010ffff", "a\x00b", "x" * 5000]:
            assert await tags(value) == []
