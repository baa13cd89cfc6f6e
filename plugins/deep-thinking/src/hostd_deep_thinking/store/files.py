"""Durable thinking sessions in the plugin's data folder, cheap to append to and safe across processes.

``layout.py`` says where each file lives. Adding a thought takes the session's cross-process
lock, reads only the journal bytes other processes appended since this process last looked,
appends one line and returns: the cost does not grow with the session. The line is written
(reaching the OS, so it survives a SIGKILL) before the answer; fsync follows within a second
from a timer thread, and always at compaction. Every ``compact_every`` thoughts the journal is
folded into the document (atomic write), a backup is taken and the journal starts afresh;
sequence numbers make a crash between those steps harmless (journal lines the document already
holds are skipped).

This module owns the session files (loading, repairing, appending, compacting); the index
``list_sessions`` reads (``index.py``), the backups (``backups.py``), the members' default
sessions (``defaults.py``) and what the search index follows (``changes.py``) are its parts.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hostd_db import utc_stamp
from hostd_fs.durable import write_all

from hostd_deep_thinking.models import Settings
from hostd_deep_thinking.store.backend import (
    CACHED_DOCUMENT_BYTES,
    CACHED_SESSIONS,
    DELETED_LABEL,
    Appended,
    Plan,
    SessionListing,
    SummaryPage,
    WouldBlock,
)
from hostd_deep_thinking.store.backups import BackupShelf
from hostd_deep_thinking.store.changes import ChangeScanner, FileSignature, SessionSnapshot
from hostd_deep_thinking.store.defaults import DefaultPointers
from hostd_deep_thinking.store.documents import (
    SessionState,
    check_adjustment,
    check_document,
    check_thought,
    document_chunks,
    file_chunks,
    journal_line,
    new_document,
)
from hostd_deep_thinking.store.index import SessionIndex, index_entry
from hostd_deep_thinking.store.layout import Layout, stat_or_none
from hostd_deep_thinking.store.refusals import (
    SessionExists,
    SessionNotFound,
    SessionUnreadable,
    StoreError,
)


@dataclass
class _Journal:
    """An open journal file of this process; the lock guards fsync against close."""

    fd: int
    inode: int
    dirty: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def sync(self) -> None:
        with self.lock:
            if self.fd >= 0 and self.dirty:
                os.fsync(self.fd)
                self.dirty = False

    def close(self) -> None:
        with self.lock:
            if self.fd >= 0:
                if self.dirty:
                    os.fsync(self.fd)
                os.close(self.fd)
                self.fd = -1


#: The settings' defaults, for a store opened without the plugin (tests, ``hostd db copy``, the bench).
_DEFAULTS = Settings()
#: A session stored whole (an import, a restore) stays cached only up to this size: a large import
#: is read again when it is next used, rather than kept resident beside the next large request.
CACHED_INSTALL_BYTES = 4 * 1024 * 1024
#: Sessions whose hot paths (``SessionStore._paths_of``) are kept; more, and the memo starts over.
MAX_HOT_PATHS = 1024


class SessionStore:
    """All sessions of one data folder. Thread-safe; several processes may share the folder."""

    def __init__(
        self,
        root: Path,
        *,
        compact_every: int = _DEFAULTS.compact_every,
        sync_interval: float = _DEFAULTS.sync_interval_seconds,
        lock_timeout: float = 30.0,
    ) -> None:
        self.layout = Layout(root, lock_timeout)
        self.layout.make_folders()
        self.root = root
        self.sessions_dir = self.layout.sessions_dir
        self.lock_dir = self.layout.lock_dir
        self.index_path = self.layout.index_path
        self.default_path = self.layout.default_path
        self.marker_path = self.layout.marker_path
        self.compact_every = max(1, compact_every)
        self.sync_interval = sync_interval
        self.lock_timeout = lock_timeout
        self._cache: OrderedDict[str, SessionState] = OrderedDict()
        self._cached_bytes: dict[str, int] = {}  # each cached session's document size
        self._journals: dict[str, _Journal] = {}
        self._guard = threading.Lock()  # the two dicts above
        self._hot_paths: dict[str, tuple[str, str, str]] = {}
        self._timer: threading.Timer | None = None
        self._timer_guard = threading.Lock()
        self._closed = False
        self._backups = BackupShelf(self.layout)
        self._index = SessionIndex(self.layout, self.load)
        self._defaults = DefaultPointers(self.layout)
        self._changes = ChangeScanner(self.layout)

    # --- paths and locks ---------------------------------------------------------------

    def document_path(self, session_id: str) -> Path:
        return self.layout.document_path(session_id)

    def journal_path(self, session_id: str) -> Path:
        return self.layout.journal_path(session_id)

    def _session_lock_file(self, session_id: str) -> Path:
        return self.lock_dir / f"session-{session_id}.lock"

    def _paths_of(self, session_id: str) -> tuple[str, str, str]:
        """The session's document, journal and lock file as strings, for the path every thought
        takes (building three ``Path`` objects per thought cost more than the two ``stat`` calls)."""
        paths = self._hot_paths.get(session_id)
        if paths is None:
            if len(self._hot_paths) >= MAX_HOT_PATHS:
                self._hot_paths.clear()
            paths = (
                os.fspath(self.document_path(session_id)),
                os.fspath(self.journal_path(session_id)),
                os.path.abspath(self._session_lock_file(session_id)),
            )
            self._hot_paths[session_id] = paths
        return paths

    @contextlib.contextmanager
    def session_lock(self, session_id: str) -> Iterator[None]:
        """Exclusive use of one session across threads and processes (waits up to ``lock_timeout``).

        Every thought takes it once, so it is the shared library's kept lock: the lock file
        stays open and a turn costs microseconds.
        """
        from hostd_fs import kept_lock

        lock = kept_lock(self._session_lock_file(session_id))
        with lock.held(self.lock_timeout, path=self.document_path(session_id)):
            yield

    # --- loading -----------------------------------------------------------------------

    def _cached(self, session_id: str) -> SessionState | None:
        with self._guard:
            state = self._cache.get(session_id)
            if state is not None:
                self._cache.move_to_end(session_id)
            return state

    def _remember(self, state: SessionState) -> None:
        evicted: list[_Journal] = []
        with self._guard:
            self._cache[state.session_id] = state
            self._cache.move_to_end(state.session_id)
            self._cached_bytes[state.session_id] = state.doc_signature[1] if state.doc_signature else 0
            # Bounded by count and by size: a few huge imports must not stay resident (the one
            # just used is always kept).
            while len(self._cache) > CACHED_SESSIONS or (
                len(self._cache) > 1 and sum(self._cached_bytes.values()) > CACHED_DOCUMENT_BYTES
            ):
                old_id, _ = self._cache.popitem(last=False)
                self._cached_bytes.pop(old_id, None)
                journal = self._journals.pop(old_id, None)
                if journal is not None:
                    evicted.append(journal)
        for journal in evicted:
            journal.close()

    def _forget(self, session_id: str) -> None:
        with self._guard:
            self._cache.pop(session_id, None)
            self._cached_bytes.pop(session_id, None)
            journal = self._journals.pop(session_id, None)
        if journal is not None:
            journal.close()

    def _refresh(self, session_id: str, *, may_load: bool = True) -> SessionState | None:
        """The session as it is on disk now (caller holds its lock); ``None`` when it does not exist.

        With ``may_load=False`` only the cheap incremental path is taken; anything more raises
        ``WouldBlock``.
        """
        document_path, journal_path, _ = self._paths_of(session_id)
        doc_stat = stat_or_none(document_path)
        journal_stat = stat_or_none(journal_path)
        if doc_stat is None:
            if journal_stat is None or journal_stat.st_size == 0:
                if not may_load:
                    raise WouldBlock
                self._forget(session_id)
                return None
            if not may_load:
                raise WouldBlock
            return self._load(session_id, missing_document=True)
        cached = self._cached(session_id)
        signature = (doc_stat.st_ino, doc_stat.st_size, doc_stat.st_mtime_ns)
        journal_inode = journal_stat.st_ino if journal_stat else None
        if cached is not None and cached.doc_signature == signature and cached.journal_inode == journal_inode:
            size = journal_stat.st_size if journal_stat else 0
            if size == cached.journal_offset:
                return cached
            if size > cached.journal_offset:
                self._read_journal_tail(cached, size)
                return cached
        if not may_load:
            raise WouldBlock
        return self._load(session_id)

    def _load(self, session_id: str, *, missing_document: bool = False) -> SessionState:
        document_path = self.document_path(session_id)
        notes: list[dict[str, Any]] = []
        document: dict[str, Any] | None = None
        problem: str | None = "the session document is missing" if missing_document else None
        if not missing_document:
            try:
                document = check_document(json.loads(document_path.read_bytes()))
            except FileNotFoundError:
                problem = "the session document is missing"
            except (ValueError, UnicodeDecodeError) as exc:
                problem = f"the session document is damaged ({exc})"
        if document is None:
            document, note = self._recover(session_id, problem or "unreadable")
            notes.append(note)
        state = SessionState.from_document(document)
        state.notes = notes
        doc_stat = stat_or_none(document_path)
        state.doc_signature = (doc_stat.st_ino, doc_stat.st_size, doc_stat.st_mtime_ns) if doc_stat else None
        journal_stat = stat_or_none(self.journal_path(session_id))
        state.journal_inode = journal_stat.st_ino if journal_stat else None
        state.journal_offset = 0
        # A journal handle of this process may point at an older file: drop it.
        with self._guard:
            journal = self._journals.get(session_id)
            if journal is not None and journal.inode != state.journal_inode:
                del self._journals[session_id]
            else:
                journal = None
        if journal is not None:
            journal.close()
        if journal_stat is not None and journal_stat.st_size:
            self._read_journal_tail(state, journal_stat.st_size)
        self._remember(state)
        if notes:
            state.meta.setdefault("recovery_log", []).extend(notes)
        if state.notes:
            self._compact(
                state
            )  # the repaired session replaces the damaged files, with the log of what happened
        return state

    def _read_journal_tail(self, state: SessionState, size: int) -> None:
        """Apply journal lines from ``state.journal_offset`` to ``size`` (caller holds the lock)."""
        path = self.journal_path(state.session_id)
        with open(path, "rb") as handle:
            handle.seek(state.journal_offset)
            data = handle.read(size - state.journal_offset)
        complete = data.rfind(b"\n") + 1
        if complete < len(data):
            # A writer died mid-line (it never answered): cut the partial line off.
            with open(path, "r+b") as handle:
                handle.truncate(state.journal_offset + complete)
            state.note("a partial journal line from an interrupted write was removed")
        for number, raw in enumerate(data[:complete].splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                seq = int(record["seq"])
                thought = check_thought(record["thought"])
                adjustment = record.get("adjustment")
                if adjustment is not None:
                    check_adjustment(adjustment)
            except (ValueError, KeyError, TypeError) as exc:
                state.note(f"journal line {number} is damaged and was skipped ({exc})")
                continue
            if seq <= state.last_seq:
                continue  # already in the document (a crash between compaction steps)
            state.apply(thought, adjustment)
        state.journal_offset += complete

    def _recover(self, session_id: str, problem: str) -> tuple[dict[str, Any], dict[str, Any]]:
        """Rebuild a damaged or missing document from its newest readable backup (the journal follows)."""
        note: dict[str, Any] = {"time": utc_stamp(), "problem": problem}
        found = self._backups.newest_readable(session_id)
        if found is not None:
            document, name = found
            note["recovered_from"] = f"backup {name} and journal"
            note["corrupt_copy"] = self._set_aside(session_id)
            return document, note
        # No backup: the journal alone is complete only if it starts at the first thought.
        journal_path = self.journal_path(session_id)
        first_seq = None
        if journal_path.exists():
            with open(journal_path, "rb") as handle:
                first = handle.readline()
            try:
                first_seq = int(json.loads(first)["seq"])
            except (ValueError, KeyError, TypeError):
                first_seq = None
        if first_seq == 1:
            note["recovered_from"] = "journal (no backup; name and metadata were lost)"
            note["corrupt_copy"] = self._set_aside(session_id)
            return new_document(session_id, name=session_id), note
        # Nothing to rebuild from: leave the damaged file where it is, so every call reports it.
        exists = self.document_path(session_id).exists()
        raise SessionUnreadable(session_id, problem, str(self.document_path(session_id)) if exists else None)

    def _set_aside(self, session_id: str) -> str | None:
        """Keep a damaged document beside the session under another name; never delete it."""
        document_path = self.document_path(session_id)
        if not document_path.exists():
            return None
        corrupt = document_path.with_name(f"{document_path.name}.corrupt-{time.time_ns()}")
        os.replace(document_path, corrupt)
        return str(corrupt)

    def load(self, session_id: str) -> SessionState | None:
        if not self.exists(session_id):
            self._gone(session_id)
            return None
        with self.session_lock(session_id):
            return self._refresh(session_id)

    def _gone(self, session_id: str) -> None:
        """A session with neither document nor journal: forgotten, and no lock taken for it (a
        lookup of an unknown id must leave no lock file behind; a session created just after
        this look is the same as one created just after the lookup)."""
        self._forget(session_id)

    def exists(self, session_id: str) -> bool:
        return self.document_path(session_id).exists() or self.journal_path(session_id).exists()

    # --- writing -----------------------------------------------------------------------

    def _journal(self, state: SessionState) -> _Journal:
        session_id = state.session_id
        with self._guard:
            journal = self._journals.get(session_id)
        if journal is not None and journal.inode == state.journal_inode and journal.fd >= 0:
            return journal
        if journal is not None:
            journal.close()
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
        fd = os.open(self.journal_path(session_id), flags, 0o600)
        inode = os.fstat(fd).st_ino
        journal = _Journal(fd=fd, inode=inode)
        if state.journal_inode != inode:  # created just now
            state.journal_inode = inode
            state.journal_offset = 0
        with self._guard:
            self._journals[session_id] = journal
        return journal

    def create(self, document: dict[str, Any], *, replace: bool = False) -> SessionState:
        """Store a new session document (or replace one, after a backup); returns its state."""
        session_id = document["session_id"]
        with self.session_lock(session_id):
            try:
                existing = self._refresh(session_id)
            except SessionUnreadable:
                if not replace:
                    raise
                self._set_aside(session_id)  # the damaged file is kept under another name
                existing = None
            if existing is not None and not replace:
                raise SessionExists(session_id)
            if existing is not None:
                self._compact(existing)  # a backup of what is about to be replaced
            return self._install(document)

    def _install(self, document: dict[str, Any]) -> SessionState:
        from hostd_fs import atomic_write

        session_id = document["session_id"]
        self._forget(session_id)
        state = SessionState.from_document(document)
        self._write_document(state)
        journal_path = self.journal_path(session_id)
        if journal_path.exists():
            atomic_write(journal_path, "")
        self._finish_compaction(state, remember=False)
        return state

    def append(
        self,
        session_id: str,
        plan: Plan,
        *,
        create: Callable[[], dict[str, Any]] | None = None,
        blocking: bool = True,
    ) -> Appended:
        """Add one thought planned by ``plan(state)`` under the session's lock.

        ``plan`` sees the session as it is on disk right now (other processes included) and
        may raise to refuse; it returns the thought (its ``seq`` is ``state.last_seq + 1``)
        and the adjustment of the total, if any. ``blocking=False`` is for the event loop:
        it raises ``WouldBlock`` instead of waiting for the lock, loading or creating the
        session, and leaves a due compaction to the caller (``Appended.compaction_due``).
        """
        if blocking:
            with self.session_lock(session_id):
                return self._append_locked(session_id, plan, create, blocking=True)
        from hostd_fs import kept_lock

        lock = kept_lock(self._paths_of(session_id)[2])
        if not lock.acquire(0):
            raise WouldBlock
        try:
            return self._append_locked(session_id, plan, create, blocking=False)
        finally:
            lock.release()

    def _append_locked(
        self,
        session_id: str,
        plan: Plan,
        create: Callable[[], dict[str, Any]] | None,
        *,
        blocking: bool,
    ) -> Appended:
        """The body of ``append``; the caller holds the session's lock."""
        state = self._refresh(session_id, may_load=blocking)
        created = False
        if state is None:
            if create is None:
                raise SessionNotFound(session_id)
            state, created = self._install(create()), True
        thought, adjustment = plan(state)
        seq = state.last_seq + 1
        thought["seq"] = seq
        notes, state.notes = state.notes, []
        line = journal_line(seq, thought, adjustment)
        journal = self._journal(state)
        write_all(journal.fd, line)
        state.journal_offset += len(line)
        state.apply(thought, adjustment)
        journal.dirty = True
        self._mark_appended()
        self._schedule_sync()
        due = state.last_seq - state.compacted_seq >= self.compact_every
        if due and blocking:
            self._compact(state)
        return Appended.of(
            state, thought, adjustment, created=created, notes=notes, compaction_due=due and not blocking
        )

    def _mark_appended(self) -> None:
        """Touch the marker that tells readers of any process that some journal grew (one syscall)."""
        try:
            os.utime(self.marker_path)
        except FileNotFoundError:
            with contextlib.suppress(OSError):
                self.marker_path.touch()
        except OSError:
            pass  # readers then see the change at the folder's next change; never fail a thought

    def _write_document(self, state: SessionState, backup_label: str = "") -> Path:
        """Write the session's document and its newest backup (lock held); returns the backup's path.

        The text is encoded piece by piece into the document's file and the backup is copied
        from that file, so even a 30 MB session is never whole in memory as text or bytes.
        """
        from hostd_fs import atomic_write

        document_path = self.document_path(state.session_id)
        atomic_write(document_path, document_chunks(state.to_document()))
        return self._backups.write(state.session_id, file_chunks(document_path), state.last_seq, backup_label)

    def _compact(self, state: SessionState, *, backup_label: str = "") -> Path:
        """Fold the journal into the document, take a backup, start a new journal (lock held).

        Returns the backup's path; ``backup_label`` ends its name (deletes mark theirs).
        """
        from hostd_fs import atomic_write

        session_id = state.session_id
        backup = self._write_document(state, backup_label)
        with self._guard:
            journal = self._journals.pop(session_id, None)
        if journal is not None:
            journal.close()
        journal_path = self.journal_path(session_id)
        if journal_path.exists():
            atomic_write(journal_path, "")
        self._finish_compaction(state)
        return backup

    def _finish_compaction(self, state: SessionState, *, remember: bool = True) -> None:
        session_id = state.session_id
        doc_stat = os.stat(self.document_path(session_id))
        state.doc_signature = (doc_stat.st_ino, doc_stat.st_size, doc_stat.st_mtime_ns)
        journal_stat = stat_or_none(self.journal_path(session_id))
        state.journal_inode = journal_stat.st_ino if journal_stat else None
        state.journal_offset = 0
        state.compacted_seq = state.last_seq
        if remember or doc_stat.st_size <= CACHED_INSTALL_BYTES:
            self._remember(state)
        self._index.put(index_entry(state, doc_stat.st_size))

    @contextlib.contextmanager
    def _locked_state(self, session_id: str) -> Iterator[SessionState]:
        """The session as it is on disk, held under its lock; ``SessionNotFound`` when there is none."""
        if not self.exists(session_id):
            raise SessionNotFound(session_id)
        with self.session_lock(session_id):
            state = self._refresh(session_id)
            if state is None:
                raise SessionNotFound(session_id)
            yield state

    def compact(self, session_id: str) -> SessionState:
        with self._locked_state(session_id) as state:
            if state.last_seq != state.compacted_seq:
                self._compact(state)
            return state

    def update_meta(self, session_id: str, change: Callable[[SessionState], Any]) -> tuple[SessionState, Any]:
        """Change a session's metadata (status, ...) and compact, so the change is in the document."""
        with self._locked_state(session_id) as state:
            result = change(state)
            state.meta["updated_at"] = utc_stamp()
            self._compact(state)
            return state, result

    def delete(self, session_id: str) -> str | None:
        """Back the session up, then remove it; returns the backup's path."""
        if not self.exists(session_id):
            self._gone(session_id)
            raise SessionNotFound(session_id)
        with self.session_lock(session_id):
            try:
                state = self._refresh(session_id)
            except SessionUnreadable:
                state = None
                kept = self._set_aside(session_id)  # the damaged file stays on disk, renamed
                self._forget(session_id)
                self.journal_path(session_id).unlink(missing_ok=True)
                self._index.put({"session_id": session_id, "deleted": True})
                return kept
            if state is None:
                raise SessionNotFound(session_id)
            backup = self._compact(state, backup_label=DELETED_LABEL)
            self._forget(session_id)
            # Journal first: a crash in between leaves a complete (compacted) session, never a half one.
            self.journal_path(session_id).unlink(missing_ok=True)
            self.document_path(session_id).unlink(missing_ok=True)
            self._index.put({"session_id": session_id, "deleted": True})
            return str(backup)

    # --- backups -----------------------------------------------------------------------

    def restore(
        self, session_id: str, backup_name: str | None = None, *, replace: bool = False
    ) -> tuple[SessionState, str, bool]:
        """Bring a session back from one of its backups: the named one, else the one its last delete took.

        Returns the state, the backup's name and whether a live session was replaced.
        """
        document, name = self._backups.for_restore(session_id, backup_name)
        replaced = self.exists(session_id)
        state = self.create(document, replace=replace)
        return state, name, replaced

    def backups(self, session_id: str) -> list[Path]:
        return self._backups.oldest_first(session_id)

    def backup_names(self, session_id: str) -> list[str]:
        """The session's backups as ``restore_session`` names them, newest first."""
        return self._backups.names(session_id)

    def backup_id(self, session_id: str, kept: str) -> str | None:
        """The backup name of what ``delete`` kept; None when it was a damaged document set aside."""
        return self._backups.id_of(session_id, kept)

    def deleted_sessions(self) -> list[tuple[str, dict[str, Any], str]]:
        """Deleted sessions a restore brings back: id, the document their delete kept, its backup."""
        return self._backups.deleted(self.exists)

    # --- durability --------------------------------------------------------------------

    def _schedule_sync(self) -> None:
        with self._timer_guard:
            if self._timer is None and not self._closed:
                self._timer = threading.Timer(self.sync_interval, self._sync_dirty)
                self._timer.daemon = True
                self._timer.start()

    def _sync_dirty(self) -> None:
        with self._timer_guard:
            self._timer = None
        with self._guard:
            journals = list(self._journals.values())
        for journal in journals:
            # A journal closed by compaction meanwhile was synced there.
            with contextlib.suppress(OSError):
                journal.sync()

    def close(self) -> None:
        """Compact what this process wrote, fsync and close every journal."""
        with self._timer_guard:
            self._closed = True
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
        with self._guard:
            pending = [s.session_id for s in self._cache.values() if s.last_seq != s.compacted_seq]
        for session_id in pending:
            with contextlib.suppress(StoreError, OSError):
                self.compact(session_id)
        with self._guard:
            journals = list(self._journals.values())
            self._journals.clear()
            self._cache.clear()
            self._cached_bytes.clear()
        for journal in journals:
            with contextlib.suppress(OSError):
                journal.close()
        from hostd_fs import close_kept_locks

        close_kept_locks(self.lock_dir)

    # --- listing, search, default sessions: the store's parts ------------------------------

    def list_summaries(self, listing: SessionListing) -> SummaryPage:
        """Sessions newest first, from the index plus what their journals added since compaction."""
        return self._index.list_summaries(listing)

    def file_signatures(self) -> dict[str, FileSignature]:
        """Every session on disk with its files' signature (see ``changes.ChangeScanner``)."""
        return self._changes.file_signatures()

    def journal_since(
        self, session_id: str, inode: int, offset: int
    ) -> tuple[list[dict[str, Any]], int] | None:
        """Thoughts of the complete journal lines after byte ``offset``, and the new offset."""
        return self._changes.journal_since(session_id, inode, offset)

    def snapshot(self, session_id: str) -> SessionSnapshot | None:
        """The session's name and thoughts with the signature of the files they were read from."""
        if not self.exists(session_id):
            self._gone(session_id)
            return None
        with self.session_lock(session_id):
            state = self._refresh(session_id)
            if state is None:
                return None
            return SessionSnapshot(
                name=str(state.meta.get("name") or session_id),
                thoughts=list(state.thoughts),
                last_seq=state.last_seq,
                signature=FileSignature(state.doc_signature, state.journal_inode, state.journal_offset),
            )

    def default_session(self, member: str) -> str | None:
        """The session ``member``'s calls without ``session_id`` go to."""
        return self._defaults.default_session(member)

    def set_default_session(self, member: str, session_id: str) -> None:
        """Point ``member``'s calls without ``session_id`` at ``session_id`` (other members' stay)."""
        self._defaults.set_default_session(member, session_id)
