"""search_thoughts: ranked full-text search across sessions, kept in step with every change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deep_thinking_support import PLUGIN, config_for, thought
from hostd_testing import Client, fails, in_memory_client, ok

pytestmark = pytest.mark.anyio


async def add(client: Client, session_id: str, *texts: str, **extra: Any) -> None:
    for number, text in enumerate(texts, start=1):
        await ok(
            client, "sequential_thinking", **thought(number, len(texts), text, session_id=session_id, **extra)
        )


def found(answer: dict[str, Any]) -> list[tuple[str, int]]:
    return [(hit["session_id"], hit["thought_number"]) for hit in answer["hits"]]


async def test_english_and_chinese_hits_name_session_and_thought(client: Client) -> None:
    await add(client, "db", "The database index is missing", "数据库连接池耗尽了", "Check the cache hit rate")
    await add(client, "ops", "Restart the cache servers", "缓存命中率下降，数据不一致")
    english = await ok(client, "search_thoughts", query="cache")
    assert sorted(found(english)) == [("db", 3), ("ops", 1)]
    assert english["matched"] == "all_terms"
    hit = english["hits"][0]
    assert hit["sequence"] >= 1
    assert "cache" in hit["snippet"].lower()
    assert hit["session_name"]
    assert found(await ok(client, "search_thoughts", query="数据库")) == [("db", 2)]
    assert sorted(found(await ok(client, "search_thoughts", query="数据"))) == [("db", 2), ("ops", 2)]
    assert found(await ok(client, "search_thoughts", query="池")) == [("db", 2)]  # one character
    both = await ok(client, "search_thoughts", query="cache hit")
    assert found(both) == [("db", 3)]
    assert both["matched"] == "all_terms"
    some = await ok(client, "search_thoughts", query="cache nonexistentword")
    assert sorted(found(some)) == [("db", 3), ("ops", 1)]
    assert some["matched"] == "any_term"
    assert found(await ok(client, "search_thoughts", query="cache", session_id="ops")) == [("ops", 1)]


async def test_ranking_prefers_the_thought_about_the_query(client: Client) -> None:
    await add(
        client,
        "rank",
        "A long thought about many things: trains, weather, hostels, budgets, and once the word latency",
        "latency latency: the latency budget is blown",
        "An unrelated thought about lunch",
    )
    answer = await ok(client, "search_thoughts", query="latency")
    assert found(answer) == [("rank", 2), ("rank", 1)]
    assert answer["hits"][0]["score"] > answer["hits"][1]["score"]
    limited = await ok(client, "search_thoughts", query="latency", limit=1)
    assert found(limited) == [("rank", 2)]
    assert limited["truncated"] is True


async def test_index_follows_new_thoughts_compaction_delete_and_restore(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    settings = {PLUGIN: {"compact_every": 3}}
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots), settings=settings
    ) as client:
        await add(client, "s", "alpha one", "beta two")
        assert found(await ok(client, "search_thoughts", query="alpha")) == [("s", 1)]
        # Appended after the index was built: found, once, across a compaction (every 3 thoughts).
        for number in range(3, 8):
            await ok(client, "sequential_thinking", **thought(number, 7, f"gamma {number}", session_id="s"))
        gammas = await ok(client, "search_thoughts", query="gamma", limit=100)
        assert sorted(found(gammas)) == [("s", n) for n in range(3, 8)]
        await ok(client, "update_session_status", session_id="s", status="completed")
        assert len((await ok(client, "search_thoughts", query="gamma"))["hits"]) == 5
        await ok(client, "delete_session", session_id="s")
        assert (await ok(client, "search_thoughts", query="alpha"))["hits"] == []
        await ok(client, "restore_session", session_id="s")
        assert found(await ok(client, "search_thoughts", query="alpha")) == [("s", 1)]
        exported = (await ok(client, "export_session", session_id="s", format="json"))["content"]
        await ok(client, "import_session", path_or_data=exported, session_id="copy")
        assert sorted(found(await ok(client, "search_thoughts", query="alpha"))) == [("copy", 1), ("s", 1)]


async def test_another_process_sees_the_same_index(hostd_data_dir: Path, hostd_roots: Path) -> None:
    config = config_for(hostd_roots)
    async with (
        in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as first,
        in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as second,
    ):
        await add(first, "shared", "written by the first server")
        assert found(await ok(second, "search_thoughts", query="first server")) == [("shared", 1)]
        await ok(first, "sequential_thinking", **thought(2, 2, "and a second line", session_id="shared"))
        assert found(await ok(first, "search_thoughts", query="second")) == [("shared", 2)]
        assert found(await ok(second, "search_thoughts", query="second")) == [("shared", 2)]
        await ok(second, "delete_session", session_id="shared")
        assert (await ok(first, "search_thoughts", query="first"))["hits"] == []


@pytest.mark.files_only
async def test_missing_or_damaged_index_is_rebuilt(client: Client, hostd_data_dir: Path) -> None:
    await add(client, "keep", "rebuild me from the sessions")
    assert found(await ok(client, "search_thoughts", query="rebuild")) == [("keep", 1)]
    index = hostd_data_dir / PLUGIN / "search.db"
    assert index.exists()
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    index.write_bytes(b"this is not an sqlite file" * 100)
    assert found(await ok(client, "search_thoughts", query="rebuild")) == [("keep", 1)]


async def test_labels_are_searchable(client: Client) -> None:
    await add(client, "lab", "plain words", stage="synthesis", tags=["budget"])
    assert found(await ok(client, "search_thoughts", query="budget")) == [("lab", 1)]
    hit = (await ok(client, "search_thoughts", query="synthesis"))["hits"][0]
    assert hit["stage"] == "synthesis"
    assert hit["tags"] == ["budget"]


async def test_hostile_queries(client: Client) -> None:
    await add(client, "h", 'a "quoted" NEAR(x) OR * thought', "x")
    assert found(await ok(client, "search_thoughts", query="a")) == [("h", 1)]  # one Latin character
    assert found(await ok(client, "search_thoughts", query="x")) == [("h", 2), ("h", 1)]  # shorter first
    for operators in ("NEAR(", "OR *", 'quoted" OR "x', "-x", "^a"):
        await ok(client, "search_thoughts", query=operators)  # searched for, never obeyed
    await fails(client, "search_thoughts", "INVALID_ARGUMENT", query="!!! ... ???")
    await fails(client, "search_thoughts", "INVALID_ARGUMENT", query='"')
    await fails(client, "search_thoughts", "INVALID_ARGUMENT", query="")
    huge = await fails(client, "search_thoughts", "TOO_LONG", query="x" * 1_000_000)
    assert huge["error"]["details"]["limit_chars"] == 1000
    assert huge["error"]["hint"]
    await fails(client, "search_thoughts", "NOT_FOUND", query="x", session_id="nope")
    await fails(client, "search_thoughts", "INVALID_ARGUMENT", query="x", session_id="../etc")


async def test_chinese_server_messages(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as client:
        await add(client, "zh", "缓存")
        answer = await ok(client, "search_thoughts", query="缓存")
        assert answer["message"].startswith("找到 1 条")
        error = await fails(client, "search_thoughts", "TOO_LONG", query="字" * 1001)
        assert "characters" not in error["message"]
        assert "query" in error["message"]


@pytest.mark.files_only
async def test_a_quiet_folder_is_not_scanned_but_every_change_is_seen(
    client: Client, hostd_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from hostd_deep_thinking.store import SessionStore

    await add(client, "q", "first")
    store = SessionStore(hostd_data_dir / PLUGIN)

    def quiet() -> None:
        """As if the last change were a minute old (so its timestamp can vouch for the next look)."""
        old = os.stat(store.sessions_dir).st_mtime_ns - 60_000_000_000
        os.utime(store.sessions_dir, ns=(old, old))
        os.utime(store.marker_path, ns=(old, old))

    quiet()
    before = store.file_signatures()
    real_scandir = os.scandir
    monkeypatch.setattr(os, "scandir", lambda *a: pytest.fail("an unchanged folder was scanned"))
    assert store.file_signatures() == before
    monkeypatch.setattr(os, "scandir", real_scandir)
    await ok(client, "sequential_thinking", **thought(2, 2, "second", session_id="q"))  # an append
    grown = store.file_signatures()["q"]
    assert grown.journal_size > before["q"].journal_size
    assert grown.document == before["q"].document
    quiet()
    store.file_signatures()
    await ok(client, "update_session_status", session_id="q", status="completed")  # a new document
    assert store.file_signatures()["q"].document != grown.document
    quiet()
    store.file_signatures()
    await ok(client, "delete_session", session_id="q")
    assert "q" not in store.file_signatures()
    store.close()


@pytest.mark.files_only
async def test_an_index_deleted_while_serving_is_rebuilt(client: Client, hostd_data_dir: Path) -> None:
    await add(client, "gone", "find me again")
    assert found(await ok(client, "search_thoughts", query="find")) == [("gone", 1)]
    index = hostd_data_dir / PLUGIN / "search.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    assert found(await ok(client, "search_thoughts", query="find")) == [("gone", 1)]
    assert index.exists()  # a new file, not the deleted one kept open
