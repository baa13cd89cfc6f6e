"""Several processes and threads on one database file lose nothing (started on a barrier)."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from hostd_memory.store import Change
from hostd_memory.uris import MemoryUri
from memory_support import sqlite_store

WORKER = Path(__file__).with_name("concurrency_worker.py")


class ForkedWriters:
    """``concurrency_worker.py zygote``: writers forked one after another from one process that
    imported the store once, each SIGKILLed at a chosen point."""

    def __init__(self, target: Path | str) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WORKER), str(target), "-", "-", "zygote", "0"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def __enter__(self) -> ForkedWriters:
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.close()
        self.process.wait(30)
        self.process.stdout.close()

    def kill_after(self, name: str, wanted: int, pause: float) -> int:
        """Start writer ``name``, let it finish ``wanted`` rounds, SIGKILL it ``pause`` seconds later
        (mid-work); the rounds it printed before it died, its output buffer included."""
        assert self.process.stdin is not None
        assert self.process.stdout is not None
        self.process.stdin.write(f"{name}\n")
        self.process.stdin.flush()
        ready, pid = self.process.stdout.readline().split()
        assert ready == "ready"
        printed = -1
        while printed + 1 < wanted:
            line = self.process.stdout.readline()
            assert line, "the writer's zygote ended"
            assert not line.startswith("exit"), f"the writer died by itself: {line}"
            printed = int(line)
        time.sleep(pause)
        os.kill(int(pid), signal.SIGKILL)
        while not (line := self.process.stdout.readline()).startswith("exit"):
            assert line, "the writer's zygote ended"
            printed = max(printed, int(line))
        assert line.split() == ["exit", str(signal.SIGKILL)], line  # waitpid's status: killed
        return printed + 1


def run_on_barrier(
    tmp_path: Path, db: Path | str, jobs: list[tuple[str, str, int]]
) -> list[dict[str, float]]:
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    processes = [
        subprocess.Popen(
            [sys.executable, str(WORKER), str(db), str(barrier), name, action, str(count)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, action, count in jobs
    ]
    deadline = time.monotonic() + 60
    while len(list(barrier.glob("ready-*"))) < len(jobs):
        assert time.monotonic() < deadline, "workers never got ready"
        assert all(p.poll() is None for p in processes), [p.communicate() for p in processes]
        time.sleep(0.01)
    (barrier / "go").touch()
    spans = []
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err
        spans.append(json.loads(out))
    return spans


def assert_overlapped(spans: list[dict[str, float]]) -> None:
    latest_start = max(s["started"] for s in spans)
    earliest_end = min(s["ended"] for s in spans)
    assert latest_start < earliest_end, f"the workers ran one after another, not together: {spans}"


@pytest.mark.slow
def test_four_processes_creating_250_each_lose_nothing(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    sqlite_store(db).close()
    spans = run_on_barrier(tmp_path, db, [(f"p{i}", "create", 250) for i in range(4)])
    assert_overlapped(spans)
    with sqlite3.connect(db) as conn:
        count = conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        indexed = conn.execute(
            "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH '\"from p3\"'"
        ).fetchone()[0]
    assert count == 1000
    assert indexed == 250


@pytest.mark.slow
def test_two_processes_updating_one_memory_100_times_each_make_versions_1_to_201(tmp_path: Path) -> None:
    db = tmp_path / "memory.db"
    store = sqlite_store(db)
    store.create(MemoryUri("shared", "target"), "start", 5, "", author="test")
    store.close()
    spans = run_on_barrier(tmp_path, db, [("a", "update", 100), ("b", "update", 100)])
    assert_overlapped(spans)
    with sqlite3.connect(db) as conn:
        older = [r[0] for r in conn.execute("SELECT version FROM memory_versions ORDER BY version")]
        current, content = conn.execute("SELECT version, content FROM memories").fetchone()
        appends = conn.execute(
            "SELECT content, author FROM memory_versions WHERE version > 1 "
            "UNION ALL SELECT content, author FROM memories"
        ).fetchall()
    assert sorted([*older, current]) == list(range(1, 202))
    # Each version names the process that appended its last line.
    assert len(appends) == 200
    assert all(text.splitlines()[-1].split()[0] == author for text, author in appends)
    assert len(set(older)) == len(older)
    assert current == 201
    lines = content.splitlines()[1:]
    assert sorted(lines) == sorted([f"a edit {i}" for i in range(100)] + [f"b edit {i}" for i in range(100)])


def test_threads_of_one_process_share_the_store_safely(tmp_path: Path) -> None:
    store = sqlite_store(tmp_path / "memory.db")
    store.create(MemoryUri("shared", "target"), "start", 5, "", author="test")

    def work(n: int) -> None:
        store.create(MemoryUri("thread", str(n)), f"thread memory {n}", 5, "", author="test")
        store.update(
            "shared://target", edit=lambda c: (c + f"\n{n}", "append"), change=Change(), author="test"
        )

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(work, range(80)))
    memory, versions, total = store.versions("shared://target")
    store.close()
    assert total == 81
    assert [v.version for v in versions] == list(range(81, 0, -1))
    assert sorted(int(x) for x in memory.content.splitlines()[1:]) == list(range(80))


@pytest.mark.slow
def test_a_writer_killed_at_random_points_leaves_a_whole_consistent_store(tmp_path: Path) -> None:
    """SIGKILL a writing process a dozen times: every commit is whole, the indexes agree with it."""
    db = tmp_path / "memory.db"
    store = sqlite_store(db)
    store.create(MemoryUri("shared", "target"), "start", 5, "", author="test")
    store.close()
    chance = random.Random(20261123)
    rounds_done: dict[str, int] = {}
    kills_between_the_two_writes = 0

    def check(name: str) -> None:
        """After writer ``name`` was killed: the file is whole and agrees with what it printed."""
        nonlocal kills_between_the_two_writes
        with sqlite3.connect(db) as conn:
            assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
            # Raises if the trigram index disagrees with the memories it indexes.
            conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
            older = [r[0] for r in conn.execute("SELECT version FROM memory_versions ORDER BY version")]
            current, content = conn.execute(
                "SELECT version, content FROM memories WHERE domain = 'shared'"
            ).fetchone()
            created = conn.execute(
                "SELECT count(*) FROM memories WHERE domain = 'load' AND path LIKE ?", (f"{name}/%",)
            ).fetchone()[0]
            indexed = conn.execute(
                "SELECT count(*) FROM memory_fts WHERE memory_fts MATCH ?", (f'"from {name}"',)
            ).fetchone()[0]
        assert [*older, current] == list(range(1, current + 1)), "a version is missing or doubled"
        edits = [line for line in content.splitlines()[1:] if line.startswith(f"{name} ")]
        # The rounds it printed are committed; the one it was in may or may not be, never half.
        assert edits == [f"{name} edit {i}" for i in range(len(edits))]
        assert len(edits) in (rounds_done[name], rounds_done[name] + 1)
        assert created in (len(edits), len(edits) + 1)
        assert indexed == created
        kills_between_the_two_writes += created - len(edits)

    with ForkedWriters(db) as writers:
        for run in range(12):
            name = f"k{run}"
            wanted = chance.randint(1, 25)  # let it write a random number of rounds, then kill it mid-work
            rounds_done[name] = writers.kill_after(name, wanted, chance.uniform(0, 0.004))
            check(name)

    # Proof the kills landed inside the work: some rounds have their memory but not yet their edit.
    assert kills_between_the_two_writes >= 1
    # The killed writers left no lock behind: a new store writes at once and reads all of it.
    store = sqlite_store(db)
    store.create(MemoryUri("after", "kills"), "written after the kills", 5, "", author="test")
    memory, _versions, total = store.versions("shared://target")
    store.close()
    assert (
        total
        == memory.version
        == 1
        + sum(
            len([line for line in memory.content.splitlines() if line.startswith(f"{name} ")])
            for name in rounds_done
        )
    )


def test_a_write_to_a_file_another_process_holds_is_file_locked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past the busy timeout, a memory write to a file another process holds locked is
    ``FILE_LOCKED`` from hostd_db (memory's writes once went around ``Database.write`` and let
    SQLite's own error through), and nothing was written."""
    from hostd_db import DatabaseError

    monkeypatch.setattr("hostd_db.database.SQLITE_BUSY_TIMEOUT_MS", 200)
    path = tmp_path / "memory.db"
    store = sqlite_store(path)
    try:
        store.create(MemoryUri("busy", "a"), "v1", 5, "", author=None)
        holder = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "import sqlite3, sys\n"
                f"c = sqlite3.connect({str(path)!r}, isolation_level=None)\n"
                "c.execute('BEGIN EXCLUSIVE')\n"
                "print('held', flush=True)\n"
                "sys.stdin.read()\n",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None
            assert holder.stdout.readline() == "held\n"
            with pytest.raises(DatabaseError) as refused:
                store.update("busy://a", edit=None, change=Change(priority=2), author=None)
        finally:
            holder.communicate("")
        assert (refused.value.code, refused.value.details) == (
            "FILE_LOCKED",
            {"where": str(path), "timeout_ms": 200, "reason": "busy"},
        )
        memory, _versions, total = store.versions("busy://a")
        assert (memory.priority, total) == (5, 1)
        assert store.update("busy://a", edit=None, change=Change(priority=2), author=None)[0].version == 2
    finally:
        store.close()
