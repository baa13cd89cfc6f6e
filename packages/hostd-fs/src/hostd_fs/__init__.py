"""Shared file-system safety for hostd plugins: the path sandbox (user files are opened beneath
a root's descriptor, so a swapped symlink cannot redirect them), portable file names, atomic
writes, locks that exclude threads and processes (per user file, or kept per lock file for a
plugin's own data), the locked appends and overwrites built on them. (The SQLite helper moved
to hostd-db, beside the PostgreSQL layer: ``hostd_db.SqliteDatabase``.)
"""

from __future__ import annotations

from hostd_fs.atomic import atomic_write
from hostd_fs.beneath import RootedPath, read_beneath, resolve_beneath
from hostd_fs.errors import REASONS, FsError, fs_error_from_os
from hostd_fs.filenames import clean_filename
from hostd_fs.kept_locks import KeptLock, close_kept_locks, kept_lock
from hostd_fs.locking import AppendResult, locked_append, locked_overwrite, path_lock
from hostd_fs.outputs import output_target
from hostd_fs.paths import HOSTILE_PATHS, Expectation, resolve_in_roots
from hostd_fs.roots import effective_roots

__all__ = [
    "HOSTILE_PATHS",
    "REASONS",
    "AppendResult",
    "Expectation",
    "FsError",
    "KeptLock",
    "RootedPath",
    "atomic_write",
    "clean_filename",
    "close_kept_locks",
    "effective_roots",
    "fs_error_from_os",
    "kept_lock",
    "locked_append",
    "locked_overwrite",
    "output_target",
    "path_lock",
    "read_beneath",
    "resolve_beneath",
    "resolve_in_roots",
]
