"""The file store's session index: what ``list_sessions`` reads instead of every document.

``index.jsonl`` gets one summary line per compaction, status change, import, restore and
delete (adding a thought never touches it), so each entry is brought up to date from its
session's journal when listed: thought count, total, branches, update time. Journals are read
incrementally and documents only when their size differs from the one the index recorded; a
document found damaged is listed with ``unreadable``. The index is derived data: lost, it is
rebuilt from the documents.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hostd_fs.durable import write_all

from hostd_deep_thinking.store.backend import ListingKey, SessionListing, SummaryPage
from hostd_deep_thinking.store.changes import RACY_NS
from hostd_deep_thinking.store.documents import SessionState, check_document, check_thought, encode_line
from hostd_deep_thinking.store.layout import Layout, read_from, stat_or_none
from hostd_deep_thinking.store.refusals import SessionUnreadable


def index_entry(state: SessionState, document_size: int) -> dict[str, Any]:
    """The index line of a compacted session: its summary, the last sequence the document holds
    (journal lines after it are newer) and the document's size (a different size means look again)."""
    return {**state.summary(), "last_seq": state.last_seq, "doc_size": document_size}


def listing_key(row: dict[str, Any]) -> ListingKey:
    """Where a session stands in the listing (newest first): its update time, then its id."""
    return str(row.get("updated_at", "")), str(row["session_id"])


@dataclass
class _IndexCache:
    inode: int | None = None
    offset: int = 0
    lines: int = 0
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class _JournalDigest:
    """One journal as listing needs it: per line (seq, branch id, total, timestamp), read up to ``offset``."""

    inode: int
    offset: int = 0
    thoughts: list[tuple[int, str | None, int | None, str | None]] = field(default_factory=list)


class SessionIndex:
    """``index.jsonl`` and the listing built from it and the journals."""

    def __init__(self, layout: Layout, load: Callable[[str], SessionState | None]) -> None:
        self.layout = layout
        self.index_path = layout.index_path
        self.sessions_dir = layout.sessions_dir
        self._load = load  # the store's own load: repairs a damaged session when it can
        self._index = _IndexCache()
        self._index_guard = threading.Lock()  # also the two listing caches below
        self._digests: dict[str, _JournalDigest] = {}
        self._verdicts: dict[str, tuple[tuple[int, int, int], str | None]] = {}
        #: The last listing's rows and the file times that vouch for them (``_current_rows``).
        self._listed: tuple[tuple[tuple[int, ...], tuple[int, ...]], list[dict[str, Any]]] | None = None

    def put(self, entry: dict[str, Any]) -> None:
        """Append one summary line to the index (lock held for the index, not the session)."""
        line = encode_line(entry)
        with self.layout.file_lock(self.index_path):
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
            fd = os.open(self.index_path, flags, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and read_from(fd, size - 1, size) != b"\n":
                    line = b"\n" + line  # isolate a line a crashed writer left unfinished
                write_all(fd, line)
                os.fsync(fd)
            finally:
                os.close(fd)
            with self._index_guard:
                self._read_index()
                if self._index.lines > 2 * len(self._index.entries) + 200:
                    self._rewrite_index()

    def _rewrite_index(self) -> None:
        from hostd_fs import atomic_write

        data = b"".join(encode_line(entry) for entry in self._index.entries.values())
        atomic_write(self.index_path, data.decode("utf-8"))
        self._index = _IndexCache()
        self._read_index()

    def _read_index(self) -> dict[str, dict[str, Any]]:
        """The index's live entries, reading only what was appended since last time (guard held)."""
        index_stat = stat_or_none(self.index_path)
        if index_stat is None:
            if any(self.sessions_dir.glob("*.json")):
                with self.layout.file_lock(self.index_path):
                    if not self.index_path.exists():
                        self._rebuild_index()
                index_stat = stat_or_none(self.index_path)
            if index_stat is None:
                self._index = _IndexCache()
                return self._index.entries
        cache = self._index
        if cache.inode != index_stat.st_ino or index_stat.st_size < cache.offset:
            cache = self._index = _IndexCache(inode=index_stat.st_ino)
        if index_stat.st_size > cache.offset:
            with open(self.index_path, "rb") as handle:
                handle.seek(cache.offset)
                data = handle.read(index_stat.st_size - cache.offset)
            complete = data.rfind(b"\n") + 1
            for raw in data[:complete].splitlines():
                try:
                    entry = json.loads(raw)
                    session_id = entry["session_id"]
                except (ValueError, KeyError, TypeError):
                    continue
                cache.lines += 1
                if entry.get("deleted"):
                    cache.entries.pop(session_id, None)
                else:
                    cache.entries[session_id] = entry
            cache.offset += complete
        return cache.entries

    def _rebuild_index(self) -> None:
        """Write the index again from the documents (it was lost)."""
        from hostd_fs import atomic_write

        lines = []
        for path in sorted(self.sessions_dir.glob("*.json")):
            try:
                state = SessionState.from_document(check_document(json.loads(path.read_bytes())))
            except (OSError, ValueError, UnicodeDecodeError):
                continue
            lines.append(encode_line(index_entry(state, path.stat().st_size)))
        atomic_write(self.index_path, b"".join(lines).decode("utf-8"))

    def _journal_digest(self, session_id: str, journal: os.stat_result) -> _JournalDigest:
        """What the session's journal adds to its index entry, reading only bytes not read before."""
        digest = self._digests.get(session_id)
        if digest is None or digest.inode != journal.st_ino or journal.st_size < digest.offset:
            digest = self._digests[session_id] = _JournalDigest(inode=journal.st_ino)
        if journal.st_size > digest.offset:
            with open(self.layout.journal_path(session_id), "rb") as handle:
                handle.seek(digest.offset)
                data = handle.read(journal.st_size - digest.offset)
            complete = data.rfind(b"\n") + 1
            for raw in data[:complete].splitlines():
                try:
                    record = json.loads(raw)
                    thought = check_thought(record["thought"])
                    seq = int(record["seq"])
                except (ValueError, KeyError, TypeError):
                    continue  # loading the session reports damaged lines
                branch = thought.get("branch_id") if thought.get("branch_from_thought") is not None else None
                digest.thoughts.append(
                    (seq, branch or None, thought.get("total_thoughts"), thought.get("timestamp"))
                )
            digest.offset += complete
        return digest

    def _document_problem(self, session_id: str, document: os.stat_result) -> str | None:
        """Why the session's document cannot be read (cached per file version), or ``None``."""
        signature = (document.st_ino, document.st_size, document.st_mtime_ns)
        cached = self._verdicts.get(session_id)
        if cached is not None and cached[0] == signature:
            return cached[1]
        try:
            check_document(json.loads(self.layout.document_path(session_id).read_bytes()))
            problem = None
        except FileNotFoundError:
            problem = None  # replaced meanwhile; a later listing looks again
        except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
            problem = f"the session document is damaged ({exc})"
        self._verdicts[session_id] = (signature, problem)
        return problem

    def list_summaries(self, listing: SessionListing) -> SummaryPage:
        """Sessions newest first, from the index plus what their journals added since compaction.

        The index is written at compaction only (adding a thought never touches it), so each
        entry is brought up to date from its journal: thought count, total, branches, update
        time. Journals are read incrementally and documents only when their size differs from
        the one the index recorded; a document found damaged is listed with ``unreadable``.
        """
        status, limit, created_by, after = listing.status, listing.limit, listing.created_by, listing.after
        rows = self._current_rows()
        if status is not None:
            rows = [row for row in rows if row.get("status") == status]
        if created_by is not None:
            rows = [row for row in rows if row.get("created_by") == created_by]
        total = len(rows)
        if after is not None:
            rows = [row for row in rows if listing_key(row) < after]
        # Copies: the caller trims the rows it is given, and the listing keeps its own.
        return SummaryPage(rows=[dict(row) for row in rows[:limit]], total=total, more=len(rows) > limit)

    def _current_rows(self) -> list[dict[str, Any]]:
        """Every session's row, newest first: the last listing's when nothing changed since.

        What could change a row changes one of three things: the sessions folder's modification
        time (a session created, compacted, deleted, restored or imported: files created, renamed
        or removed), the ``.appended`` marker's (a thought appended: every append touches it) or
        the index file. While the three stay as they were, the listing costs three ``stat`` calls
        instead of one per session file; a time too recent to vouch for the next change (coarse
        timestamps, see ``changes``) makes the next listing look at the files again.
        """
        started = time.time_ns()
        key = self._listing_key()
        with self._index_guard:
            kept = self._listed
        if key is not None and kept is not None and kept[0] == key:
            return kept[1]
        rows = self._scanned_rows()
        with self._index_guard:
            settled = key is not None and all(moment < started - RACY_NS for moment in key[1])
            self._listed = (key, rows) if key is not None and settled else None
        return rows

    def _listing_key(self) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
        """(identities, modification times) of the folder, the marker and the index; None if unreadable."""
        try:
            folder = os.stat(self.sessions_dir)
        except OSError:
            return None
        marker = stat_or_none(self.layout.marker_path)
        index = stat_or_none(self.index_path)
        identities = (
            folder.st_ino,
            marker.st_ino if marker else -1,
            index.st_ino if index else -1,
            index.st_size if index else -1,
        )
        moments = (folder.st_mtime_ns, marker.st_mtime_ns if marker else 0, index.st_mtime_ns if index else 0)
        return identities, moments

    def _scanned_rows(self) -> list[dict[str, Any]]:
        """Every session's row from the index, the journals and the documents' sizes, newest first."""
        with self._index_guard:
            entries = dict(self._read_index())
        files: dict[str, os.stat_result] = {}
        with os.scandir(self.sessions_dir) as listing:
            for item in listing:
                if item.name.endswith((".json", ".journal")):
                    files[item.name] = item.stat()
        rows = []
        for session_id, entry in entries.items():
            row = dict(entry)
            document = files.get(f"{session_id}.json")
            journal = files.get(f"{session_id}.journal")
            if journal is not None and journal.st_size:
                with self._index_guard:
                    self._merge_journal(row, self._journal_digest(session_id, journal))
            if document is not None and document.st_size != row.get("doc_size"):
                row = self._checked_row(session_id, document, row)
            rows.append(row)
        with self._index_guard:
            for gone in set(self._digests) - set(entries):
                del self._digests[gone]
        rows.sort(key=listing_key, reverse=True)
        return rows

    def _checked_row(self, session_id: str, document: os.stat_result, row: dict[str, Any]) -> dict[str, Any]:
        """The row of a session whose document changed behind the index: as it is, repaired, or flagged."""
        if self._document_problem(session_id, document) is None:
            return row
        try:
            state = self._load(session_id)  # rebuilds from a backup and the journal when it can
        except SessionUnreadable as exc:
            return {**row, "unreadable": exc.problem}
        return row if state is None else state.summary()

    @staticmethod
    def _merge_journal(row: dict[str, Any], digest: _JournalDigest) -> None:
        compacted = row.get("last_seq", row.get("thought_count"))
        base = compacted if isinstance(compacted, int) else 0
        branches = list(row.get("branches") or [])
        for seq, branch, total, stamp in digest.thoughts:
            if seq <= base:
                continue  # already in the document (a crash between compaction steps)
            row["thought_count"] = int(row.get("thought_count") or 0) + 1
            if branch is not None and branch not in branches:
                branches.append(branch)
            if total is not None:
                row["total_thoughts"] = total
            if stamp and stamp > str(row.get("updated_at", "")):
                row["updated_at"] = stamp
        row["branches"] = branches
