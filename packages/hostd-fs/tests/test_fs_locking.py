"""path_lock, locked_append and locked_overwrite: writers in many threads and processes never
interleave, lock files stay in the lock folder, and appends cost the same whatever the size."""

from __future__ import annotations

import errno
import hashlib
import os
import sys
import threading
from pathlib import Path

import pytest
from fs_test_workers import (
    append_past_file_size_limit,
    append_sections,
    append_sections_after_barrier,
    hold_path_lock,
    parse_sections,
)
from hostd_fs import AppendResult, FsError, locked_append, locked_overwrite, path_lock
from hostd_testing.processes import SPAWN, assert_overlapped, run_in_process, run_processes_on_barrier

WRITERS = 8
SECTIONS_EACH = 50


def expected_ids(prefix: str) -> set[str]:
    return {f"{prefix}{writer}-{index}" for writer in range(WRITERS) for index in range(SECTIONS_EACH)}


def test_appends_from_eight_processes_land_whole_and_never_interleave(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "shared.md"
    intervals = run_processes_on_barrier(
        append_sections_after_barrier,
        [(target, lock_dir, f"p{writer}", SECTIONS_EACH, writer) for writer in range(WRITERS)],
    )
    ids = parse_sections(target.read_bytes())
    assert len(ids) == WRITERS * SECTIONS_EACH
    assert set(ids) == expected_ids("p")
    assert_overlapped(intervals)


def test_appends_from_eight_threads_land_whole_and_never_interleave(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "shared.md"
    barrier = threading.Barrier(WRITERS)
    intervals: list[tuple[float, float]] = []

    def writer(number: int) -> None:
        barrier.wait()
        intervals.append(append_sections(target, lock_dir, f"t{number}", SECTIONS_EACH, seed=number))

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    ids = parse_sections(target.read_bytes())
    assert len(ids) == WRITERS * SECTIONS_EACH
    assert set(ids) == expected_ids("t")
    assert_overlapped(intervals)


def test_lock_files_live_in_the_lock_folder_named_by_the_resolved_path(
    tmp_path: Path, lock_dir: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (tmp_path / "alias").symlink_to(notes, target_is_directory=True)
    locked_append(notes / "a.md", lambda size: b"one\n", lock_dir=lock_dir)
    locked_append(tmp_path / "alias" / "a.md", lambda size: b"two\n", lock_dir=lock_dir)
    locked_overwrite(notes / "b.md", "three", lock_dir=lock_dir)
    assert sorted(os.listdir(notes)) == ["a.md", "b.md"]
    digest = hashlib.sha256(str(notes / "a.md").encode()).hexdigest()
    assert sorted(os.listdir(lock_dir)) == sorted(
        [f"{digest}.lock", hashlib.sha256(str(notes / "b.md").encode()).hexdigest() + ".lock"]
    )


def test_an_append_never_reads_the_file(tmp_path: Path, lock_dir: Path) -> None:
    huge = tmp_path / "huge.md"
    with huge.open("wb") as file:
        file.truncate(200 * 1024 * 1024)  # sparse: no data blocks, nothing worth reading
    result = locked_append(huge, lambda size: b"tail\n", lock_dir=lock_dir)
    assert result == AppendResult(bytes_written=5, previous_size=200 * 1024 * 1024, created=False)
    assert huge.stat().st_size == 200 * 1024 * 1024 + 5
    with huge.open("rb") as file:
        file.seek(-5, os.SEEK_END)
        assert file.read() == b"tail\n"


def test_the_chunk_is_built_from_the_size_under_the_lock(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "log.md"
    sizes: list[int] = []

    def chunk(size: int) -> bytes:
        sizes.append(size)
        return b"first\n" if size == 0 else b"\n---\nnext\n"

    first = locked_append(target, chunk, lock_dir=lock_dir)
    second = locked_append(target, chunk, lock_dir=lock_dir)
    assert (first.created, first.previous_size, first.bytes_written) == (True, 0, 6)
    assert (second.created, second.previous_size) == (False, 6)
    assert sizes == [0, 6]
    assert target.read_bytes() == b"first\n\n---\nnext\n"


def test_new_files_from_an_append_honour_the_umask(tmp_path: Path, lock_dir: Path) -> None:
    previous = os.umask(0o077)
    try:
        locked_append(tmp_path / "private.md", lambda size: b"x", lock_dir=lock_dir)
    finally:
        os.umask(previous)
    assert (tmp_path / "private.md").stat().st_mode & 0o777 == 0o600


def test_a_chunk_that_is_not_bytes_is_a_programming_error(tmp_path: Path, lock_dir: Path) -> None:
    with pytest.raises(TypeError, match="bytes"):
        locked_append(tmp_path / "a.md", lambda size: "text", lock_dir=lock_dir)  # type: ignore[arg-type,return-value]
    assert not (tmp_path / "a.md").exists()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes made by mkfifo are POSIX")
@pytest.mark.timeout(10)
def test_appending_to_a_folder_or_a_fifo_is_refused(tmp_path: Path, lock_dir: Path) -> None:
    (tmp_path / "folder.md").mkdir()
    os.mkfifo(tmp_path / "pipe.md")
    with pytest.raises(FsError) as caught:
        locked_append(tmp_path / "folder.md", lambda size: b"x", lock_dir=lock_dir)
    assert caught.value.reason == "IS_DIRECTORY"
    with pytest.raises(FsError) as caught:
        locked_append(tmp_path / "pipe.md", lambda size: b"x", lock_dir=lock_dir)
    assert caught.value.reason == "FIFO"


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_an_append_cut_short_by_the_kernel_is_rolled_back(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "log.md"
    target.write_bytes(b"intact\n" * 1000)
    outcome = run_in_process(append_past_file_size_limit, (target, lock_dir, 10_000, 50_000))
    assert outcome == ("WRITE_ERROR", "OS_ERROR", errno.EFBIG)
    assert target.read_bytes() == b"intact\n" * 1000


def test_another_thread_waits_for_the_lock_and_times_out(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "a.md"
    errors: list[FsError] = []

    def contender() -> None:
        try:
            with path_lock(target, lock_dir=lock_dir, timeout=0.2):
                pass
        except FsError as error:
            errors.append(error)

    with path_lock(target, lock_dir=lock_dir):
        thread = threading.Thread(target=contender)
        thread.start()
        thread.join()
    assert [(error.code, error.reason) for error in errors] == [("FILE_LOCKED", "LOCK_TIMEOUT")]
    assert "0.2" in errors[0].message.en
    with path_lock(target, lock_dir=lock_dir, timeout=0):
        pass  # released: free again at once


def test_another_process_holding_the_lock_makes_this_one_time_out(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "a.md"
    held, release = SPAWN.Event(), SPAWN.Event()
    holder = SPAWN.Process(target=hold_path_lock, args=(target, lock_dir, held, release))
    holder.start()
    try:
        assert held.wait(30)
        with pytest.raises(FsError) as caught, path_lock(target, lock_dir=lock_dir, timeout=0.2):
            pass
        assert caught.value.reason == "LOCK_TIMEOUT"
        assert "锁定" in caught.value.message.zh
    finally:
        release.set()
        holder.join(timeout=30)
    with path_lock(target, lock_dir=lock_dir, timeout=5):
        pass


def test_the_lock_is_not_reentrant_in_one_thread(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "a.md"
    with (
        path_lock(target, lock_dir=lock_dir),
        pytest.raises(RuntimeError, match="re-entrant"),
        path_lock(target, lock_dir=lock_dir),
    ):
        pass


def test_locks_on_different_files_do_not_block_each_other(tmp_path: Path, lock_dir: Path) -> None:
    with (
        path_lock(tmp_path / "a.md", lock_dir=lock_dir),
        path_lock(tmp_path / "b.md", lock_dir=lock_dir, timeout=0),
    ):
        pass


def test_a_negative_or_infinite_timeout_is_a_programming_error(tmp_path: Path, lock_dir: Path) -> None:
    for timeout in (-1.0, float("inf")):
        with (
            pytest.raises(ValueError, match="timeout"),
            path_lock(tmp_path, lock_dir=lock_dir, timeout=timeout),
        ):
            pass


def test_an_overwrite_reports_what_it_wrote_and_whether_it_created(tmp_path: Path, lock_dir: Path) -> None:
    target = tmp_path / "a.md"
    assert locked_overwrite(target, "总结", lock_dir=lock_dir) == (6, True)
    assert locked_overwrite(target, b"new", lock_dir=lock_dir) == (3, False)
    assert target.read_bytes() == b"new"
