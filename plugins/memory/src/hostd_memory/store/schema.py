"""The memory database's tables, indexes, full-text indexes and their triggers, and the
migrations that build them step by step, written once for SQLite and the team database
(``hostd_db.Schema``; what each database alone has is ``Only``).

Layout: ``memories`` holds each memory's current state (and its current version number and
change note); ``memory_versions`` holds every earlier version, so version *n* of a memory is
either a row there or the memory itself. ``aliases`` point other URIs at a memory. Each version
names its ``author``, the member who wrote it (``None`` for versions from before members were
recorded). Two FTS5 indexes follow ``memories`` through triggers (see ``search.py`` for what
each answers).
"""

from __future__ import annotations

from hostd_db import AddColumn, Column, ColumnType, Index, Only, Operation, Schema, Table

from hostd_memory import search as search_text

STATUSES = ("active", "deprecated", "archived", "deleted")
VISIBLE = "m.status != 'deleted'"

MEMORY_COLUMNS = (
    "m.id, m.uri, m.domain, m.path, m.content, m.priority, m.disclosure, m.status, m.access_count, "
    "m.last_accessed_at, m.created_at, m.updated_at, m.version, m.change, m.change_note, m.tags, m.author"
)
VERSION_COLUMNS = (
    "version, content, priority, disclosure, status, change, change_note, created_at, tags, author"
)

TEXT, KEY, INTEGER, BIGINT = ColumnType.TEXT, ColumnType.KEY, ColumnType.INTEGER, ColumnType.BIGINT
MEMORY = "memories (id)"


def _memory_id(name: str = "memory_id") -> Column:
    """A reference to a memory, removed with it."""
    return Column(name, BIGINT, not_null=True, references=MEMORY, on_delete="CASCADE")


# What the triggers below run: a row's text into both indexes (``new``), and out of them again
# (``old``; the contentless word index is told the same text it was given). An update does both.
_INDEX_NEW = """
        INSERT INTO memory_fts (rowid, path, content, disclosure)
            VALUES (new.id, new.path, new.content, new.disclosure);
        INSERT INTO memory_words (rowid, path, content, disclosure)
            VALUES (new.id, memory_words_text(new.path), memory_words_text(new.content),
                    memory_words_text(new.disclosure));"""
_UNINDEX_OLD = """
        INSERT INTO memory_fts (memory_fts, rowid, path, content, disclosure)
            VALUES ('delete', old.id, old.path, old.content, old.disclosure);
        INSERT INTO memory_words (memory_words, rowid, path, content, disclosure)
            VALUES ('delete', old.id, memory_words_text(old.path), memory_words_text(old.content),
                    memory_words_text(old.disclosure));"""

_SQLITE_TEXT_INDEXES = (
    # Substring index (any script, three characters or more); reads its text from memories.
    """CREATE VIRTUAL TABLE memory_fts USING fts5(
        path, content, disclosure, content='memories', content_rowid='id', tokenize='trigram')""",
    # Word and CJK-bigram index over memory_words_text(...); contentless, so it costs only
    # its index. The triggers recompute the same text to delete old entries.
    """CREATE VIRTUAL TABLE memory_words USING fts5(
        path, content, disclosure, content='', tokenize='unicode61 remove_diacritics 2')""",
    f"""CREATE TRIGGER memories_index_insert AFTER INSERT ON memories BEGIN{_INDEX_NEW}
    END""",
    f"""CREATE TRIGGER memories_index_delete AFTER DELETE ON memories BEGIN{_UNINDEX_OLD}
    END""",
    f"""CREATE TRIGGER memories_index_update AFTER UPDATE OF path, content, disclosure ON memories
    WHEN old.path IS NOT new.path OR old.content IS NOT new.content OR old.disclosure IS NOT new.disclosure
    BEGIN{_UNINDEX_OLD}{_INDEX_NEW}
    END""",
)

# PostgreSQL's word index: ``words``, a tsvector built in Python (``search.ts_vector``) with a GIN
# index; a changed text empties it and the writing transaction fills it before it commits.
# ``memory_lexemes`` holds every token the index ever held (never removed): a search's token absent
# there is in no memory, known without a GIN look-up (see PostgresEngine._count_now).
_POSTGRES_TEXT_INDEX = (
    "ALTER TABLE memories ADD COLUMN words tsvector",
    "CREATE INDEX memories_words ON memories USING gin (words)",
    "CREATE INDEX memories_unindexed ON memories (id) WHERE words IS NULL",
    'CREATE TABLE memory_lexemes (token text COLLATE "C" PRIMARY KEY)',
    """CREATE FUNCTION memories_words_stale() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF OLD.path IS DISTINCT FROM NEW.path OR OLD.content IS DISTINCT FROM NEW.content
           OR OLD.disclosure IS DISTINCT FROM NEW.disclosure THEN
            NEW.words := NULL;
        END IF;
        RETURN NEW;
    END $$""",
    """CREATE TRIGGER memories_words_update BEFORE UPDATE OF path, content, disclosure ON memories
        FOR EACH ROW EXECUTE FUNCTION memories_words_stale()""",
)

_VERSION_1: list[Operation] = [
    Table(
        "memories",
        (
            Column("id", ColumnType.SERIAL),
            Column("uri", KEY, not_null=True, unique=True),
            Column("domain", KEY, not_null=True),
            Column("path", KEY, not_null=True),
            Column("content", TEXT, not_null=True),
            Column("priority", INTEGER, not_null=True, check="priority BETWEEN 0 AND 10"),
            Column("disclosure", TEXT, not_null=True, default="''"),
            Column(
                "status",
                TEXT,
                not_null=True,
                default="'active'",
                check="status IN ('active', 'deprecated', 'archived', 'deleted')",
            ),
            Column("access_count", INTEGER, not_null=True, default="0"),
            Column("last_accessed_at", KEY),
            Column("created_at", KEY, not_null=True),
            Column("updated_at", KEY, not_null=True),
            Column("version", INTEGER, not_null=True, default="1"),
            Column("change", TEXT, not_null=True, default="'created'"),
            Column("change_note", TEXT, not_null=True, default="''"),
        ),
    ),
    Index("memories_by_priority", "memories", "status, priority, updated_at DESC, id DESC"),
    Index("memories_by_domain", "memories", "domain, status, priority, updated_at DESC, id DESC"),
    Index("memories_by_update", "memories", "status, updated_at DESC, id DESC"),
    Table(
        "memory_versions",
        (
            _memory_id(),
            Column("version", INTEGER, not_null=True),
            Column("content", TEXT, not_null=True),
            Column("priority", INTEGER, not_null=True),
            Column("disclosure", TEXT, not_null=True),
            Column("status", TEXT, not_null=True),
            Column("change", TEXT, not_null=True),
            Column("change_note", TEXT, not_null=True, default="''"),
            Column("created_at", KEY, not_null=True),
        ),
        primary_key=("memory_id", "version"),
    ),
    Table(
        "aliases",
        (
            Column("alias_uri", KEY, primary_key=True),
            _memory_id(),
            Column("created_at", KEY, not_null=True),
        ),
    ),
    Index("aliases_by_memory", "aliases", "memory_id"),
    Table(
        "sessions",
        (
            Column("id", ColumnType.SERIAL),
            Column("title", TEXT, not_null=True),
            Column("summary", TEXT, not_null=True, default="''"),
            Column("memory_uri", KEY),
            Column("created_at", KEY, not_null=True),
        ),
    ),
    Only("sqlite", *_SQLITE_TEXT_INDEXES),
    Only("postgres", *_POSTGRES_TEXT_INDEX),
]

# How many memories hold each token of memory_words (for inspection: a search counts the tokens it
# needs with queries that stop early, where the vocabulary reads a token's whole list).
_VERSION_2: list[Operation] = [
    Only("sqlite", "CREATE VIRTUAL TABLE memory_words_vocab USING fts5vocab(memory_words, 'row')"),
]

# Tags (versioned with the memory) and typed links between memories.
#
# The tag list lives on the memory and on each version as a JSON array of normalised tags, so a
# version is the whole state and a rollback restores tags with content; ``memory_tags`` is the
# lookup table the filters and counts use, kept in step by triggers from that column. Links join
# memory ids (never URIs), so they follow a memory through its aliases; they are not versioned, and
# go with the memory only when it is removed for good (the foreign keys).
_VERSION_3: list[Operation] = [
    AddColumn("memories", Column("tags", TEXT, not_null=True, default="'[]'")),
    AddColumn("memory_versions", Column("tags", TEXT, not_null=True, default="'[]'")),
    Table(
        "memory_tags",
        (Column("tag", KEY, not_null=True), _memory_id()),
        primary_key=("tag", "memory_id"),
        without_rowid=True,
    ),
    Index("memory_tags_by_memory", "memory_tags", "memory_id"),
    Only(
        "sqlite",
        """CREATE TRIGGER memories_tags_insert AFTER INSERT ON memories BEGIN
            INSERT OR IGNORE INTO memory_tags (tag, memory_id) SELECT value, new.id FROM json_each(new.tags);
        END""",
        """CREATE TRIGGER memories_tags_update AFTER UPDATE OF tags ON memories
        WHEN old.tags IS NOT new.tags BEGIN
            DELETE FROM memory_tags WHERE memory_id = new.id;
            INSERT OR IGNORE INTO memory_tags (tag, memory_id) SELECT value, new.id FROM json_each(new.tags);
        END""",
    ),
    Only(
        "postgres",
        """CREATE FUNCTION memories_tags_follow() RETURNS trigger LANGUAGE plpgsql AS $$
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
        END $$""",
        """CREATE TRIGGER memories_tags_insert AFTER INSERT ON memories
            FOR EACH ROW EXECUTE FUNCTION memories_tags_follow()""",
        """CREATE TRIGGER memories_tags_update AFTER UPDATE OF tags ON memories
            FOR EACH ROW EXECUTE FUNCTION memories_tags_follow()""",
    ),
    Table(
        "memory_links",
        (
            _memory_id("from_id"),
            _memory_id("to_id"),
            Column("relation", KEY, not_null=True),
            Column("created_at", KEY, not_null=True),
        ),
        primary_key=("from_id", "to_id", "relation"),
        checks=("from_id != to_id",),
        without_rowid=True,
    ),
    Index("memory_links_by_target", "memory_links", "to_id, from_id"),
    # Listings by rank whatever the status (the filters below are checked along the way), and by
    # creation or change time (narrow time windows): see MemoryStore._listing_source.
    Index("memories_by_rank", "memories", "priority, updated_at DESC, id DESC"),
    Index("memories_by_creation", "memories", "created_at"),
    Index("memories_by_change", "memories", "updated_at"),
]

# Who wrote each version: the member's name on the memory (its current version) and on each kept
# version. Versions written before this have none (NULL: from before members were recorded). The
# index serves ``list_memories(author=...)``.
_VERSION_4: list[Operation] = [
    AddColumn("memories", Column("author", KEY)),
    AddColumn("memory_versions", Column("author", KEY)),
    Index("memories_by_author", "memories", "author, priority, updated_at DESC, id DESC"),
]

# Counts the statistics read (``Listings.stats``), kept by triggers in the transaction of every
# write, so ``get_memory_stats`` reads a few hundred rows instead of scanning every memory and tag.
# ``kind`` is ``status`` (every memory, deleted ones too), ``domain``, ``tag``, ``accesses`` (the
# visible memories' read counts, key ''), or ``versions``/``aliases``/``links``/``sessions`` (rows,
# key ''); ``n`` is the sum of the deltas written. Each key has one row per ``shard``: SQLite has one
# writer and uses shard 0; on PostgreSQL a write adds to the row of its connection's shard
# (``pg_backend_pid() % COUNT_SHARDS``), so concurrent writers (every create adds to
# ``status/active``) rarely wait on one counter row; the reader sums the shards.
COUNT_SHARDS = 16
_SQLITE_SHARD = "0"
_POSTGRES_SHARD = f"pg_backend_pid() % {COUNT_SHARDS}"
_C = ' COLLATE "C"'


def _memory_deltas(row: str, sign: str, tags: str, collate: str = "") -> list[str]:
    """What one memory row (``new`` or ``old``) adds to the counts (``sign`` is '' or '-'); ``tags``
    is the SQL listing its distinct tags as ``value``; ``collate`` gives every key one collation
    (PostgreSQL's status, domain and tags differ)."""
    visible = f"{row}.status != 'deleted'"
    return [
        f"SELECT 'status' AS kind, {row}.status{collate} AS key, {sign}1 AS d",
        f"SELECT 'domain', {row}.domain{collate}, {sign}1 WHERE {visible}",
        f"SELECT 'accesses', ''{collate}, {sign}{row}.access_count WHERE {visible}",
        f"SELECT 'tag', value{collate}, {sign}1 FROM ({tags}) AS t WHERE {visible}",
    ]


def _add_counts(shard: str, parts: list[str]) -> str:
    """One UPSERT adding the summed deltas of ``parts`` (SELECTs of kind, key, d), in key order."""
    return (
        "INSERT INTO memory_counts (kind, key, shard, n) "
        f"SELECT kind, key, {shard}, sum(d) FROM ({' UNION ALL '.join(parts)}) AS deltas "
        "GROUP BY kind, key HAVING sum(d) != 0 ORDER BY kind, key "
        "ON CONFLICT (kind, key, shard) DO UPDATE SET n = memory_counts.n + excluded.n"
    )


def _sqlite_tags(row: str) -> str:
    return f"SELECT DISTINCT value FROM json_each({row}.tags)"


def _postgres_tags(row: str) -> str:
    return f"SELECT DISTINCT value FROM jsonb_array_elements_text({row}.tags::jsonb)"


#: The tables counted by rows, and the counts key of each.
_ROW_COUNTED = {
    "memory_versions": "versions",
    "aliases": "aliases",
    "memory_links": "links",
    "sessions": "sessions",
}
_COUNTED_COLUMNS = "status, domain, tags, access_count"
_COUNTED_CHANGE = (
    "old.status IS NOT new.status OR old.domain IS NOT new.domain OR old.tags IS NOT new.tags "
    "OR old.access_count IS NOT new.access_count"
)


def _sqlite_count_triggers() -> list[str]:
    s = _SQLITE_SHARD
    new = _memory_deltas("new", "", _sqlite_tags("new"))
    old = _memory_deltas("old", "-", _sqlite_tags("old"))
    statements = [
        f"""CREATE TRIGGER memories_count_insert AFTER INSERT ON memories BEGIN
            {_add_counts(s, new)};
        END""",
        f"""CREATE TRIGGER memories_count_update AFTER UPDATE OF {_COUNTED_COLUMNS} ON memories
        WHEN {_COUNTED_CHANGE} BEGIN
            {_add_counts(s, old + new)};
        END""",
        f"""CREATE TRIGGER memories_count_delete AFTER DELETE ON memories BEGIN
            {_add_counts(s, old)};
        END""",
    ]
    for table, key in _ROW_COUNTED.items():
        statements += [
            f"""CREATE TRIGGER {table}_count_insert AFTER INSERT ON {table} BEGIN
                {_add_counts(s, [f"SELECT '{key}' AS kind, '' AS key, 1 AS d"])};
            END""",
            f"""CREATE TRIGGER {table}_count_delete AFTER DELETE ON {table} BEGIN
                {_add_counts(s, [f"SELECT '{key}' AS kind, '' AS key, -1 AS d"])};
            END""",
        ]
    return statements


def _postgres_count_triggers() -> list[str]:
    s = _POSTGRES_SHARD
    changed = (
        _COUNTED_CHANGE.replace(" IS NOT ", " IS DISTINCT FROM ")
        .replace("old.", "OLD.")
        .replace("new.", "NEW.")
    )
    one_row = (
        f"SELECT TG_ARGV[0]::text AS kind, ''{_C} AS key, CASE WHEN TG_OP = 'INSERT' THEN 1 ELSE -1 END AS d"
    )
    new = _memory_deltas("NEW", "", _postgres_tags("NEW"), _C)
    old = _memory_deltas("OLD", "-", _postgres_tags("OLD"), _C)
    statements = [
        f"""CREATE FUNCTION memories_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_OP = 'INSERT' THEN
                {_add_counts(s, new)};
            ELSIF TG_OP = 'DELETE' THEN
                {_add_counts(s, old)};
            ELSE
                {_add_counts(s, old + new)};
            END IF;
            RETURN NULL;
        END $$""",
        """CREATE TRIGGER memories_count_insert AFTER INSERT OR DELETE ON memories
            FOR EACH ROW EXECUTE FUNCTION memories_count()""",
        f"""CREATE TRIGGER memories_count_update AFTER UPDATE OF {_COUNTED_COLUMNS} ON memories
            FOR EACH ROW WHEN ({changed})
            EXECUTE FUNCTION memories_count()""",
        f"""CREATE FUNCTION memory_rows_count() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            {_add_counts(s, [one_row])};
            RETURN NULL;
        END $$""",
    ]
    for table, key in _ROW_COUNTED.items():
        statements.append(
            f"""CREATE TRIGGER {table}_count AFTER INSERT OR DELETE ON {table}
                FOR EACH ROW EXECUTE FUNCTION memory_rows_count('{key}')"""
        )
    return statements


def _fill_counts(shard: str, collate: str = "") -> str:
    """The counts of the rows already stored (the migration that adds the counts runs it once)."""
    visible = "m.status != 'deleted'"
    parts = [
        f"SELECT 'status' AS kind, m.status{collate} AS key, 1 AS d FROM memories m",
        f"SELECT 'domain', m.domain{collate}, 1 FROM memories m WHERE {visible}",
        f"SELECT 'accesses', ''{collate}, m.access_count FROM memories m WHERE {visible}",
        f"SELECT 'tag', t.tag{collate}, 1 FROM memory_tags t JOIN memories m ON m.id = t.memory_id "
        f"WHERE {visible}",
        *(f"SELECT '{key}', ''{collate}, 1 FROM {table}" for table, key in _ROW_COUNTED.items()),
    ]
    return _add_counts(shard, parts)


_VERSION_5: list[Operation] = [
    Table(
        "memory_counts",
        (
            Column("kind", KEY, not_null=True),
            Column("key", KEY, not_null=True),
            Column("shard", INTEGER, not_null=True),
            Column("n", BIGINT, not_null=True),
        ),
        primary_key=("kind", "key", "shard"),
    ),
    Only("sqlite", *_sqlite_count_triggers(), _fill_counts(_SQLITE_SHARD)),
    Only("postgres", *_postgres_count_triggers(), _fill_counts("0", _C)),
    # The most read memories (get_memory_stats) without reading every memory.
    Index("memories_by_access", "memories", "access_count DESC, uri", where="access_count > 0"),
]

# Completion of memory URIs (completion/complete): each domain's memories newest first, with the
# path and status in the index, so a walk for the paths starting with a prefix reads no row.
_VERSION_6: list[Operation] = [
    Index("memories_by_domain_change", "memories", "domain, updated_at DESC, path, status"),
]

#: What only one database holds: SQLite's FTS5 tables (and the tables FTS5 keeps them in),
#: PostgreSQL's word index column and its token list. The rest is the same on both.
SQLITE_ONLY_TABLES = ("memory_fts", "memory_words")
POSTGRES_ONLY_TABLES = ("memory_lexemes",)
POSTGRES_ONLY_COLUMNS = {"memories": ["words"]}


def schema(database_file: str) -> Schema:
    """The memory tables; without a team database they live in ``database_file`` in the data folder.

    Each migration runs once per database, in order: add new ones at the end and never edit one.
    """
    return Schema(
        migrations=[_VERSION_1, _VERSION_2, _VERSION_3, _VERSION_4, _VERSION_5, _VERSION_6],
        sqlite_file=database_file,
        # The release before the shared schema made the team tables in one migration: version 4 here.
        postgres_versions={1: 4},
        sqlite_functions={"memory_words_text": search_text.words_text},
    )


# Column weights for BM25: a match in the path says more than one in the content.
BM25_WEIGHTS = "4.0, 1.0, 2.0"
