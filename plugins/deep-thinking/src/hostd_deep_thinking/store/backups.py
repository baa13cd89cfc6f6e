"""The file store's backups: the last ``BACKUPS_KEPT`` copies of each session, and choosing one.

A backup is taken at every compaction and before a delete, an import or a restore replaces a
session; it is what rebuilds a damaged document and what ``restore_session`` reads. Kept apart
from the session files so the rules of naming, pruning and choosing read in one place.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from hostd_deep_thinking.store.backend import BACKUPS_KEPT, DELETED_LABEL
from hostd_deep_thinking.store.documents import check_document
from hostd_deep_thinking.store.layout import Layout
from hostd_deep_thinking.store.refusals import BackupNotFound, SessionUnreadable


class BackupShelf:
    """``backups/<id>/<stamp>-s<seq>[-deleted].json`` under the data folder."""

    def __init__(self, layout: Layout) -> None:
        self.backups_dir = layout.backups_dir

    def files(self, session_id: str) -> list[Path]:
        folder = self.backups_dir / session_id
        return list(folder.glob("*.json")) if folder.is_dir() else []

    def write(self, session_id: str, data: str | bytes | Iterable[bytes], seq: int, label: str = "") -> Path:
        """Keep ``data`` (the session's document) as its newest backup, pruning beyond the last 10."""
        from hostd_fs import atomic_write

        folder = self.backups_dir / session_id
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = folder / f"{stamp}-s{seq:04d}{label}.json"
        atomic_write(path, data)
        for old in sorted(self.files(session_id))[:-BACKUPS_KEPT]:
            old.unlink(missing_ok=True)
        return path

    def oldest_first(self, session_id: str) -> list[Path]:
        return sorted(self.files(session_id))

    def names(self, session_id: str) -> list[str]:
        """The session's backups as ``restore_session`` names them, newest first."""
        return [path.name for path in reversed(self.oldest_first(session_id))]

    def id_of(self, session_id: str, kept: str) -> str | None:
        """The backup name of what a delete kept; None when it was a damaged document set aside."""
        path = Path(kept)
        return path.name if path.parent == self.backups_dir / session_id else None

    def newest_readable(self, session_id: str) -> tuple[dict[str, Any], str] | None:
        """The newest backup that is a sound document of this session, and its name (for repairs)."""
        for backup in sorted(self.files(session_id), reverse=True):
            try:
                document = check_document(json.loads(backup.read_bytes()))
            except (OSError, ValueError, UnicodeDecodeError):
                continue
            if document["session_id"] == session_id:
                return document, backup.name
        return None

    def deleted(self, live: Callable[[str], bool]) -> list[tuple[str, dict[str, Any], str]]:
        """Each deleted session ``restore_session`` can bring back: its id, the document its newest
        delete kept and that backup's name; sessions ``live`` now (created again) are left out."""
        found: list[tuple[str, dict[str, Any], str]] = []
        folders = sorted(self.backups_dir.iterdir()) if self.backups_dir.is_dir() else []
        for folder in folders:
            session_id = folder.name
            kept = sorted(path for path in self.files(session_id) if path.stem.endswith(DELETED_LABEL))
            if not kept or live(session_id):
                continue
            try:
                document = check_document(json.loads(kept[-1].read_bytes()))
            except (OSError, ValueError, UnicodeDecodeError):
                continue  # restore_session names what is wrong with it; a list shows what it can restore
            if document["session_id"] == session_id:
                found.append((session_id, document, kept[-1].name))
        return found

    def for_restore(self, session_id: str, backup_name: str | None) -> tuple[dict[str, Any], str]:
        """The document ``restore`` brings back and its backup's name: the named backup, else the
        newest one a delete took (later backups may belong to a new session created under the same
        id since), else the newest readable one."""
        backups = self.oldest_first(session_id)
        available = [path.name for path in reversed(backups)]
        if backup_name is not None:
            chosen = [path for path in backups if path.name == backup_name]
            if not chosen:
                raise BackupNotFound(session_id, available, backup_name)
        else:
            chosen = sorted(
                backups, key=lambda path: (path.stem.endswith(DELETED_LABEL), path.name), reverse=True
            )
        for path in chosen:
            try:
                document = check_document(json.loads(path.read_bytes()))
            except (OSError, ValueError, UnicodeDecodeError) as exc:
                if backup_name is not None:
                    raise SessionUnreadable(
                        session_id, f"backup {path.name} is damaged ({exc})", str(path)
                    ) from None
                continue
            if document["session_id"] == session_id:
                return document, path.name
        raise BackupNotFound(session_id, available, backup_name)
