"""search_memory's rules (Chinese and English, short queries, filters, ranking) and hostile input."""

from __future__ import annotations

import re

import pytest
from hostd_testing import call, fails, ok
from memory_support import MemoryClient

pytestmark = pytest.mark.anyio

MEMORIES = [
    ("project://db/pool", "数据库连接池配置：最大 20 个连接，PostgreSQL 16 在 db.internal", 2, ""),
    ("project://cache", "Redis 缓存的过期时间设为 300 秒；缓存键前缀 app:", 5, "when changing caching"),
    ("user://lang", "用户喜欢用 Go 语言写后端，前端用 TypeScript", 1, ""),
    ("debug://oom", "The worker ran out of memory when the batch size was 10000; lowered it to 2000", 6, ""),
    ("notes://tea", "The user prefers green tea in the afternoon", 8, "when talking about drinks"),
    ("project://deploy", "Deployment uses blue-green releases via the deploy.sh script", 3, ""),
]


async def seeded(client) -> None:  # type: ignore[no-untyped-def]
    for uri, content, priority, disclosure in MEMORIES:
        await ok(client, "create_memory", uri=uri, content=content, priority=priority, disclosure=disclosure)


def uris(envelope: dict) -> list[str]:  # type: ignore[type-arg]
    return [hit["uri"] for hit in envelope["hits"]]


@pytest.mark.smoke
@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("数据库", "project://db/pool"),
        ("连接池配置", "project://db/pool"),
        ("缓存", "project://cache"),  # two characters
        ("库", "project://db/pool"),  # one character
        ("Go", "user://lang"),  # two Latin letters
        ("postgresql", "project://db/pool"),  # case-insensitive
        ("memory batch", "debug://oom"),
        ("deployment script", "project://deploy"),
        ("db/pool", "project://db/pool"),  # URI path
        ("drinks", "notes://tea"),  # disclosure
    ],
)
async def test_search_finds_chinese_english_short_and_path_queries(
    memory_client: MemoryClient, query: str, expected: str
) -> None:
    async with memory_client() as client:
        await seeded(client)
        found = await ok(client, "search_memory", query=query)
    assert uris(found)[0] == expected, found
    assert found["hits"][0]["snippet"]


async def test_all_term_matches_rank_before_partial_matches(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await seeded(client)
        found = await ok(client, "search_memory", query="Redis 过期时间 blue")
        natural = await ok(client, "search_memory", query="how long do cached keys live in redis")
    assert found["hits"][0]["matched"] == "any_term"  # no memory holds all three
    assert uris(natural)[0] == "project://cache"


async def test_snippet_is_cut_around_the_match(memory_client: MemoryClient) -> None:
    long_text = "开头的填充文字。" * 40 + "关键的句子：部署在周五。" + "结尾的填充文字。" * 40
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://long", content=long_text)
        found = await ok(client, "search_memory", query="部署在周五")
    snippet = found["hits"][0]["snippet"]
    assert "部署在周五" in snippet
    assert snippet.startswith("…")
    assert snippet.endswith("…")
    assert len(snippet) < 200


async def test_filters_domain_priority_bounds_inclusive_and_limit(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await seeded(client)
        domain = await ok(client, "search_memory", query="the", domain="notes")
        bounded = await ok(client, "search_memory", query="用", priority_min=1, priority_max=1)
        limited = await ok(client, "search_memory", query="t", limit=2)
        too_many = await call(client, "search_memory", query="x", limit=101)
        bad_domain = await call(client, "search_memory", query="x", domain="Not A Domain")
    assert uris(domain) == ["notes://tea"]
    assert uris(bounded) == ["user://lang"]
    assert len(limited["hits"]) == 2
    assert too_many["error"]["code"] == "INVALID_ARGUMENT"
    assert bad_domain["error"]["code"] == "INVALID_ARGUMENT"


@pytest.mark.parametrize(
    "query",
    [
        '"',
        '""',
        "*",
        "NEAR(",
        "NEAR(a b)",
        "a OR b",
        "AND",
        "NOT x",
        "x*",
        "^start",
        "col:value",
        "{path}: x",
        "'; DROP TABLE memories; --",
        "\\",
        "%",
        "_",
        "()",
        "-x",
        "a\x00b",
        "😀",
        "\U0010fffd",
        "𠀀𠀁",
        "\u200b",
    ],
)
async def test_query_syntax_is_text_never_an_error(memory_client: MemoryClient, query: str) -> None:
    async with memory_client() as client:
        await seeded(client)
        await ok(client, "create_memory", uri="n://syntax", content=f"literal {query} here")
        found = await call(client, "search_memory", query=query)
        still = await ok(client, "get_memory_stats")
    assert found["status"] == "success", found
    assert still["total"] == len(MEMORIES) + 1
    if query.strip("\u200b") and query not in ("\\",):
        assert "n://syntax" in uris(found), (query, found)


async def test_the_query_description_states_the_length_the_tool_accepts(memory_client: MemoryClient) -> None:
    """The description a model reads says how long a query may be, and that is what is accepted.

    The listing leaves out bounds this large (the model pays for every listed word), so the
    description is the only place a model learns the limit."""
    async with memory_client() as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        query = tools["search_memory"].input_schema["properties"]["query"]
        stated = re.search(r"(\d[\d,]*) characters", query["description"])
        assert stated is not None, query
        assert "any length" not in query["description"], query
        longest = int(stated.group(1).replace(",", ""))
        await seeded(client)
        await ok(client, "search_memory", query="缓存" * (longest // 2))
        refused = await fails(client, "search_memory", "INVALID_ARGUMENT", query="缓" * (longest + 1))
    assert refused["error"]["details"]["argument"] == "query", refused


async def test_sql_in_arguments_is_data(memory_client: MemoryClient) -> None:
    evil = "x'); DELETE FROM memories; --"
    async with memory_client() as client:
        await seeded(client)
        await ok(client, "create_memory", uri="n://evil", content=evil, disclosure=evil)
        listed = await ok(client, "list_memories", domain="notes")
        read = await ok(client, "read_memory", uri="n://evil")
        stats = await ok(client, "get_memory_stats")
    assert read["content"] == evil
    assert stats["total"] == len(MEMORIES) + 1
    assert listed["count"] == 1


async def test_one_megabyte_content_and_every_unicode_plane_round_trip(memory_client: MemoryClient) -> None:
    planes = "".join(chr(cp) for cp in (0x41, 0x4E2D, 0x1F600, 0x20000, 0x30000, 0xE0041, 0xF0000, 0x10FFFD))
    big = ("数据 data " * 110_000)[:1_000_000] + planes
    async with memory_client(budget=1_000_000) as client:
        await ok(client, "create_memory", uri="big://one", content=big)
        await ok(client, "create_memory", uri=f"planes://{planes[:4]}", content=planes, disclosure=planes)
        read = await ok(client, "read_memory", uri="big://one")
        found = await ok(client, "search_memory", query=planes[1:4])
        updated = await ok(client, "update_memory", uri="big://one", content=planes, append=True)
    assert read["content"] == big
    assert "big://one" in uris(found)
    assert f"planes://{planes[:4]}" in uris(found)
    assert updated["memory"]["version"] == 2


async def test_lone_surrogates_and_control_characters_in_uris_are_refused(
    memory_client: MemoryClient,
) -> None:
    async with memory_client() as client:
        for uri in ["a://\x07bell", "a://x\u2028y", "a://\ufeffbom"]:
            envelope = await call(client, "create_memory", uri=uri, content="x")
            assert envelope["error"]["code"] == "INVALID_ARGUMENT", uri


@pytest.mark.slow  # about 10 s on SQLite (its trigram index of 2 MB of text)
async def test_a_memory_of_two_million_characters_is_stored_whole_and_found(
    memory_client: MemoryClient,
) -> None:
    """The largest memory allowed, of random CJK text (about two million distinct bigrams: more than
    a PostgreSQL tsvector can hold, so its index is capped there), is stored whole and found by
    its opening words, Chinese and English."""
    import random

    chance = random.Random(2_000_000)
    head = "开头标记 needle-word "
    body = "".join(chr(0x4E00 + chance.randrange(3000)) for _ in range(2_000_000 - len(head)))
    async with memory_client(budget=100_000) as client:
        await ok(client, "create_memory", uri="big://one", content=head + body)
        await ok(client, "create_memory", uri="small://one", content="开头 only a needle")
        read = await ok(client, "read_memory", uri="big://one")
        for query in ("开头标记", "标记", "needle-word"):
            assert uris(await ok(client, "search_memory", query=query))[:1] == ["big://one"], query
    assert read["content_length"] == 2_000_000
    assert read["content"].startswith(head)


async def test_a_word_new_to_the_store_is_found_as_soon_as_its_memory_is_created(
    memory_client: MemoryClient,
) -> None:
    """Token counts steer a search (PostgreSQL reuses them briefly): a word searched for while no
    memory held it must not stay "absent" once a memory with it exists."""
    async with memory_client() as client:
        await seeded(client)
        for query in ("zeppelin", "飞艇", "zeppelins 飞艇"):
            assert uris(await ok(client, "search_memory", query=query)) == [], query
        await ok(client, "create_memory", uri="notes://airship", content="The zeppelin 飞艇 arrived late")
        for query in ("zeppelin", "飞艇", "zeppelins 飞艇"):
            assert uris(await ok(client, "search_memory", query=query))[:1] == ["notes://airship"], query


async def test_a_made_up_cursor_with_a_position_of_the_wrong_kind_is_invalid_argument(
    memory_client: MemoryClient,
) -> None:
    """A cursor is bound to its listing and filters but not signed: one made up by hand, for the
    right listing and filters but holding a text where the listing keeps a count, is refused as
    a cursor, not answered INTERNAL (it was: ``int("x")`` raised inside the tool)."""
    import base64
    import json

    async with memory_client() as client:
        await seeded(client)
        first = await ok(client, "search_memory", query="the", limit=1)
        assert first["next_cursor"], first  # the real cursor carries the filters' fingerprint
        padded = first["next_cursor"] + "=" * (-len(first["next_cursor"]) % 4)
        real = json.loads(base64.urlsafe_b64decode(padded))
        for position in ("x", -1, [1], True):
            forged = base64.urlsafe_b64encode(
                json.dumps({"l": "search_memory", "f": real["f"], "p": position}).encode()
            ).decode()
            refused = await call(client, "search_memory", query="the", limit=1, cursor=forged)
            assert refused["status"] == "error", refused
            assert refused["error"]["code"] == "INVALID_ARGUMENT", refused
            assert refused["error"]["details"]["argument"] == "cursor", refused
