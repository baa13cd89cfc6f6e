"""The team database's tables and the words each thought is found by.

``MIGRATIONS`` are applied in order by ``hostd db migrate`` (or start-up); never change what one
that shipped creates, add the next. They are ``hostd_db.schema`` operations, as every plugin's;
what only PostgreSQL has (the ``tsvector`` words, the generation sequence, a boolean singleton)
is ``Only("postgres", ...)``. The search words: each thought row carries a ``tsvector`` built here in
Python from the same words the SQLite FTS5 index holds (``search.words_text``), and queries are
built the same way, so search finds on PostgreSQL what it finds beside the files.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from hostd_db import AddColumn, Column, ColumnType, Index, Only, Schema, Table
from hostd_db.schema import Operation

from hostd_deep_thinking.search import _CJK_RUN, Query, words_text

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


_TOKEN = re.compile(r"[^\W_]+")
#: A lexeme is at most 2047 bytes: longer words are indexed (and looked for) by their start.
_LONGEST_TOKEN = 500
#: tsvector positions stop at 16383; later words keep that position (they are still found).
_LAST_POSITION = 16383


def _fold(text: str) -> str:
    """Case and diacritics folded, as FTS5's ``unicode61 remove_diacritics 2`` tokenizer does."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(char for char in decomposed if not unicodedata.combining(char)).casefold()


def _tokens(text: str) -> list[str]:
    """The index's tokens of a text: ``words_text``'s words, folded (CJK bigrams stay tokens)."""
    return [token[:_LONGEST_TOKEN] for token in _TOKEN.findall(_fold(words_text(text)))]


def _lexeme(token: str) -> str:
    return "'" + token.replace("\\", "\\\\").replace("'", "''") + "'"


def thought_words(thought: dict[str, Any]) -> str:
    """A thought's ``tsvector`` as text: its content's tokens, then its stage's and tags' at weight B."""
    content = _tokens(str(thought.get("content") or ""))
    labels = _tokens(" ".join([str(thought.get("stage") or ""), *map(str, thought.get("tags") or [])]))
    parts = [f"{_lexeme(token)}:{min(at, _LAST_POSITION)}" for at, token in enumerate(content, 1)]
    start = len(content) + 2  # labels are never a phrase with the content's last word
    parts += [f"{_lexeme(token)}:{min(at, _LAST_POSITION)}B" for at, token in enumerate(labels, start)]
    return " ".join(parts)


def _term_query(term: str) -> str | None:
    """One query term as ``tsquery`` text, matching what the SQLite index's expression matches."""
    if _CJK_RUN.fullmatch(term):
        if len(term) == 1:
            return _lexeme(term) + ":*"
        return "(" + " <-> ".join(_lexeme(term[i : i + 2]) for i in range(len(term) - 1)) + ")"
    tokens = [token[:_LONGEST_TOKEN] for token in _TOKEN.findall(_fold(term))]
    if not tokens:
        return None
    prefix = ":*" if len(term) >= 3 or len(tokens[-1]) == _LONGEST_TOKEN else ""
    return "(" + " <-> ".join(_lexeme(token) for token in tokens) + prefix + ")"


def search_queries(query: Query) -> tuple[str, str] | None:
    """The query as (every term required, any term) ``tsquery`` texts; None when no term has a token."""
    terms = [found for term in query.terms if (found := _term_query(term)) is not None]
    if not terms:
        return None
    return " & ".join(terms), " | ".join(terms)
