"""The host's surface as memory uses it (issue 11): paging through hostd.paging on every listing,
the store's refusals rendered in the server's language, import problems named in plain words."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from hostd_testing import call, check_paging, ok
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio


async def test_search_pages_with_a_cursor_bound_to_the_query_and_filters(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        for i in range(25):
            await ok(client, "create_memory", uri=f"s{i % 2}://m{i}", content=f"alpha note {i}")
        first = await ok(client, "search_memory", query="alpha")
        second = await ok(client, "search_memory", query="alpha", cursor=first["next_cursor"])
        third = await ok(client, "search_memory", query="alpha", cursor=second["next_cursor"])
        resized = await ok(client, "search_memory", query="alpha", limit=2, cursor=first["next_cursor"])
        other_query = await call(client, "search_memory", query="note", cursor=first["next_cursor"])
        other_domain = await call(
            client, "search_memory", query="alpha", domain="s0", cursor=first["next_cursor"]
        )
        garbage = await call(client, "search_memory", query="alpha", cursor="not-a-cursor")
    # A search pages 10 hits by default (search_memory's own default within the paging rule).
    assert first["count"] == 10
    assert first["truncated"]
    assert first["next_cursor"]
    assert second["count"] == 10
    assert second["truncated"]
    assert second["next_cursor"]
    assert third["count"] == 5
    assert not third["truncated"]
    assert third["next_cursor"] is None
    uris = [hit["uri"] for page in (first, second, third) for hit in page["hits"]]
    assert sorted(uris) == sorted(f"s{i % 2}://m{i}" for i in range(25))
    assert [hit["uri"] for hit in resized["hits"]] == uris[10:12]
    assert resized["truncated"]
    for refused, reason in (
        (other_query, "other_filters"),
        (other_domain, "other_filters"),
        (garbage, "malformed"),
    ):
        assert refused["error"]["code"] == "INVALID_ARGUMENT"
        assert refused["error"]["details"] == {"argument": "cursor", "reason": reason}


#: memory's listings: its items' field, the arguments it is walked with, an argument that changes
#: it, and what names an item.
LISTINGS: dict[str, tuple[str, dict[str, Any], dict[str, Any], Callable[[Any], Any]]] = {
    "list_memories": ("memories", {}, {"domain": "s0"}, lambda m: m["memory"]["uri"]),
    "search_memory": ("hits", {"query": "alpha"}, {"query": "note"}, lambda h: h["uri"]),
    "get_memory_versions": ("versions", {"uri": "s0://m0"}, {"uri": "s1://m1"}, lambda v: v["version"]),
}


@pytest.mark.parametrize("tool", sorted(LISTINGS))
async def test_every_listing_follows_the_paging_rule(memory_client: MemoryClient, tool: str) -> None:
    """hostd-testing's paging rule: limit 1-100, every item once in the order of one page, an
    opaque cursor bound to its listing and filters."""
    async with memory_client() as client:
        for i in range(7):
            await ok(client, "create_memory", uri=f"s{i % 2}://m{i}", content=f"alpha note {i}")
        for round_ in range(4):
            await ok(client, "update_memory", uri="s0://m0", content=f"alpha note 0, round {round_}")
        items, arguments, other_filters, key = LISTINGS[tool]
        walked = await check_paging(
            client, tool, items, arguments=arguments, other_filters=other_filters, key=key
        )
    assert len(walked) == {"list_memories": 7, "search_memory": 7, "get_memory_versions": 5}[tool]


async def test_version_listings_page_newest_first_without_gaps(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="v://one", content="version 1")
        for n in range(2, 26):
            await ok(client, "update_memory", uri="v://one", content=f"version {n}")
        versions, rollbacks = [], []
        cursor = None
        while True:
            page = await ok(client, "get_memory_versions", uri="v://one", limit=10, cursor=cursor)
            versions.append(page)
            if (cursor := page["next_cursor"]) is None:
                break
        while True:
            page = await ok(client, "list_rollbacks", uri="v://one", limit=10, cursor=cursor)
            rollbacks.append(page)
            if (cursor := page["next_cursor"]) is None:
                break
        default = await ok(client, "get_memory_versions", uri="v://one")
        foreign = await call(client, "list_rollbacks", uri="v://one", cursor=versions[0]["next_cursor"])
    assert [len(p["versions"]) for p in versions] == [10, 10, 5]
    assert [v["version"] for p in versions for v in p["versions"]] == list(range(25, 0, -1))
    assert versions[0]["versions"][0]["current"]
    assert all(p["total"] == 25 for p in versions)
    assert [len(p["rollbacks"]) for p in rollbacks] == [10, 10, 4]
    assert [v["version"] for p in rollbacks for v in p["rollbacks"]] == list(range(24, 0, -1))
    assert len(default["versions"]) == 20
    assert default["truncated"]
    assert foreign["error"]["details"] == {"argument": "cursor", "reason": "other_listing"}


async def test_export_pages_by_limit_and_the_pages_import_whole(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        for i in range(5):
            await ok(client, "create_memory", uri=f"e://m{i}", content=f"memory {i}")
        first = await ok(client, "export_memories", limit=3)
        second = await ok(client, "export_memories", limit=3, cursor=first["next_cursor"])
        wrong = await call(client, "export_memories", include_versions=True, cursor=first["next_cursor"])
    assert (first["count"], first["truncated"], second["count"], second["next_cursor"]) == (3, True, 2, None)
    uris = [m["uri"] for page in (first, second) for m in page["document"]["memories"]]
    assert uris == [f"e://m{i}" for i in range(5)]
    assert wrong["error"]["details"]["reason"] == "other_filters"


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_the_stores_refusals_speak_the_servers_language(
    memory_client: MemoryClient, language: str
) -> None:
    async with memory_client(language=language) as client:
        await ok(client, "create_memory", uri="r://a", content="a")
        await ok(client, "create_memory", uri="r://b", content="b")
        missing = await call(client, "read_memory", uri="r://none")
        taken = await call(client, "create_memory", uri="r://a", content="again")
        no_version = await call(client, "diff_versions", uri="r://a", version1=1, version2=7)
        self_link = await call(client, "link_memories", from_uri="r://a", to_uri="r://a", relation="x")
        no_link = await call(client, "unlink_memories", from_uri="r://a", to_uri="r://b")
        conflict = await call(client, "update_memory", uri="r://a", old_string="zzz", new_string="y")
    refusals = {
        "NOT_FOUND": [missing, no_version, no_link],
        "ALREADY_EXISTS": [taken],
        "INVALID_ARGUMENT": [self_link],
        "CONFLICT": [conflict],
    }
    for code, envelopes in refusals.items():
        for envelope in envelopes:
            error = envelope["error"]
            assert error["code"] == code, envelope
            if language == "zh":
                prose = re.sub(
                    r"[a-z_]+://\w+|[a-z]+_[a-z_]+|\d+|read_memory|search_memory", "", error["message"]
                )
                assert re.search("[\u4e00-\u9fff]", prose), error
                assert not re.search("[A-Za-z]{3,}", prose), error
    assert taken["error"]["details"] == {"uri": "r://a", "existing": "memory", "target": None}
    assert no_version["error"]["details"] == {"uri": "r://a", "version": 7, "current_version": 1}


async def test_a_document_that_is_not_importable_is_named_in_chinese(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        shape = await call(
            client, "import_memories", data={"format": "hostd-memory-export", "version": 3, "memories": "x"}
        )
        version = await call(client, "import_memories", data={"format": "hostd-memory-export", "version": 99})
    for envelope, field in ((shape, "memories"), (version, "version")):
        error = envelope["error"]
        assert error["code"] == "INVALID_ARGUMENT", error
        assert field in error["message"], error
        prose = error["message"].replace(field, "").replace("data", "")
        assert re.search("[\u4e00-\u9fff]", prose), error
        assert not re.search("[A-Za-z]{3,}", prose), error
    assert shape["error"]["details"]["problem"] == "list_type"


def test_the_answer_size_setting_is_spelled_like_every_limit_and_the_old_key_still_works() -> None:
    from hostd_memory.models import Settings

    assert Settings.model_validate({"max_answer_chars": 5000}).max_answer_chars == 5000
    assert Settings.model_validate({"answer_budget": 6000}).max_answer_chars == 6000
    assert Settings().max_answer_chars == 20_000
