"""The team database under real processes: concurrent appends and a writer SIGKILLed mid-write.

The same workers as ``test_concurrency.py`` (``concurrency_worker.py`` given a postgresql:// URL);
the checks read the ``memory`` schema directly.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from test_concurrency import ForkedWriters, assert_overlapped, run_on_barrier

psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")

from hostd_db import Connection  # noqa: E402
from hostd_memory.store import MemoryStore  # noqa: E402
from hostd_memory.uris import MemoryUri  # noqa: E402

from hostd import ToolError  # noqa: E402


@pytest.fixture
def team_store(postgres_url: str) -> Iterator[MemoryStore]:
    from memory_support import team_store as open_team_store

    store = open_team_store(postgres_url)
    yield store
    store.close()


def _rows(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("SET search_path = memory")
        rows: list[tuple[Any, ...]] = conn.execute(sql, params).fetchall()
        return rows


@pytest.mark.slow
def test_two_processes_appending_100_times_each_make_versions_1_to_201(
    tmp_path: Path, postgres_url: str, team_store: MemoryStore
) -> None:
    team_store.create(MemoryUri("shared", "target"), "start", 5, "", author="test")
    spans = run_on_barrier(tmp_path, postgres_url, [("a", "update", 100), ("b", "update", 100)])
    assert_overlapped(spans)
    older = [r[0] for r in _rows(postgres_url, "SELECT version FROM memory_versions ORDER BY version")]
    ((current, content),) = _rows(postgres_url, "SELECT version, content FROM memories")
    appends = _rows(
        postgres_url,
        "SELECT content, author FROM memory_versions WHERE version > 1 "
        "UNION ALL SELECT content, author FROM memories",
    )
    assert [*older, current] == list(range(1, 202))
    assert current == 201
    assert len(appends) == 200
    assert all(text.splitlines()[-1].split()[0] == author for text, author in appends)
    lines = content.splitlines()[1:]
    assert sorted(lines) == sorted([f"a edit {i}" for i in range(100)] + [f"b edit {i}" for i in range(100)])


def test_of_concurrent_creates_of_one_uri_one_succeeds_the_others_already_exist(
    team_store: MemoryStore,
) -> None:
    def create(n: int) -> str:
        try:
            team_store.create(MemoryUri("race", "one"), f"writer {n}", 5, "", author=f"w{n}")
        except ToolError as exc:
            assert exc.code == "ALREADY_EXISTS", exc
            assert exc.details["existing"] == "memory", exc
            return "exists"
        return "created"

    with ThreadPoolExecutor(8) as pool:
        outcomes = list(pool.map(create, range(16)))
    assert outcomes.count("created") == 1
    assert outcomes.count("exists") == 15
    memory, _versions, total = team_store.versions("race://one")
    assert total == 1
    assert memory.version == 1


def test_a_deadlock_between_two_memory_writes_is_run_again_and_both_succeed(
    team_store: MemoryStore, postgres_url: str
) -> None:
    """Two writes locking two memories' rows in opposite orders deadlock: PostgreSQL aborts one,
    ``Database.write`` runs it again, and both commit (while memory's writes went around
    ``Database.write`` the deadlock reached the tool as an INTERNAL error)."""
    a = team_store.create(MemoryUri("team", "deadlock-a"), "a", 5, "", author="ann")
    b = team_store.create(MemoryUri("team", "deadlock-b"), "b", 5, "", author="bob")
    both_hold_their_first = threading.Barrier(2, timeout=30)
    attempts = {"a then b": 0, "b then a": 0}

    def write(name: str, first: int, second: int) -> str:
        def work(conn: Connection) -> str:
            attempts[name] += 1
            conn.execute("SELECT 1 FROM memories WHERE id = ? FOR UPDATE", (first,))
            if attempts[name] == 1:
                both_hold_their_first.wait()
            conn.execute("SELECT 1 FROM memories WHERE id = ? FOR UPDATE", (second,))
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1 WHERE id IN (?, ?)", (first, second)
            )
            return name

        return team_store.write(work)

    with ThreadPoolExecutor(2) as pool:
        done = [
            pool.submit(write, "a then b", a.id, b.id),
            pool.submit(write, "b then a", b.id, a.id),
        ]
        assert [future.result(timeout=60) for future in done] == ["a then b", "b then a"]
    assert sorted(attempts.values()) == [1, 2]  # one of them was the deadlock's victim, run again
    counts = _rows(
        postgres_url,
        "SELECT uri, access_count FROM memories WHERE uri IN (%s, %s) ORDER BY uri",
        (a.uri, b.uri),
    )
    assert counts == [("team://deadlock-a", 2), ("team://deadlock-b", 2)]


def test_writers_of_different_memories_do_not_wait_for_each_other(
    team_store: MemoryStore, postgres_url: str
) -> None:
    """A write holding one memory (its URI and row) keeps a write of another memory waiting for
    nothing, while a second write of the same memory, even through an alias, waits its turn."""
    from hostd_memory.store import Change

    team_store.create(MemoryUri("team", "a"), "a", 5, "", author="ann")
    team_store.add_alias("team://a", "team://a-alias")
    held, release = threading.Event(), threading.Event()

    def hold_a() -> None:
        def work(conn: Connection) -> None:
            team_store.resolve_locked(conn, "team://a")
            held.set()
            release.wait(60)

        team_store.write(work, "team://a")

    holder = threading.Thread(target=hold_a)
    holder.start()
    try:
        assert held.wait(20)
        with ThreadPoolExecutor(2) as pool:
            # Other memories: done while memory a is held (the liveness bound is generous).
            created = pool.submit(team_store.create, MemoryUri("team", "b"), "b", 5, "", author="bob")
            assert created.result(timeout=30).version == 1
            changed = pool.submit(
                team_store.update, "team://b", edit=None, change=Change(priority=2), author="bob"
            )
            assert changed.result(timeout=30)[0].version == 2
            # The same memory through its alias: waits on a's row until the holder ends.
            same = pool.submit(
                team_store.update, "team://a-alias", edit=None, change=Change(priority=1), author="cy"
            )
            waited = False
            for _ in range(2000):
                if _rows(
                    postgres_url,
                    "SELECT 1 FROM pg_stat_activity WHERE application_name = 'hostd-memory' "
                    "AND wait_event_type = 'Lock'",
                ):
                    waited = True
                    break
                time.sleep(0.01)
            assert waited
            assert not same.done()
            release.set()
            assert same.result(timeout=30)[0].version == 2
    finally:
        release.set()
        holder.join()


@pytest.mark.slow
def test_a_writer_killed_at_random_points_loses_no_acknowledged_write_on_postgres(
    tmp_path: Path, postgres_url: str, team_store: MemoryStore
) -> None:
    """SIGKILL a writing process a dozen times: every acknowledged round is there, none is half
    there, versions have no gap, and the word index agrees with every committed memory."""
    team_store.create(MemoryUri("shared", "target"), "start", 5, "", author="test")
    chance = random.Random(20261124)
    rounds_done: dict[str, int] = {}
    kills_between_the_two_writes = 0
    with ForkedWriters(postgres_url) as writers:
        for run in range(12):
            name = f"k{run}"
            wanted = chance.randint(1, 25)  # let it write a random number of rounds, then kill it mid-work
            rounds_done[name] = writers.kill_after(name, wanted, chance.uniform(0, 0.004))

            versions = _rows(postgres_url, "SELECT version FROM memory_versions ORDER BY version")
            older = [r[0] for r in versions]
            ((current, content),) = _rows(
                postgres_url, "SELECT version, content FROM memories WHERE domain = 'shared'"
            )
            ((created,),) = _rows(
                postgres_url,
                "SELECT count(*) FROM memories WHERE domain = 'load' AND path LIKE %s",
                (f"{name}/%",),
            )
            ((indexed,),) = _rows(
                postgres_url,
                "SELECT count(*) FROM memories WHERE words @@ %s::tsquery",
                (f"'from' <-> '{name}'",),
            )
            ((unindexed,),) = _rows(postgres_url, "SELECT count(*) FROM memories WHERE words IS NULL")
            assert [*older, current] == list(range(1, current + 1)), "a version is missing or doubled"
            edits = [line for line in content.splitlines()[1:] if line.startswith(f"{name} ")]
            # The rounds it printed are committed; the one it was in may or may not be, never half.
            assert edits == [f"{name} edit {i}" for i in range(len(edits))]
            assert len(edits) in (rounds_done[name], rounds_done[name] + 1)
            assert created in (len(edits), len(edits) + 1)
            assert indexed == created
            assert unindexed == 0
            kills_between_the_two_writes += created - len(edits)

    assert kills_between_the_two_writes >= 1  # the kills landed inside the work
    # The killed writers left no lock behind: the next write goes through at once.
    team_store.create(MemoryUri("after", "kills"), "written after the kills", 5, "", author="test")
    memory, _versions, total = team_store.versions("shared://target")
    assert (
        total
        == memory.version
        == 1
        + sum(
            len([line for line in memory.content.splitlines() if line.startswith(f"{name} ")])
            for name in rounds_done
        )
    )


def test_the_schema_makes_the_same_tables_and_columns_on_sqlite_and_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    from hostd_memory.store.schema import (
        POSTGRES_ONLY_COLUMNS,
        POSTGRES_ONLY_TABLES,
        SQLITE_ONLY_TABLES,
        schema,
    )
    from hostd_testing import check_schema_parity

    held = check_schema_parity(
        schema("memory.db"),
        "memory",
        tmp_path,
        postgres_url,
        sqlite_only_tables=SQLITE_ONLY_TABLES,
        postgres_only_tables=POSTGRES_ONLY_TABLES,
        postgres_only_columns=POSTGRES_ONLY_COLUMNS,
    )
    assert {"memory_fts", "memory_words", "memory_words_vocab"} <= set(held["sqlite"])
    assert "memory_lexemes" in held["postgres"]
    assert "words" in held["postgres"]["memories"]
