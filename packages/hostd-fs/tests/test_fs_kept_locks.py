"""KeptLock and kept_lock: one lock file kept open per lock, excluding threads and processes,
timing out, surviving a fork and a deleted lock file, and keeping few descriptors open."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import pytest
from fs_test_workers import (
    count_in_threads_after_barrier,
    hold_kept_lock,
)
from hostd_fs import FsError, KeptLock, close_kept_locks, kept_lock
from hostd_fs import kept_locks as kept_locks_module
from hostd_testing.processes import SPAWN, assert_overlapped, run_processes_on_barrier

PROCESSES = 4
THREADS_EACH = 4
TURNS_EACH = 50
HAS_FLOCK = sys.platform != "win32"


def test_threads_of_several_processes_take_turns_and_lose_no_update(tmp_path: Path) -> None:
    lock_file = tmp_path / "locks" / "counter.lock"
    counter = tmp_path / "counter.txt"
    counter.write_text("0")
    intervals = run_processes_on_barrier(
        count_in_threads_after_barrier,
        [(lock_file, counter, THREADS_EACH, TURNS_EACH) for _ in range(PROCESSES)],
    )
    assert int(counter.read_text()) == PROCESSES * THREADS_EACH * TURNS_EACH
    assert_overlapped(intervals)


def test_the_process_gets_one_object_per_lock_file(tmp_path: Path) -> None:
    lock = kept_lock(tmp_path / "a.lock")
    assert kept_lock(str(tmp_path / "a.lock")) is lock
    assert kept_lock(tmp_path / "sub" / ".." / "a.lock") is lock
    assert kept_lock(tmp_path / "b.lock") is not lock


@pytest.mark.skipif(not HAS_FLOCK, reason="where flock is missing, filelock opens the file each time")
def test_repeated_acquisitions_reuse_one_descriptor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lock_file = tmp_path / "a.lock"
    opened: list[str] = []
    real_open = os.open

    def spy(path: str, *args: int) -> int:
        opened.append(os.fspath(path))
        return real_open(path, *args)

    monkeypatch.setattr("hostd_fs.kept_locks.os.open", spy)
    lock = kept_lock(lock_file)
    for _ in range(100):
        assert lock.acquire(0)
        lock.release()
        with lock.held():
            pass
    assert opened == [str(lock_file)]


def test_a_try_finds_the_lock_taken_by_another_thread_without_waiting(tmp_path: Path) -> None:
    lock = kept_lock(tmp_path / "a.lock")
    outcomes: list[bool] = []
    with lock.held():
        thread = threading.Thread(target=lambda: outcomes.append(lock.acquire(0)))
        thread.start()
        thread.join()
    assert outcomes == [False]
    assert lock.acquire(0)  # released: free again at once
    lock.release()


def test_another_process_holding_the_lock_makes_this_one_time_out(tmp_path: Path) -> None:
    lock_file = tmp_path / "a.lock"
    held, release = SPAWN.Event(), SPAWN.Event()
    holder = SPAWN.Process(target=hold_kept_lock, args=(lock_file, held, release))
    holder.start()
    lock = kept_lock(lock_file)
    try:
        assert held.wait(30)
        assert not lock.acquire(0)
        assert not lock.acquire(0.1)
        with pytest.raises(FsError) as caught, lock.held(0.1, path="notes/session.json"):
            pass
        assert (caught.value.code, caught.value.reason) == ("FILE_LOCKED", "LOCK_TIMEOUT")
        assert caught.value.path == "notes/session.json"
        assert caught.value.facts == {"timeout": 0.1}
    finally:
        release.set()
        holder.join(timeout=30)
    assert lock.acquire(5)
    lock.release()


def test_the_lock_is_not_reentrant_and_release_needs_a_holder(tmp_path: Path) -> None:
    lock = kept_lock(tmp_path / "a.lock")
    with lock.held(), pytest.raises(RuntimeError, match="re-entrant"):
        lock.acquire(0)
    with pytest.raises(RuntimeError, match="not held"):
        lock.release()


def test_a_negative_or_infinite_timeout_is_a_programming_error(tmp_path: Path) -> None:
    lock = kept_lock(tmp_path / "a.lock")
    for timeout in (-1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="timeout"):
            lock.acquire(timeout)


def test_a_missing_lock_folder_is_created(tmp_path: Path) -> None:
    lock_file = tmp_path / "gone" / "deeper" / "a.lock"
    with kept_lock(lock_file).held():
        assert lock_file.exists()


@pytest.mark.skipif(not HAS_FLOCK, reason="the kept descriptor exists where flock does")
def test_a_deleted_lock_file_is_opened_again_so_both_holders_use_the_same_file(tmp_path: Path) -> None:
    lock_file = tmp_path / "a.lock"
    first, second = KeptLock(lock_file), KeptLock(lock_file)  # as two processes would hold it
    with first.held():
        pass
    lock_file.unlink()  # someone tidies the lock folder while `first` keeps its descriptor
    with second.held():
        assert not first.acquire(0)  # not fooled by its lock on the deleted file
    assert first.acquire(0)
    assert not second.acquire(0)
    first.release()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX")
@pytest.mark.timeout(30)
def test_a_forked_child_does_not_share_its_parents_hold(tmp_path: Path) -> None:
    lock = kept_lock(tmp_path / "a.lock")
    with lock.held():
        child = os.fork()
        if child == 0:  # pragma: no cover - runs in the child
            try:
                # The child inherited the open lock file (and the thread ident of the holder);
                # neither may make it think it holds the lock.
                code = 0 if not lock.acquire(0) and not kept_lock(tmp_path / "a.lock").acquire(0) else 1
            except BaseException:
                code = 2
            os._exit(code)
        _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert lock.acquire(0)  # the child's exit released nothing of ours, and nothing is left held
    lock.release()


def test_idle_locks_are_closed_beyond_the_limit_and_held_ones_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(kept_locks_module, "MAX_KEPT", 4)
    oldest = kept_lock(tmp_path / "l0.lock")
    with oldest.held():
        for number in range(1, 10):
            with kept_lock(tmp_path / f"l{number}.lock").held():
                pass
        assert kept_lock(tmp_path / "l0.lock") is oldest  # in use: never dropped
    ours = [key for key in kept_locks_module._kept if key.startswith(str(tmp_path))]
    assert len(ours) <= 4


def test_closing_a_folders_locks_spares_the_held_one(tmp_path: Path) -> None:
    held, idle = kept_lock(tmp_path / "held.lock"), kept_lock(tmp_path / "idle.lock")
    with idle.held():
        pass
    with held.held():
        close_kept_locks(tmp_path)
        assert kept_lock(tmp_path / "held.lock") is held
        assert kept_lock(tmp_path / "idle.lock") is not idle
    with idle.held():  # a closed lock opens its file again when used
        pass
