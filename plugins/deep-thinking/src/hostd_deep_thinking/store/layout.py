"""Where the file store keeps what, in one place every part of it reads.

Under the plugin's data folder::

    sessions/<id>.json        the compacted document (the spec's ThinkingSession, plus format_version
                              and last_seq, the sequence number of the last thought it holds)
    sessions/<id>.journal     JSON lines, one per thought added since the last compaction
    sessions/.appended        touched by every append, so readers notice a journal grew
    backups/<id>/<stamp>-s<seq>[-deleted].json   the last 10 copies, taken at compaction and before
                              deletes/imports (a delete's ends in -deleted; restore_session reads them)
    index.jsonl               one summary line per change (creation, compaction, status, deletion)
    default-sessions.json     per member, which session their calls without ``session_id`` go to
    default-session.json      the one pointer of before members were recorded: the default of every
                              member who has none of their own yet (read, never written now)
    .locks/                   lock files
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Layout:
    """The file store's paths under one data folder."""

    root: Path
    lock_timeout: float = 30.0

    @property
    def sessions_dir(self) -> Path:
        return self.root / "sessions"

    @property
    def backups_dir(self) -> Path:
        return self.root / "backups"

    @property
    def lock_dir(self) -> Path:
        return self.root / ".locks"

    @property
    def index_path(self) -> Path:
        return self.root / "index.jsonl"

    @property
    def default_path(self) -> Path:
        return self.root / "default-session.json"

    @property
    def member_defaults_path(self) -> Path:
        return self.root / "default-sessions.json"

    @property
    def marker_path(self) -> Path:
        return self.sessions_dir / ".appended"

    def document_path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.json"

    def journal_path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.journal"

    def make_folders(self) -> None:
        for folder in (self.sessions_dir, self.backups_dir, self.lock_dir):
            folder.mkdir(parents=True, exist_ok=True)

    @contextlib.contextmanager
    def file_lock(self, path: Path) -> Iterator[None]:
        """The shared library's lock, for files off the hot path (the index, the default pointers)."""
        from hostd_fs import path_lock

        with path_lock(path, lock_dir=self.lock_dir, timeout=self.lock_timeout):
            yield


def stat_or_none(path: str | Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def read_from(fd: int, offset: int, size: int) -> bytes:
    """The bytes of ``fd`` from ``offset`` up to ``size``."""
    os.lseek(fd, offset, os.SEEK_SET)
    chunks = []
    remaining = size - offset
    while remaining > 0:
        chunk = os.read(fd, remaining)
        if not chunk:
            break
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)
