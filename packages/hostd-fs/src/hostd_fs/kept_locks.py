"""Kept locks: one open lock file per lock, excluding threads and processes for microseconds a turn.

Building a `filelock.FileLock` on every acquisition opens, locks, unlocks and closes a file each
time (about 130 µs); a tool that locks on every call cannot afford that. A `KeptLock` opens its
lock file once and keeps the descriptor: a turn is a `threading.Lock` (threads of this process)
and one `fcntl.flock` call (other processes). Where `flock` is missing (Windows, or a file
system that answers ENOSYS) a `filelock.FileLock` kept with the object does the process half.

`kept_lock(lock_file)` hands out one object per lock file for the whole process, so every
caller in the process shares its thread lock. Since `flock` excludes two descriptors of one
process as it excludes two processes, a second object for the same file (an evicted one still
in use, another spelling of the path) stays correct, only slower.
"""

from __future__ import annotations

import contextlib
import errno
import math
import os
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hostd_fs.errors import fs_error_from_os, path_error

try:
    import fcntl as _fcntl
except ImportError:  # Windows: the kept FileLock does the process half
    _fcntl = None  # type: ignore[assignment]

__all__ = ["KeptLock", "close_kept_locks", "kept_lock"]

# O_NONBLOCK: a lease (Linux F_SETLEASE) on the file must not block the open past any timeout.
# O_NOFOLLOW: a symlink planted at the lock file's name is not followed.
_OPEN_FLAGS = (
    os.O_RDWR
    | os.O_CREAT
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOFOLLOW", 0)
)
_LOCK_FILE_MODE = 0o600  # the lock files are this user's business only
# Some file systems answer a contended flock with EACCES rather than EWOULDBLOCK.
_CONTENDED = frozenset({errno.EAGAIN, errno.EWOULDBLOCK, errno.EACCES})
_FIRST_POLL = 0.0005
_LONGEST_POLL = 0.01
MAX_KEPT = 128  # kept locks (open descriptors) in the registry before idle ones are closed


class KeptLock:
    """Exclusive use of one lock file against other threads and other processes.

    `acquire(timeout)` waits at most `timeout` seconds (0: one try, never waits) and says
    whether it got the lock; `release()` gives it back; `held(timeout)` is the context manager,
    raising FsError(FILE_LOCKED, LOCK_TIMEOUT). Not re-entrant: acquiring it again in the thread
    that holds it raises RuntimeError. The lock file's folder is created when missing, and the
    file is kept (never deleted: deleting it would split waiters across two files).
    """

    def __init__(self, lock_file: str | os.PathLike[str]) -> None:
        self.lock_file = Path(lock_file)
        self._path = os.fspath(lock_file)
        self._thread_lock = threading.Lock()
        self._owner: int | None = None
        self._fd = -1
        self._file_lock: Any = None  # filelock.FileLock where flock is missing
        self._use_filelock = _fcntl is None
        _live_locks.add(self)

    def __repr__(self) -> str:
        state = "held" if self._owner is not None else "free"
        return f"KeptLock({self._path!r}, {state})"

    # --- taking and giving back ---------------------------------------------------------------

    def acquire(self, timeout: float) -> bool:
        """Take the lock within `timeout` seconds (0: only if it is free now); False if not.

        OSError when the lock file cannot be opened or locked (the folder is unwritable, the
        disk is gone); the caller decides how to report it.
        """
        return self._acquire(timeout, self._path)

    def _acquire(self, timeout: float, shown: str) -> bool:
        if not 0 <= timeout < math.inf:
            raise ValueError(f"timeout must be a finite number of seconds, got {timeout}")
        me = threading.get_ident()
        if self._owner == me:
            raise RuntimeError(f"the lock for {shown} is not re-entrant: this thread already holds it")
        if timeout == 0:
            if not self._thread_lock.acquire(blocking=False):
                return False
            deadline = None
        else:
            deadline = time.monotonic() + timeout
            if not self._thread_lock.acquire(timeout=timeout):
                return False
        try:
            taken = self._take_process_lock(deadline)
        except BaseException:
            self._thread_lock.release()
            raise
        if not taken:
            self._thread_lock.release()
            return False
        self._owner = me
        return True

    def release(self) -> None:
        """Give the lock back (RuntimeError if it is not held)."""
        if self._owner is None:
            raise RuntimeError(f"release of the lock for {self._path}, which is not held")
        self._owner = None
        try:
            self._release_process_lock()
        finally:
            self._thread_lock.release()

    @contextlib.contextmanager
    def held(self, timeout: float = 10.0, *, path: str | os.PathLike[str] | None = None) -> Iterator[None]:
        """Hold the lock for the `with` block, waiting at most `timeout` seconds.

        Raises FsError(FILE_LOCKED, LOCK_TIMEOUT) naming `path` (the file the lock guards;
        default: the lock file) when it stays taken, and an FsError from the OS error when the
        lock file cannot be used.
        """
        shown = self._path if path is None else os.fspath(path)
        try:
            taken = self._acquire(timeout, shown)
        except OSError as exc:
            raise fs_error_from_os(exc, self._path) from exc
        if not taken:
            raise path_error("LOCK_TIMEOUT", shown, timeout=timeout)
        try:
            yield
        finally:
            self.release()

    def close(self) -> bool:
        """Close the lock file's descriptor unless the lock is in use; False if it is.

        The object stays usable: the next acquisition opens the file again.
        """
        if not self._thread_lock.acquire(blocking=False):
            return False
        try:
            self._close_descriptor()
        finally:
            self._thread_lock.release()
        return True

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._close_descriptor()

    # --- the process half (thread lock held) --------------------------------------------------

    def _take_process_lock(self, deadline: float | None) -> bool:
        delay = _FIRST_POLL
        while not self._try_process_lock():
            if deadline is None:
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            # flock cannot wait with a timeout, so poll, quickly at first: most holds are short.
            time.sleep(min(delay, remaining))
            delay = min(delay * 2, _LONGEST_POLL)
        return True

    def _try_process_lock(self) -> bool:
        if self._use_filelock:
            return self._try_filelock()
        while True:
            if self._fd < 0:
                self._fd = self._open()
            try:
                _fcntl.flock(self._fd, _fcntl.LOCK_EX | _fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno in _CONTENDED:
                    return False
                if exc.errno == errno.ENOSYS:  # a file system without flock
                    self._close_descriptor()
                    self._use_filelock = True
                    return self._try_filelock()
                raise
            if os.fstat(self._fd).st_nlink > 0:
                return True
            # Someone deleted or replaced the lock file: a lock on this inode excludes nobody
            # who opens the name now. Start again with the file that has the name.
            self._close_descriptor()

    def _open(self) -> int:
        try:
            return os.open(self._path, _OPEN_FLAGS, _LOCK_FILE_MODE)
        except FileNotFoundError:
            self.lock_file.parent.mkdir(parents=True, exist_ok=True)
            return os.open(self._path, _OPEN_FLAGS, _LOCK_FILE_MODE)

    def _try_filelock(self) -> bool:
        from filelock import FileLock, Timeout

        if self._file_lock is None:
            self.lock_file.parent.mkdir(parents=True, exist_ok=True)
            # thread_local=False: the object is shared by this process's threads, which the
            # thread lock already takes in turn.
            self._file_lock = FileLock(self._path, thread_local=False)
        try:
            self._file_lock.acquire(timeout=0)
        except Timeout:
            return False
        return True

    def _release_process_lock(self) -> None:
        if self._use_filelock:
            self._file_lock.release()
            return
        try:
            _fcntl.flock(self._fd, _fcntl.LOCK_UN)
        except OSError:
            # Closing the only descriptor of the open file releases its lock all the same.
            self._close_descriptor()

    def _close_descriptor(self) -> None:
        fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def _forget_after_fork(self) -> None:
        # The child shares the parent's open file, and with it the parent's flock: locking or
        # unlocking it here would act on the parent's lock. Closing the child's copy does not
        # release the parent's, so close it and start afresh. Threads that held the thread lock
        # do not exist in the child.
        self._thread_lock = threading.Lock()
        self._owner = None
        self._file_lock = None
        with contextlib.suppress(OSError):
            self._close_descriptor()


# --- one kept lock per lock file, for the whole process -----------------------------------------

_live_locks: weakref.WeakSet[KeptLock] = weakref.WeakSet()
_kept: OrderedDict[str, KeptLock] = OrderedDict()
_kept_guard = threading.Lock()


def _forget_after_fork() -> None:
    global _kept, _kept_guard
    _kept = OrderedDict()
    _kept_guard = threading.Lock()
    for lock in list(_live_locks):
        lock._forget_after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_after_fork)


def kept_lock(lock_file: str | os.PathLike[str]) -> KeptLock:
    """This process's `KeptLock` for `lock_file` (created on first use, then the same object).

    For a plugin's own data files: name a lock file in the plugin's data folder (never next to
    a user's file). At most `MAX_KEPT` stay open; beyond that the least recently used idle ones
    are closed.
    """
    key = os.path.abspath(lock_file)
    with _kept_guard:
        lock = _kept.get(key)
        if lock is not None:
            _kept.move_to_end(key)
            return lock
        lock = _kept[key] = KeptLock(key)
        if len(_kept) > MAX_KEPT:
            _close_idle(list(_kept.items())[:-1], keep=MAX_KEPT * 3 // 4)
        return lock


def _close_idle(candidates: list[tuple[str, KeptLock]], *, keep: int) -> None:
    """Close and forget idle locks among `candidates`, oldest first, down to `keep` (guard held)."""
    for key, lock in candidates:
        if len(_kept) <= keep:
            return
        if lock.close():
            del _kept[key]


def close_kept_locks(folder: str | os.PathLike[str]) -> None:
    """Close and forget the idle kept locks whose lock files are in `folder` (a store shutting down).

    A lock in use stays; a later `kept_lock` for a forgotten file opens it again.
    """
    prefix = os.path.join(os.path.abspath(folder), "")
    with _kept_guard:
        _close_idle([(key, lock) for key, lock in _kept.items() if key.startswith(prefix)], keep=0)
