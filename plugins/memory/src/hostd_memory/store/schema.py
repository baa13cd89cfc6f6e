"""The memory database's tables, indexes, full-text indexes and their triggers, and the
migrations that build them step by step (``PRAGMA user_version`` counts them; the team
database has its own in ``postgres.PG_MIGRATIONS``).

Layout: ``memories`` holds each memory's current state (and its current version number and
change note); ``memory_versions`` holds every earlier version, so version *n* of a memory is
either a row there or the memory itself. ``aliases`` point other URIs at a memory. Each version
names its ``author``, the member who wrote it (``None`` for versions from before members were
recorded). Two FTS5 indexes follow ``memories`` through triggers (see ``search.py`` for what
each answers).
"""

from __future__ import annotations

import sqlite3

STATUSES = ("active", "deprecated", "archived", "deleted")
VISIBLE = "m.status != 'deleted'"

MEMORY_COLUMNS = (
    "m.id, m.uri, m.domain, m.path, m.content, m.priority, m.disclosure, m.status, m.access_count, "
    "m.last_accessed_at, m.created_at, m.updated_at, m.version, m.change, m.change_note, m.tags, m.author"
)
VERSION_COLUMNS = (
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
