"""Durable thinking sessions on disk, cheap to append to and safe across processes.

Layout under the plugin's data folder::

    sessions/<id>.json        the compacted document (the spec's ThinkingSession, plus format_version
                              and last_seq, the sequence number of the last thought it holds)
    sessions/<id>.journal     JSON lines, one per thought added since the last compaction
    backups/<id>/<stamp>-s<seq>[-deleted].json   the last 10 copies, taken at compaction and before
                              deletes/imports (a delete's ends in -deleted; restore_session reads them)
    index.jsonl               one summary line per change (creation, compaction, status, deletion)
    default-sessions.json     per member, which session their calls without ``session_id`` go to
    default-session.json      the one pointer of before members were recorded: the default of every
                              member who has none of their own yet (read, never written now)
    .locks/                   lock files

Adding a thought takes the session's cross-process lock, reads only the journal bytes other
processes appended since this process last looked, appends one line and returns: the cost
does not grow with the session. The line is written (reaching the OS, so it survives a
SIGKILL) before the answer; fsync follows within a second from a timer thread, and always
at compaction. Every ``compact_every`` thoughts the journal is folded into the document
(atomic write), a backup is taken and the journal starts afresh; sequence numbers make a
crash between those steps harmless (journal lines the document already holds are skipped).
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from contextlib import AbstractContextManager

    from hostd_deep_thinking.search import Hit, Query

from hostd_deep_thinking.jsonshape import shape_problem

FORMAT_VERSION = 1
BACKUPS_KEPT = 10
CACHED_SESSIONS = 64
#: How long after a change a folder's modification time is not trusted to reveal the next change
#: (file systems keep coarse timestamps: a change in the same tick leaves the time as it was).
_RACY_NS = 2_000_000_000
#: Ends the name of the backup a delete takes, so a restore finds it among later backups.
DELETED_LABEL = "-deleted"


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


class StoreError(Exception):
    """A condition the tools turn into an error envelope (they own the wording)."""


class SessionNotFound(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class SessionExists(StoreError):
    def __init__(self, session_id: str) -> None:
        super().__init__(session_id)
        self.session_id = session_id


class BackupNotFound(StoreError):
    """No (readable, matching) backup of the session; ``available`` names its backups, newest first."""

    def __init__(self, session_id: str, available: list[str]) -> None:
        super().__init__(session_id)
        self.session_id = session_id
        self.available = available


class SessionUnreadable(StoreError):
    """The document is damaged and neither a backup nor the journal can rebuild it."""

    def __init__(self, session_id: str, problem: str, kept_at: str | None) -> None:
        super().__init__(problem)
        self.session_id = session_id
        self.problem = problem
        self.kept_at = kept_at


def encode_line(record: dict[str, Any]) -> bytes:
    return (json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def journal_line(seq: int, thought: dict[str, Any], adjustment: dict[str, Any] | None) -> bytes:
    """One journal line; ``end`` repeats the sequence number so a reader can find it at the file's tail."""
    record: dict[str, Any] = {"seq": seq, "thought": thought}
    if adjustment is not None:
        record["adjustment"] = adjustment
    record["end"] = seq
    return encode_line(record)


@dataclass
class SessionState:
    """One session as this process knows it, and how far it has read the files."""

    meta: dict[str, Any]
    thoughts: list[dict[str, Any]] = field(default_factory=list)
    adjustments: list[dict[str, Any]] = field(default_factory=list)
    latest_by_label: dict[int, int] = field(default_factory=dict)
    branches: dict[str, list[int]] = field(default_factory=dict)
    last_seq: int = 0
    compacted_seq: int = 0
    doc_signature: tuple[int, int, int] | None = None
    journal_inode: int | None = None
    journal_offset: int = 0
    notes: list[dict[str, Any]] = field(default_factory=list)  # repairs not yet reported to a caller
    max_regular_label: int = 0

    @property
    def session_id(self) -> str:
        return str(self.meta["session_id"])

    @classmethod
    def from_document(cls, document: dict[str, Any]) -> SessionState:
        meta = {key: value for key, value in document.items() if key not in ("thoughts", "adjustments")}
        state = cls(meta=meta)
        for thought in document.get("thoughts", []):
            state.apply(thought, None)
        state.adjustments = list(document.get("adjustments", []))
        state.last_seq = max(int(document.get("last_seq", 0)), state.last_seq)
        state.compacted_seq = state.last_seq
        return state

    def note(self, problem: str) -> None:
        """Record a repair: kept in the document's recovery log and reported to the current caller."""
        entry = {"time": utc_now(), "problem": problem, "recovered_from": "journal"}
        self.meta.setdefault("recovery_log", []).append(entry)
        self.notes.append(entry)

    def apply(self, thought: dict[str, Any], adjustment: dict[str, Any] | None) -> None:
        seq = int(thought["seq"])
        self.thoughts.append(thought)
        self.latest_by_label[int(thought["thought_number"])] = seq
        branch_id = thought.get("branch_id")
        if branch_id and thought.get("branch_from_thought") is not None:
            self.branches.setdefault(branch_id, []).append(seq)
        elif thought.get("type") == "regular":
            self.max_regular_label = max(self.max_regular_label, int(thought["thought_number"]))
        if adjustment is not None:
            self.adjustments.append(adjustment)
        self.last_seq = max(self.last_seq, seq)
        self.meta["total_thoughts"] = thought.get("total_thoughts", self.meta.get("total_thoughts"))
        stamp = thought.get("timestamp")
        if stamp and stamp > str(self.meta.get("updated_at", "")):
            self.meta["updated_at"] = stamp

    def to_document(self) -> dict[str, Any]:
        document = dict(self.meta)
        document["format_version"] = FORMAT_VERSION
        document["last_seq"] = self.last_seq
        document["adjustments"] = self.adjustments
        document["thoughts"] = self.thoughts
        return document

    def summary(self) -> dict[str, Any]:
        meta = self.meta
        return {
            "session_id": meta["session_id"],
            "name": meta.get("name", meta["session_id"]),
            "description": meta.get("description", ""),
            "status": meta.get("status", "active"),
            "created_at": meta.get("created_at", ""),
            "updated_at": meta.get("updated_at", ""),
            "thought_count": len(self.thoughts),
            "total_thoughts": meta.get("total_thoughts"),
            "template_id": meta.get("template_id"),
            "is_default": bool(meta.get("is_default", False)),
            "created_by": meta.get("created_by"),
            "metadata": meta.get("metadata", {}),
            "branches": list(self.branches),
        }


def new_document(
    session_id: str,
    *,
    name: str,
    description: str = "",
    metadata: dict[str, Any] | None = None,
    template_id: str | None = None,
    total_thoughts: int | None = None,
    is_default: bool = False,
    created_by: str | None = None,
) -> dict[str, Any]:
    """A new, empty session; ``created_by`` is the member creating it (None only for internal repairs)."""
    now = utc_now()
    return {
        "format_version": FORMAT_VERSION,
        "session_id": session_id,
        "name": name,
        "description": description,
        "created_at": now,
        "updated_at": now,
        "status": "active",
        "metadata": metadata or {},
        "template_id": template_id,
        "is_default": is_default,
        "created_by": created_by,
        "total_thoughts": total_thoughts,
        "last_seq": 0,
        "recovery_log": [],
        "adjustments": [],
        "thoughts": [],
    }


_STATUSES = ("active", "completed", "archived")
_THOUGHT_TYPES = ("regular", "revision", "branch")
_ADJUSTMENT_REASONS = ("needs_more_thoughts", "thought_number_exceeds_total", "client_raised_total")


def _expect(ok: bool, problem: str) -> None:
    if not ok:
        raise ValueError(problem)


def check_thought(thought: Any) -> dict[str, Any]:
    """A stored thought has the fields every answer shows, with their types; raises ValueError otherwise."""
    _expect(isinstance(thought, dict), "a thought is not an object")
    _expect(isinstance(thought.get("seq"), int), "a thought has no sequence number")
    _expect(isinstance(thought.get("thought_number"), int), "a thought has no thought_number")
    _expect(isinstance(thought.get("content"), str), f"thought #{thought['seq']} has no text")
    _expect(
        thought.get("type", "regular") in _THOUGHT_TYPES, f"thought #{thought['seq']} has an unknown type"
    )
    for name in ("branch_id", "timestamp", "stage", "by"):
        _expect(isinstance(thought.get(name) or "", str), f"thought #{thought['seq']}'s {name} is not text")
    tags = thought.get("tags", [])
    _expect(
        isinstance(tags, list) and all(isinstance(tag, str) for tag in tags),
        f"thought #{thought['seq']}'s tags are not a list of text",
    )
    for name in (
        "revises_thought",
        "branch_from_thought",
        "total_thoughts",
        "revises_seq",
        "branch_from_seq",
    ):
        _expect(
            isinstance(thought.get(name) or 0, int), f"thought #{thought['seq']}'s {name} is not a number"
        )
    return thought


def check_document(document: Any) -> dict[str, Any]:
    """The shape a session document must have to be loaded and shown; raises ValueError otherwise.

    Checked in full when a document is read, so a damaged or hand-edited file is a READ_ERROR
    (or is rebuilt from a backup) instead of an answer that fails half-way.
    """
    _expect(isinstance(document, dict), "the document is not a JSON object")
    _expect(isinstance(document.get("session_id"), str), "the document has no session_id")
    _expect(document.get("status", "active") in _STATUSES, "the document's status is unknown")
    for name in ("name", "description", "created_at", "updated_at"):
        _expect(isinstance(document.get(name, ""), str), f"the document's {name} is not text")
    _expect(
        isinstance(document.get("total_thoughts") or 0, int), "the document's total_thoughts is not a number"
    )
    _expect(isinstance(document.get("template_id") or "", str), "the document's template_id is not text")
    _expect(isinstance(document.get("created_by") or "", str), "the document's created_by is not text")
    metadata = document.get("metadata", {})
    _expect(isinstance(metadata, dict), "the document's metadata is not an object")
    problem = shape_problem(metadata)
    _expect(problem is None, f"the document's metadata cannot be shown ({problem})")
    _expect(isinstance(document.get("thoughts", []), list), "the document's thoughts are not a list")
    for thought in document.get("thoughts", []):
        check_thought(thought)
    adjustments = document.get("adjustments", [])
    _expect(isinstance(adjustments, list), "the document's adjustments are not a list")
    for adjustment in adjustments:
        check_adjustment(adjustment)
    return document


def check_adjustment(adjustment: Any) -> dict[str, Any]:
    """A recorded raise of the total, as answers show it; raises ValueError otherwise."""
    _expect(isinstance(adjustment, dict), "an adjustment is not an object")
    _expect(
        all(isinstance(adjustment.get(name), int) for name in ("from_total", "to_total", "sequence"))
        and isinstance(adjustment.get("time"), str)
        and adjustment.get("reason") in _ADJUSTMENT_REASONS,
        "an adjustment lacks its totals, time, reason or sequence",
    )
    return adjustment


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


@dataclass(frozen=True)
class Appended:
    """What one ``append`` did, copied under the lock so other threads cannot change it."""

    thought: dict[str, Any]
    adjustment: dict[str, Any] | None
    created: bool
    thought_count: int
    branches: list[str]
    template_id: str | None
    max_regular_label: int
    notes: list[dict[str, Any]]
    compaction_due: bool = False


class SessionBackend(Protocol):
    """What the tools need from a sessions store: ``SessionStore`` (files, the default) and
    ``pgstore.PostgresSessionStore`` (the team database) both provide it, with the same rules."""

    def load(self, session_id: str) -> SessionState | None: ...
    def exists(self, session_id: str) -> bool: ...
    def create(self, document: dict[str, Any], *, replace: bool = False) -> SessionState: ...
    def append(
        self,
        session_id: str,
        plan: Callable[[SessionState], tuple[dict[str, Any], dict[str, Any] | None]],
        *,
        create: Callable[[], dict[str, Any]] | None = None,
        blocking: bool = True,
    ) -> Appended: ...
    def compact(self, session_id: str) -> SessionState: ...
    def update_meta(
        self, session_id: str, change: Callable[[SessionState], Any]
    ) -> tuple[SessionState, Any]: ...
    def delete(self, session_id: str) -> str | None: ...
    def backup_id(self, session_id: str, kept: str) -> str | None: ...
    def backup_names(self, session_id: str) -> list[str]: ...
    def restore(
        self, session_id: str, backup_name: str | None = None, *, replace: bool = False
    ) -> tuple[SessionState, str, bool]: ...
    def list_summaries(
        self, status: str | None, limit: int, created_by: str | None = None
    ) -> tuple[list[dict[str, Any]], int]: ...
    def session_lock(self, session_id: str) -> AbstractContextManager[None]: ...
    def default_session(self, member: str) -> str | None: ...
    def set_default_session(self, member: str, session_id: str) -> None: ...
    def close(self) -> None: ...


class Searcher(Protocol):
    """Full-text search over a store's thoughts: ``search.SearchIndex`` beside the files, or the
    PostgreSQL store itself."""

    def search(self, query: Query, session_id: str | None, limit: int) -> tuple[list[Hit], bool, bool]: ...


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


class WouldBlock(Exception):
    """A non-blocking append found work that should not run on the event loop (wait, load, create)."""


@dataclass
class _JournalDigest:
    """One journal as listing needs it: per line (seq, branch id, total, timestamp), read up to ``offset``."""

    inode: int
    offset: int = 0
    thoughts: list[tuple[int, str | None, int | None, str | None]] = field(default_factory=list)


def index_entry(state: SessionState, document_size: int) -> dict[str, Any]:
    """The index line of a compacted session: its summary, the last sequence the document holds
    (journal lines after it are newer) and the document's size (a different size means look again)."""
    return {**state.summary(), "last_seq": state.last_seq, "doc_size": document_size}


@dataclass
class _IndexCache:
    inode: int | None = None
    offset: int = 0
    lines: int = 0
    entries: dict[str, dict[str, Any]] = field(default_factory=dict)


def _read_from(fd: int, offset: int, size: int) -> bytes:
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


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _stat(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


class SessionStore:
    """All sessions of one data folder. Thread-safe; several processes may share the folder."""

    def __init__(
        self,
        root: Path,
        *,
        compact_every: int = 256,
        sync_interval: float = 1.0,
        lock_timeout: float = 30.0,
    ) -> None:
        self.root = root
        self.sessions_dir = root / "sessions"
        self.backups_dir = root / "backups"
        self.lock_dir = root / ".locks"
        self.index_path = root / "index.jsonl"
        self.default_path = root / "default-session.json"
        self.member_defaults_path = root / "default-sessions.json"
        for folder in (self.sessions_dir, self.backups_dir, self.lock_dir):
            folder.mkdir(parents=True, exist_ok=True)
        self.compact_every = max(1, compact_every)
        self.sync_interval = sync_interval
        self.lock_timeout = lock_timeout
        self._cache: OrderedDict[str, SessionState] = OrderedDict()
        self._journals: dict[str, _Journal] = {}
        self._guard = threading.Lock()  # the two dicts above
        self._index = _IndexCache()
        self._index_guard = threading.Lock()  # also the two listing caches below
        self._digests: dict[str, _JournalDigest] = {}
        self._verdicts: dict[str, tuple[tuple[int, int, int], str | None]] = {}
        self._default: tuple[tuple[int, int] | None, str | None] = (None, None)
        self._member_defaults: tuple[tuple[int, int] | None, dict[str, str]] = (None, {})
        self._timer: threading.Timer | None = None
        self._timer_guard = threading.Lock()
        self._closed = False
        self.marker_path = self.sessions_dir / ".appended"
        self._scan = _Scan(None, -1, {}, {})  # what file_signatures saw last

    # --- paths and locks ---------------------------------------------------------------

    def document_path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.json"

    def journal_path(self, session_id: str) -> Path:
        return self.sessions_dir / f"{session_id}.journal"

    @contextlib.contextmanager
    def _lock(self, path: Path) -> Iterator[None]:
        """The shared library's lock, for files off the hot path (the index)."""
        from hostd_fs import path_lock

        with path_lock(path, lock_dir=self.lock_dir, timeout=self.lock_timeout):
            yield

    def _session_lock_file(self, session_id: str) -> Path:
        return self.lock_dir / f"session-{session_id}.lock"

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
            while len(self._cache) > CACHED_SESSIONS:
                old_id, _ = self._cache.popitem(last=False)
                journal = self._journals.pop(old_id, None)
                if journal is not None:
                    evicted.append(journal)
        for journal in evicted:
            journal.close()

    def _forget(self, session_id: str) -> None:
        with self._guard:
            self._cache.pop(session_id, None)
            journal = self._journals.pop(session_id, None)
        if journal is not None:
            journal.close()

    def _refresh(self, session_id: str, *, may_load: bool = True) -> SessionState | None:
        """The session as it is on disk now (caller holds its lock); ``None`` when it does not exist.

        With ``may_load=False`` only the cheap incremental path is taken; anything more raises
        ``WouldBlock``.
        """
        doc_stat = _stat(self.document_path(session_id))
        journal_stat = _stat(self.journal_path(session_id))
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
        doc_stat = _stat(document_path)
        state.doc_signature = (doc_stat.st_ino, doc_stat.st_size, doc_stat.st_mtime_ns) if doc_stat else None
        journal_stat = _stat(self.journal_path(session_id))
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
        note: dict[str, Any] = {"time": utc_now(), "problem": problem}
        for backup in sorted(self._backup_files(session_id), reverse=True):
            try:
                document = check_document(json.loads(backup.read_bytes()))
            except (OSError, ValueError, UnicodeDecodeError):
                continue
            if document["session_id"] != session_id:
                continue
            note["recovered_from"] = f"backup {backup.name} and journal"
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
        with self.session_lock(session_id):
            return self._refresh(session_id)

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
        data = json.dumps(state.to_document(), ensure_ascii=False)
        atomic_write(self.document_path(session_id), data)
        self._write_backup(session_id, data, state.last_seq)
        journal_path = self.journal_path(session_id)
        if journal_path.exists():
            atomic_write(journal_path, "")
        self._finish_compaction(state)
        return state

    def append(
        self,
        session_id: str,
        plan: Callable[[SessionState], tuple[dict[str, Any], dict[str, Any] | None]],
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

        lock = kept_lock(self._session_lock_file(session_id))
        if not lock.acquire(0):
            raise WouldBlock
        try:
            return self._append_locked(session_id, plan, create, blocking=False)
        finally:
            lock.release()

    def _append_locked(
        self,
        session_id: str,
        plan: Callable[[SessionState], tuple[dict[str, Any], dict[str, Any] | None]],
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
        _write_all(journal.fd, line)
        state.journal_offset += len(line)
        state.apply(thought, adjustment)
        journal.dirty = True
        self._mark_appended()
        self._schedule_sync()
        due = state.last_seq - state.compacted_seq >= self.compact_every
        if due and blocking:
            self._compact(state)
        return Appended(
            compaction_due=due and not blocking,
            thought=thought,
            adjustment=adjustment,
            created=created,
            thought_count=len(state.thoughts),
            branches=list(state.branches),
            template_id=state.meta.get("template_id"),
            max_regular_label=state.max_regular_label,
            notes=notes,
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

    def _compact(self, state: SessionState, *, backup_label: str = "") -> Path:
        """Fold the journal into the document, take a backup, start a new journal (lock held).

        Returns the backup's path; ``backup_label`` ends its name (deletes mark theirs).
        """
        from hostd_fs import atomic_write

        session_id = state.session_id
        data = json.dumps(state.to_document(), ensure_ascii=False)
        atomic_write(self.document_path(session_id), data)
        backup = self._write_backup(session_id, data, state.last_seq, backup_label)
        with self._guard:
            journal = self._journals.pop(session_id, None)
        if journal is not None:
            journal.close()
        journal_path = self.journal_path(session_id)
        if journal_path.exists():
            atomic_write(journal_path, "")
        self._finish_compaction(state)
        return backup

    def _finish_compaction(self, state: SessionState) -> None:
        session_id = state.session_id
        doc_stat = os.stat(self.document_path(session_id))
        state.doc_signature = (doc_stat.st_ino, doc_stat.st_size, doc_stat.st_mtime_ns)
        journal_stat = _stat(self.journal_path(session_id))
        state.journal_inode = journal_stat.st_ino if journal_stat else None
        state.journal_offset = 0
        state.compacted_seq = state.last_seq
        self._remember(state)
        self._index_put(index_entry(state, doc_stat.st_size))

    def compact(self, session_id: str) -> SessionState:
        with self.session_lock(session_id):
            state = self._refresh(session_id)
            if state is None:
                raise SessionNotFound(session_id)
            if state.last_seq != state.compacted_seq:
                self._compact(state)
            return state

    def update_meta(self, session_id: str, change: Callable[[SessionState], Any]) -> tuple[SessionState, Any]:
        """Change a session's metadata (status, ...) and compact, so the change is in the document."""
        with self.session_lock(session_id):
            state = self._refresh(session_id)
            if state is None:
                raise SessionNotFound(session_id)
            result = change(state)
            state.meta["updated_at"] = utc_now()
            self._compact(state)
            return state, result

    def delete(self, session_id: str) -> str | None:
        """Back the session up, then remove it; returns the backup's path."""
        with self.session_lock(session_id):
            try:
                state = self._refresh(session_id)
            except SessionUnreadable:
                state = None
                kept = self._set_aside(session_id)  # the damaged file stays on disk, renamed
                self._forget(session_id)
                self.journal_path(session_id).unlink(missing_ok=True)
                self._index_put({"session_id": session_id, "deleted": True})
                return kept
            if state is None:
                raise SessionNotFound(session_id)
            backup = self._compact(state, backup_label=DELETED_LABEL)
            self._forget(session_id)
            # Journal first: a crash in between leaves a complete (compacted) session, never a half one.
            self.journal_path(session_id).unlink(missing_ok=True)
            self.document_path(session_id).unlink(missing_ok=True)
            self._index_put({"session_id": session_id, "deleted": True})
            return str(backup)

    def restore(
        self, session_id: str, backup_name: str | None = None, *, replace: bool = False
    ) -> tuple[SessionState, str, bool]:
        """Bring a session back from one of its backups: the named one, else the one its last delete took.

        Without a name, the newest backup taken by a delete is used (later backups may belong
        to a new session created under the same id since), else the newest readable one.
        Returns the state, the backup's name and whether a live session was replaced.
        """
        backups = self.backups(session_id)
        if backup_name is not None:
            chosen = [path for path in backups if path.name == backup_name]
            if not chosen:
                raise BackupNotFound(session_id, [path.name for path in reversed(backups)])
        else:
            chosen = sorted(
                backups, key=lambda path: (path.stem.endswith(DELETED_LABEL), path.name), reverse=True
            )
        document = None
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
                break
            document = None
        if document is None:
            raise BackupNotFound(session_id, [path.name for path in reversed(backups)])
        replaced = self.exists(session_id)
        state = self.create(document, replace=replace)
        return state, path.name, replaced

    # --- backups -----------------------------------------------------------------------

    def _backup_files(self, session_id: str) -> list[Path]:
        folder = self.backups_dir / session_id
        return list(folder.glob("*.json")) if folder.is_dir() else []

    def _write_backup(self, session_id: str, data: str, seq: int, label: str = "") -> Path:
        from hostd_fs import atomic_write

        folder = self.backups_dir / session_id
        folder.mkdir(parents=True, exist_ok=True)
        stamp = datetime.datetime.now(datetime.UTC).strftime("%Y%m%dT%H%M%S%fZ")
        path = folder / f"{stamp}-s{seq:04d}{label}.json"
        atomic_write(path, data)
        for old in sorted(self._backup_files(session_id))[:-BACKUPS_KEPT]:
            old.unlink(missing_ok=True)
        return path

    def backups(self, session_id: str) -> list[Path]:
        return sorted(self._backup_files(session_id))

    def backup_names(self, session_id: str) -> list[str]:
        """The session's backups as ``restore_session`` names them, newest first."""
        return [path.name for path in reversed(self.backups(session_id))]

    def backup_id(self, session_id: str, kept: str) -> str | None:
        """The backup name of what ``delete`` kept; None when it was a damaged document set aside."""
        path = Path(kept)
        return path.name if path.parent == self.backups_dir / session_id else None

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
        for journal in journals:
            with contextlib.suppress(OSError):
                journal.close()
        from hostd_fs import close_kept_locks

        close_kept_locks(self.lock_dir)

    # --- the index ---------------------------------------------------------------------

    def _index_put(self, entry: dict[str, Any]) -> None:
        """Append one summary line to the index (lock held for the index, not the session)."""
        line = encode_line(entry)
        with self._lock(self.index_path):
            flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)
            fd = os.open(self.index_path, flags, 0o600)
            try:
                size = os.fstat(fd).st_size
                if size and _read_from(fd, size - 1, size) != b"\n":
                    line = b"\n" + line  # isolate a line a crashed writer left unfinished
                _write_all(fd, line)
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
        index_stat = _stat(self.index_path)
        if index_stat is None:
            if any(self.sessions_dir.glob("*.json")):
                with self._lock(self.index_path):
                    if not self.index_path.exists():
                        self._rebuild_index()
                index_stat = _stat(self.index_path)
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
            with open(self.journal_path(session_id), "rb") as handle:
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
            check_document(json.loads(self.document_path(session_id).read_bytes()))
            problem = None
        except FileNotFoundError:
            problem = None  # replaced meanwhile; a later listing looks again
        except (OSError, ValueError, UnicodeDecodeError, RecursionError) as exc:
            problem = f"the session document is damaged ({exc})"
        self._verdicts[session_id] = (signature, problem)
        return problem

    def list_summaries(
        self, status: str | None, limit: int, created_by: str | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """Sessions newest first, from the index plus what their journals added since compaction.

        The index is written at compaction only (adding a thought never touches it), so each
        entry is brought up to date from its journal: thought count, total, branches, update
        time. Journals are read incrementally and documents only when their size differs from
        the one the index recorded; a document found damaged is listed with ``unreadable``.
        """
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
        if status is not None:
            rows = [row for row in rows if row.get("status") == status]
        if created_by is not None:
            rows = [row for row in rows if row.get("created_by") == created_by]
        rows.sort(key=lambda row: (str(row.get("updated_at", "")), str(row["session_id"])), reverse=True)
        return rows[:limit], len(rows)

    def _checked_row(self, session_id: str, document: os.stat_result, row: dict[str, Any]) -> dict[str, Any]:
        """The row of a session whose document changed behind the index: as it is, repaired, or flagged."""
        if self._document_problem(session_id, document) is None:
            return row
        try:
            state = self.load(session_id)  # rebuilds from a backup and the journal when it can
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

    # --- what the search index follows ---------------------------------------------------

    def file_signatures(self) -> dict[str, FileSignature]:
        """Every session on disk with its files' signature: a changed signature means changed thoughts.

        Everything but an append (compaction, status changes, deletes, restores, imports, a
        journal's creation or truncation) creates, renames or removes files, which changes the
        sessions folder's modification time; every append touches the ``.appended`` marker.
        So documents are looked at again only when the folder changed, journals only when the
        folder or the marker did, and an unchanged folder costs two ``stat`` calls. A time
        within ``_RACY_NS`` of the look is not trusted (timestamps are coarse: a change in the
        same tick would keep the time), so the next look checks again.
        """
        started = time.time_ns()
        folder = os.stat(self.sessions_dir)
        folder_key = (folder.st_ino, folder.st_mtime_ns)
        marker = _stat(self.marker_path)
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
        settled = started - _RACY_NS
        self._scan = _Scan(
            folder_key=folder_key if folder.st_mtime_ns < settled else None,
            marker_key=marker_key if marker_key is None or marker_key < settled else -1,
            documents=documents,
            signatures=signatures,
        )
        return dict(signatures)

    def snapshot(self, session_id: str) -> SessionSnapshot | None:
        """The session's name and thoughts with the signature of the files they were read from."""
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

    def journal_since(
        self, session_id: str, inode: int, offset: int
    ) -> tuple[list[dict[str, Any]], int] | None:
        """Thoughts of the complete journal lines after byte ``offset``, and the new offset.

        ``None`` when the journal is no longer the file with that inode (it was compacted or
        replaced): the caller reads the whole session again. Needs no lock: lines are only
        ever appended, and a line still being written is left for later.
        """
        try:
            with open(self.journal_path(session_id), "rb") as handle:
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

    # --- the default session ---------------------------------------------------------------

    def default_session(self, member: str) -> str | None:
        """The session ``member``'s calls without ``session_id`` go to: their own pointer, else the
        one pointer of before members were recorded (so an upgrade continues the same session)."""
        own = self._member_pointers().get(member)
        return own if own is not None else self._shared_default()

    def _member_pointers(self) -> dict[str, str]:
        """Every member's default session (cached until the file changes)."""
        pointer = _stat(self.member_defaults_path)
        key = (pointer.st_ino, pointer.st_mtime_ns) if pointer else None
        cached_key, cached = self._member_defaults
        if key == cached_key:
            return cached
        pointers: dict[str, str] = {}
        if pointer is not None:
            with contextlib.suppress(OSError, ValueError, KeyError, TypeError, AttributeError):
                raw = json.loads(self.member_defaults_path.read_bytes())
                pointers = {str(member): str(entry["session_id"]) for member, entry in raw.items()}
        self._member_defaults = (key, pointers)
        return pointers

    def _shared_default(self) -> str | None:
        """The pointer written before members were recorded (cached until the file changes)."""
        pointer = _stat(self.default_path)
        key = (pointer.st_ino, pointer.st_mtime_ns) if pointer else None
        cached_key, cached_id = self._default
        if key == cached_key:
            return cached_id
        session_id = None
        if pointer is not None:
            try:
                session_id = str(json.loads(self.default_path.read_bytes())["session_id"])
            except (OSError, ValueError, KeyError, TypeError):
                session_id = None
        self._default = (key, session_id)
        return session_id

    def set_default_session(self, member: str, session_id: str) -> None:
        """Point ``member``'s calls without ``session_id`` at ``session_id`` (other members' stay)."""
        from hostd_fs import atomic_write

        with self._lock(self.member_defaults_path):
            try:
                raw = json.loads(self.member_defaults_path.read_bytes())
                pointers = raw if isinstance(raw, dict) else {}
            except (OSError, ValueError):
                pointers = {}
            pointers[member] = {"session_id": session_id, "since": utc_now()}
            atomic_write(self.member_defaults_path, json.dumps(pointers, ensure_ascii=False))
        self._member_defaults = (None, {})
