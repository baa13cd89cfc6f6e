"""Issue 16: tags, time filters, links between memories and related memories, through the in-memory client."""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
from pathlib import Path

import pytest
from hostd_testing import call, error_code, ok
from memory_support import TEAM_DATABASE_ENV, MemoryClient, sqlite_only

pytestmark = pytest.mark.anyio

LATIN_WORD = re.compile(r"[A-Za-z_]{4,}")


def english_words(text: str, allowed: set[str]) -> set[str]:
    """English words in a message meant to be Chinese (argument names, with '_', do not count)."""
    return {w for w in LATIN_WORD.findall(text) if "_" not in w and w not in allowed}


# --- tags ------------------------------------------------------------------------------------


async def test_tags_are_normalised_and_shown_wherever_a_memory_is_shown(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        created = await ok(
            client,
            "create_memory",
            uri="project://db",
            content="连接池 pool settings",
            priority=1,
            tags=["Rust", " rust ", "ＤＢ", "部署  流程", "On Call"],
        )
        read = await ok(client, "read_memory", uri="project://db")
        listed = await ok(client, "list_memories")
        found = await ok(client, "search_memory", query="pool")
        preloaded = await ok(client, "preload_memory", context_type="intent", context_data="连接池")
        versions = await ok(client, "get_memory_versions", uri="project://db")
        boot = await ok(client, "read_memory", uri="system://boot")
    expected = ["db", "on call", "rust", "部署 流程"]
    assert created["memory"]["tags"] == expected
    assert read["memory"]["tags"] == expected
    assert listed["memories"][0]["memory"]["tags"] == expected
    assert found["hits"][0]["tags"] == expected
    assert versions["versions"][0]["tags"] == expected
    assert boot["memories"][0]["memory"]["tags"] == expected
    assert preloaded["core"][0]["memory"]["tags"] == expected


async def test_tag_changes_are_versioned_and_rolled_back_like_content(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://x", content="text", tags=["one"])
        changed = await ok(client, "update_memory", uri="a://x", tags=["two", "Three"])
        same = await ok(client, "update_memory", uri="a://x", tags=["three", "TWO"])
        cleared = await ok(client, "update_memory", uri="a://x", tags=[])
        versions = await ok(client, "get_memory_versions", uri="a://x")
        offered = await ok(client, "list_rollbacks", uri="a://x")
        rolled = await ok(client, "rollback_memory", uri="a://x", version=2)
        filtered = await ok(client, "list_memories", tags=["three"])
    assert changed["mode"] == "metadata"
    assert changed["memory"]["tags"] == ["three", "two"]
    assert same["memory"]["version"] == 2
    assert "nothing changed" in same["message"]
    assert cleared["memory"]["tags"] == []
    assert cleared["memory"]["version"] == 3
    assert [(v["version"], v["tags"]) for v in versions["versions"]] == [
        (3, []),
        (2, ["three", "two"]),
        (1, ["one"]),
    ]
    assert [(r["version"], r["tags_changed"], r["content_changed"]) for r in offered["rollbacks"]] == [
        (2, True, False),
        (1, True, False),
    ]
    assert rolled["changed"] is True
    assert rolled["memory"]["tags"] == ["three", "two"]
    assert [m["memory"]["uri"] for m in filtered["memories"]] == ["a://x"]


async def test_list_and_search_keep_memories_carrying_every_given_tag(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="n://1", content="deploy notes alpha", tags=["ops", "rust"])
        await ok(client, "create_memory", uri="n://2", content="deploy notes beta", tags=["ops"])
        await ok(
            client, "create_memory", uri="n://3", content="deploy notes gamma", tags=["RUST", "ops", "部署"]
        )
        both = await ok(client, "list_memories", tags=["Ops", "rust"])
        chinese = await ok(client, "list_memories", tags=["部署"])
        none = await ok(client, "list_memories", tags=["ops", "missing"])
        searched = await ok(client, "search_memory", query="deploy notes", tags=["rust", "ops"])
        searched_one = await ok(client, "search_memory", query="deploy", tags=["部署"])
        stats = await ok(client, "get_memory_stats")
    assert {m["memory"]["uri"] for m in both["memories"]} == {"n://1", "n://3"}
    assert [m["memory"]["uri"] for m in chinese["memories"]] == ["n://3"]
    assert none["count"] == 0
    assert {h["uri"] for h in searched["hits"]} == {"n://1", "n://3"}
    assert [h["uri"] for h in searched_one["hits"]] == ["n://3"]
    assert stats["by_tag"] == {"ops": 3, "rust": 2, "部署": 1}
    assert stats["tag_count"] == 3


@pytest.mark.parametrize(
    ("tags", "reason"),
    [
        (["x" * 10_000], None),  # the schema's bound: the argument is named
        ([f"t{i}" for i in range(1_000)], None),
        (["a,b"], "bad_character"),
        (["tab\there\x07"], "bad_character"),
        (["   "], "empty"),
        ([f"t{i % 40}" for i in range(32)], None),  # 32 given, all distinct: fine (checked below)
    ],
)
async def test_hostile_tags_are_invalid_argument_and_write_nothing(
    memory_client: MemoryClient, tags: list[str], reason: str | None
) -> None:
    async with memory_client() as client:
        envelope = await call(client, "create_memory", uri="h://x", content="text", tags=tags)
        listed = await ok(client, "list_memories")
        await ok(client, "create_memory", uri="h://y", content="text")
        updated = await call(client, "update_memory", uri="h://y", tags=tags)
        versions = await ok(client, "get_memory_versions", uri="h://y")
    if len(set(tags)) == 32 and reason is None:
        assert envelope["status"] == "success"
        assert updated["status"] == "success"
        return
    for answer in (envelope, updated):
        assert answer["status"] == "error", answer
        assert answer["error"]["code"] == "INVALID_ARGUMENT", answer
        assert answer["error"]["details"]["argument"].startswith("tags")
        assert answer["error"]["hint"]
        if reason is not None:
            assert answer["error"]["details"]["reason"] == reason
    assert listed["count"] == 0
    assert versions["current_version"] == 1


async def test_a_bad_tag_answers_in_chinese_without_english(memory_client: MemoryClient) -> None:
    async with memory_client(language="zh") as client:
        bad_tag = await call(client, "create_memory", uri="h://x", content="text", tags=["a,b"])
        bad_time = await call(client, "list_memories", created_after="99999-01-01")
        bad_link = await call(client, "unlink_memories", from_uri="a://x", to_uri="b://y")
        await ok(client, "create_memory", uri="a://x", content="甲")
        self_link = await call(client, "link_memories", from_uri="a://x", to_uri="a://x", relation="参考")
    allowed = {"tags", "Unicode"}  # an argument name, and a name Chinese text uses too
    for answer in (bad_tag, bad_time, self_link):
        error = answer["error"]
        assert not english_words(error["message"] + error["hint"], allowed), error
    assert bad_link["error"]["code"] == "NOT_FOUND"


# --- time filters ------------------------------------------------------------------------------


def _set_times(db: Path, uri: str, created: str, updated: str) -> None:
    """Back-date a memory in whichever store the test runs on (the team database when ``backend``
    named one, else the SQLite file ``db``)."""
    url = os.environ.get(TEAM_DATABASE_ENV)
    if url:
        import psycopg

        with psycopg.connect(url, autocommit=True) as pg:
            pg.execute(
                "UPDATE memory.memories SET created_at = %s, updated_at = %s WHERE uri = %s",
                (created, updated, uri),
            )
        return
    with sqlite3.connect(db) as conn:
        conn.execute(
            "UPDATE memories SET created_at = ?, updated_at = ? WHERE uri = ?", (created, updated, uri)
        )


async def test_time_filters_take_iso_dates_with_or_without_a_zone(
    memory_client: MemoryClient, hostd_data_dir: Path
) -> None:
    async with memory_client() as client:
        for name in ("jan", "mar", "jun"):
            await ok(
                client, "create_memory", uri=f"t://{name}", content=f"release notes {name}", tags=["rel"]
            )
        db = hostd_data_dir / "memory" / "memory.db"
        _set_times(db, "t://jan", "2026-01-15T00:00:00.000000Z", "2026-06-01T00:00:00.000000Z")
        _set_times(db, "t://mar", "2026-03-15T00:00:00.000000Z", "2026-03-16T00:00:00.000000Z")
        _set_times(db, "t://jun", "2026-06-15T12:00:00.000000Z", "2026-06-15T12:00:00.000000Z")

        async def listed(**filters: str | list[str]) -> set[str]:
            return {m["memory"]["uri"] for m in (await ok(client, "list_memories", **filters))["memories"]}

        async def searched(**filters: str) -> set[str]:
            found = await ok(client, "search_memory", query="release notes", **filters)
            return {h["uri"] for h in found["hits"]}

        after_feb = await listed(created_after="2026-02-01")
        before_feb = await listed(created_before="2026-02-01T00:00:00")
        window = await listed(created_after="2026-02-01", created_before="2026-06-01", tags=["rel"])
        zoned = await listed(created_after="2026-06-15T20:00:00+08:00")  # 12:00 UTC: inclusive
        zoned_out = await listed(created_after="2026-06-15T20:00:01+08:00")
        changed_late = await searched(updated_after="2026-05-01")
        changed_window = await searched(updated_after="2026-03-01", updated_before="2026-04-01")
        year_99999 = await call(client, "list_memories", created_after="99999-01-01")
        garbage = await call(client, "search_memory", query="x", updated_before="yesterday")
        reversed_range = await call(
            client, "list_memories", created_after="2026-05-01", created_before="2026-01-01"
        )
    assert after_feb == {"t://mar", "t://jun"}
    assert before_feb == {"t://jan"}
    assert window == {"t://mar"}
    assert zoned == {"t://jun"}
    assert zoned_out == set()
    assert changed_late == {"t://jan", "t://jun"}
    assert changed_window == {"t://mar"}
    for answer, argument in ((year_99999, "created_after"), (garbage, "updated_before")):
        assert answer["error"]["code"] == "INVALID_ARGUMENT"
        assert answer["error"]["details"]["argument"] == argument
        assert "2026-05-01" in answer["error"]["hint"]  # an example of a good one
    assert reversed_range["error"]["code"] == "INVALID_ARGUMENT"


# --- links ----------------------------------------------------------------------------------------


async def test_links_show_both_ways_follow_aliases_and_list_by_neighbour(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="svc://api", content="the API")
        await ok(client, "create_memory", uri="svc://db", content="the database")
        await ok(client, "create_memory", uri="svc://cache", content="the cache")
        await ok(client, "add_alias", target_uri="svc://db", alias_uri="old://database")
        linked = await ok(
            client, "link_memories", from_uri="svc://api", to_uri="old://database", relation="Depends  ON"
        )
        again = await ok(
            client, "link_memories", from_uri="svc://api", to_uri="svc://db", relation="depends on"
        )
        await ok(client, "link_memories", from_uri="svc://api", to_uri="svc://cache", relation="uses")
        await ok(
            client, "link_memories", from_uri="svc://cache", to_uri="svc://api", relation="矛盾"
        )  # a cycle
        api = await ok(client, "read_memory", uri="svc://api")
        db = await ok(client, "read_memory", uri="old://database")
        neighbours = await ok(client, "list_memories", linked_to="svc://api")
        of_db = await ok(client, "list_memories", linked_to="old://database")
        stats = await ok(client, "get_memory_stats")
        missing = await error_code(client, "list_memories", linked_to="svc://nothing")
    assert linked["created"] is True
    assert linked["relation"] == "depends on"
    assert linked["to_uri"] == "svc://db"
    assert again["created"] is False
    assert "nothing changed" in again["message"]
    assert api["relations"]["links_to"] == [
        {"uri": "svc://cache", "relation": "uses"},
        {"uri": "svc://db", "relation": "depends on"},
    ]
    assert api["relations"]["linked_from"] == [{"uri": "svc://cache", "relation": "矛盾"}]
    assert db["relations"]["linked_from"] == [{"uri": "svc://api", "relation": "depends on"}]
    assert {m["memory"]["uri"] for m in neighbours["memories"]} == {"svc://db", "svc://cache"}
    assert [m["memory"]["uri"] for m in of_db["memories"]] == ["svc://api"]
    assert stats["link_count"] == 3
    assert missing == "NOT_FOUND"


async def test_a_link_to_itself_is_refused_even_through_an_alias(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://x", content="x")
        await ok(client, "add_alias", target_uri="a://x", alias_uri="a://y")
        direct = await call(client, "link_memories", from_uri="a://x", to_uri="a://x", relation="same")
        via_alias = await call(client, "link_memories", from_uri="a://y", to_uri="a://x", relation="same")
        blank = await call(client, "link_memories", from_uri="a://x", to_uri="a://y", relation="   ")
        missing = await error_code(client, "link_memories", from_uri="a://x", to_uri="b://none", relation="r")
        stats = await ok(client, "get_memory_stats")
    for answer in (direct, via_alias, blank):
        assert answer["error"]["code"] == "INVALID_ARGUMENT", answer
        assert answer["error"]["hint"], answer
    assert missing == "NOT_FOUND"
    assert stats["link_count"] == 0


async def test_links_across_soft_delete_rollback_unlink_and_purge(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://1", content="one")
        await ok(client, "create_memory", uri="a://2", content="two")
        await ok(client, "link_memories", from_uri="a://1", to_uri="a://2", relation="next")
        await ok(client, "link_memories", from_uri="a://1", to_uri="a://2", relation="cites")
        await ok(client, "delete_memory", uri="a://2")
        hidden = await ok(client, "read_memory", uri="a://1")
        to_deleted = await error_code(client, "link_memories", from_uri="a://1", to_uri="a://2", relation="x")
        await ok(client, "rollback_memory", uri="a://2", version=1)
        back = await ok(client, "read_memory", uri="a://1")
        one = await ok(client, "unlink_memories", from_uri="a://1", to_uri="a://2", relation="NEXT")
        gone = await error_code(client, "unlink_memories", from_uri="a://1", to_uri="a://2", relation="next")
        wrong_way = await error_code(client, "unlink_memories", from_uri="a://2", to_uri="a://1")
        await ok(client, "link_memories", from_uri="a://2", to_uri="a://1", relation="back")
        await ok(client, "delete_memory", uri="a://2", force=True)
        after_purge = await ok(client, "read_memory", uri="a://1")
        stats = await ok(client, "get_memory_stats")
    assert hidden["relations"]["links_to"] == []
    assert to_deleted == "NOT_FOUND"
    assert [link["relation"] for link in back["relations"]["links_to"]] == ["cites", "next"]
    assert one["removed"] == ["next"]
    assert gone == "NOT_FOUND"
    assert wrong_way == "NOT_FOUND"
    assert after_purge["relations"]["links_to"] == after_purge["relations"]["linked_from"] == []
    assert stats["link_count"] == 0


async def test_tags_and_links_travel_in_export_and_import_and_a_second_import_changes_nothing(
    memory_client: MemoryClient, tmp_path: Path
) -> None:
    from hostd_testing import in_memory_client

    async with memory_client() as client:
        await ok(client, "create_memory", uri="a://1", content="one", tags=["x", "共享"])
        await ok(client, "update_memory", uri="a://1", tags=["x"])
        await ok(client, "create_memory", uri="a://2", content="two")
        await ok(client, "link_memories", from_uri="a://1", to_uri="a://2", relation="next")
        await ok(client, "link_memories", from_uri="a://2", to_uri="a://1", relation="back")
        exported = await ok(client, "export_memories", include_versions=True)
    document = exported["document"]
    first = next(m for m in document["memories"] if m["uri"] == "a://1")
    assert first["tags"] == ["x"]
    assert first["links"] == [{"to": "a://2", "relation": "next"}]
    assert [v["tags"] for v in first["versions"]] == [["x", "共享"], ["x"]]
    other = tmp_path / "other"
    other.mkdir()
    async with in_memory_client(["memory"], data_dir=other, config={"language": "en"}) as target:
        imported = await ok(target, "import_memories", data=document)
        again = await ok(target, "import_memories", data=document, strategy="merge")
        read = await ok(target, "read_memory", uri="a://1")
        versions = await ok(target, "get_memory_versions", uri="a://1")
    assert imported["created"] == 2
    assert imported["links_added"] == 2
    assert imported["errors"] == []
    assert again["unchanged"] == 2
    assert again["links_added"] == 0
    assert again["created"] == 0
    assert read["memory"]["tags"] == ["x"]
    assert read["relations"]["linked_from"] == [{"uri": "a://2", "relation": "back"}]
    assert [v["tags"] for v in versions["versions"]] == [["x"], ["x", "共享"]]


async def test_import_reports_a_link_to_nowhere_and_a_bad_tag_by_item(memory_client: MemoryClient) -> None:
    document = {
        "format": "hostd-memory-export",
        "version": 2,
        "memories": [
            {"uri": "a://1", "content": "one", "links": [{"to": "a://none", "relation": "r"}]},
            {"uri": "a://2", "content": "two", "tags": ["ok", "bad,tag"]},
            {"uri": "a://3", "content": "three", "links": [{"to": "a://3", "relation": "self"}]},
        ],
    }
    async with memory_client() as client:
        imported = await ok(client, "import_memories", data=document)
    problems = {(e["index"], e["problem"].split(":")[0], e["code"]) for e in imported["errors"]}
    assert imported["created"] == 2
    assert problems == {
        (0, "link_target_missing", "NOT_FOUND"),
        (1, "invalid_tag", "INVALID_ARGUMENT"),
        (2, "link_to_itself", "INVALID_ARGUMENT"),
    }


# --- related memories ----------------------------------------------------------------------------


async def test_read_memory_lists_memories_sharing_rare_terms_or_tags(memory_client: MemoryClient) -> None:
    async with memory_client() as client:
        await ok(
            client,
            "create_memory",
            uri="k://kafka",
            content="Kafka consumer lag alerts fire at 5000 messages",
            tags=["流处理"],
        )
        await ok(
            client, "create_memory", uri="k://lag", content="When consumer lag grows, add partitions to Kafka"
        )
        await ok(client, "create_memory", uri="k://flink", content="Flink job settings", tags=["流处理"])
        for i in range(12):
            await ok(
                client, "create_memory", uri=f"k://other{i}", content=f"unrelated messages about lunch {i}"
            )
        read = await ok(client, "read_memory", uri="k://kafka")
    related = read["relations"]["related"]
    uris = [r["uri"] for r in related]
    assert uris[:2] == ["k://flink", "k://lag"], related
    assert related[0]["shared_tags"] == ["流处理"]
    assert related[0]["tags"] == ["流处理"]
    assert {"kafka", "consumer", "lag"} <= set(related[1]["shared_terms"]), related
    assert "k://kafka" not in uris
    assert len(related) <= 5


# --- schema upgrade ------------------------------------------------------------------------------


@sqlite_only
async def test_a_database_of_the_previous_schema_upgrades_in_place(
    memory_client: MemoryClient, hostd_data_dir: Path
) -> None:
    """A memory.db written by schema 2 (before tags and links) opens, keeps everything, and takes tags."""
    from hostd_testing import released_sqlite_file

    path = hostd_data_dir / "memory" / "memory.db"
    from hostd_memory.search import words_text
    from memory_released_schema import MIGRATIONS

    with (
        released_sqlite_file(  # a file made by the release before the shared schema
            path,
            MIGRATIONS[:2],
            on_connect=lambda c: c.create_function("memory_words_text", 1, words_text, deterministic=True),
        ) as tx
    ):
        tx.execute(
            "INSERT INTO memories (uri, domain, path, content, priority, created_at, updated_at, version) "
            "VALUES ('old://note', 'old', 'note', '旧的笔记 v2', 3, '2025-01-01T00:00:00.000000Z', "
            "'2025-02-01T00:00:00.000000Z', 2)"
        )
        tx.execute(
            "INSERT INTO memory_versions (memory_id, version, content, priority, disclosure, status, change, "
            "created_at) VALUES (1, 1, '旧的笔记', 3, '', 'active', 'created', '2025-01-01T00:00:00.000000Z')"
        )
        tx.execute("INSERT INTO aliases VALUES ('old://alias', 1, '2025-01-01T00:00:00.000000Z')")
    with contextlib.closing(sqlite3.connect(path)) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 2
    async with memory_client() as client:
        read = await ok(client, "read_memory", uri="old://alias")
        found = await ok(client, "search_memory", query="笔记")
        tagged = await ok(client, "update_memory", uri="old://note", tags=["迁移"])
        await ok(client, "create_memory", uri="new://x", content="new")
        linked = await ok(client, "link_memories", from_uri="new://x", to_uri="old://alias", relation="cites")
        listed = await ok(client, "list_memories", tags=["迁移"], created_before="2025-06-01")
        versions = await ok(client, "get_memory_versions", uri="old://note")
    with sqlite3.connect(path) as check:
        # the release's 4 migrations, then the statistics' counts (5) and the completion index (6)
        assert check.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 2 == 6
    assert read["content"] == "旧的笔记 v2"
    assert read["memory"]["tags"] == []
    assert read["memory"]["version"] == 2
    assert [h["uri"] for h in found["hits"]] == ["old://note"]
    assert tagged["memory"]["version"] == 3
    assert linked["created"] is True
    assert [m["memory"]["uri"] for m in listed["memories"]] == ["old://note"]
    assert [(v["version"], v["tags"]) for v in versions["versions"]] == [(3, ["迁移"]), (2, []), (1, [])]


@pytest.mark.parametrize(("walk", "selective"), [(2_000, 2_000), (3, 2), (1_000, 0), (2, 1_000)])
async def test_filtered_listings_page_the_same_whichever_way_they_are_read(
    memory_client: MemoryClient, monkeypatch: pytest.MonkeyPatch, walk: int, selective: int
) -> None:
    """list_page reads a tag's memories, a time window, or walks the rank order: same pages each way."""
    from hostd_memory import store

    monkeypatch.setattr(store.tuning, "LISTING_WALK", walk)
    monkeypatch.setattr(store.tuning, "LISTING_SELECTIVE", selective)
    async with memory_client() as client:
        for i in range(30):
            tags = ["even" if i % 2 == 0 else "odd", *(["third"] if i % 3 == 0 else [])]
            await ok(
                client, "create_memory", uri=f"p://{i:02d}", content=f"note {i}", priority=i % 4, tags=tags
            )
        expected = [f"p://{i:02d}" for i in sorted(range(30), key=lambda i: (i % 4, -i)) if i % 6 == 0]
        pages: list[str] = []
        cursor = None
        while True:
            arguments = {"tags": ["even", "third"], "limit": 2, "created_after": "2020-01-01"}
            page = await ok(client, "list_memories", **arguments, **({"cursor": cursor} if cursor else {}))
            pages += [m["memory"]["uri"] for m in page["memories"]]
            cursor = page["next_cursor"]
            if not cursor:
                break
        none = await ok(client, "list_memories", tags=["odd", "third"], created_before="2020-01-01")
    assert pages == expected
    assert none["count"] == 0
