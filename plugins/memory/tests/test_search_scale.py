"""Search stays right when it takes its shortcuts: common tokens dropped, broad matches capped."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_memory import search, store
from hostd_memory.store import Filters, ImportItem, ImportReport, MemoryStore
from hostd_memory.uris import MemoryUri


def filled(tmp_path: Path, count: int) -> MemoryStore:
    memories = MemoryStore(tmp_path / "memory.db")
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
    memories.import_items(items, "skip", ImportReport())
    return memories


def test_tokens_in_most_memories_are_dropped_but_rare_ones_still_rank(tmp_path: Path) -> None:
    memories = filled(tmp_path, 1_200)
    plan = search.plan_query("服务限流配置")
    kept = [p.expression for p in memories._useful_pieces(plan.relaxed)]
    hits = memories.search(plan, Filters(), 10)
    memories.close()
    assert '"服务"' not in kept and '"限流"' in kept
    assert hits[0].memory.uri == "target://limit" and hits[0].stage == "any_term"


def test_only_common_tokens_keep_the_rarest(tmp_path: Path) -> None:
    memories = filled(tmp_path, 1_200)
    kept = memories._useful_pieces(search.plan_query("服务").relaxed)
    memories.close()
    assert [p.expression for p in kept] == ['"服务"']


def test_capped_ranking_still_returns_matches_and_honours_filters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "STRICT_RANK_CAP", 20)
    memories = filled(tmp_path, 300)
    broad = memories.search(search.plan_query("common words"), Filters(), 10)
    narrow = memories.search(search.plan_query("common words"), Filters(domain="bulk", priority_max=5), 10)
    missing_domain = memories.search(search.plan_query("common words"), Filters(domain="target"), 10)
    memories.close()
    assert len(broad) == 10 and all(h.stage == "all_terms" for h in broad)
    assert min(int(h.memory.path[1:]) for h in broad) >= 300 - 20  # the newest were ranked
    assert len(narrow) == 10 and missing_domain == []
