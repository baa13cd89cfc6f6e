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
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hostd_fs.beneath import RootedPath, anchored, append_beneath, replace_beneath
from hostd_fs.kept_locks import kept_lock

__all__ = ["AppendResult", "locked_append", "locked_overwrite", "path_lock"]


def _lock_file_for(path: Path | RootedPath, lock_dir: Path) -> Path:
    # Hashing the resolved path gives every spelling of one file the same lock, and a fixed-size
    # name whatever the path's length or characters. A RootedPath is resolved already, and
    # resolving it again could follow a symlink swapped in since.
    resolved = str(path.path) if isinstance(path, RootedPath) else os.path.realpath(path)
    canonical = os.path.normcase(resolved)
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogateescape")).hexdigest()
    return lock_dir / f"{digest}.lock"


@contextlib.contextmanager
def path_lock(path: str | Path | RootedPath, *, lock_dir: Path, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive lock on `path` against other threads and other processes.

    Waits at most `timeout` seconds in total, then raises FsError(FILE_LOCKED, LOCK_TIMEOUT).
    Not re-entrant: taking it again in the thread that holds it raises RuntimeError.
    """
    lock = kept_lock(_lock_file_for(path if isinstance(path, RootedPath) else Path(path), Path(lock_dir)))
    with lock.held(timeout, path=str(path)):
        yield


@dataclass(frozen=True)
class AppendResult:
    """What one locked append did."""

    bytes_written: int
    previous_size: int
    created: bool


def locked_append(
    path: str | Path | RootedPath,
    make_chunk: Callable[[int], bytes],
    *,
    lock_dir: Path,
    timeout: float = 10.0,
    fsync: bool = True,
) -> AppendResult:
    """Append `make_chunk(previous_size)` to `path` under `path_lock`, creating the file if needed.

    `path` is a `RootedPath` from `resolve_beneath` for a user's file (opened beneath its root;
    missing parent folders are made there), or a plain path for a plugin's own data. The chunk
    is built while the lock is held, so it may depend on the size (e.g. "is this the first
    section?"). The file's contents are never read: the cost does not grow with the file. A
    failed write is rolled back to the previous size; a hard-linked file is refused (HARD_LINK).
    """
    target = anchored(path)
    with path_lock(target, lock_dir=lock_dir, timeout=timeout):
        written, previous_size, created = append_beneath(target, make_chunk, fsync=fsync)
    return AppendResult(bytes_written=written, previous_size=previous_size, created=created)


def locked_overwrite(
    path: str | Path | RootedPath,
    data: bytes | str,
    *,
    lock_dir: Path,
    timeout: float = 10.0,
    encoding: str = "utf-8",
) -> tuple[int, bool]:
    """Replace `path` atomically under `path_lock`; returns (bytes_written, created)."""
    target = anchored(path)
    payload = data.encode(encoding) if isinstance(data, str) else bytes(data)
    with path_lock(target, lock_dir=lock_dir, timeout=timeout):
        return replace_beneath(target, payload)
