"""What the search index follows: which sessions' files changed since it last looked, cheaply.

``search_index.SearchIndex`` asks ``file_signatures`` before every search and reads only what a
changed signature says is new (``journal_since``), so a quiet data folder costs two ``stat``
calls and a search never re-reads sessions that did not change.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from typing import Any

from hostd_deep_thinking.store.documents import check_thought
from hostd_deep_thinking.store.layout import Layout, stat_or_none

#: How long after a change a folder's modification time is not trusted to reveal the next change
#: (file systems keep coarse timestamps: a change in the same tick leaves the time as it was).
RACY_NS = 2_000_000_000


@dataclass(frozen=True)
class FileSignature:
    """A session's files on disk: the document's (inode, size, mtime), the journal's inode and size."""

    document: tuple[int, int, int] | None
    journal_inode: int | None
    journal_size: int


@dataclass(frozen=True)
class _Scan:
    """What ``file_signatures`` saw, and the folder's and marker's times that vouch for it.

    A key that cannot vouch (changed too recently to trust) is ``None`` (folder) or ``-1`` (marker).
    """

    folder_key: tuple[int, int] | None
    marker_key: int | None
    documents: dict[str, tuple[int, int, int]]
    signatures: dict[str, FileSignature]


@dataclass(frozen=True)
class SessionSnapshot:
    """A session's thoughts as read under its lock, and the signature of the files they came from."""

    name: str
    thoughts: list[dict[str, Any]]
    last_seq: int
    signature: FileSignature


class ChangeScanner:
    """Signatures of every session's files, re-reading only what the folder's times say changed."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.sessions_dir = layout.sessions_dir
        self.marker_path = layout.marker_path
        self._scan = _Scan(None, -1, {}, {})  # what file_signatures saw last

    def file_signatures(self) -> dict[str, FileSignature]:
        """Every session on disk with its files' signature: a changed signature means changed thoughts.

        Everything but an append (compaction, status changes, deletes, restores, imports, a
        journal's creation or truncation) creates, renames or removes files, which changes the
        sessions folder's modification time; every append touches the ``.appended`` marker.
        So documents are looked at again only when the folder changed, journals only when the
        folder or the marker did, and an unchanged folder costs two ``stat`` calls. A time
        within ``RACY_NS`` of the look is not trusted (timestamps are coarse: a change in the
        same tick would keep the time), so the next look checks again.
        """
        started = time.time_ns()
        folder = os.stat(self.sessions_dir)
        folder_key = (folder.st_ino, folder.st_mtime_ns)
        marker = stat_or_none(self.marker_path)
        marker_key = marker.st_mtime_ns if marker is not None else None
        scan = self._scan
        if scan.folder_key == folder_key and scan.marker_key == marker_key:
            return dict(scan.signatures)  # nothing created, renamed, removed or appended to since
        documents: dict[str, tuple[int, int, int]] = {}
        journals: dict[str, tuple[int, int]] = {}
        with os.scandir(self.sessions_dir) as listing:
            for item in listing:
                name = item.name
                if name.startswith("."):
                    continue  # the marker, or a temporary file of an atomic write
                if name.endswith(".journal"):
                    found = item.stat()
                    journals[name[:-8]] = (found.st_ino, found.st_size)
                elif name.endswith(".json"):
                    session_id = name[:-5]
                    known = scan.documents.get(session_id) if scan.folder_key == folder_key else None
                    if known is None:
                        found = item.stat()
                        known = (found.st_ino, found.st_size, found.st_mtime_ns)
                    documents[session_id] = known
        live = documents.keys() | {session_id for session_id, (_, size) in journals.items() if size}
        signatures = {}
        for session_id in live:
            inode, size = journals.get(session_id, (None, 0))
            signatures[session_id] = FileSignature(documents.get(session_id), inode, size)
        settled = started - RACY_NS
        self._scan = _Scan(
            folder_key=folder_key if folder.st_mtime_ns < settled else None,
            marker_key=marker_key if marker_key is None or marker_key < settled else -1,
            documents=documents,
            signatures=signatures,
        )
        return dict(signatures)

    def journal_since(
        self, session_id: str, inode: int, offset: int
    ) -> tuple[list[dict[str, Any]], int] | None:
        """Thoughts of the complete journal lines after byte ``offset``, and the new offset.

        ``None`` when the journal is no longer the file with that inode (it was compacted or
        replaced): the caller reads the whole session again. Needs no lock: lines are only
        ever appended, and a line still being written is left for later.
        """
        try:
            with open(self.layout.journal_path(session_id), "rb") as handle:
                if os.fstat(handle.fileno()).st_ino != inode:
                    return None
                handle.seek(offset)
                data = handle.read()
        except FileNotFoundError:
            return None
        complete = data.rfind(b"\n") + 1
        thoughts = []
        for raw in data[:complete].splitlines():
            try:
                thoughts.append(check_thought(json.loads(raw)["thought"]))
            except (ValueError, KeyError, TypeError):
                continue  # loading the session reports damaged lines
        return thoughts, offset + complete
