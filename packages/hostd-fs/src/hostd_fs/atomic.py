"""Whole-file writes that never leave a half-written file, even if the process is killed.

The new content goes to a temporary file in the same folder (so the rename cannot cross file
systems), is flushed to disk, and then replaces the target in one rename: a reader, or the
file after a crash, sees the old version or the new one, never a mixture. The steps run
beneath the folder's descriptor (see `beneath`), so a swapped symlink cannot redirect them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

from hostd_fs.beneath import RootedPath, anchored, replace_beneath

__all__ = ["atomic_write"]


def atomic_write(
    path: str | os.PathLike[str] | RootedPath,
    data: bytes | str | Iterable[bytes],
    *,
    encoding: str = "utf-8",
) -> int:
    """Replace the file at `path` with `data` atomically and durably; returns bytes written.

    `path` is a `RootedPath` from `resolve_beneath` for a user's file (missing parent folders
    are made beneath its root), or a plain path for a plugin's own data (its symlinks are
    followed first, so a symlink is written through, not replaced). Permission bits of an
    existing file are kept (new files get 0o644 minus the umask). A hard-linked target is
    refused (HARD_LINK). Errors raise FsError and leave the old file and no temp file behind.
    `data` may be an iterable of bytes pieces, written as they come: a large file is then
    never whole in memory.
    """
    if isinstance(data, str):
        payload: bytes | Iterable[bytes] = data.encode(encoding)
    elif isinstance(data, bytes | bytearray | memoryview):
        payload = bytes(data)
    else:
        payload = data
    return replace_beneath(anchored(path), payload)[0]
