"""Whole-file writes that never leave a half-written file, even if the process is killed.

The new content goes to a temporary file in the same folder (so the rename cannot cross file
systems), is flushed to disk, and then replaces the target in one rename: a reader, or the
file after a crash, sees the old version or the new one, never a mixture.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from hostd_fs.durable import current_umask, fsync_directory, write_all
from hostd_fs.errors import fs_error_from_os, path_error

__all__ = ["atomic_write"]

_NEW_FILE_MODE = 0o644
# Enough of the target's name to tell whose temp file it is, short enough to stay under the
# 255-byte name limit even in a multibyte script.
_TEMP_NAME_CHARS = 40


def _stat_if_exists(target: Path, shown: str) -> os.stat_result | None:
    try:
        return os.stat(target)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise fs_error_from_os(exc, shown) from exc


def _match_metadata(fd: int, temp_path: str, existing: os.stat_result | None) -> None:
    """Give the temp file the permissions (and, when allowed, the owner) of the file it replaces."""
    mode = stat.S_IMODE(existing.st_mode) if existing else _NEW_FILE_MODE & ~current_umask()
    if hasattr(os, "fchmod"):
        os.fchmod(fd, mode)
    else:
        os.chmod(temp_path, mode)
    if existing and hasattr(os, "fchown"):
        # Only a privileged process may give a file away; anyone else keeps their own ownership.
        with contextlib.suppress(OSError):
            os.fchown(fd, existing.st_uid, existing.st_gid)


def atomic_write(path: str | Path, data: bytes | str, *, encoding: str = "utf-8") -> int:
    """Replace the file at `path` with `data` atomically and durably; returns bytes written.

    Permission bits of an existing file are kept (new files get 0o644 minus the umask). A
    symlink is written through, not replaced. Errors raise FsError and leave the old file and
    no temp file behind.
    """
    payload = data.encode(encoding) if isinstance(data, str) else bytes(data)
    shown = str(path)
    target = Path(os.path.realpath(path))
    existing = _stat_if_exists(target, shown)
    if existing and stat.S_ISDIR(existing.st_mode):
        raise path_error("IS_DIRECTORY", shown)
    try:
        fd, temp_path = tempfile.mkstemp(
            dir=target.parent, prefix=f".{target.name[:_TEMP_NAME_CHARS]}.", suffix=".tmp"
        )
    except OSError as exc:
        raise fs_error_from_os(exc, shown) from exc
    try:
        try:
            write_all(fd, payload)
            _match_metadata(fd, temp_path, existing)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp_path, target)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(temp_path)
        if isinstance(exc, OSError):
            raise fs_error_from_os(exc, shown) from exc
        raise
    fsync_directory(target.parent)
    return len(payload)
