"""What the SQLite file does its own way, as a part the store holds (``MemoryStore.engine``).

The store's rules and their SQL are written once (``access``, ``writes``, ``listings``,
``ranking``, ``importing``); the engine supplies what differs: the write transaction (SQLite's
``BEGIN IMMEDIATE`` already holds the whole file, so no lock is taken), the FTS5 indexes
(BM25 ranking, bounded token counts, trigram substring terms), index hints, the size on disk
and compaction. ``postgres.PostgresEngine`` is the team database's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from hostd_db import Connection, Database

from hostd_memory import search as search_text
from hostd_memory.store import tuning
from hostd_memory.store.rows import RankQuery
from hostd_memory.store.schema import BM25_WEIGHTS, VISIBLE


class SqliteEngine:
    """The SQLite file's transactions and full-text indexes."""

    #: The shared tags of a group, joined by U+001F.
    tag_list = "group_concat(t.tag, char(31))"

    def __init__(self, database: Database) -> None:
        self.database = database
        self.path = Path(database.where)

    # --- transactions -------------------------------------------------------------------

    def finish_write(self, conn: Connection) -> None:
        """Nothing to do before a write commits: the FTS5 indexes follow ``memories`` through triggers."""

    @staticmethod
    def insert_returning_id(conn: Connection, sql: str, params: Sequence[Any]) -> int:
        return int(conn.execute(sql, params).lastrowid or 0)

    # --- full text ----------------------------------------------------------------------

    @staticmethod
    def index_hint(index: str) -> str:
        """SQLite's planner is told which index drives a listing (PostgreSQL picks its own)."""
        return f"INDEXED BY {index}"

    @staticmethod
    def mention_candidates(conn: Connection, name: str, memory_id: int) -> Iterable[tuple[str, str]]:
        """(uri, content) of at most 200 visible memories, other than ``memory_id``, whose content
        may mention ``name`` (the caller checks with ``mentions``)."""
        rows: list[tuple[str, str]] = conn.execute(
            f"SELECT m.uri, m.content FROM memory_fts JOIN memories m ON m.id = memory_fts.rowid "
            f"WHERE memory_fts MATCH ? AND {VISIBLE} AND m.id != ? LIMIT 200",
            ("content : " + search_text.fts_literal(name), memory_id),
        ).fetchall()
        return rows

    @staticmethod
    def words_clause(expression: str) -> tuple[str, list[Any]]:
        """A condition keeping the memories ``expression`` matches in ``memory_words``."""
        return " AND m.id IN (SELECT rowid FROM memory_words WHERE memory_words MATCH ?)", [expression]

    @staticmethod
    def bounded_counts(conn: Connection, tokens: Sequence[str], bound: int) -> dict[str, int]:
        """How many memories hold each index token, counted up to ``bound`` (queries that stop there)."""
        counts: dict[str, int] = {}
        for start in range(0, len(tokens), tuning.TOKEN_COUNT_BATCH):
            chunk = tokens[start : start + tuning.TOKEN_COUNT_BATCH]
            params: list[Any] = []
            for token in chunk:
                params += [search_text.fts_literal(token), bound]
            row = conn.execute("SELECT " + ", ".join([tuning.BOUNDED_COUNT] * len(chunk)), params).fetchone()
            counts.update(zip(chunk, (int(c) for c in row), strict=True))
        return counts

    @staticmethod
    def newest_match(conn: Connection, query: RankQuery, cap: int) -> int | None:
        """The id of the ``cap``-th newest match (by rowid, without scoring); None if fewer match."""
        table = query.table
        row = conn.execute(
            f"SELECT rowid FROM {table} WHERE {table} MATCH ? ORDER BY rowid DESC LIMIT 1 OFFSET ?",
            (query.expression, cap - 1),
        ).fetchone()
        return int(row[0]) if row else None

    def rank(self, conn: Connection, query: RankQuery, floor: int | None) -> list[tuple[int, float]]:
        """The matches from id ``floor`` on (all with None), best BM25 first. With no filter but the
        status, FTS5 ranks on its own and only the best few are looked up in ``memories``."""
        table = query.table
        bound = f" AND {table}.rowid >= ?" if floor is not None else ""
        bounds = [floor] if floor is not None else []
        if not query.extra and query.filters.only_visible:
            rows = self._ranked_visible(conn, table, query.expression, bound, bounds, query.limit)
            if rows is not None:
                return rows
        where, params = query.filters.sql()
        sql = (
            f"SELECT m.id, bm25({table}, {BM25_WEIGHTS}) AS score FROM {table} "
            f"JOIN memories m ON m.id = {table}.rowid WHERE {table} MATCH ? AND {where}{query.extra}{bound} "
            "ORDER BY score LIMIT ?"
        )
        return [
            (int(r[0]), float(r[1]))
            for r in conn.execute(sql, [query.expression, *params, *query.extra_params, *bounds, query.limit])
        ]

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

    def index_words(self, conn: Connection) -> None:
        """Nothing to do: the FTS5 indexes follow ``memories`` through triggers."""

    # --- upkeep -------------------------------------------------------------------------

    def database_bytes(self, conn: Connection) -> int:
        """What the store takes on disk (the file with its journal)."""
        return sum(
            p.stat().st_size
            for p in (self.path, Path(f"{self.path}-wal"), Path(f"{self.path}-shm"))
            if p.exists()
        )

    def compact(self) -> None:
        """Merge the word index into one segment (FTS5 'optimize').

        A bulk import leaves the index in many segments, and every token a search looks up is
        looked up in each of them. Compacting costs a pass over the index, so it follows only
        imports that added at least a quarter of the store.
        """
        self.database.write(
            lambda conn: conn.execute("INSERT INTO memory_words (memory_words) VALUES ('optimize')")
        )
