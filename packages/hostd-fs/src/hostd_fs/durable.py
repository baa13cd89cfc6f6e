"""Low-level steps that make a write survive a crash: complete writes, fsync of folders, umask.

Shared by the atomic whole-file write and the locked append, which both need them.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

__all__ = ["current_umask", "fsync_directory", "write_all"]

_umask_swap_lock = threading.Lock()


def write_all(fd: int, data: bytes) -> None:
    """Write every byte of `data`: os.write may write less than asked (signals, pipes, quotas)."""
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def fsync_directory(directory: Path) -> None:
    """Persist a rename or a new entry in `directory`, where the platform allows it.

    Windows cannot open a folder as a file, and some file systems refuse fsync on folders; the
    data itself is already synced by then, so such refusals are not errors.
    """
    if os.name == "nt":
        return
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def current_umask() -> int:
    """The process umask, read without changing it where the platform allows."""
    # Linux exposes it in /proc; elsewhere the only way is to set it and restore it, which is
    # briefly visible to other threads, so at least never let two threads swap at once.
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    with _umask_swap_lock:
        mask = os.umask(0o022)
        os.umask(mask)
    return mask
