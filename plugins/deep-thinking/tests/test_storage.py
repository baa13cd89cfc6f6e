"""The session store: journal appends, compaction, backups, recovery, the index, two processes."""

from __future__ import annotations

import builtins
import io
import itertools
import json
import multiprocessing
import os
import re
import time
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

import pytest
from deep_thinking_support import PLUGIN, config_for, thought
from hostd_deep_thinking.store import BACKUPS_KEPT, SessionListing, SessionState, SessionStore, new_document
from hostd_testing import fails, in_memory_client, ok


def plain_thought(state: SessionState, number: int, text: str = "t") -> tuple[dict[str, Any], None]:
    """A minimal planned thought for store-level tests."""
    return (
        {
            "thought_number": number,
            "content": text,
            "type": "regular",
            "is_revision": False,
            "total_thoughts": number,
            "next_thought_needed": True,
            "timestamp": "2026-01-01T00:00:00Z",
        },
        None,
    )


def _loaded(store: SessionStore, session_id: str) -> SessionState:
    state = store.load(session_id)
    assert state is not None, f"session {session_id} is gone"
    return state


def add(store: SessionStore, session_id: str, number: int, text: str = "t") -> int:
    appended = store.append(
        session_id,
        lambda state: plain_thought(state, number, text),
        create=lambda: new_document(session_id, name=session_id),
    )
    return int(appended.thought["seq"])


def test_appending_never_rewrites_the_document_or_the_index(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, compact_every=1000)
    add(store, "s", 1)
    document = store.document_path("s")
    before = (document.stat().st_ino, document.stat().st_mtime_ns)
    index_size = store.index_path.stat().st_size
    for number in range(2, 300):
        add(store, "s", number)
    assert (document.stat().st_ino, document.stat().st_mtime_ns) == before
    assert store.index_path.stat().st_size == index_size
    assert store.journal_path("s").read_bytes().count(b"\n") == 299
    store.close()
    reopened = SessionStore(tmp_path)
    assert [t["seq"] for t in _loaded(reopened, "s").thoughts] == list(range(1, 300))


def test_compaction_folds_the_journal_and_keeps_ten_backups(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, compact_every=10)
    for number in range(1, 151):
        add(store, "s", number)
    assert len(store.backups("s")) == BACKUPS_KEPT
    document = json.loads(store.document_path("s").read_text(encoding="utf-8"))
    assert document["last_seq"] == 150
    assert len(document["thoughts"]) == 150
    assert store.journal_path("s").read_bytes() == b""
    store.close()


def test_journal_lines_already_in_the_document_are_skipped(tmp_path: Path) -> None:
    """A crash between writing the document and starting a new journal must not duplicate thoughts."""
    store = SessionStore(tmp_path, compact_every=1000)
    for number in range(1, 6):
        add(store, "s", number)
    journal = store.journal_path("s").read_bytes()
    store.compact("s")
    store.journal_path("s").write_bytes(journal)  # as if the journal reset never happened
    store.close()
    reopened = SessionStore(tmp_path)
    assert [t["seq"] for t in _loaded(reopened, "s").thoughts] == [1, 2, 3, 4, 5]
    assert add(reopened, "s", 6) == 6


def test_a_partial_last_line_is_cut_and_reported(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, compact_every=1000)
    for number in range(1, 4):
        add(store, "s", number)
    store.close()
    with open(store.journal_path("s"), "ab") as handle:
        handle.write(b'{"seq":4,"thought":{"thought_num')
    reopened = SessionStore(tmp_path)
    state = _loaded(reopened, "s")
    assert [t["seq"] for t in state.thoughts] == [1, 2, 3]
    assert any("partial journal line" in note["problem"] for note in state.meta["recovery_log"])
    assert add(reopened, "s", 4) == 4


def test_corrupt_document_is_recovered_from_backup_and_journal(tmp_path: Path) -> None:
    store = SessionStore(tmp_path, compact_every=5)
    for number in range(1, 13):  # compacted at 5 and 10; 11 and 12 live in the journal
        add(store, "s", number, f"text {number}")
    store.close()
    store.document_path("s").write_bytes(b'{"session_id": "s", "thoughts": [ trunc')
    reopened = SessionStore(tmp_path)
    state = _loaded(reopened, "s")
    assert [t["content"] for t in state.thoughts] == [f"text {n}" for n in range(1, 13)]
    log = state.meta["recovery_log"]
    assert "damaged" in log[-1]["problem"]
    assert "backup" in log[-1]["recovered_from"]
    corrupt_copy = Path(log[-1]["corrupt_copy"])
    assert corrupt_copy.read_bytes().endswith(b"trunc")  # never silently thrown away
    reopened.close()


@pytest.mark.anyio
async def test_recovery_is_reported_by_the_tools(hostd_data_dir: Path, hostd_roots: Path) -> None:
    config = config_for(hostd_roots)
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        for number in range(1, 4):
            await ok(client, "sequential_thinking", **thought(number, 3, session_id="hurt"))
    document = hostd_data_dir / "deep-thinking" / "sessions" / "hurt.json"
    document.write_bytes(document.read_bytes()[:40])
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        answer = await ok(client, "sequential_thinking", **thought(4, 4, session_id="hurt"))
        assert answer["thoughtHistoryLength"] == 4
        assert [w["code"] for w in answer["warnings"]] == ["RECOVERED"]
        page = await ok(client, "get_session", session_id="hurt")
        assert "RECOVERED" in [w["code"] for w in page["warnings"]]


@pytest.mark.anyio
async def test_unrecoverable_session_is_an_error_not_an_empty_session(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    config = config_for(hostd_roots)
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        for number in range(1, 4):
            await ok(client, "sequential_thinking", **thought(number, 3, session_id="lost"))
    folder = hostd_data_dir / "deep-thinking"
    for backup in (folder / "backups" / "lost").glob("*.json"):
        backup.write_text("garbage", encoding="utf-8")
    (folder / "sessions" / "lost.json").write_text("garbage", encoding="utf-8")
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        for _ in range(2):
            await fails(client, "sequential_thinking", "READ_ERROR", **thought(4, 4, session_id="lost"))
        assert (folder / "sessions" / "lost.json").read_text(encoding="utf-8") == "garbage"
        deleted = await ok(client, "delete_session", session_id="lost")
        assert Path(deleted["backup"]).read_text(encoding="utf-8") == "garbage"
        answer = await ok(client, "sequential_thinking", **thought(1, 1, session_id="lost"))
        assert answer["session_created"] is True


def test_lost_index_is_rebuilt_from_the_documents(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    for name in ("a", "b", "c"):
        add(store, name, 1)
    store.close()
    store.index_path.unlink()
    reopened = SessionStore(tmp_path)
    listed = reopened.list_summaries(SessionListing(limit=50))
    rows, total = listed.rows, listed.total
    assert total == 3
    assert {row["session_id"] for row in rows} == {"a", "b", "c"}


def test_index_is_compacted_when_it_grows(tmp_path: Path) -> None:
    store = SessionStore(tmp_path)
    store.create(new_document("keep", name="keep"))
    for round_number in range(150):
        store.create(new_document(f"tmp{round_number}", name="x"))
        store.delete(f"tmp{round_number}")
    lines = store.index_path.read_bytes().count(b"\n")
    assert lines < 300
    listed = store.list_summaries(SessionListing(limit=50))
    rows, total = listed.rows, listed.total
    assert total == 1
    assert rows[0]["session_id"] == "keep"


@pytest.mark.slow
def test_list_sessions_reads_only_the_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Listing opens the index file only and touches none of the 1,000 session files (it may look
    at the sessions folder itself and its append marker). Its speed, under 20 ms a call with 1,000
    sessions, is measured in bench/bench_deep_thinking.py, not asserted on a shared CPU."""
    store = SessionStore(tmp_path)
    for index in range(1000):
        store.create(new_document(f"s{index:04d}", name=f"session {index}"))
    store.close()
    fresh = SessionStore(tmp_path)
    fresh.list_summaries(SessionListing(limit=50))  # first read of the index
    touched: set[tuple[str, str]] = set()
    for module, name in [
        (builtins, "open"),
        (io, "open"),
        (os, "open"),
        (os, "stat"),
        (os, "scandir"),
        (os, "listdir"),
    ]:
        real = getattr(module, name)

        def recording(
            path: Any = ".", *args: Any, _real: Any = real, _name: str = name, **kwargs: Any
        ) -> Any:
            touched.add((_name, os.fspath(path) if isinstance(path, str | os.PathLike) else repr(path)))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(module, name, recording)
    for _ in range(20):
        listed = fresh.list_summaries(SessionListing(limit=50))
    monkeypatch.undo()
    assert (listed.total, len(listed.rows)) == (1000, 50)
    assert {path for call, path in touched if call == "open"} <= {str(tmp_path / "index.jsonl")}
    inside_sessions = str(tmp_path / "sessions") + os.sep
    marker = str(tmp_path / "sessions" / ".appended")  # says whether any journal grew: not a session file
    assert [path for _, path in touched if path.startswith(inside_sessions) and path != marker] == []


def _writer(root: str, barrier: Barrier, who: str, count: int) -> None:
    store = SessionStore(Path(root))
    barrier.wait()
    for number in range(1, count + 1):
        add(store, "shared", number, f"{who}-{number}")
        time.sleep(0.002)  # pace the writers so their turns at the lock interleave
    store.close()


@pytest.mark.slow
def test_two_processes_on_a_barrier_lose_nothing(tmp_path: Path) -> None:
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(2)
    workers = [context.Process(target=_writer, args=(str(tmp_path), barrier, who, 200)) for who in ("a", "b")]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(120)
        assert worker.exitcode == 0
    state = _loaded(SessionStore(tmp_path), "shared")
    contents = [t["content"] for t in state.thoughts]
    assert len(contents) == 400
    assert len(set(contents)) == 400
    assert [t["seq"] for t in state.thoughts] == list(range(1, 401))
    for who in ("a", "b"):
        assert [c for c in contents if c.startswith(who)] == [f"{who}-{n}" for n in range(1, 201)]
    # They overlapped: the writers' thoughts interleave instead of forming two blocks.
    switches = sum(1 for x, y in itertools.pairwise(contents) if x[0] != y[0])
    assert switches > 2, switches


def test_fsync_follows_within_the_interval(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    synced: list[int] = []
    real_fsync = os.fsync

    def spy(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", spy)
    store = SessionStore(tmp_path, sync_interval=0.05)
    add(store, "s", 1)
    synced.clear()
    add(store, "s", 2)
    deadline = time.monotonic() + 2
    while not synced and time.monotonic() < deadline:
        time.sleep(0.01)
    assert synced, "the journal was not fsynced after the interval"
    store.close()


async def make_sessions(data_dir: Path, roots: Path, *names: str) -> None:
    async with in_memory_client([PLUGIN], data_dir=data_dir, config=config_for(roots)) as client:
        for name in names:
            for number in (1, 2):
                await ok(client, "sequential_thinking", **thought(number, 2, session_id=name))


def ruin(data_dir: Path, session_id: str, document: bytes) -> None:
    """Replace a session's document and every backup, so nothing can rebuild it."""
    folder = data_dir / "deep-thinking"
    for backup in (folder / "backups" / session_id).glob("*.json"):
        backup.write_bytes(document)
    (folder / "sessions" / f"{session_id}.json").write_bytes(document)


@pytest.mark.anyio
@pytest.mark.parametrize(
    "damage",
    [
        b"garbage",
        json.dumps({"session_id": "bad", "metadata": {"x": 1}, "status": 5, "thoughts": []}).encode(),
        json.dumps(
            {"session_id": "bad", "thoughts": [{"seq": 1, "thought_number": 1, "content": 7}]}
        ).encode(),
    ],
)
async def test_one_unreadable_session_never_breaks_listing(
    hostd_data_dir: Path, hostd_roots: Path, damage: bytes
) -> None:
    await make_sessions(hostd_data_dir, hostd_roots, "good", "bad")
    ruin(hostd_data_dir, "bad", damage)
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)) as client:
        listed = await ok(client, "list_sessions")
        assert [s["session_id"] for s in listed["sessions"]] == ["good"]
        assert listed["unreadable_sessions"] == ["bad"]
        assert [w["code"] for w in listed["warnings"]] == ["SESSION_UNREADABLE"]
        assert "bad" in listed["warnings"][0]["message"]
        for tool in ("get_session", "resume_session", "export_session"):
            arguments = {"session_id": "bad"} | ({"format": "json"} if tool == "export_session" else {})
            await fails(client, tool, "READ_ERROR", **arguments)
        await ok(client, "get_session", session_id="good")
        await ok(client, "delete_session", session_id="bad")
        assert (await ok(client, "list_sessions"))["unreadable_sessions"] == []


@pytest.mark.anyio
async def test_a_deeply_nested_session_left_by_an_older_version_is_flagged(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    await make_sessions(hostd_data_dir, hostd_roots, "good", "deep")
    folder = hostd_data_dir / "deep-thinking"
    deep: dict[str, Any] = {}
    for _ in range(300):
        deep = {"a": deep}
    document = json.loads((folder / "sessions" / "deep.json").read_text(encoding="utf-8"))
    document["metadata"] = deep
    ruin(hostd_data_dir, "deep", json.dumps(document).encode())
    index_line = {
        "session_id": "deep",
        "name": "deep",
        "status": "active",
        "created_at": "",
        "updated_at": "9999",
        "thought_count": 2,
        "metadata": deep,
    }
    with open(folder / "index.jsonl", "a", encoding="utf-8") as index:
        index.write(json.dumps(index_line) + "\n")
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)) as client:
        listed = await ok(client, "list_sessions")
        assert [s["session_id"] for s in listed["sessions"]] == ["good"]
        assert listed["unreadable_sessions"] == ["deep"]
        for tool in ("get_session", "resume_session"):
            await fails(client, tool, "READ_ERROR", session_id="deep")


@pytest.mark.anyio
async def test_unreadable_session_in_chinese_has_no_english_prose(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    await make_sessions(hostd_data_dir, hostd_roots, "good", "bad")
    ruin(hostd_data_dir, "bad", b"garbage")
    config = config_for(hostd_roots, "zh")
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        listed = await ok(client, "list_sessions")
        envelope = await fails(client, "get_session", "READ_ERROR", session_id="bad")
        assert envelope["error"]["details"]["problem"]
        for message in (listed["message"], listed["warnings"][0]["message"], envelope["message"]):
            assert not re.search(r"\b(the|is|damaged|session|document)\b", message), message


def test_the_session_cache_is_bounded_by_size_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """64 cached sessions of 30 MB imports would keep gigabytes resident: the cache also holds at
    most CACHED_DOCUMENT_BYTES of documents, always keeping the session used last."""
    from hostd_deep_thinking.store import files
    from hostd_deep_thinking.store.documents import new_document

    monkeypatch.setattr(files, "CACHED_DOCUMENT_BYTES", 60_000)
    store = files.SessionStore(tmp_path / "sessions")
    for number in range(4):
        document = new_document(f"big-{number}", name="big", description="长" * 9_000)  # ~27 KB each
        store.create(document)
    cached = list(store._cache)
    assert cached == ["big-2", "big-3"], cached
    assert _loaded(store, "big-0").meta["description"] == "长" * 9_000  # evicted, read again from disk
    assert list(store._cache)[-1] == "big-0"
    store.close()


def test_a_settled_listing_is_reused_until_a_watched_file_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listing again with nothing changed reads no session file (the folder, the append marker and
    the index vouch for the last listing); an append, a status change or a delete by another
    store on the same folder (another process) shows in the next listing."""
    store = SessionStore(tmp_path, compact_every=1000)
    other = SessionStore(tmp_path, compact_every=1000)
    for name in ("a", "b"):
        add(store, name, 1)

    def settle() -> None:
        """Age the watched files' times past the window in which a timestamp cannot vouch."""
        past = time.time_ns() - 10_000_000_000
        for path in (store.layout.sessions_dir, store.layout.marker_path, store.index_path):
            os.utime(path, ns=(past, past))

    def counts() -> dict[str, int]:
        return {
            row["session_id"]: row["thought_count"]
            for row in store.list_summaries(SessionListing(limit=50)).rows
        }

    scans: list[Any] = []
    real_scandir = os.scandir

    def scandir(path: Any) -> Any:
        scans.append(path)
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", scandir)
    settle()
    assert counts() == {"a": 1, "b": 1}
    assert len(scans) == 1
    page = store.list_summaries(SessionListing(limit=50))
    page.rows[0].pop("thought_count")  # the caller trims its rows: the kept listing stays whole
    assert counts() == {"a": 1, "b": 1}
    assert len(scans) == 1
    add(other, "a", 2)
    assert counts() == {"a": 2, "b": 1}
    assert len(scans) == 2
    settle()
    assert counts() == {"a": 2, "b": 1}
    other.delete("b")
    assert counts() == {"a": 2}
    store.close()
    other.close()
