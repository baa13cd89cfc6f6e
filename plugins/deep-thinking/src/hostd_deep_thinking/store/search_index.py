"""Full-text search over every session's thoughts: an SQLite FTS5 index beside the sessions.

``search.db`` in the plugin's data folder is derived data: it can always be rebuilt from
the sessions, and is (when missing, damaged, or of an older layout). Adding a thought never
touches it, so ``sequential_thinking`` costs what it did; instead each search first brings
the index up to date from the sessions' files, reading only what changed since the last
look: the new journal lines of a session that grew, the whole session when its document
was rewritten (compaction, status change, restore, import), nothing for the rest. Sessions
whose files are gone (deleted) leave the index in the same step, so they are never found.

What it holds and how a query reads it is the query language's (``hostd_deep_thinking.search``).

The file is declared as a ``hostd_db.Schema`` (``index_schema``: SQLite only) and opened through
``hostd_db.open_database``, like every plugin's tables, so a file another process keeps locked
is FILE_LOCKED as everywhere; but the plugin opens it itself, not the host
(``hostd_database_schema``): it is derived data this module deletes and rebuilds when damaged,
it never moves to the team database (there the sessions' own table is searched), and the
host's database of a plugin is the one it copies and migrates for ``hostd db``.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hostd_db import Connection, Database, Only, Schema, open_database

from hostd_deep_thinking.search import Hit, Query, words_text
from hostd_deep_thinking.store.changes import FileSignature
from hostd_deep_thinking.store.refusals import SessionUnreadable

if TYPE_CHECKING:
    from hostd_deep_thinking.store.files import SessionStore

INDEX_FILE = "search.db"

_STATEMENTS = """
CREATE TABLE thoughts (
    id INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    thought_number INTEGER NOT NULL,
    kind TEXT NOT NULL,
    branch_id TEXT,
    stage TEXT,
    tags TEXT NOT NULL,
    content TEXT NOT NULL
);
CREATE INDEX thoughts_by_session ON thoughts (session_id, seq);
CREATE VIRTUAL TABLE thoughts_fts USING fts5 (
    words, labels, session_id UNINDEXED, tokenize = 'unicode61 remove_diacritics 2'
);
INSERT INTO thoughts_fts (thoughts_fts, rank) VALUES ('rank', 'bm25(1.0, 0.5, 0.0)');
CREATE TABLE sessions (
    session_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    signature TEXT NOT NULL,
    last_seq INTEGER NOT NULL
)
"""


def index_schema(file_name: str = INDEX_FILE) -> Schema:
    """The index file's tables: one migration (files of earlier releases are at ``user_version`` 1)."""
    statements = [statement.strip() for statement in _STATEMENTS.split(";") if statement.strip()]
    return Schema([[Only("sqlite", *statements)]], sqlite_file=file_name)


def _damaged(exc: sqlite3.DatabaseError) -> bool:
    """Whether the index file itself is at fault (corrupt, not SQLite, foreign tables), not a busy lock
    or a connection closed under a query, which a rebuild would not cure."""
    if isinstance(exc, sqlite3.ProgrammingError | sqlite3.InterfaceError):
        return False
    return not (isinstance(exc, sqlite3.OperationalError) and ("locked" in str(exc) or "busy" in str(exc)))


def _signature(text: str) -> FileSignature:
    """A signature as the index table keeps it (JSON), read back."""
    document, inode, size = json.loads(text)
    return FileSignature(tuple(document) if document is not None else None, inode, size)


class SearchIndex:
    """The FTS5 index of one data folder, brought up to date before each search.

    Thread-safe (one catch-up at a time per process); several processes may share the file
    (WAL; each catch-up is one write transaction that re-reads what the others recorded).
    """

    def __init__(self, store: SessionStore, path: Path) -> None:
        self.store = store
        self.path = path
        self._database: Database | None = None
        self._opened_inode: int | None = None
        self._known: dict[str, FileSignature] = {}  # what the index holds per session, as last seen
        self._guard = threading.Lock()  # one catch-up at a time
        self._open_guard = threading.Lock()  # opening and reopening the file

    def _db(self) -> Database:
        """The index database; opened again (so rebuilt) when its file was deleted or replaced."""
        with self._open_guard:
            found = self.path.stat().st_ino if self.path.exists() else None
            if self._database is not None and found != self._opened_inode:
                self._database.close()
                self._database, self._known = None, {}
            if self._database is None:
                database = open_database(
                    index_schema(), "deep-thinking", data_dir=self.path.parent, team=None
                )
                database.migrate()  # creates the file
                self._database = database
                self._opened_inode = self.path.stat().st_ino
            return self._database

    def close(self) -> None:
        if self._database is not None:
            self._database.close()

    def _discard(self) -> None:
        """Drop a damaged index file: it is rebuilt from the sessions."""
        with self._open_guard:
            self.close()
            self._database = None
            self._known = {}
        for suffix in ("", "-wal", "-shm"):
            Path(f"{self.path}{suffix}").unlink(missing_ok=True)

    def search(self, query: Query, session_id: str | None, limit: int) -> tuple[list[Hit], bool, bool]:
        """Hits best first, whether more were found than ``limit``, and whether every term was required."""
        try:
            return self._search(query, session_id, limit)
        except sqlite3.DatabaseError as exc:
            if not _damaged(exc):
                raise
            self._discard()  # damaged or foreign file: rebuild once
            return self._search(query, session_id, limit)

    def _search(self, query: Query, session_id: str | None, limit: int) -> tuple[list[Hit], bool, bool]:
        self.refresh()
        rows, strict = self._matches(query.all_terms, session_id, limit + 1), True
        if not rows and len(query.terms) > 1:
            rows, strict = self._matches(query.any_term, session_id, limit + 1), False
        hits = [
            Hit(
                session_id=row["session_id"],
                session_name=row["name"],
                sequence=row["seq"],
                thought_number=row["thought_number"],
                kind=row["kind"],
                branch_id=row["branch_id"],
                stage=row["stage"],
                tags=json.loads(row["tags"]),
                content=row["content"],
                score=-float(row["score"]),
            )
            for row in rows[:limit]
        ]
        return hits, len(rows) > limit, strict

    def _matches(self, expression: str, session_id: str | None, limit: int) -> list[sqlite3.Row]:
        """The best ``limit`` matches: ranked inside FTS5 first, the rows fetched for those alone."""
        where = "thoughts_fts MATCH ?" + (" AND session_id = ?" if session_id else "")
        parameters: list[Any] = [expression, *([session_id] if session_id else []), limit]
        return self._db().read(
            lambda connection: list(
                connection.execute(
                    "SELECT t.session_id, s.name, t.seq, t.thought_number, t.kind, t.branch_id, t.stage, "
                    "t.tags, t.content, best.score FROM ("
                    # Ties in the same order as the outer query (a session's rows are inserted in
                    # sequence order), so the best ``limit`` are the same whatever the limit: a next
                    # page asked with a larger limit never repeats or skips a tied hit.
                    f"SELECT rowid, rank AS score FROM thoughts_fts WHERE {where} "
                    "ORDER BY rank, session_id, rowid LIMIT ?"
                    ") AS best JOIN thoughts t ON t.id = best.rowid "
                    "JOIN sessions s ON s.session_id = t.session_id "
                    "ORDER BY best.score, t.session_id, t.seq",
                    parameters,
                )
            )
        )

    # --- keeping up with the sessions ----------------------------------------------------

    def refresh(self) -> None:
        """Bring the index in step with the sessions on disk, reading only what changed."""
        with self._guard:
            database = self._db()
            if not self._known:
                rows = database.read(
                    lambda connection: connection.execute(
                        "SELECT session_id, signature FROM sessions"
                    ).fetchall()
                )
                self._known = {row["session_id"]: _signature(row["signature"]) for row in rows}
            on_disk = self.store.file_signatures()
            changed = {
                session_id: signature
                for session_id, signature in on_disk.items()
                if self._known.get(session_id) != signature
            }
            gone = [session_id for session_id in self._known if session_id not in on_disk]
            if not changed and not gone:
                return

            def catch_up(connection: Connection) -> None:
                for session_id in gone:
                    self._drop(connection, session_id)
                for session_id, signature in changed.items():
                    self._follow(connection, session_id, signature)

            try:
                database.write(catch_up)
            except BaseException:
                self._known = {}  # rolled back: read what the index holds again next time
                raise

    def _drop(self, connection: Connection, session_id: str) -> None:
        connection.execute(
            "DELETE FROM thoughts_fts WHERE rowid IN (SELECT id FROM thoughts WHERE session_id = ?)",
            (session_id,),
        )
        connection.execute("DELETE FROM thoughts WHERE session_id = ?", (session_id,))
        connection.execute("DELETE FROM sessions WHERE session_id = ?", (session_id,))
        self._known.pop(session_id, None)

    def _follow(self, connection: Connection, session_id: str, signature: FileSignature) -> None:
        """Index what changed in one session: its new journal lines, else all of it."""
        recorded = connection.execute(
            "SELECT signature, last_seq FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        if recorded is not None and _signature(recorded["signature"]) == signature:
            self._known[session_id] = signature  # another process indexed it already
            return
        if recorded is not None:
            held = _signature(recorded["signature"])
            same_document = held.document is not None and held.document == signature.document
            inode, size = held.journal_inode, held.journal_size
            grew = inode is not None and inode == signature.journal_inode and signature.journal_size >= size
            if same_document and grew and inode is not None:
                added = self.store.journal_since(session_id, inode, size)
                if added is not None:
                    thoughts, offset = added
                    fresh = [thought for thought in thoughts if int(thought["seq"]) > recorded["last_seq"]]
                    self._insert(connection, session_id, fresh)
                    last_seq = max([recorded["last_seq"], *(int(t["seq"]) for t in fresh)])
                    grown = FileSignature(signature.document, inode, offset)
                    self._record(connection, session_id, None, grown, last_seq)
                    return
        try:
            snapshot = self.store.snapshot(session_id)
        except SessionUnreadable:
            snapshot = None  # a damaged session has nothing to find until it is repaired
        self._drop(connection, session_id)
        if snapshot is None:
            return
        self._insert(connection, session_id, snapshot.thoughts)
        self._record(connection, session_id, snapshot.name, snapshot.signature, snapshot.last_seq)

    def _record(
        self,
        connection: Connection,
        session_id: str,
        name: str | None,
        signature: FileSignature,
        last_seq: int,
    ) -> None:
        text = json.dumps([signature.document, signature.journal_inode, signature.journal_size])
        if name is None:
            connection.execute(
                "UPDATE sessions SET signature = ?, last_seq = ? WHERE session_id = ?",
                (text, last_seq, session_id),
            )
        else:
            connection.execute(
                "INSERT OR REPLACE INTO sessions (session_id, name, signature, last_seq) VALUES (?, ?, ?, ?)",
                (session_id, name, text, last_seq),
            )
        self._known[session_id] = signature

    @staticmethod
    def _insert(connection: Connection, session_id: str, thoughts: list[dict[str, Any]]) -> None:
        for thought in thoughts:
            tags = [str(tag) for tag in thought.get("tags") or []]
            stage = thought.get("stage")
            cursor = connection.execute(
                "INSERT INTO thoughts (session_id, seq, thought_number, kind, branch_id, stage, tags, "
                "content) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    session_id,
                    int(thought["seq"]),
                    int(thought["thought_number"]),
                    str(thought.get("type") or "regular"),
                    thought.get("branch_id"),
                    stage,
                    json.dumps(tags, ensure_ascii=False),
                    str(thought["content"]),
                ),
            )
            labels = " ".join([str(stage or ""), *tags])
            connection.execute(
                "INSERT INTO thoughts_fts (rowid, words, labels, session_id) VALUES (?, ?, ?, ?)",
                (cursor.lastrowid, words_text(str(thought["content"])), words_text(labels), session_id),
            )
