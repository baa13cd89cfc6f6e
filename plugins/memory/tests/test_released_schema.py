"""Stores made by the release before the shared schema open as they are and migrate forward:
a memory.db at each of its versions, and a team database made by its one PostgreSQL migration."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hostd_memory.search import plan_query, words_text
from hostd_memory.store import Change, Filters
from memory_released_schema import MIGRATIONS, PG_MIGRATIONS
from memory_support import sqlite_store, team_store

STAMP = "2026-01-02T03:04:05Z"


def _release_file(path: Path, versions: int) -> None:
    """A memory.db as the release left it after its first ``versions`` migrations, with one memory."""
    from hostd_testing import released_sqlite_file

    def register(connection: sqlite3.Connection) -> None:
        connection.create_function("memory_words_text", 1, words_text, deterministic=True)

    with released_sqlite_file(path, MIGRATIONS[:versions], on_connect=register) as conn:
        conn.execute(
            "INSERT INTO memories (uri, domain, path, content, priority, created_at, updated_at) "
            "VALUES ('proj://old', 'proj', 'old', '旧的数据库笔记 kept as it was', 3, ?, ?)",
            (STAMP, STAMP),
        )


@pytest.mark.parametrize("versions", [1, 2, 3, 4])
def test_a_memory_db_made_by_the_release_opens_and_migrates_forward(tmp_path: Path, versions: int) -> None:
    path = tmp_path / "memory.db"
    _release_file(path, versions)
    store = sqlite_store(path)
    try:
        memory, _ = store.resolve("proj://old")
        found = [hit.memory.uri for hit in store.search(plan_query("数据库"), Filters(), 5)]
        counted = store.stats()
        updated, kind = store.update("proj://old", edit=None, change=Change(tags=["kept"]), author="ann")
    finally:
        store.close()
    assert (memory.content, memory.priority, memory.created_at) == ("旧的数据库笔记 kept as it was", 3, STAMP)
    assert found == ["proj://old"]
    counts = (counted["by_status"]["active"], counted["by_domain"], counted["version_count"])
    assert counts == (1, {"proj": 1}, 1)
    assert (updated.version, updated.tags, updated.author, kind) == (2, ["kept"], "ann", "metadata")
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 6  # the current schema
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_team_database_made_by_the_release_is_current_and_keeps_working(postgres_url: str) -> None:
    """The release recorded its one migration as version 1: that is version 4 of the shared schema."""
    pytest.importorskip("psycopg")
    from hostd_db import PostgresDatabase

    with PostgresDatabase(postgres_url, "memory", PG_MIGRATIONS) as old, old.write() as conn:
        conn.execute(
            "INSERT INTO memories (uri, domain, path, content, priority, created_at, updated_at) "
            "VALUES ('proj://old', 'proj', 'old', 'a database note', 3, %s, %s)",
            (STAMP, STAMP),
        )
    store = team_store(postgres_url)
    try:
        status = store.database.schema_status()
        store.update("proj://old", edit=None, change=Change(priority=2), author="ann")  # indexes its words
        found = [hit.memory.uri for hit in store.search(plan_query("database"), Filters(), 5)]
        memory, _ = store.resolve("proj://old")
        stats = store.stats()
    finally:
        store.close()
    # Read before the store's first use, which applies version 5 (the statistics' counts, counting
    # the stored memory) and version 6 (the completion index).
    assert (status.current, status.known) == (4, 6)
    assert (stats["by_status"]["active"], stats["by_domain"], stats["version_count"]) == (1, {"proj": 1}, 2)
    assert found == ["proj://old"]
    assert (memory.version, memory.author) == (2, "ann")
