"""Shared file-system safety for hostd plugins: the path sandbox, portable file names, atomic
writes, cross-process locked appends and overwrites, and a SQLite helper for stores that
several threads and processes share.
"""

from hostd_fs.atomic import atomic_write
from hostd_fs.database import Database, Migration
from hostd_fs.errors import REASONS, FsError, fs_error_from_os
from hostd_fs.filenames import clean_filename
from hostd_fs.locking import AppendResult, locked_append, locked_overwrite, path_lock
from hostd_fs.paths import Expectation, resolve_in_roots
from hostd_fs.roots import effective_roots

__all__ = [
    "REASONS",
    "AppendResult",
    "Database",
    "Expectation",
    "FsError",
    "Migration",
    "atomic_write",
    "clean_filename",
    "effective_roots",
    "fs_error_from_os",
    "locked_append",
    "locked_overwrite",
    "path_lock",
    "resolve_in_roots",
]
