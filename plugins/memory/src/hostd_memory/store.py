"""The memory store: one SQLite file, its schema, and every query the tools run.

Layout: ``memories`` holds each memory's current state (and its current version number
and change note); ``memory_versions`` holds every earlier version, so version *n* of a
memory is either a row there or the memory itself. ``aliases`` point other URIs at a
memory. Each version names its ``author``, the member who wrote it (``None`` for versions from
before members were recorded); the write methods take it from the caller, so every store of
this plugin records it the same way. Two FTS5 indexes follow ``memories`` through triggers
(see ``search.py`` for what each answers). Writes run in ``BEGIN IMMEDIATE`` transactions
through ``hostd_db.SqliteDatabase``, so threads and processes sharing the file serialise their
read-modify-write steps and version numbers never collide.

The store speaks in plain rows and raises the exceptions below; the tools turn those into
messages in the user's language.
"""

from __future__ import annotations

import datetime
import json
import math
import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from hostd_memory import search as search_text
from hostd_memory.uris import MemoryUri, mentioned_uris, mentions

STATUSES = ("active", "deprecated", "archived", "deleted")
VISIBLE = "m.status != 'deleted'"

_MEMORY_COLUMNS = (
    "m.id, m.uri, m.domain, m.path, m.content, m.priority, m.disclosure, m.status, m.access_count, "
    "m.last_accessed_at, m.created_at, m.updated_at, m.version, m.change, m.change_note, m.tags, m.author"
)
_VERSION_COLUMNS = (
    "version, content, priority, disclosure, status, change, change_note, created_at, tags, author"
)

SCHEMA_V1 = [
    """CREATE TABLE memories (
        id INTEGER PRIMARY KEY,
        uri TEXT NOT NULL UNIQUE,
        domain TEXT NOT NULL,
        path TEXT NOT NULL,
        content TEXT NOT NULL,
        priority INTEGER NOT NULL CHECK (priority BETWEEN 0 AND 10),
        disclosure TEXT NOT NULL DEFAULT '',
        status TEXT NOT NULL DEFAULT 'active'
            CHECK (status IN ('active', 'deprecated', 'archived', 'deleted')),
        access_count INTEGER NOT NULL DEFAULT 0,
        last_accessed_at TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        version INTEGER NOT NULL DEFAULT 1,
        change TEXT NOT NULL DEFAULT 'created',
        change_note TEXT NOT NULL DEFAULT ''
    )""",
    "CREATE INDEX memories_by_priority ON memories (status, priority, updated_at DESC, id DESC)",
    "CREATE INDEX memories_by_domain ON memories (domain, status, priority, updated_at DESC, id DESC)",
    "CREATE INDEX memories_by_update ON memories (status, updated_at DESC, id DESC)",
    """CREATE TABLE memory_versions (
        memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        version INTEGER NOT NULL,
        content TEXT NOT NULL,
        priority INTEGER NOT NULL,
        disclosure TEXT NOT NULL,
        status TEXT NOT NULL,
        change TEXT NOT NULL,
        change_note TEXT NOT NULL DEFAULT '',
        created_at TEXT NOT NULL,
        PRIMARY KEY (memory_id, version)
    )""",
    """CREATE TABLE aliases (
        alias_uri TEXT PRIMARY KEY,
        memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        created_at TEXT NOT NULL
    )""",
    "CREATE INDEX aliases_by_memory ON aliases (memory_id)",
    """CREATE TABLE sessions (
        id INTEGER PRIMARY KEY,
        title TEXT NOT NULL,
        summary TEXT NOT NULL DEFAULT '',
        memory_uri TEXT,
        created_at TEXT NOT NULL
    )""",
    # Substring index (any script, three characters or more); reads its text from memories.
    """CREATE VIRTUAL TABLE memory_fts USING fts5(
        path, content, disclosure, content='memories', content_rowid='id', tokenize='trigram')""",
    # Word and CJK-bigram index over memory_words_text(...); contentless, so it costs only
    # its index. The triggers recompute the same text to delete old entries.
    """CREATE VIRTUAL TABLE memory_words USING fts5(
        path, content, disclosure, content='', tokenize='unicode61 remove_diacritics 2')""",
    """CREATE TRIGGER memories_index_insert AFTER INSERT ON memories BEGIN
        INSERT INTO memory_fts (rowid, path, content, disclosure)
            VALUES (new.id, new.path, new.content, new.disclosure);
        INSERT INTO memory_words (rowid, path, content, disclosure)
            VALUES (new.id, memory_words_text(new.path), memory_words_text(new.content),
                    memory_words_text(new.disclosure));
    END""",
    """CREATE TRIGGER memories_index_delete AFTER DELETE ON memories BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, path, content, disclosure)
            VALUES ('delete', old.id, old.path, old.content, old.disclosure);
        INSERT INTO memory_words (memory_words, rowid, path, content, disclosure)
            VALUES ('delete', old.id, memory_words_text(old.path), memory_words_text(old.content),
                    memory_words_text(old.disclosure));
    END""",
    """CREATE TRIGGER memories_index_update AFTER UPDATE OF path, content, disclosure ON memories
    WHEN old.path IS NOT new.path OR old.content IS NOT new.content OR old.disclosure IS NOT new.disclosure
    BEGIN
        INSERT INTO memory_fts (memory_fts, rowid, path, content, disclosure)
            VALUES ('delete', old.id, old.path, old.content, old.disclosure);
        INSERT INTO memory_words (memory_words, rowid, path, content, disclosure)
            VALUES ('delete', old.id, memory_words_text(old.path), memory_words_text(old.content),
                    memory_words_text(old.disclosure));
        INSERT INTO memory_fts (rowid, path, content, disclosure)
            VALUES (new.id, new.path, new.content, new.disclosure);
        INSERT INTO memory_words (rowid, path, content, disclosure)
            VALUES (new.id, memory_words_text(new.path), memory_words_text(new.content),
                    memory_words_text(new.disclosure));
    END""",
]

# Column weights for BM25: a match in the path says more than one in the content.
BM25_WEIGHTS = "4.0, 1.0, 2.0"


def _schema_v1(conn: sqlite3.Connection) -> None:
    for statement in SCHEMA_V1:
        conn.execute(statement)


def _words_vocabulary_v2(conn: sqlite3.Connection) -> None:
    """How many memories hold each token of memory_words (for inspection: a search counts the tokens it
    needs with queries that stop early, where the vocabulary reads a token's whole list)."""
    conn.execute("CREATE VIRTUAL TABLE memory_words_vocab USING fts5vocab(memory_words, 'row')")


def _tags_and_links_v3(conn: sqlite3.Connection) -> None:
    """Tags (versioned with the memory) and typed links between memories.

    The tag list lives on the memory and on each version as a JSON array of normalised tags, so
    a version is the whole state and a rollback restores tags with content; ``memory_tags`` is
    the lookup table the filters and counts use, kept in step by triggers from that column.
    Links join memory ids (never URIs), so they follow a memory through its aliases; they are
    not versioned, and go with the memory only when it is removed for good (the foreign keys).
    """
    conn.execute("ALTER TABLE memories ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'")
    conn.execute("ALTER TABLE memory_versions ADD COLUMN tags TEXT NOT NULL DEFAULT '[]'")
    conn.execute(
        """CREATE TABLE memory_tags (
            tag TEXT NOT NULL,
            memory_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            PRIMARY KEY (tag, memory_id)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX memory_tags_by_memory ON memory_tags (memory_id)")
    conn.execute(
        """CREATE TRIGGER memories_tags_insert AFTER INSERT ON memories BEGIN
            INSERT OR IGNORE INTO memory_tags (tag, memory_id) SELECT value, new.id FROM json_each(new.tags);
        END"""
    )
    conn.execute(
        """CREATE TRIGGER memories_tags_update AFTER UPDATE OF tags ON memories
        WHEN old.tags IS NOT new.tags BEGIN
            DELETE FROM memory_tags WHERE memory_id = new.id;
            INSERT OR IGNORE INTO memory_tags (tag, memory_id) SELECT value, new.id FROM json_each(new.tags);
        END"""
    )
    conn.execute(
        """CREATE TABLE memory_links (
            from_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            to_id INTEGER NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
            relation TEXT NOT NULL,
            created_at TEXT NOT NULL,
            PRIMARY KEY (from_id, to_id, relation),
            CHECK (from_id != to_id)
        ) WITHOUT ROWID"""
    )
    conn.execute("CREATE INDEX memory_links_by_target ON memory_links (to_id, from_id)")
    # Listings by rank whatever the status (the filters below are checked along the way), and
    # by creation or change time (narrow time windows): see MemoryStore._listing_source.
    conn.execute("CREATE INDEX memories_by_rank ON memories (priority, updated_at DESC, id DESC)")
    conn.execute("CREATE INDEX memories_by_creation ON memories (created_at)")
    conn.execute("CREATE INDEX memories_by_change ON memories (updated_at)")


def _authors_v4(conn: sqlite3.Connection) -> None:
    """Who wrote each version: the member's name on the memory (its current version) and on each
    kept version. Versions written before this have none (NULL: from before members were recorded).
    The index serves ``list_memories(author=...)``."""
    conn.execute("ALTER TABLE memories ADD COLUMN author TEXT")
    conn.execute("ALTER TABLE memory_versions ADD COLUMN author TEXT")
    conn.execute("CREATE INDEX memories_by_author ON memories (author, priority, updated_at DESC, id DESC)")


MIGRATIONS = [_schema_v1, _words_vocabulary_v2, _tags_and_links_v3, _authors_v4]

# Related memories (read_memory): the memory's first RELATED_TEXT_CHARS characters give at most
# RELATED_TERMS terms; a term or tag is "rare" when at most RELATED_RARE memories hold it, counted
# with queries that stop there; the RELATED_PIECES rarest rank the candidates (so at most
# RELATED_PIECES x RELATED_RARE memories are scored), whatever the size of the store.
RELATED_TEXT_CHARS = 4_000
RELATED_TERMS = 64
RELATED_RARE = 200
RELATED_PIECES = 8
RELATED_LIMIT = 5
# How many tokens found too common for related memories are remembered (so not counted again).
COMMON_TOKENS_KEPT = 200_000
# A listing filtered by tags or times reads the memories of its most selective filter when that
# holds at most LISTING_SELECTIVE (then sorts them); else it first checks the LISTING_WALK first
# memories in rank order (see MemoryStore.list_page).
LISTING_SELECTIVE = 2_000
LISTING_WALK = 2_000
# get_memory_stats lists the most used tags, at most this many.
STATS_TAGS = 100

# Ranking by BM25 costs time per candidate. The strict stage ranks at most the newest
# STRICT_RANK_CAP memories holding every term (a query that broad says little about which one is
# meant). The relaxed stage ranks the memories holding the query's rarest pieces, about
# RELAXED_RANK_CAP of them at most (see ``MemoryStore._relaxed_queries``).
STRICT_RANK_CAP = 400
RELAXED_RANK_CAP = 1_000
# A capped ranking that filters leave short of a page widens tenfold while at most this many.
RANK_WIDEN_MAX = 10_000
# A piece in more than this share of the memories (and more than PREFIX_FLOOR) adds nothing to
# BM25 and is left out of the relaxed stage.
SCORE_SHARE = 0.5
# A word is searched as its stem's prefix only while its forms are in at most this share of the
# memories (or PREFIX_FLOOR): FTS5 reads every token of a prefix in full.
PREFIX_SHARE = 0.05
PREFIX_FLOOR = 1_000
# An import changing at least this many memories (and a quarter of the store) compacts the word index.
COMPACT_AFTER_IMPORT = 1_000
# Tokens counted per statement, and the count that stops early (see ``MemoryStore._count_tokens``).
TOKEN_COUNT_BATCH = 100
_BOUNDED_COUNT = "(SELECT count(*) FROM (SELECT 1 FROM memory_words WHERE memory_words MATCH ? LIMIT ?))"


def now_iso() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def utc_time(value: str) -> str:
    """An ISO 8601 time in the store's own spelling (UTC, microseconds, 'Z'), so stored times
    compare as text; raises ValueError.

    A naive time is taken as UTC. A time that leaves the calendar once moved to UTC
    (0001-01-01T00:00+05:00) is refused like any other bad time.
    """
    try:
        parsed = datetime.datetime.fromisoformat(value)
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=datetime.UTC)
        utc = parsed.astimezone(datetime.UTC)
    except (ValueError, OverflowError):
        raise ValueError(value[:80]) from None
    return utc.isoformat(timespec="microseconds").replace("+00:00", "Z")


# --- what the store raises ---------------------------------------------------------------


class StoreError(Exception):
    """A rule the request broke; tools translate it into an error envelope."""


@dataclass
class NotFound(StoreError):
    uri: str
    deleted: bool = False


@dataclass
class AlreadyExists(StoreError):
    uri: str
    kind: str  # "memory", "alias" or "deleted"
    target: str | None = None


@dataclass
class PatchConflict(StoreError):
    occurrences: int


@dataclass
class VersionNotFound(StoreError):
    uri: str
    version: int
    current: int


@dataclass
class NothingChanged(StoreError):
    uri: str


@dataclass
class SelfLink(StoreError):
    uri: str


@dataclass
class LinkNotFound(StoreError):
    from_uri: str
    to_uri: str
    relation: str | None


# --- rows ----------------------------------------------------------------------------------


@dataclass
class MemoryRow:
    id: int
    uri: str
    domain: str
    path: str
    content: str
    priority: int
    disclosure: str
    status: str
    access_count: int
    last_accessed_at: str | None
    created_at: str
    updated_at: str
    version: int
    change: str
    change_note: str
    tags: list[str] = field(default_factory=list)
    aliases: list[str] = field(default_factory=list)
    author: str | None = None  # the member who wrote the current version (None: before members)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> MemoryRow:
        values = tuple(row)
        memory = cls(*values[:15])
        memory.tags = json.loads(values[15])
        memory.author = values[16]
        return memory


@dataclass
class VersionRow:
    version: int
    content: str
    priority: int
    disclosure: str
    status: str
    change: str
    change_note: str
    created_at: str
    tags: list[str] = field(default_factory=list)
    current: bool = False
    author: str | None = None  # the member who wrote this version (None: before members)

    @classmethod
    def from_row(cls, row: Sequence[Any]) -> VersionRow:
        values = tuple(row)
        version = cls(*values[:8])
        version.tags = json.loads(values[8])
        version.author = values[9]
        return version


@dataclass
class Change:
    """A requested change to a memory's state; None leaves that part as it is."""

    content: str | None = None
    priority: int | None = None
    disclosure: str | None = None
    status: str | None = None
    tags: list[str] | None = None  # normalised and sorted (see ``normalise_tags``)

    def changes_nothing(self, memory: MemoryRow) -> bool:
        """True when applying this would leave ``memory`` as it is (so no version is written)."""
        return (
            (self.content is None or self.content == memory.content)
            and (self.priority is None or self.priority == memory.priority)
            and (self.disclosure is None or self.disclosure == memory.disclosure)
            and (self.status is None or self.status == memory.status)
            and (self.tags is None or self.tags == memory.tags)
        )


MAX_TAG_LENGTH = 64
MAX_TAGS = 32
_TAG_FORBIDDEN = re.compile(r"[\x00-\x1f\x7f\u200b-\u200f\u2028\u2029\ufeff,]")


MAX_RELATION_LENGTH = 100


class BadLabel(ValueError):
    """A tag or relation name that cannot be stored; ``reason`` is a stable word the tools translate."""

    def __init__(self, reason: str, text: str) -> None:
        super().__init__(f"{reason}: {text!r}")
        self.reason = reason
        self.text = text


def _label(text: str, limit: int) -> str:
    """NFKC, case-folded, inner whitespace as one space (Chinese kept as is); refused when empty,
    longer than ``limit``, or holding control characters, commas or lone surrogates."""
    import unicodedata

    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in text):
        raise BadLabel("bad_character", text[:80])
    label = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    if not label:
        raise BadLabel("empty", text[:80])
    if len(label) > limit:
        raise BadLabel("too_long", text[:80])
    if _TAG_FORBIDDEN.search(label):
        raise BadLabel("bad_character", text[:80])
    return label


def normalise_tag(text: str) -> str:
    """One spelling per tag, so 'Rust', ' rust ' and 'ＲＵＳＴ' are one tag."""
    return _label(text, MAX_TAG_LENGTH)


def normalise_relation(text: str) -> str:
    """One spelling per relation name ('Depends  on' is 'depends on')."""
    return _label(text, MAX_RELATION_LENGTH)


def normalise_tags(texts: Iterable[str]) -> list[str]:
    """The tags as stored: each normalised, duplicates dropped, sorted; at most ``MAX_TAGS``."""
    tags = sorted({normalise_tag(text) for text in texts})
    if len(tags) > MAX_TAGS:
        raise BadLabel("too_many", str(len(tags)))
    return tags


@dataclass
class Hit:
    memory: MemoryRow
    score: float
    stage: str  # "all_terms", "any_term" or "substring"


@dataclass
class ImportItem:
    """One memory of an import document, already validated and normalised."""

    uri: MemoryUri
    content: str
    priority: int
    disclosure: str
    status: str
    created_at: str | None
    updated_at: str | None
    version: int | None
    access_count: int
    aliases: list[str]
    versions: list[VersionRow]
    index: int = -1  # its position in the document's memories (-1: not from a document)
    tags: list[str] = field(default_factory=list)
    links: list[tuple[str, str]] = field(default_factory=list)  # (target URI, relation), outgoing
    author: str | None = None  # who wrote the current version (resolved by the importer: see transfer)


@dataclass
class ImportReport:
    created: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    overwritten: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)  # overwrite or merge would change nothing
    errors: list[dict[str, Any]] = field(default_factory=list)  # index, uri, problem, field, target
    links_added: int = 0


@dataclass
class Filters:
    """The filters search, list and export share."""

    domain: str | None = None
    status: str | None = None
    priority_min: int | None = None
    priority_max: int | None = None
    tags: tuple[str, ...] = ()  # every one of them (normalised)
    created_after: str | None = None  # times in the store's spelling (UTC, 'Z'); after: inclusive
    created_before: str | None = None  # before: exclusive
    updated_after: str | None = None
    updated_before: str | None = None
    linked_to: int | None = None  # a memory id: memories linked to or from it
    author: str | None = None  # memories whose current version this member wrote

    @property
    def only_visible(self) -> bool:
        """True when nothing but deleted memories is filtered out."""
        return not self.tags and all(
            v is None
            for v in (
                self.status,
                self.domain,
                self.priority_min,
                self.priority_max,
                self.created_after,
                self.created_before,
                self.updated_after,
                self.updated_before,
                self.linked_to,
                self.author,
            )
        )

    def sql(self, alias: str = "m") -> tuple[str, list[Any]]:
        clauses = [f"{alias}.status != 'deleted'"]
        params: list[Any] = []
        if self.status is not None:
            clauses.append(f"{alias}.status = ?")
            params.append(self.status)
        if self.domain is not None:
            clauses.append(f"{alias}.domain = ?")
            params.append(self.domain)
        if self.author is not None:
            clauses.append(f"{alias}.author = ?")
            params.append(self.author)
        if self.priority_min is not None:
            clauses.append(f"{alias}.priority >= ?")
            params.append(self.priority_min)
        if self.priority_max is not None:
            clauses.append(f"{alias}.priority <= ?")
            params.append(self.priority_max)
        for column, operator, value in (
            ("created_at", ">=", self.created_after),
            ("created_at", "<", self.created_before),
            ("updated_at", ">=", self.updated_after),
            ("updated_at", "<", self.updated_before),
        ):
            if value is not None:
                clauses.append(f"{alias}.{column} {operator} ?")
                params.append(value)
        for tag in self.tags:
            clauses.append(
                f"EXISTS (SELECT 1 FROM memory_tags t WHERE t.tag = ? AND t.memory_id = {alias}.id)"
            )
            params.append(tag)
        if self.linked_to is not None:
            clauses.append(
                f"{alias}.id IN (SELECT to_id FROM memory_links WHERE from_id = ? "
                "UNION SELECT from_id FROM memory_links WHERE to_id = ?)"
            )
            params += [self.linked_to, self.linked_to]
        return " AND ".join(clauses), params


class Connection(Protocol):
    """What the store's SQL needs of a connection: ``?`` parameters, rows as tuples (sqlite3's own
    shape; the team database's connections are adapted to it, see ``store_postgres``)."""

    def execute(self, sql: str, parameters: Sequence[Any] = ..., /) -> Any: ...

    def executemany(self, sql: str, parameters: Iterable[Sequence[Any]], /) -> Any: ...


class MemoryStore:
    """Every read and write of the memory database; safe to share between threads.

    The SQL here is shared with the team database (``store_postgres.PostgresMemoryStore``),
    which overrides the connections, the full-text parts and the few spellings kept as
    attributes and small methods (``_TAG_LIST``, ``_index_hint``, ``_insert_returning_id``...)."""

    #: The shared tags of a group, joined by U+001F.
    _TAG_LIST = "group_concat(t.tag, char(31))"

    def __init__(self, path: Path, *, busy_timeout_ms: int = 10_000) -> None:
        from hostd_db import SqliteDatabase

        self.path = path
        self._prepared = threading.local()
        self._large_counts: dict[str, int] = {}  # tokens in many memories, and how many (a lower bound)
        self._common_tokens: set[str] = set()  # tokens too common to relate memories by (see related)
        self._db = SqliteDatabase(
            path, [self._with_functions(m) for m in MIGRATIONS], busy_timeout_ms=busy_timeout_ms
        )

    def close(self) -> None:
        self._db.close()

    # --- connections --------------------------------------------------------------------

    @staticmethod
    def _register(conn: sqlite3.Connection) -> None:
        conn.create_function("memory_words_text", 1, search_text.words_text, deterministic=True)

    def _with_functions(self, migration: Any) -> Any:
        def run(conn: sqlite3.Connection) -> None:
            self._register(conn)
            migration(conn)

        run.__name__ = getattr(migration, "__name__", "migration")
        return run

    def _conn(self) -> Connection:
        """This thread's connection, with the SQL functions the triggers call."""
        conn = self._db.connection()
        if getattr(self._prepared, "conn", None) is not conn:
            self._register(conn)
            self._prepared.conn = conn
        return conn

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        self._conn()
        with self._db.write() as conn:
            yield conn

    # --- lookups ------------------------------------------------------------------------

    def _memory_by_uri(self, conn: Connection, uri: str) -> MemoryRow | None:
        row = conn.execute(f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.uri = ?", (uri,)).fetchone()
        return MemoryRow.from_row(row) if row else None

    def _memory_by_id(self, conn: Connection, memory_id: int) -> MemoryRow:
        row = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.id = ?", (memory_id,)
        ).fetchone()
        return MemoryRow.from_row(row)

    def _alias_target(self, conn: Connection, uri: str) -> int | None:
        row = conn.execute("SELECT memory_id FROM aliases WHERE alias_uri = ?", (uri,)).fetchone()
        return int(row[0]) if row else None

    def _aliases_of(self, conn: Connection, memory_id: int) -> list[str]:
        rows = conn.execute(
            "SELECT alias_uri FROM aliases WHERE memory_id = ? ORDER BY alias_uri", (memory_id,)
        )
        return [r[0] for r in rows]

    def _resolve(
        self, conn: Connection, uri: str, *, include_deleted: bool = False
    ) -> tuple[MemoryRow, str | None]:
        """The memory ``uri`` names, directly or through an alias, and the alias used if any."""
        memory = self._memory_by_uri(conn, uri)
        via: str | None = None
        if memory is None:
            target = self._alias_target(conn, uri)
            if target is None:
                raise NotFound(uri)
            memory = self._memory_by_id(conn, target)
            via = uri
        if memory.status == "deleted" and not include_deleted:
            raise NotFound(uri, deleted=True)
        memory.aliases = self._aliases_of(conn, memory.id)
        return memory, via

    def resolve(self, uri: str, *, include_deleted: bool = False) -> tuple[MemoryRow, str | None]:
        return self._resolve(self._conn(), uri, include_deleted=include_deleted)

    def _ensure_free(self, conn: Connection, uri: str) -> None:
        existing = self._memory_by_uri(conn, uri)
        if existing is not None:
            raise AlreadyExists(uri, "deleted" if existing.status == "deleted" else "memory")
        target = self._alias_target(conn, uri)
        if target is not None:
            raise AlreadyExists(uri, "alias", self._memory_by_id(conn, target).uri)

    # --- create, change, delete ---------------------------------------------------------

    def create(
        self,
        uri: MemoryUri,
        content: str,
        priority: int,
        disclosure: str,
        tags: Sequence[str] = (),
        *,
        author: str | None,
    ) -> MemoryRow:
        """Version 1 of a new memory, written by ``author`` (the calling member)."""
        stamp = now_iso()
        with self._write() as conn:
            self._ensure_free(conn, str(uri))
            conn.execute(
                "INSERT INTO memories (uri, domain, path, content, priority, disclosure, created_at, "
                "updated_at, tags, author) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    str(uri),
                    uri.domain,
                    uri.path,
                    content,
                    priority,
                    disclosure,
                    stamp,
                    stamp,
                    json.dumps(list(tags)),
                    author,
                ),
            )
            memory = self._memory_by_uri(conn, str(uri))
        assert memory is not None
        return memory

    @staticmethod
    def _insert_returning_id(conn: Connection, sql: str, params: Sequence[Any]) -> int:
        """Run one INSERT into a table with an ``id`` column; the new row's id."""
        return int(conn.execute(sql, params).lastrowid or 0)

    def _apply(
        self,
        conn: Connection,
        memory: MemoryRow,
        change: Change,
        kind: str,
        note: str = "",
        *,
        author: str | None,
    ) -> MemoryRow:
        """Keep the current state (with its author) as a version row, then write the new state as
        version n+1 by ``author``. Every versioned change passes here, so none goes unattributed."""
        conn.execute(
            "INSERT INTO memory_versions (memory_id, version, content, priority, disclosure, status, "
            "change, change_note, created_at, tags, author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                memory.id,
                memory.version,
                memory.content,
                memory.priority,
                memory.disclosure,
                memory.status,
                memory.change,
                memory.change_note,
                memory.updated_at,
                json.dumps(memory.tags),
                memory.author,
            ),
        )
        stamp = now_iso()
        updated = replace(
            memory,
            content=memory.content if change.content is None else change.content,
            priority=memory.priority if change.priority is None else change.priority,
            disclosure=memory.disclosure if change.disclosure is None else change.disclosure,
            status=memory.status if change.status is None else change.status,
            tags=memory.tags if change.tags is None else list(change.tags),
            version=memory.version + 1,
            change=kind,
            change_note=note,
            updated_at=stamp,
            author=author,
        )
        conn.execute(
            "UPDATE memories SET content = ?, priority = ?, disclosure = ?, status = ?, tags = ?, "
            "version = ?, change = ?, change_note = ?, updated_at = ?, author = ? WHERE id = ?",
            (
                updated.content,
                updated.priority,
                updated.disclosure,
                updated.status,
                json.dumps(updated.tags),
                updated.version,
                kind,
                note,
                stamp,
                author,
                memory.id,
            ),
        )
        return updated

    def update(self, uri: str, *, edit: Any, change: Change, author: str | None) -> tuple[MemoryRow, str]:
        """Apply ``edit`` (a function of the current content giving (new content, kind)) and ``change``
        as a new version by ``author``.

        Raises ``NothingChanged`` when the result equals the current state.
        """
        with self._write() as conn:
            memory, _ = self._resolve(conn, uri)
            kind = "metadata"
            if edit is not None:
                new_content, kind = edit(memory.content)
                change = replace(change, content=new_content)
            elif (
                change.status is not None
                and change.priority is None
                and change.disclosure is None
                and change.tags is None
            ):
                kind = "status"
            if change.changes_nothing(memory):
                raise NothingChanged(memory.uri)
            updated = self._apply(conn, memory, change, kind, author=author)
        updated.aliases = memory.aliases
        return updated, kind

    def soft_delete(self, uri: str, *, author: str | None) -> MemoryRow:
        """Mark the memory deleted as a new version by ``author`` (rollback brings it back)."""
        with self._write() as conn:
            memory, _ = self._resolve(conn, uri)
            return self._apply(conn, memory, Change(status="deleted"), "status", "deleted", author=author)

    def remove_alias(self, alias_uri: str) -> str | None:
        """Delete an alias; the URI of the memory it pointed to, or None if it is not an alias."""
        with self._write() as conn:
            target = self._alias_target(conn, alias_uri)
            if target is None:
                return None
            conn.execute("DELETE FROM aliases WHERE alias_uri = ?", (alias_uri,))
            return self._memory_by_id(conn, target).uri

    def purge(self, uri: str) -> tuple[MemoryRow, int, list[str]]:
        """Remove a memory for good with its versions and aliases (deleted ones too)."""
        with self._write() as conn:
            memory = self._memory_by_uri(conn, uri)
            if memory is None:
                raise NotFound(uri)
            aliases = self._aliases_of(conn, memory.id)
            versions = conn.execute(
                "SELECT count(*) FROM memory_versions WHERE memory_id = ?", (memory.id,)
            ).fetchone()[0]
            conn.execute("DELETE FROM memory_versions WHERE memory_id = ?", (memory.id,))
            conn.execute("DELETE FROM aliases WHERE memory_id = ?", (memory.id,))
            conn.execute("DELETE FROM memories WHERE id = ?", (memory.id,))
        self._large_counts.clear()  # counts fall only here: count afresh
        self._common_tokens.clear()
        return memory, int(versions) + 1, aliases

    def add_alias(self, target_uri: str, alias_uri: str) -> MemoryRow:
        with self._write() as conn:
            memory, _ = self._resolve(conn, target_uri)
            self._ensure_free(conn, alias_uri)
            conn.execute(
                "INSERT INTO aliases (alias_uri, memory_id, created_at) VALUES (?, ?, ?)",
                (alias_uri, memory.id, now_iso()),
            )
            memory.aliases = self._aliases_of(conn, memory.id)
        return memory

    def count_access(self, memory_id: int) -> tuple[int, str]:
        """Count one access now; the stored count and time, so the read that counted can report them."""
        with self._write() as conn:
            conn.execute(
                "UPDATE memories SET access_count = access_count + 1, last_accessed_at = ? WHERE id = ?",
                (now_iso(), memory_id),
            )
            # Read back in the same transaction (not RETURNING: older SQLite builds lack it).
            row = conn.execute(
                "SELECT access_count, last_accessed_at FROM memories WHERE id = ?", (memory_id,)
            ).fetchone()
        return int(row[0]), str(row[1])

    # --- versions -----------------------------------------------------------------------

    def versions(self, uri: str, limit: int | None = None) -> tuple[MemoryRow, list[VersionRow], int]:
        """The memory, its versions newest first (the current one included) and how many there are."""
        conn = self._conn()
        memory, _ = self._resolve(conn, uri, include_deleted=True)
        older = f"SELECT {_VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? ORDER BY version DESC"
        rows = (
            conn.execute(older, (memory.id,))
            if limit is None
            else conn.execute(older + " LIMIT ?", (memory.id, max(0, limit - 1)))
        ).fetchall()
        total = conn.execute(
            "SELECT count(*) FROM memory_versions WHERE memory_id = ?", (memory.id,)
        ).fetchone()[0]
        versions = [self._current_version(memory), *(VersionRow.from_row(row) for row in rows)]
        return memory, versions, int(total) + 1

    @staticmethod
    def _current_version(memory: MemoryRow) -> VersionRow:
        return VersionRow(
            memory.version,
            memory.content,
            memory.priority,
            memory.disclosure,
            memory.status,
            memory.change,
            memory.change_note,
            memory.updated_at,
            tags=list(memory.tags),
            current=True,
            author=memory.author,
        )

    def _version(self, conn: Connection, memory: MemoryRow, version: int) -> VersionRow:
        if version == memory.version:
            return self._current_version(memory)
        row = conn.execute(
            f"SELECT {_VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? AND version = ?",
            (memory.id, version),
        ).fetchone()
        if row is None:
            raise VersionNotFound(memory.uri, version, memory.version)
        return VersionRow.from_row(row)

    def version_pair(self, uri: str, first: int, second: int) -> tuple[MemoryRow, VersionRow, VersionRow]:
        conn = self._conn()
        memory, _ = self._resolve(conn, uri, include_deleted=True)
        return memory, self._version(conn, memory, first), self._version(conn, memory, second)

    def rollback(self, uri: str, version: int, *, author: str | None) -> tuple[MemoryRow, VersionRow, bool]:
        """Restore a version's content, priority and disclosure as a new version; and whether it changed.

        A soft-deleted memory comes back as active; otherwise its status stays as it is. When the
        memory already holds that state (the current version, or an identical one), nothing is
        written: a new identical version would only bury the history.
        """
        with self._write() as conn:
            memory, _ = self._resolve(conn, uri, include_deleted=True)
            target = self._version(conn, memory, version)
            status = "active" if memory.status == "deleted" else None
            change = Change(
                content=target.content,
                priority=target.priority,
                disclosure=target.disclosure,
                status=status,
                tags=target.tags,
            )
            if change.changes_nothing(memory):
                return memory, target, False
            updated = self._apply(conn, memory, change, "rollback", f"to version {version}", author=author)
            updated.aliases = self._aliases_of(conn, memory.id)
        return updated, target, True

    # --- relations ----------------------------------------------------------------------

    def existing_uris(self, uris: Sequence[str]) -> set[str]:
        """Which of ``uris`` name a visible memory or an alias."""
        if not uris:
            return set()
        conn = self._conn()
        marks = ",".join("?" * len(uris))
        found = {
            r[0]
            for r in conn.execute(
                f"SELECT uri FROM memories m WHERE uri IN ({marks}) AND {VISIBLE}", list(uris)
            )
        }
        found |= {
            r[0]
            for r in conn.execute(f"SELECT alias_uri FROM aliases WHERE alias_uri IN ({marks})", list(uris))
        }
        return found

    def mentioned_by(self, memory: MemoryRow, limit: int = 20) -> list[str]:
        """Visible memories whose content mentions this memory's URI or one of its aliases."""
        conn = self._conn()
        found: dict[str, None] = {}
        for name in [memory.uri, *memory.aliases]:
            for uri, content in self._mention_candidates(conn, name, memory.id):
                if mentions(content, name):
                    found.setdefault(uri)
                    if len(found) >= limit:
                        return list(found)
        return list(found)

    def _mention_candidates(self, conn: Connection, name: str, memory_id: int) -> Iterable[tuple[str, str]]:
        """(uri, content) of at most 200 visible memories, other than ``memory_id``, whose content
        may mention ``name`` (the caller checks with ``mentions``)."""
        return conn.execute(
            f"SELECT m.uri, m.content FROM memory_fts JOIN memories m ON m.id = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {VISIBLE} AND m.id != ? LIMIT 200",
            ("content : " + search_text.fts_literal(name), memory_id),
        )

    # --- listings -----------------------------------------------------------------------

    @staticmethod
    def _after_rank(alias: str, after: list[Any] | None) -> tuple[str, list[Any]]:
        """The keyset condition 'after this row' in rank order (priority, then newest change)."""
        if after is None:
            return "", []
        priority, updated_at, memory_id = after
        return (
            f" AND ({alias}.priority > ? OR ({alias}.priority = ? AND ({alias}.updated_at < ? OR "
            f"({alias}.updated_at = ? AND {alias}.id < ?))))",
            [priority, priority, updated_at, updated_at, memory_id],
        )

    def _selective_source(self, conn: Connection, filters: Filters) -> tuple[int, str, str, list[Any]]:
        """The filter keeping the fewest memories, counted up to ``LISTING_SELECTIVE`` + 1:
        (count, index hint, driving clause, its params) to read only what it keeps."""
        bound = LISTING_SELECTIVE + 1
        best: tuple[int, str, str, list[Any]] | None = None
        for tag in filters.tags:
            count = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_tags WHERE tag = ? LIMIT ?) AS bounded",
                (tag, bound),
            ).fetchone()[0]
            if best is None or count < best[0]:
                clause = " AND m.id IN (SELECT memory_id FROM memory_tags WHERE tag = ?)"
                best = (count, "", clause, [tag])
        for index, column, low, high in (
            ("memories_by_creation", "created_at", filters.created_after, filters.created_before),
            ("memories_by_change", "updated_at", filters.updated_after, filters.updated_before),
        ):
            if low is None and high is None:
                continue
            count = conn.execute(
                f"SELECT count(*) FROM (SELECT 1 FROM memories {self._index_hint(index)} "
                f"WHERE {column} >= ? AND {column} < ? LIMIT ?) AS bounded",
                (low or "", high or "\uffff", bound),
            ).fetchone()[0]
            if best is None or count < best[0]:
                best = (count, self._index_hint(index), "", [])
        assert best is not None
        return best

    @staticmethod
    def _index_hint(index: str) -> str:
        """SQLite's planner is told which index drives a listing (PostgreSQL picks its own)."""
        return f"INDEXED BY {index}"

    def _walk_rank(
        self, conn: Connection, where: str, params: list[Any], after: list[Any] | None, limit: int
    ) -> list[MemoryRow] | None:
        """The page, if the first ``LISTING_WALK`` memories in rank order after ``after`` hold it."""
        keyset, keyset_params = self._after_rank("m", after)
        cursor = conn.execute(
            f"SELECT m.id, CASE WHEN {where} THEN 1 ELSE 0 END FROM memories m "
            f"{self._index_hint('memories_by_rank')} WHERE 1 = 1{keyset} "
            "ORDER BY m.priority ASC, m.updated_at DESC, m.id DESC LIMIT ?",
            [*params, *keyset_params, LISTING_WALK],
        )
        kept: list[int] = []
        walked = 0
        try:
            while walked < LISTING_WALK and len(kept) < limit:
                batch = cursor.fetchmany(min(500, LISTING_WALK - walked))
                if not batch:
                    break
                walked += len(batch)
                kept += [int(r[0]) for r in batch if r[1]]
        finally:
            cursor.close()
        if len(kept) < limit and walked >= LISTING_WALK:
            return None
        kept = kept[:limit]
        rows = self.memories_for(kept)
        return [rows[i] for i in kept if i in rows]

    def list_page(self, filters: Filters, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        """Most important first, then most recently updated; ``after`` is the last row's key.

        Under tag or time filters, a filter keeping at most ``LISTING_SELECTIVE`` memories is read
        alone and sorted. Otherwise the first ``LISTING_WALK`` memories in rank order are checked
        against the filters, which finds a page at once when the filters keep many; only if they
        hold too few is the most selective filter's whole set read and sorted.
        """
        conn = self._conn()
        where, params = filters.sql()
        keyset, keyset_params = self._after_rank("m", after)
        order = "ORDER BY m.priority ASC, m.updated_at DESC, m.id DESC LIMIT ?"
        has_time = any(
            v is not None
            for v in (
                filters.created_after,
                filters.created_before,
                filters.updated_after,
                filters.updated_before,
            )
        )
        if filters.linked_to is None and (filters.tags or has_time):
            count, hint, driver, driver_params = self._selective_source(conn, filters)
            if count > LISTING_SELECTIVE:
                walked = self._walk_rank(conn, where, params, after, limit)  # aliases included
                if walked is not None:
                    return walked
            # Sort ids and keys only (the contents stay on disk), then read the page's rows.
            ids = [
                int(r[0])
                for r in conn.execute(
                    f"SELECT m.id FROM memories m {hint} WHERE {where}{driver}{keyset} {order}",
                    [*params, *driver_params, *keyset_params, limit],
                )
            ]
            found = self.memories_for(ids)
            return [found[i] for i in ids if i in found]
        rows = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE {where}{keyset} {order}",
            [*params, *keyset_params, limit],
        ).fetchall()
        return self._with_aliases([MemoryRow.from_row(r) for r in rows])

    def recent_page(self, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        where, params = Filters().sql()
        if after is not None:
            where += " AND (m.updated_at < ? OR (m.updated_at = ? AND m.id < ?))"
            params += [after[0], after[0], after[1]]
        rows = (
            self._conn()
            .execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE {where} "
                "ORDER BY m.updated_at DESC, m.id DESC LIMIT ?",
                [*params, limit],
            )
            .fetchall()
        )
        return self._with_aliases([MemoryRow.from_row(r) for r in rows])

    def index_page(self, after: str | None, limit: int) -> list[tuple[str, str, int]]:
        """Active URIs with domain and priority, in URI order."""
        rows = (
            self._conn()
            .execute(
                "SELECT uri, domain, priority FROM memories WHERE status = 'active' AND uri > ? "
                "ORDER BY uri LIMIT ?",
                (after or "", limit),
            )
            .fetchall()
        )
        return [(r[0], r[1], int(r[2])) for r in rows]

    def export_page(self, filters: Filters, after: int, limit: int) -> list[MemoryRow]:
        where, params = filters.sql()
        rows = (
            self._conn()
            .execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE {where} AND m.id > ? ORDER BY m.id LIMIT ?",
                [*params, after, limit],
            )
            .fetchall()
        )
        return self._with_aliases([MemoryRow.from_row(r) for r in rows])

    def all_versions(self, memory: MemoryRow) -> list[VersionRow]:
        """Every version, oldest first, the current one last."""
        rows = (
            self._conn()
            .execute(
                f"SELECT {_VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? ORDER BY version",
                (memory.id,),
            )
            .fetchall()
        )
        return [*(VersionRow.from_row(r) for r in rows), self._current_version(memory)]

    def _with_aliases(self, memories: list[MemoryRow]) -> list[MemoryRow]:
        if not memories:
            return memories
        by_id = {m.id: m for m in memories}
        marks = ",".join("?" * len(by_id))
        for alias_uri, memory_id in self._conn().execute(
            f"SELECT alias_uri, memory_id FROM aliases WHERE memory_id IN ({marks}) ORDER BY alias_uri",
            list(by_id),
        ):
            by_id[memory_id].aliases.append(alias_uri)
        return memories

    # --- search -------------------------------------------------------------------------

    def _ranked(
        self,
        table: str,
        expression: str,
        filters: Filters,
        extra: str,
        extra_params: list[Any],
        limit: int,
        cap: int | None = None,
    ) -> list[tuple[int, float]]:
        """Visible memories matching ``expression``, best BM25 first.

        With ``cap``, when more than ``cap`` memories match, only the ``cap`` newest are
        ranked (found cheaply by rowid, without scoring); if the filters then leave fewer
        than ``limit``, the query runs again over the ten times as many newest (up to
        ``RANK_WIDEN_MAX``), then over every match. With no filter but the status,
        FTS5 ranks on its own and only the best few are looked up in ``memories``.
        """
        conn = self._conn()
        floor = None
        if cap is not None:
            row = conn.execute(
                f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
                (expression, cap - 1),
            ).fetchone()
            floor = int(row[0]) if row else None
        bound = f" AND {table}.rowid >= ?" if floor is not None else ""
        bounds = [floor] if floor is not None else []
        rows = None
        if not extra and filters.only_visible:
            rows = self._ranked_visible(conn, table, expression, bound, bounds, limit)
        if rows is None:
            where, params = filters.sql()
            sql = (
                f"SELECT m.id, bm25({table}, {BM25_WEIGHTS}) AS score FROM {table} "
                f"JOIN memories m ON m.id = {table}.rowid WHERE {table} MATCH ? AND {where}{extra}{bound} "
                "ORDER BY score LIMIT ?"
            )
            rows = [
                (int(r[0]), float(r[1]))
                for r in conn.execute(sql, [expression, *params, *extra_params, *bounds, limit])
            ]
        if floor is not None and len(rows) < limit:
            # Filters (a tag, a time window) may keep few of the newest: widen tenfold before
            # ranking every match, which costs a BM25 score per match.
            wider = cap * 10 if cap is not None and cap * 10 <= RANK_WIDEN_MAX else None
            return self._ranked(table, expression, filters, extra, extra_params, limit, wider)
        return rows

    @staticmethod
    def _ranked_visible(
        conn: Connection, table: str, expression: str, bound: str, bounds: list[int], limit: int
    ) -> list[tuple[int, float]] | None:
        """The best matches ranked by FTS5 alone, deleted ones left out; None if too many of them were.

        Deleted memories are few, so ranking a few more than asked for and then looking only
        those up in ``memories`` beats looking up every match while ranking.
        """
        wanted = 2 * limit + 10
        best = conn.execute(
            f"SELECT rowid, bm25({table}, {BM25_WEIGHTS}) AS score FROM {table} "
            f"WHERE {table} MATCH ?{bound} ORDER BY score LIMIT ?",
            [expression, *bounds, wanted],
        ).fetchall()
        if not best:
            return []
        marks = ",".join("?" * len(best))
        hidden = {
            r[0]
            for r in conn.execute(
                f"SELECT id FROM memories m WHERE id IN ({marks}) AND NOT ({VISIBLE})", [r[0] for r in best]
            )
        }
        rows = [(int(r[0]), float(r[1])) for r in best if r[0] not in hidden][:limit]
        return rows if len(rows) == limit or len(best) < wanted else None

    @staticmethod
    def _total(conn: Connection) -> int:
        """About how many memories there are (the newest id: cheap, and close enough)."""
        return int(conn.execute("SELECT max(id) FROM memories").fetchone()[0] or 0)

    def _count_tokens(
        self,
        conn: Connection,
        pieces: Iterable[search_text.Piece],
        total: int,
        counts: dict[str, int],
    ) -> None:
        """Add to ``counts`` how many memories hold each token of ``pieces``, counted only so far.

        Counting stops past what any decision needs (half the memories), so a token found in
        most memories costs little more than a rare one. Counts above the relaxed ranking cap
        are remembered: they only grow while memories are added (``purge`` forgets them), and
        every decision taken on them holds for a lower bound.
        """
        bound = max(RELAXED_RANK_CAP, PREFIX_FLOOR, int(total * SCORE_SHARE)) + 1
        wanted: dict[str, None] = {}
        for piece in pieces:
            if not piece.counted:
                continue
            for form in piece.forms:
                for token in form.split(" "):
                    if token in counts or token in wanted:
                        continue
                    known = self._large_counts.get(token)
                    if known is not None:
                        counts[token] = known
                    else:
                        wanted[token] = None
        for token, count in self._bounded_counts(conn, list(wanted), bound).items():
            counts[token] = count
            if count > RELAXED_RANK_CAP:
                self._large_counts[token] = count

    def _bounded_counts(self, conn: Connection, tokens: Sequence[str], bound: int) -> dict[str, int]:
        """How many memories hold each index token, counted up to ``bound`` (queries that stop there)."""
        counts: dict[str, int] = {}
        for start in range(0, len(tokens), TOKEN_COUNT_BATCH):
            chunk = tokens[start : start + TOKEN_COUNT_BATCH]
            params: list[Any] = []
            for token in chunk:
                params += [search_text.fts_literal(token), bound]
            row = conn.execute("SELECT " + ", ".join([_BOUNDED_COUNT] * len(chunk)), params).fetchone()
            counts.update(zip(chunk, (int(c) for c in row), strict=True))
        return counts

    @staticmethod
    def _cut(
        piece: search_text.Piece, counts: dict[str, int], total: int
    ) -> tuple[float, search_text.Piece] | None:
        """A piece cut to its forms that occur, and at most how many memories hold it (None: none does).

        A word whose forms are rare enough becomes its stem as a prefix, so BM25 weighs the word
        once rather than once per form (FTS5 reads a prefix in full, which is cheap exactly then).
        A piece whose tokens were not counted (a prefix) may be in any number of memories.
        """
        if not piece.counted:
            return math.inf, piece
        existing = []
        found_in = 0
        for form in piece.forms:
            count = min(counts[token] for token in form.split(" "))  # a phrase: its rarest token
            if count:
                existing.append(form)
                found_in += count
        if not existing:
            return None
        if piece.stem and len(existing) > 1 and found_in <= max(PREFIX_FLOOR, int(total * PREFIX_SHARE)):
            return found_in, search_text.Piece((piece.stem,), prefix=True)
        return found_in, search_text.Piece(tuple(existing))

    def _strict_expression(
        self, conn: Connection, pieces: list[search_text.Piece], total: int, counts: dict[str, int]
    ) -> tuple[str | None, float]:
        """Every piece must match, a word as its forms that occur; and at most how many memories match.

        The expression is None when a piece occurs nowhere. The count is known when a word was
        counted (its forms' counts bound the result), else infinite.
        """
        words = [p for p in pieces if p.counted and len(p.forms) > 1]
        self._count_tokens(conn, words, total, counts)
        parts = []
        at_most = math.inf
        for piece in pieces:
            if piece.counted and len(piece.forms) > 1:
                cut = self._cut(piece, counts, total)
                if cut is None:
                    return None, 0
                at_most = min(at_most, cut[0])
                piece = cut[1]
            parts.append(piece.expression)
        return " AND ".join(parts), at_most

    def _useful_pieces(
        self, pieces: list[search_text.Piece], total: int | None = None, counts: dict[str, int] | None = None
    ) -> list[search_text.Piece]:
        """The relaxed pieces that occur and say something, rarest first (see ``_useful``)."""
        return [piece for _, piece in self._useful(pieces, total, counts)]

    def _useful(
        self, pieces: list[search_text.Piece], total: int | None = None, counts: dict[str, int] | None = None
    ) -> list[tuple[float, search_text.Piece]]:
        """Pieces that occur, cut to their forms that do, rarest first, with how many memories hold them.

        A piece in more than half the memories (and more than ``PREFIX_FLOOR``) adds nothing to
        BM25 and is left out, unless every piece is that common: then the rarest stays, alone.
        """
        conn = self._conn()
        total = self._total(conn) if total is None else total
        counts = {} if counts is None else counts
        self._count_tokens(conn, pieces, total, counts)
        cuts = [cut for piece in pieces if (cut := self._cut(piece, counts, total)) is not None]
        cuts.sort(key=lambda cut: cut[0])
        useful_max = max(PREFIX_FLOOR, int(total * SCORE_SHARE))
        useful = [cut for cut in cuts if cut[0] <= useful_max or cut[0] == math.inf]
        return useful or cuts[:1]

    def _relaxed_queries(
        self, pieces: list[search_text.Piece], total: int, counts: dict[str, int]
    ) -> tuple[str, str | None, bool] | None:
        """The relaxed stage's queries: (first, top-up, whether the first is capped), or None.

        Candidates are the memories holding the rarest pieces, as many pieces as hold together
        at most ``RELAXED_RANK_CAP`` memories (the rarest alone, capped to its newest, when even
        it holds more); every useful piece ranks them (BM25 weighs rare pieces most, so the best
        matches hold one). The top-up query, every piece for its newest matches, runs when the
        candidates are too few.
        """
        useful = self._useful(pieces, total, counts)
        if not useful:
            return None
        fetch: list[search_text.Piece] = []
        rank_only: list[search_text.Piece] = []
        together = 0.0
        for found_in, piece in useful:
            if not fetch or together + found_in <= RELAXED_RANK_CAP:
                fetch.append(piece)
                together += found_in
            else:
                rank_only.append(piece)
        fetched = " OR ".join(p.expression for p in fetch)
        if not rank_only:
            return fetched, None, together > RELAXED_RANK_CAP
        everything = " OR ".join(p.expression for p in (*fetch, *rank_only))
        # A candidate holds a rare piece, so the second group always matches: its other pieces
        # only add to the score.
        return f"({fetched}) AND ({everything})", everything, together > RELAXED_RANK_CAP

    def _words_clause(self, expression: str) -> tuple[str, list[Any]]:
        """A condition keeping the memories ``expression`` matches in ``memory_words``."""
        return " AND m.id IN (SELECT rowid FROM memory_words WHERE memory_words MATCH ?)", [expression]

    @staticmethod
    def _scan_clause(terms: Sequence[str]) -> tuple[str, list[Any]]:
        clause = ""
        params: list[Any] = []
        for term in terms:
            clause += (
                " AND (instr(lower(m.content), ?) OR instr(lower(m.path), ?)"
                " OR instr(lower(m.disclosure), ?))"
            )
            params += [term.lower()] * 3
        return clause, params

    def search(self, plan: search_text.QueryPlan, filters: Filters, limit: int) -> list[Hit]:
        """Memories holding every term first (BM25), then those holding some (BM25 over words)."""
        conn = self._conn()
        total = self._total(conn)
        counts: dict[str, int] = {}
        found: dict[int, tuple[float, str]] = {}
        scan, scan_params = self._scan_clause(plan.strict_scan)
        words, at_most = (
            self._strict_expression(conn, plan.strict_pieces, total, counts)
            if plan.strict_pieces
            else (None, math.inf)
        )
        cap = STRICT_RANK_CAP if at_most > STRICT_RANK_CAP else None  # else no need to find the newest few
        if plan.strict_pieces and words is None:
            strict = []  # some term occurs in no memory
        elif plan.strict_trigram:
            extra, extra_params = scan, scan_params
            if words:
                words_sql, words_params = self._words_clause(words)
                extra += words_sql
                extra_params = [*extra_params, *words_params]
            strict = self._ranked("memory_fts", plan.strict_trigram, filters, extra, extra_params, limit, cap)
        elif words:
            strict = self._ranked("memory_words", words, filters, scan, scan_params, limit, cap)
        elif plan.strict_scan:
            where, params = filters.sql()
            strict = [
                (int(r[0]), 0.0)
                for r in conn.execute(
                    f"SELECT m.id FROM memories m WHERE {where}{scan} "
                    "ORDER BY m.priority, m.updated_at DESC LIMIT ?",
                    [*params, *scan_params, limit],
                )
            ]
        else:
            strict = []
        for memory_id, score in strict:
            found[memory_id] = (score, "all_terms")
        queries = self._relaxed_queries(plan.relaxed, total, counts) if len(found) < limit else None
        if queries is not None:
            first, top_up, capped = queries
            wanted = limit + len(found)
            self._add_relaxed(
                found,
                self._ranked(
                    "memory_words", first, filters, "", [], wanted, RELAXED_RANK_CAP if capped else None
                ),
                limit,
            )
            if top_up and len(found) < limit:
                self._add_relaxed(
                    found,
                    self._ranked("memory_words", top_up, filters, "", [], wanted, RELAXED_RANK_CAP),
                    limit,
                )
        return self._hits(found)

    @staticmethod
    def _add_relaxed(
        found: dict[int, tuple[float, str]], ranked: list[tuple[int, float]], limit: int
    ) -> None:
        for memory_id, score in ranked:
            if len(found) >= limit:
                return
            if memory_id not in found:
                found[memory_id] = (score, "any_term")

    def _hits(self, found: dict[int, tuple[float, str]]) -> list[Hit]:
        if not found:
            return []
        marks = ",".join("?" * len(found))
        rows = (
            self._conn()
            .execute(f"SELECT {_MEMORY_COLUMNS} FROM memories m WHERE m.id IN ({marks})", list(found))
            .fetchall()
        )
        by_id = {r[0]: MemoryRow.from_row(r) for r in rows}
        memories = self._with_aliases([by_id[i] for i in found if i in by_id])
        return [Hit(m, found[m.id][0], found[m.id][1]) for m in memories]

    def match_ids(self, table: str, expression: str, limit: int) -> list[tuple[int, float]]:
        """Visible memories matching one expression, best first (used by preload)."""
        return self._ranked(table, expression, Filters(), "", [], limit)

    def core_memories(self, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        """Active memories with priority at most 2 (what ``system://boot`` shows)."""
        return self.list_page(Filters(status="active", priority_max=2), after, limit)

    # --- sessions -----------------------------------------------------------------------

    def save_session(
        self, title: str, summary: str, memory: tuple[MemoryUri, str, int] | None, *, author: str | None
    ) -> tuple[int, str, MemoryRow | None]:
        """Record a session and, when ``memory`` is given, create its memory in the same transaction.

        The memory URI gets a numeric suffix when the slug is already taken that day.
        """
        stamp = now_iso()
        created: MemoryRow | None = None
        with self._write() as conn:
            memory_uri: str | None = None
            if memory is not None:
                base, content, priority = memory
                candidate = base
                suffix = 2
                while self._memory_by_uri(conn, str(candidate)) or self._alias_target(conn, str(candidate)):
                    candidate = MemoryUri(base.domain, f"{base.path}-{suffix}")
                    suffix += 1
                conn.execute(
                    "INSERT INTO memories (uri, domain, path, content, priority, disclosure, created_at, "
                    "updated_at, author) "
                    "VALUES (?, ?, ?, ?, ?, '', ?, ?, ?)",
                    (
                        str(candidate),
                        candidate.domain,
                        candidate.path,
                        content,
                        priority,
                        stamp,
                        stamp,
                        author,
                    ),
                )
                created = self._memory_by_uri(conn, str(candidate))
                memory_uri = str(candidate)
            session_id = self._insert_returning_id(
                conn,
                "INSERT INTO sessions (title, summary, memory_uri, created_at) VALUES (?, ?, ?, ?)",
                (title, summary, memory_uri, stamp),
            )
        return session_id, stamp, created

    # --- statistics ---------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        conn = self._conn()
        by_status = {s: 0 for s in STATUSES}
        by_status.update(
            {r[0]: int(r[1]) for r in conn.execute("SELECT status, count(*) FROM memories GROUP BY status")}
        )
        by_domain = {
            r[0]: int(r[1])
            for r in conn.execute(
                f"SELECT domain, count(*) FROM memories m WHERE {VISIBLE} GROUP BY domain ORDER BY domain"
            )
        }
        accesses = conn.execute(
            f"SELECT coalesce(sum(access_count), 0) FROM memories m WHERE {VISIBLE}"
        ).fetchone()[0]
        most_read = [
            (r[0], int(r[1]))
            for r in conn.execute(
                f"SELECT uri, access_count FROM memories m WHERE {VISIBLE} AND access_count > 0 "
                "ORDER BY access_count DESC, uri LIMIT 5"
            )
        ]
        older = conn.execute("SELECT count(*) FROM memory_versions").fetchone()[0]
        aliases = conn.execute("SELECT count(*) FROM aliases").fetchone()[0]
        sessions = conn.execute("SELECT count(*) FROM sessions").fetchone()[0]
        by_tag = {
            r[0]: int(r[1])
            for r in conn.execute(
                f"SELECT t.tag, count(*) AS n FROM memory_tags t JOIN memories m ON m.id = t.memory_id "
                f"WHERE {VISIBLE} GROUP BY t.tag ORDER BY n DESC, t.tag LIMIT ?",
                (STATS_TAGS,),
            )
        }
        tag_count = conn.execute(
            "SELECT count(DISTINCT t.tag) FROM memory_tags t JOIN memories m ON m.id = t.memory_id "
            f"WHERE {VISIBLE}"
        ).fetchone()[0]
        links = conn.execute("SELECT count(*) FROM memory_links").fetchone()[0]
        size = self._database_bytes(conn)
        return {
            "by_status": by_status,
            "by_domain": by_domain,
            "total_accesses": int(accesses),
            "most_read": most_read,
            "version_count": int(older) + sum(by_status.values()),
            "alias_count": int(aliases),
            "session_count": int(sessions),
            "database_bytes": size,
            "by_tag": by_tag,
            "tag_count": int(tag_count),
            "link_count": int(links),
        }

    def _database_bytes(self, conn: Connection) -> int:
        """What the store takes on disk (the file with its journal)."""
        return sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )

    # --- import -------------------------------------------------------------------------

    def import_items(
        self, items: Sequence[ImportItem], strategy: str, report: ImportReport, *, author: str | None
    ) -> None:
        """Apply validated items in one transaction (all or nothing if the database fails).

        A new memory keeps the authors its item carries; an overwrite or merge is a new version by
        ``author`` (the importing member).
        """
        stamp = now_iso()
        with self._write() as conn:
            for item in items:
                uri = str(item.uri)
                existing = self._memory_by_uri(conn, uri)
                if existing is None and self._alias_target(conn, uri) is not None:
                    report.errors.append(
                        {"index": item.index, "uri": uri, "problem": "alias_exists", "field": "uri"}
                    )
                    continue
                if existing is None:
                    self._insert_imported(conn, item, stamp)
                    report.created.append(uri)
                elif strategy == "skip":
                    report.skipped.append(uri)
                    continue
                else:
                    if strategy == "overwrite":
                        change = Change(item.content, item.priority, item.disclosure, item.status, item.tags)
                        done = report.overwritten
                    else:
                        change = self._merged(existing, item)
                        done = report.merged
                    if change.changes_nothing(existing):
                        report.unchanged.append(uri)  # an identical version would only bury the history
                    else:
                        self._apply(conn, existing, change, "import", strategy, author=author)
                        done.append(uri)
                self._import_aliases(conn, item, report)
            for item in items:  # links last: their targets may come later in the document
                self._import_links(conn, item, report)
        changed = len(report.created) + len(report.overwritten) + len(report.merged)
        if changed >= COMPACT_AFTER_IMPORT and changed * 4 >= self._total(self._conn()):
            self.compact_word_index()

    def compact_word_index(self) -> None:
        """Merge the word index into one segment (FTS5 'optimize').

        A bulk import leaves the index in many segments, and every token a search looks up is
        looked up in each of them. Compacting costs a pass over the index, so it follows only
        imports that added at least a quarter of the store.
        """
        with self._write() as conn:
            conn.execute("INSERT INTO memory_words (memory_words) VALUES ('optimize')")

    def _insert_imported(self, conn: Connection, item: ImportItem, stamp: str) -> None:
        versions = sorted(item.versions, key=lambda v: v.version)
        current_version = item.version or (versions[-1].version if versions else 1)
        older = [v for v in versions if v.version < current_version]
        created_at = item.created_at or stamp
        updated_at = item.updated_at or created_at
        current = next((v for v in versions if v.version == current_version), None)
        change, note = (current.change, current.change_note) if current else ("import", "")
        memory_id = self._insert_returning_id(
            conn,
            "INSERT INTO memories (uri, domain, path, content, priority, disclosure, status, access_count, "
            "created_at, updated_at, version, change, change_note, tags, author) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(item.uri),
                item.uri.domain,
                item.uri.path,
                item.content,
                item.priority,
                item.disclosure,
                item.status,
                item.access_count,
                created_at,
                updated_at,
                current_version,
                change,
                note,
                json.dumps(item.tags),
                item.author,
            ),
        )
        if older:
            conn.executemany(
                "INSERT INTO memory_versions (memory_id, version, content, priority, disclosure, status, "
                "change, change_note, created_at, tags, author) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        memory_id,
                        v.version,
                        v.content,
                        v.priority,
                        v.disclosure,
                        v.status,
                        v.change,
                        v.change_note,
                        v.created_at,
                        json.dumps(v.tags),
                        v.author,
                    )
                    for v in older
                ],
            )

    @staticmethod
    def _merged(existing: MemoryRow, item: ImportItem) -> Change:
        """Keep the memory; add incoming content it lacks; take the more important priority."""
        content = existing.content
        incoming = item.content.strip()
        if incoming and incoming not in content:
            content = content + ("\n" if content and not content.endswith("\n") else "") + incoming
        disclosure = existing.disclosure or item.disclosure
        incoming_tags = [t for t in item.tags if t not in existing.tags]
        tags = sorted([*existing.tags, *incoming_tags[: max(0, MAX_TAGS - len(existing.tags))]])
        return Change(
            content=content, priority=min(existing.priority, item.priority), disclosure=disclosure, tags=tags
        )

    def _import_aliases(self, conn: Connection, item: ImportItem, report: ImportReport) -> None:
        uri = str(item.uri)
        memory = self._memory_by_uri(conn, uri)
        if memory is None:
            return
        for alias in item.aliases:
            if self._alias_target(conn, alias) == memory.id:
                continue
            try:
                self._ensure_free(conn, alias)
            except AlreadyExists:
                report.errors.append(
                    {
                        "index": item.index,
                        "uri": alias,
                        "problem": "alias_taken",
                        "field": "aliases",
                        "target": uri,
                    }
                )
                continue
            conn.execute(
                "INSERT INTO aliases (alias_uri, memory_id, created_at) VALUES (?, ?, ?)",
                (alias, memory.id, now_iso()),
            )

    def _import_links(self, conn: Connection, item: ImportItem, report: ImportReport) -> None:
        """The item's outgoing links whose target exists (a memory or an alias); a link already there
        is left as it is, so importing twice adds nothing."""
        if not item.links:
            return
        source = self._memory_by_uri(conn, str(item.uri))
        if source is None:
            return
        for number, (target_uri, relation) in enumerate(item.links):
            target_id = self._memory_id_of(conn, target_uri)
            if target_id is None or target_id == source.id:
                report.errors.append(
                    {
                        "index": item.index,
                        "uri": target_uri,
                        "problem": "link_target_missing" if target_id is None else "link_to_itself",
                        "field": f"links.{number}",
                        "target": str(item.uri),
                    }
                )
                continue
            report.links_added += self._insert_link(conn, source.id, target_id, relation)

    # --- links --------------------------------------------------------------------------

    def _memory_id_of(self, conn: Connection, uri: str) -> int | None:
        """The id of the memory ``uri`` names, directly or as an alias (deleted ones too)."""
        row = conn.execute("SELECT id FROM memories WHERE uri = ?", (uri,)).fetchone()
        return int(row[0]) if row else self._alias_target(conn, uri)

    @staticmethod
    def _insert_link(conn: Connection, from_id: int, to_id: int, relation: str) -> int:
        """Add a link unless it is there; 1 if it was added, else 0."""
        cursor = conn.execute(
            "INSERT OR IGNORE INTO memory_links (from_id, to_id, relation, created_at) VALUES (?, ?, ?, ?)",
            (from_id, to_id, relation, now_iso()),
        )
        return int(cursor.rowcount or 0)

    def link(self, from_uri: str, to_uri: str, relation: str) -> tuple[MemoryRow, MemoryRow, bool]:
        """Link two visible memories (through aliases); whether the link is new. Raises ``SelfLink``."""
        with self._write() as conn:
            source, _ = self._resolve(conn, from_uri)
            target, _ = self._resolve(conn, to_uri)
            if source.id == target.id:
                raise SelfLink(source.uri)
            added = self._insert_link(conn, source.id, target.id, relation)
        return source, target, bool(added)

    def unlink(
        self, from_uri: str, to_uri: str, relation: str | None
    ) -> tuple[MemoryRow, MemoryRow, list[str]]:
        """Remove the link of that relation (every link from one to the other when None); the
        relations removed. Works on deleted memories too, so a stale link can always go."""
        with self._write() as conn:
            source, _ = self._resolve(conn, from_uri, include_deleted=True)
            target, _ = self._resolve(conn, to_uri, include_deleted=True)
            where = "from_id = ? AND to_id = ?" + (" AND relation = ?" if relation is not None else "")
            params: list[Any] = [source.id, target.id] + ([relation] if relation is not None else [])
            removed = [
                r[0]
                for r in conn.execute(
                    f"SELECT relation FROM memory_links WHERE {where} ORDER BY relation", params
                )
            ]
            if not removed:
                raise LinkNotFound(source.uri, target.uri, relation)
            conn.execute(f"DELETE FROM memory_links WHERE {where}", params)
        return source, target, removed

    def links_of(
        self, memory_id: int, limit: int = 50
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(outgoing, incoming) links of a memory as (other URI, relation), visible memories only."""
        conn = self._conn()
        outgoing = [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT m.uri, l.relation FROM memory_links l JOIN memories m ON m.id = l.to_id "
                f"WHERE l.from_id = ? AND {VISIBLE} ORDER BY m.uri, l.relation LIMIT ?",
                (memory_id, limit),
            )
        ]
        incoming = [
            (r[0], r[1])
            for r in conn.execute(
                f"SELECT m.uri, l.relation FROM memory_links l JOIN memories m ON m.id = l.from_id "
                f"WHERE l.to_id = ? AND {VISIBLE} ORDER BY m.uri, l.relation LIMIT ?",
                (memory_id, limit),
            )
        ]
        return outgoing, incoming

    def outgoing_links(self, memory_ids: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
        """Every outgoing link of these memories (to visible ones), for export."""
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        found: dict[int, list[tuple[str, str]]] = {}
        for from_id, uri, relation in self._conn().execute(
            f"SELECT l.from_id, m.uri, l.relation FROM memory_links l JOIN memories m ON m.id = l.to_id "
            f"WHERE l.from_id IN ({marks}) AND {VISIBLE} ORDER BY l.from_id, m.uri, l.relation",
            list(memory_ids),
        ):
            found.setdefault(int(from_id), []).append((uri, relation))
        return found

    # --- related memories ---------------------------------------------------------------

    def related(
        self, memory: MemoryRow, limit: int = RELATED_LIMIT
    ) -> list[tuple[MemoryRow, list[str], list[str]]]:
        """A few visible memories sharing rare tags or rare terms with ``memory``: (memory, shared
        tags, shared terms), those sharing tags first.

        The cost does not grow with the store: at most ``RELATED_TERMS`` terms from the start of
        the memory and its tags are counted by queries that stop at ``RELATED_RARE`` memories, and
        only the memories holding the ``RELATED_PIECES`` rarest are ranked.
        """
        conn = self._conn()
        excluded = {memory.id}
        found: dict[int, tuple[list[str], list[str]]] = {}
        rare_tags = [
            tag
            for tag in memory.tags
            if conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_tags WHERE tag = ? LIMIT ?) AS bounded",
                (tag, RELATED_RARE + 1),
            ).fetchone()[0]
            <= RELATED_RARE
        ]
        if rare_tags:
            marks = ",".join("?" * len(rare_tags))
            for memory_id, shared in conn.execute(
                f"SELECT t.memory_id, {self._TAG_LIST} FROM memory_tags t "
                f"JOIN memories m ON m.id = t.memory_id WHERE t.tag IN ({marks}) AND t.memory_id != ? "
                f"AND {VISIBLE} GROUP BY t.memory_id ORDER BY count(*) DESC, t.memory_id DESC LIMIT ?",
                [*rare_tags, memory.id, limit],
            ):
                found[int(memory_id)] = (sorted(str(shared).split("\x1f")), [])
        if len(found) < limit:
            pieces = self._rare_pieces(conn, memory)
            if pieces:
                expression = " OR ".join(piece.expression for _, piece, _ in pieces)
                excluded |= set(found)
                marks = ",".join("?" * len(excluded))
                ranked = self._ranked(
                    "memory_words",
                    expression,
                    Filters(),
                    f" AND m.id NOT IN ({marks})",
                    list(excluded),
                    limit - len(found),
                )
                for memory_id, _ in ranked:
                    found[memory_id] = ([], [])
                rows = self.memories_for([i for i, _ in ranked])
                for memory_id, _ in ranked:
                    row = rows.get(memory_id)
                    if row is not None:
                        text = search_text.words_text(f"{row.path} {row.content} {row.disclosure}").lower()
                        found[memory_id][1].extend(
                            term for _, piece, term in pieces if any(f in text for f in piece.forms)
                        )
        rows = self.memories_for(list(found))
        return [(rows[i], *found[i]) for i in found if i in rows]

    def _rare_pieces(self, conn: Connection, memory: MemoryRow) -> list[tuple[int, search_text.Piece, str]]:
        """The rarest pieces of the memory's text that some other memory holds: (count, piece, term).

        A piece here is one exact index token (a word as written, a CJK bigram) or phrase, not a
        word's every form: counting forms would multiply the queries by ten for little gain.
        """
        text = f"{memory.path}\n{memory.disclosure}\n{memory.content[:RELATED_TEXT_CHARS]}"
        candidates: dict[str, None] = {}
        for line in re.split(r"[\n。！？!?；;]+", text):
            for piece in search_text.relaxed_pieces(search_text.split_terms(line)):
                form = piece.forms[0]
                if piece.counted and len(form) >= 2:
                    candidates.setdefault(form)
            if len(candidates) >= RELATED_TERMS:
                break
        forms = list(candidates)[:RELATED_TERMS]
        tokens = [
            t
            for t in dict.fromkeys(t for form in forms for t in form.split(" "))
            if t not in self._common_tokens and t not in self._large_counts  # known to be common
        ]
        counts = self._bounded_counts(conn, tokens, RELATED_RARE + 2)
        if len(self._common_tokens) < COMMON_TOKENS_KEPT:  # a token's count falls only rarely: remember it
            self._common_tokens.update(t for t, c in counts.items() if c > RELATED_RARE + 1)
        rare = []
        for form in forms:
            found_in = min(counts.get(t, RELATED_RARE + 2) for t in form.split(" "))
            if 2 <= found_in <= RELATED_RARE + 1:  # the memory itself is one of them
                rare.append((found_in, search_text.Piece((form,)), form))
        rare.sort(key=lambda r: r[0])
        return rare[:RELATED_PIECES]

    # --- preload helpers ----------------------------------------------------------------

    def memories_for(self, ids: Sequence[int]) -> dict[int, MemoryRow]:
        return {h.memory.id: h.memory for h in self._hits({i: (0.0, "") for i in ids})}


def mentioned_relations(store: MemoryStore, memory: MemoryRow) -> list[tuple[str, bool]]:
    """URIs the memory's content mentions, each with whether it names something that exists."""
    uris = [u for u in mentioned_uris(memory.content) if u != memory.uri]
    existing = store.existing_uris(uris)
    return [(u, u in existing) for u in uris]
