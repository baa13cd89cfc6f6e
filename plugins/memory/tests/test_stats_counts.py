"""get_memory_stats reads counts the store keeps in each write's transaction (``memory_counts``):
after every kind of write, and after a write that fails half-way, they equal a full scan of the
tables, on the SQLite file and on the team database (also with writers on many connections)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_memory.store import Change, Connection, ImportItem, ImportReport, MemoryStore, VersionRow
from hostd_memory.store.importing import ImportStopped
from hostd_memory.store.schema import STATUSES
from hostd_memory.uris import MemoryUri
from memory_support import sqlite_store, team_store


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MemoryStore]:
    if request.param == "sqlite":
        opened = sqlite_store(tmp_path / "memory.db")
    else:
        pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
        opened = team_store(request.getfixturevalue("postgres_url"))
    try:
        yield opened
    finally:
        opened.close()


def scanned(store: MemoryStore) -> dict[str, Any]:
    """The counted statistics by scanning every table (what ``stats`` computed before the counts)."""
    scan: dict[str, Any] = store.read(_scanned)
    return scan


def _scanned(conn: Connection) -> dict[str, Any]:
    visible = "m.status != 'deleted'"
    by_status = {s: 0 for s in STATUSES}
    grouped = conn.execute("SELECT status, count(*) FROM memories GROUP BY status")
    by_status.update({r[0]: int(r[1]) for r in grouped})
    tags = sorted(
        (
            (str(r[0]), int(r[1]))
            for r in conn.execute(
                f"SELECT t.tag, count(*) FROM memory_tags t JOIN memories m ON m.id = t.memory_id "
                f"WHERE {visible} GROUP BY t.tag"
            )
        ),
        key=lambda t: (-t[1], t[0]),
    )

    def count(sql: str) -> int:
        return int(conn.execute(sql).fetchone()[0])

    return {
        "by_status": by_status,
        "by_domain": {
            r[0]: int(r[1])
            for r in conn.execute(
                f"SELECT domain, count(*) FROM memories m WHERE {visible} GROUP BY domain ORDER BY domain"
            )
        },
        "total_accesses": count(f"SELECT coalesce(sum(access_count), 0) FROM memories m WHERE {visible}"),
        "version_count": count("SELECT count(*) FROM memory_versions") + sum(by_status.values()),
        "alias_count": count("SELECT count(*) FROM aliases"),
        "session_count": count("SELECT count(*) FROM sessions"),
        "link_count": count("SELECT count(*) FROM memory_links"),
        "by_tag": dict(tags[:20]),
        "tag_count": len(tags),
    }


def counted(store: MemoryStore) -> dict[str, Any]:
    stats = store.stats()
    return {key: stats[key] for key in scanned(store)}


def item(uri: str, *, status: str = "active", tags: list[str] | None = None, **more: Any) -> ImportItem:
    domain, path = uri.split("://")
    return ImportItem(
        uri=MemoryUri(domain, path),
        content=more.pop("content", f"imported {uri}"),
        priority=2,
        disclosure="",
        status=status,
        created_at=None,
        updated_at=None,
        version=None,
        access_count=more.pop("access_count", 0),
        aliases=more.pop("aliases", []),
        versions=more.pop("versions", []),
        tags=tags or [],
        **more,
    )


def test_counts_stay_exact_through_every_kind_of_write(store: MemoryStore) -> None:
    checks: list[str] = []

    def check(step: str) -> None:
        assert counted(store) == scanned(store), step
        checks.append(step)

    check("empty")
    store.create(MemoryUri("proj", "a"), "alpha", 1, "", ["db", "rust"], author="ann")
    store.create(MemoryUri("proj", "b"), "beta", 2, "", ["db"], author="ann")
    store.create(MemoryUri("notes", "c"), "gamma", 3, "", [], author=None)
    check("create")
    store.update("proj://a", edit=None, change=Change(tags=["ops", "rust"]), author="bob")
    store.update("proj://b", edit=None, change=Change(status="archived"), author="bob")
    store.update("proj://b", edit=None, change=Change(content="beta 2"), author="bob")
    check("update")
    a, _ = store.resolve("proj://a")
    store.count_access(a.id)
    store.count_access(a.id)
    check("access")
    store.soft_delete("proj://a", author="bob")
    check("soft delete (its tags and accesses leave the visible counts)")
    store.rollback("proj://a", 1, author="ann")
    check("rollback of a deleted memory")
    store.rollback("proj://a", 2, author="ann")
    check("rollback to other tags")
    store.add_alias("proj://a", "proj://alias")
    store.link("proj://a", "notes://c", "see_also")
    store.link("notes://c", "proj://b", "depends_on")
    store.save_session("one", "summary", (MemoryUri("session", "one"), "text", 1), author="ann")
    store.save_session("two", "summary", None, author="ann")
    check("aliases, links, sessions")
    old = VersionRow(1, "old text", 1, "", "active", "created", "", "2026-01-01T00:00:00Z", tags=["db"])
    report = ImportReport()
    store.import_items(
        [
            item("imp://x", tags=["db", "imported"], access_count=5, aliases=["imp://y"], versions=[old]),
            item("imp://z", status="deprecated", tags=["imported"], links=[("imp://x", "related")]),
            item("imp://gone", status="deleted", tags=["never-visible"]),
            item("proj://b", tags=["merged"], content="beta merged"),
        ],
        "overwrite",
        report,
        author="ann",
    )
    assert report.errors == []
    assert len(report.created) == 3
    assert report.overwritten == ["proj://b"]
    check("import (create and overwrite)")
    store.remove_alias("proj://alias")
    store.unlink("proj://a", "notes://c", None)
    store.purge("imp://x")
    store.purge("imp://gone")
    check("purge, unlink, alias removed")
    stats = store.stats()
    assert stats["by_status"]["active"] >= 1
    assert stats["link_count"] == 1
    assert stats["tag_count"] >= 1
    assert len(checks) == 10


def test_a_write_that_fails_leaves_the_counts_as_they_were(store: MemoryStore) -> None:
    store.create(MemoryUri("proj", "a"), "alpha", 1, "", ["db"], author="ann")
    before = counted(store)

    class Broken(Exception):
        pass

    def broken(conn: Connection) -> None:
        conn.execute(
            "INSERT INTO memories (uri, domain, path, content, priority, created_at, updated_at, tags) "
            "VALUES ('proj://b', 'proj', 'b', 'beta', 1, 'x', 'x', '[\"db\"]')"
        )
        raise Broken

    with pytest.raises(Broken):
        store.write(broken, exclusive=True)
    assert counted(store) == before == scanned(store)


@pytest.mark.parametrize("stop_after", [0, 3, 5])
def test_an_import_cancelled_part_way_keeps_nothing(store: MemoryStore, stop_after: int) -> None:
    """Cancelled before the first item, after some, or at the last safe point before the commit
    (5 asks: one per item, then one more): the import rolls back whole."""
    store.create(MemoryUri("proj", "a"), "alpha", 1, "", ["db"], author="ann")
    before = counted(store)
    asked = 0

    def cancelled() -> bool:
        nonlocal asked
        asked += 1
        return asked > stop_after

    items = [item(f"imp://n{index}", tags=["imported"]) for index in range(4)]
    items.append(item("proj://a", content="alpha overwritten"))
    with pytest.raises(ImportStopped):
        store.import_items(items, "overwrite", ImportReport(), author="ann", cancelled=cancelled)
    assert asked == stop_after + 1
    assert counted(store) == before == scanned(store)
    assert store.resolve("proj://a")[0].content == "alpha"


def test_counts_stay_exact_with_writers_on_many_connections(postgres_url: str) -> None:
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    store = team_store(postgres_url, pool_size=6)
    errors: list[BaseException] = []

    def writer(number: int) -> None:
        try:
            for i in range(25):
                uri = MemoryUri("load", f"w{number}-{i}")
                store.create(uri, "text", 1, "", ["shared", f"w{number}"], author=None)
                if i % 3 == 0:
                    store.update(str(uri), edit=None, change=Change(status="archived"), author=None)
                if i % 5 == 0:
                    store.soft_delete(str(uri), author=None)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    try:
        threads = [threading.Thread(target=writer, args=(n,)) for n in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        stats = counted(store)
        assert stats == scanned(store)
        assert sum(stats["by_status"].values()) == 150
        assert stats["by_tag"]["shared"] == 120
        shards = store.rows("SELECT count(DISTINCT shard) FROM memory_counts")[0][0]
        assert shards > 1  # the writers added to rows of their own, not all to one
    finally:
        store.close()
