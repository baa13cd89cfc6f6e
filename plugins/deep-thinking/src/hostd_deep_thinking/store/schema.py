"""The team database's tables and the words each thought is found by.

``MIGRATIONS`` are applied in order by ``hostd db migrate`` (or start-up); never change what one
that shipped creates, add the next. They are ``hostd_db.schema`` operations, as every plugin's;
what only PostgreSQL has (the ``tsvector`` words, the generation sequence, a boolean singleton)
is ``Only("postgres", ...)``. The search words: each thought row carries a ``tsvector`` built in
Python by the query language (``search.thought_words``) from the same words the SQLite FTS5
index holds, so search finds on PostgreSQL what it finds beside the files.
"""

from __future__ import annotations

from hostd_db import AddColumn, Column, ColumnType, Index, Only, Operation, Schema, Table

TEXT, INTEGER, BIGINT, JSON = ColumnType.TEXT, ColumnType.INTEGER, ColumnType.BIGINT, ColumnType.JSON

MIGRATIONS: list[list[Operation]] = [
    [
        Table(
            "sessions",
            (
                Column("session_id", TEXT, primary_key=True),
                Column("generation", BIGINT, not_null=True),
                Column("meta", JSON, not_null=True),
                Column("adjustments", JSON, not_null=True),
                Column("last_seq", INTEGER, not_null=True),
                Column("summary", JSON, not_null=True),
                Column("status", TEXT, not_null=True),
                Column("updated_at", TEXT, not_null=True),
            ),
        ),
        Index("sessions_newest_first", "sessions", "updated_at DESC, session_id DESC"),
        Index("sessions_by_status", "sessions", "status, updated_at DESC, session_id DESC"),
        Only("postgres", "CREATE SEQUENCE session_generations"),
        Table(
            "thoughts",
            (
                Column("session_id", TEXT, not_null=True, references="sessions", on_delete="CASCADE"),
                Column("seq", INTEGER, not_null=True, check="seq > 0"),
                Column("thought", JSON, not_null=True),
            ),
            primary_key=("session_id", "seq"),
        ),
        # The search words (``thought_words``): a tsvector, which only PostgreSQL has.
        Only(
            "postgres",
            "ALTER TABLE thoughts ADD COLUMN words tsvector NOT NULL",
            "CREATE INDEX thoughts_words ON thoughts USING gin (words)",
        ),
        Table(
            "backups",
            (
                Column("session_id", TEXT, not_null=True),
                Column("name", TEXT, not_null=True),
                Column("document", JSON, not_null=True),
            ),
            primary_key=("session_id", "name"),
        ),
        Only(
            "postgres",
            """CREATE TABLE default_session (
                singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
                session_id text NOT NULL,
                since text NOT NULL
            )""",
        ),
    ],
    # 2: who created each session (list_sessions filters on it), and a default session per member.
    # The singleton default_session stays: it is the default of members without their own yet.
    [
        AddColumn("sessions", Column("created_by", TEXT)),
        Only("postgres", "UPDATE sessions SET created_by = meta->>'created_by'"),
        Index("sessions_by_creator", "sessions", "created_by, updated_at DESC, session_id DESC"),
        Table(
            "member_default_session",
            (
                Column("member", TEXT, primary_key=True),
                Column("session_id", TEXT, not_null=True),
                Column("since", TEXT, not_null=True),
            ),
        ),
    ],
]


def schema() -> Schema:
    """The session tables, only in the team database: without it the sessions are JSON files in
    the data folder (no SQLite file: ``sqlite_file`` None)."""
    return Schema(migrations=MIGRATIONS)
