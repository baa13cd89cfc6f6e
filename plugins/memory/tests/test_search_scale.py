"""Search stays right when it takes its shortcuts: common tokens dropped, broad matches capped."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from hostd_memory import search, store
from hostd_memory.store import Filters, ImportItem, ImportReport, MemoryStore, ranking
from hostd_memory.uris import MemoryUri
from memory_support import sqlite_store


def filled(tmp_path: Path, count: int) -> MemoryStore:
    memories = sqlite_store(tmp_path / "memory.db")
    items = [
        ImportItem(
            MemoryUri("bulk", f"n{i}"),
            f"服务 说明 第{i}条 common words",
            5,
            "",
            "active",
            None,
            None,
            None,
            0,
            [],
            [],
        )
        for i in range(count)
    ]
    items.append(
        ImportItem(
            MemoryUri("target", "limit"),
            "服务的限流阈值是每秒 50 次",
            5,
            "",
            "active",
            None,
            None,
            None,
            0,
            [],
            [],
        )
    )
    memories.import_items(items, "skip", ImportReport(), author="test")
    return memories


def test_tokens_in_most_memories_are_dropped_but_rare_ones_still_rank(tmp_path: Path) -> None:
    memories = filled(tmp_path, 1_200)
    plan = search.plan_query("服务限流配置")
    kept = [p.expression for p in memories.useful_pieces(plan.relaxed)]
    hits = memories.search(plan, Filters(), 10)
    memories.close()
    assert '"服务"' not in kept
    assert '"限流"' in kept
    assert hits[0].memory.uri == "target://limit"
    assert hits[0].stage == "any_term"


def test_only_common_tokens_keep_the_rarest(tmp_path: Path) -> None:
    memories = filled(tmp_path, 1_200)
    kept = memories.useful_pieces(search.plan_query("服务").relaxed)
    memories.close()
    assert [p.expression for p in kept] == ['"服务"']


def test_capped_ranking_still_returns_matches_and_honours_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store.tuning, "STRICT_RANK_CAP", 20)
    memories = filled(tmp_path, 300)
    broad = memories.search(search.plan_query("common words"), Filters(), 10)
    narrow = memories.search(search.plan_query("common words"), Filters(domain="bulk", priority_max=5), 10)
    missing_domain = memories.search(search.plan_query("common words"), Filters(domain="target"), 10)
    memories.close()
    assert len(broad) == 10
    assert all(h.stage == "all_terms" for h in broad)
    assert min(int(h.memory.path[1:]) for h in broad) >= 300 - 20  # the newest were ranked
    assert len(narrow) == 10
    assert missing_domain == []


def bulk(
    count: int,
    content: str,
    *,
    first: Sequence[tuple[str, str]] = (),
    last: Sequence[tuple[str, str]] = (),
) -> list[ImportItem]:
    """Import items: ``first`` (oldest), ``count`` bulk memories, then ``last`` (newest)."""
    specs = [*first, *((f"bulk://n{i}", content.format(i=i)) for i in range(count)), *last]
    items = []
    for uri, text in specs:
        domain, path = uri.split("://")
        items.append(ImportItem(MemoryUri(domain, path), text, 5, "", "active", None, None, None, 0, [], []))
    return items


def test_rare_pieces_rank_their_memories_however_old_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The relaxed stage ranks the memories holding the rarest pieces, not the newest matches."""
    monkeypatch.setattr(store.tuning, "RELAXED_RANK_CAP", 20)
    memories = sqlite_store(tmp_path / "memory.db")
    items = bulk(300, "第{i}条 common words", first=[("target://oldest", "限流阈值 common 每秒 50 次")])
    memories.import_items(items, "skip", ImportReport(), author="test")
    hits = memories.search(search.plan_query("限流 words"), Filters(), 10)
    memories.close()
    assert hits[0].memory.uri == "target://oldest"
    assert hits[0].stage == "any_term"
    assert len(hits) == 10  # topped up with the newest memories holding the broad piece


def test_a_service_name_in_many_memories_still_ranks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A piece too broad to fetch by (more than the cap) still adds to the score of the candidates."""
    monkeypatch.setattr(store.tuning, "RELAXED_RANK_CAP", 20)
    memories = sqlite_store(tmp_path / "memory.db")
    first = [
        ("notes://other-timeout", "chat-service: the client timeout is 5s"),
        ("notes://wanted-timeout", "billing-service: the client timeout is 5s"),
        ("notes://other-timeout-2", "media-service: the client timeout is 5s"),
    ]
    memories.import_items(
        bulk(200, "billing-service note {i}", first=first), "skip", ImportReport(), author="test"
    )
    hits = memories.search(search.plan_query("what is the timeout setup of billing-service"), Filters(), 10)
    memories.close()
    assert hits[0].memory.uri == "notes://wanted-timeout"


def test_words_match_their_forms_and_common_forms_are_not_read_as_a_prefix(tmp_path: Path) -> None:
    memories = sqlite_store(tmp_path / "memory.db")
    items = bulk(1_200, "memory {i}: limited edition", last=[("target://deploy", "Deploying the rate limit")])
    memories.import_items(items, "skip", ImportReport(), author="test")
    total = memories.read(ranking.memory_total)
    expression, _ = memories.read(
        lambda conn: memories._strict_expression(
            conn, search.plan_query("limit deployment").strict_pieces, total, {}
        )
    )
    found = memories.search(search.plan_query("deployment limits"), Filters(), 10)
    memories.close()
    # 'limited' is in every memory: 'limit' is looked up as its forms, not as 'limit*'
    assert expression == '("limit" OR "limited") AND "deploy" *'
    assert found[0].memory.uri == "target://deploy"
    assert found[0].stage == "all_terms"


def test_a_large_import_compacts_the_word_index_and_it_stays_in_step(tmp_path: Path) -> None:
    memories = sqlite_store(tmp_path / "memory.db")
    memories.import_items(bulk(1_000, "entry {i} about caching"), "skip", ImportReport(), author="test")
    structure = memories.rows("SELECT block FROM memory_words_data WHERE id = 10")[0][0]
    updated, _ = memories.update(
        "bulk://n7",
        edit=lambda content: ("now about sharding", "replace"),
        change=store.Change(),
        author="test",
    )
    purged = memories.purge("bulk://n8")
    cached = memories.search(search.plan_query("caching"), Filters(), 100)
    sharded = memories.search(search.plan_query("sharding"), Filters(), 10)
    memories.close()
    assert structure[5] == 1  # FTS5's structure record: a 4-byte cookie, levels, then segments
    assert updated.version == 2
    assert purged[0].uri == "bulk://n8"
    assert len(cached) == 100
    assert {"bulk://n7", "bulk://n8"}.isdisjoint(h.memory.uri for h in cached)
    assert [h.memory.uri for h in sharded] == ["bulk://n7"]
