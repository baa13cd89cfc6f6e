"""Exclusive access to one file across threads and processes, and the writes built on it.

Two IDE windows run two server processes, and each serves tool calls from worker threads, so a
file may have writers in both dimensions at once. `filelock` excludes processes; a per-path
thread lock in front of it excludes threads of one process on every platform, whatever the
installed filelock's re-entrancy or thread-local semantics. Lock files live in a folder of the
caller's choosing (the plugin's data directory), never next to the user's file.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

from hostd_fs.atomic import atomic_write
from hostd_fs.durable import fsync_directory, write_all
from hostd_fs.errors import FsError, fs_error_from_os, path_error
from hostd_fs.paths import refuse_special_file

__all__ = ["AppendResult", "locked_append", "locked_overwrite", "path_lock"]

_APPEND_FLAGS = (
    os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
)
_NEW_FILE_MODE = 0o666  # the OS applies the umask


@dataclass
class _Gate:
    """The in-process half of a path lock: one per lock file while anyone wants it."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    waiting_or_holding: int = 0
    owner: int | None = None


_gates: dict[str, _Gate] = {}
_gates_guard = threading.Lock()


def _forget_gates_after_fork() -> None:
    # A forked child inherits gates held by threads that do not exist in it; they would never
    # be released. The child's process-level lock is still real, so starting empty is safe.
    global _gates, _gates_guard
    _gates = {}
    _gates_guard = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_gates_after_fork)


def _lock_timeout(shown: str, timeout: float) -> FsError:
    return path_error("LOCK_TIMEOUT", shown, timeout=timeout)


@contextlib.contextmanager
def _thread_gate(key: str, timeout: float, shown: str) -> Iterator[None]:
    with _gates_guard:
        gate = _gates.setdefault(key, _Gate())
        if gate.owner == threading.get_ident():
            raise RuntimeError(f"path_lock is not re-entrant: this thread already holds the lock for {shown}")
        gate.waiting_or_holding += 1
    try:
        if not gate.lock.acquire(timeout=timeout):
            raise _lock_timeout(shown, timeout)
        gate.owner = threading.get_ident()
        try:
            yield
        finally:
            gate.owner = None
            gate.lock.release()
    finally:
        with _gates_guard:
            gate.waiting_or_holding -= 1
            if gate.waiting_or_holding == 0:
                del _gates[key]


def _lock_file_for(path: Path, lock_dir: Path) -> Path:
    # Hashing the resolved path gives every spelling of one file the same lock, and a fixed-size
    # name whatever the path's length or characters.
    canonical = os.path.normcase(os.path.realpath(path))
    digest = hashlib.sha256(canonical.encode("utf-8", "surrogateescape")).hexdigest()
    try:
        lock_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise fs_error_from_os(exc, lock_dir) from exc
    return lock_dir / f"{digest}.lock"


@contextlib.contextmanager
def path_lock(path: str | Path, *, lock_dir: Path, timeout: float = 10.0) -> Iterator[None]:
    """Hold an exclusive lock on `path` against other threads and other processes.

    Waits at most `timeout` seconds in total, then raises FsError(FILE_LOCKED, LOCK_TIMEOUT).
    Not re-entrant: taking it again in the thread that holds it raises RuntimeError.
    """
    if not 0 <= timeout < math.inf:
        raise ValueError(f"timeout must be a finite number of seconds, got {timeout}")
    shown = str(path)
    lock_file = _lock_file_for(Path(path), Path(lock_dir))
    deadline = time.monotonic() + timeout
    with _thread_gate(str(lock_file), timeout, shown):
        process_lock = FileLock(lock_file)
        try:
            process_lock.acquire(timeout=max(0.0, deadline - time.monotonic()))
        except Timeout as exc:
            raise _lock_timeout(shown, timeout) from exc
        except OSError as exc:
            raise fs_error_from_os(exc, lock_file) from exc
        try:
            yield
        finally:
            process_lock.release()


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
                os.fsync(fd)
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
