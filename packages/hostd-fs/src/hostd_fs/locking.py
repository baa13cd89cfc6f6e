"""Exclusive access to one file across threads and processes, and the writes built on it.

Two IDE windows run two server processes, and each serves tool calls from worker threads, so a
file may have writers in both dimensions at once. `path_lock` takes the process's kept lock
(see `kept_locks`) for a lock file named by the hash of the file's resolved path: its thread
lock excludes threads, its lock file other processes. Lock files live in a folder of the
caller's choosing (the plugin's data directory), never next to the user's file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hostd_fs.atomic import atomic_write
from hostd_fs.durable import fsync_directory, write_all
from hostd_fs.errors import fs_error_from_os, path_error
from hostd_fs.kept_locks import kept_lock
from hostd_fs.paths import refuse_special_file

__all__ = ["AppendResult", "locked_append", "locked_overwrite", "path_lock"]

_APPEND_FLAGS = (
    os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_NEW_FILE_MODE = 0o666  # the OS applies the umask


def _lock_file_for(path: Path, lock_dir: Path) -> Path:
    # Hashing the resolved path gives every spelling of one file the same lock, and a fixed-size
    # name whatever the path's length or characters.
    canonical = os.path.normcase(os.path.realpath(path))
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogateescape")).hexdigest()
    return lock_dir / f"{digest}.lock"


@contextlib.contextmanager
def path_lock(path: str | Path, *, lock_dir: Path, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive lock on `path` against other threads and other processes.

    Waits at most `timeout` seconds in total, then raises FsError(FILE_LOCKED, LOCK_TIMEOUT).
    Not re-entrant: taking it again in the thread that holds it raises RuntimeError.
    """
    lock = kept_lock(_lock_file_for(Path(path), Path(lock_dir)))
    with lock.held(timeout, path=str(path)):
        yield


@dataclass(frozen=True)
class AppendResult:
    """What one locked append did."""

    bytes_written: int
    previous_size: int
    created: bool


def _size_before_append(target: Path, shown: str) -> tuple[int, bool]:
    """The file's size and whether the append will create it."""
    try:
        status = os.stat(target)
    except FileNotFoundError:
        return 0, True
    except OSError as exc:
        raise fs_error_from_os(exc, shown) from exc
    if stat.S_ISDIR(status.st_mode):
        raise path_error("IS_DIRECTORY", shown)
    refuse_special_file(status.st_mode, shown)
    return status.st_size, False


def _append_bytes(target: Path, chunk: bytes, previous_size: int, *, fsync: bool) -> None:
    fd = os.open(target, _APPEND_FLAGS, _NEW_FILE_MODE)
    try:
        try:
            write_all(fd, chunk)
            if fsync:
                # The data and the new size are what an append must keep; fdatasync skips the
                # timestamps (where the OS offers it) and is the cheaper flush.
                getattr(os, "fdatasync", os.fsync)(fd)
        except OSError:
            # Under the lock nobody else appended, so cutting back to the old size restores the
            # file exactly as it was.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, previous_size)
            raise
    finally:
        os.close(fd)


def locked_append(
    path: str | Path,
    make_chunk: Callable[[int], bytes],
    *,
    lock_dir: Path,
    timeout: float = 10.0,
    fsync: bool = True,
) -> AppendResult:
    """Append `make_chunk(previous_size)` to `path` under `path_lock`, creating the file if needed.

    The chunk is built while the lock is held, so it may depend on the size (e.g. "is this the
    first section?"). The file's contents are never read: the cost does not grow with the file.
    A failed write is rolled back to the previous size.
    """
    target = Path(path)
    shown = str(path)
    with path_lock(target, lock_dir=lock_dir, timeout=timeout):
        previous_size, created = _size_before_append(target, shown)
        chunk = make_chunk(previous_size)
        if not isinstance(chunk, bytes | bytearray):
            raise TypeError(f"make_chunk must return bytes, got {type(chunk).__name__}")
        try:
            _append_bytes(target, bytes(chunk), previous_size, fsync=fsync)
        except OSError as exc:
            if created:
                with contextlib.suppress(OSError):
                    target.unlink()
            raise fs_error_from_os(exc, shown) from exc
        if created and fsync:
            fsync_directory(target.parent)
    return AppendResult(bytes_written=len(chunk), previous_size=previous_size, created=created)


def locked_overwrite(
    path: str | Path,
    data: bytes | str,
    *,
    lock_dir: Path,
    timeout: float = 10.0,
    encoding: str = "utf-8",
) -> tuple[int, bool]:
    """Replace `path` atomically under `path_lock`; returns (bytes_written, created)."""
    with path_lock(Path(path), lock_dir=lock_dir, timeout=timeout):
        created = not os.path.exists(path)
        return atomic_write(path, data, encoding=encoding), created
