"""The sessions as records, for ``hostd db copy`` (``hostd.RecordStore``; the copy is the host's).

The session files of a data folder are exported; the team database's tables take them in.
Two kinds:

- ``sessions``, keyed by id: the whole document (thoughts with revisions, branches and labels,
  adjustments, metadata, links in ``metadata``), its thoughts counted in the report. A session
  the team database holds differently is a conflict (sessions are not fast-forwarded: their
  metadata changes with every thought).
- ``backups``, keyed by session and file name: each kept copy, deleted sessions' too, so
  ``restore_session`` still finds a deleted session's last copy.

A damaged local file is reported and not copied. The default-session pointer is not copied: on
the team database it is shared, and one user's default is not the team's.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

from hostd_db import Connection

from hostd import Record, RecordData, RecordKind, Text
from hostd_deep_thinking.store.backend import SessionBackend, SessionListing
from hostd_deep_thinking.store.documents import check_document
from hostd_deep_thinking.store.files import SessionStore
from hostd_deep_thinking.store.postgres import PostgresSessionStore
from hostd_deep_thinking.store.refusals import SessionUnreadable


def _backup_label(key: str) -> Text:
    session_id, name = json.loads(key)
    return Text(en=f"backup {name} of session '{session_id}'", zh=f"会话 '{session_id}' 的备份 {name}")


RECORD_KINDS = (
    RecordKind("sessions", lambda key: Text(en=f"session '{key}'", zh=f"会话 '{key}'"), parts="thoughts"),
    RecordKind("backups", _backup_label),
)


class SessionRecords:
    """The ``hostd.RecordStore`` of the sessions: exported from the files, imported into the tables."""

    record_kinds = RECORD_KINDS
    import_lock = None  # each session's row is locked as it is read (``find_record``)

    def __init__(self, store: SessionBackend) -> None:
        self.store = store

    def close(self) -> None:
        self.store.close()

    def export_records(self) -> Iterator[Record]:
        files = self.store
        assert isinstance(files, SessionStore), "sessions are exported from their files"
        backups_dir = files.layout.backups_dir
        backed_up = (
            {folder.name for folder in backups_dir.iterdir() if folder.is_dir()}
            if backups_dir.is_dir()
            else set()
        )
        live = sorted(
            str(row["session_id"]) for row in files.list_summaries(SessionListing(limit=sys.maxsize)).rows
        )
        for session_id in live:
            try:
                state = files.load(session_id)
            except SessionUnreadable as exc:
                yield Record(
                    "sessions",
                    session_id,
                    damaged=Text(
                        en=f"session '{session_id}' is damaged locally and was not copied ({exc.problem})",
                        zh=f"会话 '{session_id}' 在本地已损坏，未复制（{exc.problem}）",
                    ),
                )
                continue
            if state is not None:
                yield Record("sessions", session_id, state.to_document())
        for session_id in sorted(set(live) | backed_up):
            for path in files.backups(session_id):
                key = json.dumps([session_id, path.name], ensure_ascii=False)
                try:
                    yield Record("backups", key, check_document(json.loads(path.read_bytes())))
                except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
                    yield Record(
                        "backups",
                        key,
                        damaged=Text(
                            en=f"backup {path.name} of session '{session_id}' is damaged and was not copied "
                            f"({exc})",
                            zh=f"会话 '{session_id}' 的备份 {path.name} 已损坏，未复制（{exc}）",
                        ),
                    )

    def _tables(self) -> PostgresSessionStore:
        assert isinstance(self.store, PostgresSessionStore), "records are imported into the team database"
        return self.store

    def begin_import(self, conn: Connection) -> None:
        self._tables()

    def find_record(self, conn: Connection, kind: str, key: str) -> RecordData | None:
        return self._tables().find_record(conn, kind, key)

    def import_record(self, conn: Connection, record: Record, theirs: RecordData | None) -> Text | None:
        self._tables().import_record(conn, record.kind, record.key, dict(record.data))
        return None

    def end_import(self, conn: Connection) -> None:
        pass
