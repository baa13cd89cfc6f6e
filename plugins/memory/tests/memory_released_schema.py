"""The tables as the release before the shared schema made them, frozen: the memory.db files and
team databases people have today, which the current schema must open as they are.

Copied from that release's ``hostd_memory/store/schema.py`` and ``store/postgres.py``; never edit.
"""

from __future__ import annotations

import sqlite3

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


# The team database: one migration.
PG_MIGRATIONS: list[str] = [
    """
    CREATE TABLE memories (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        uri text COLLATE "C" NOT NULL UNIQUE,
        domain text COLLATE "C" NOT NULL,
        path text COLLATE "C" NOT NULL,
        content text NOT NULL,
        priority integer NOT NULL CHECK (priority BETWEEN 0 AND 10),
        disclosure text NOT NULL DEFAULT '',
        status text NOT NULL DEFAULT 'active'
            CHECK (status IN ('active', 'deprecated', 'archived', 'deleted')),
        access_count integer NOT NULL DEFAULT 0,
        last_accessed_at text COLLATE "C",
        created_at text COLLATE "C" NOT NULL,
        updated_at text COLLATE "C" NOT NULL,
        version integer NOT NULL DEFAULT 1,
        change text NOT NULL DEFAULT 'created',
        change_note text NOT NULL DEFAULT '',
        tags text NOT NULL DEFAULT '[]',
        author text COLLATE "C",
        words tsvector
    );
    CREATE INDEX memories_by_priority ON memories (status, priority, updated_at DESC, id DESC);
    CREATE INDEX memories_by_domain ON memories (domain, status, priority, updated_at DESC, id DESC);
    CREATE INDEX memories_by_update ON memories (status, updated_at DESC, id DESC);
    CREATE INDEX memories_by_rank ON memories (priority, updated_at DESC, id DESC);
    CREATE INDEX memories_by_creation ON memories (created_at);
    CREATE INDEX memories_by_change ON memories (updated_at);
    CREATE INDEX memories_by_author ON memories (author, priority, updated_at DESC, id DESC);
    CREATE INDEX memories_words ON memories USING gin (words);
    CREATE INDEX memories_unindexed ON memories (id) WHERE words IS NULL;
    CREATE TABLE memory_versions (
        memory_id bigint NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        version integer NOT NULL,
        content text NOT NULL,
        priority integer NOT NULL,
        disclosure text NOT NULL,
        status text NOT NULL,
        change text NOT NULL,
        change_note text NOT NULL DEFAULT '',
        created_at text COLLATE "C" NOT NULL,
        tags text NOT NULL DEFAULT '[]',
        author text COLLATE "C",
        PRIMARY KEY (memory_id, version)
    );
    CREATE TABLE aliases (
        alias_uri text COLLATE "C" PRIMARY KEY,
        memory_id bigint NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        created_at text COLLATE "C" NOT NULL
    );
    CREATE INDEX aliases_by_memory ON aliases (memory_id);
    CREATE TABLE sessions (
        id bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
        title text NOT NULL,
        summary text NOT NULL DEFAULT '',
        memory_uri text COLLATE "C",
        created_at text COLLATE "C" NOT NULL
    );
    CREATE TABLE memory_tags (
        tag text COLLATE "C" NOT NULL,
        memory_id bigint NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        PRIMARY KEY (tag, memory_id)
    );
    CREATE INDEX memory_tags_by_memory ON memory_tags (memory_id);
    CREATE TABLE memory_links (
        from_id bigint NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        to_id bigint NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
        relation text COLLATE "C" NOT NULL,
        created_at text COLLATE "C" NOT NULL,
        PRIMARY KEY (from_id, to_id, relation),
        CHECK (from_id != to_id)
    );
    CREATE INDEX memory_links_by_target ON memory_links (to_id, from_id);
    -- Every token the word index ever held (never removed): a search's token absent here is in
    -- no memory, known without a GIN look-up (see PostgresMemoryStore._count_now).
    CREATE TABLE memory_lexemes (token text COLLATE "C" PRIMARY KEY);
    -- memory_tags follows the tags column, as the SQLite triggers keep it.
    CREATE FUNCTION memories_tags_follow() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF TG_OP = 'UPDATE' THEN
            IF OLD.tags IS NOT DISTINCT FROM NEW.tags THEN
                RETURN NULL;
            END IF;
            DELETE FROM memory_tags WHERE memory_id = NEW.id;
        END IF;
        INSERT INTO memory_tags (tag, memory_id)
            SELECT DISTINCT value, NEW.id FROM jsonb_array_elements_text(NEW.tags::jsonb)
            ON CONFLICT DO NOTHING;
        RETURN NULL;
    END $$;
    CREATE TRIGGER memories_tags_insert AFTER INSERT ON memories
        FOR EACH ROW EXECUTE FUNCTION memories_tags_follow();
    CREATE TRIGGER memories_tags_update AFTER UPDATE OF tags ON memories
        FOR EACH ROW EXECUTE FUNCTION memories_tags_follow();
    -- A changed text empties its index entry; the writing transaction fills it before it commits.
    CREATE FUNCTION memories_words_stale() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF OLD.path IS DISTINCT FROM NEW.path OR OLD.content IS DISTINCT FROM NEW.content
           OR OLD.disclosure IS DISTINCT FROM NEW.disclosure THEN
            NEW.words := NULL;
        END IF;
        RETURN NEW;
    END $$;
    CREATE TRIGGER memories_words_update BEFORE UPDATE OF path, content, disclosure ON memories
        FOR EACH ROW EXECUTE FUNCTION memories_words_stale();
    """,
]
