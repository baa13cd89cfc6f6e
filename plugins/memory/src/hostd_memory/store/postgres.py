"""What the team database (PostgreSQL) does its own way, as a part the store holds (``MemoryStore.engine``).

``MemoryStore`` (the rest of ``store/``) holds the rules and their SQL, written once; this engine
supplies what PostgreSQL does differently (``sqlite.SqliteEngine`` is the file's):

- Writes run in one transaction each (``Database.write(work, locks=uris)``, run again on a
  deadlock or serialization failure) that first takes transaction-scoped advisory locks on the
  URIs it creates, changes or claims (in sorted order), so two members writing different
  memories never wait for each other, while of two creates of one URI (or a create and an alias
  of it) the second sees the first and is ALREADY_EXISTS (the UNIQUE constraint backs this up).
  A write that makes a new version also holds the memory's row (``FOR NO KEY UPDATE``, whatever
  name reached it), so a version number is read and written under that lock, never lost or taken
  twice. Every such write also holds one store-wide lock shared; an import takes it alone
  (``exclusive``), so it sees and changes the store as SQLite's single writer would. Locks are
  taken first, in one order, so writes cannot deadlock on them, and READ COMMITTED raises no
  serialization failure; a deadlock elsewhere (on rows) is retried by hostd-db. A lost
  connection or a slow statement becomes UNAVAILABLE / TIMEOUT (hostd-db).
- Reads run outside a transaction (``Database.read(snapshot=False)``): one round trip per statement.
- Full-text search: ``memories.words`` is a ``tsvector`` of the tokens ``search.ts_vector``
  builds in Python (the SQLite word index's tokens, CJK bigrams included), with a GIN index. A
  trigger empties it when the path, content or disclosure changes, and every write transaction
  fills the emptied ones before it commits, so the index never lags a committed memory. The
  FTS5 expressions the shared code builds are translated by ``search.ts_query``; ranking is
  ``ts_rank`` with the SQLite BM25 field weights. Substring terms (SQLite's trigram index) are
  ``strpos`` scans, and mentions are found through the word index (the URI as a phrase).
- The word index is this engine's; the lock keys, the connection's NUL-safe text and ``?``
  placeholders are hostd_db's.
- PostgreSQL text cannot hold NUL, which memory text may: strings cross the connection through
  ``encode_text`` / ``decode_text``, a reversible escape that leaves every other string as it is.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any

from hostd_db import Connection, Database

from hostd_memory import search as search_text
from hostd_memory.store.rows import RankQuery
from hostd_memory.store.schema import VISIBLE

#: Positive token counts are reused this long (see ``PostgresEngine.bounded_counts``), at
#: most this many of them.
COUNT_CACHE_SECONDS = 30.0
COUNT_CACHE_SIZE = 200_000
#: Only counts of at least this many are kept: a rare token's count is cheap to take again, and
#: the final ranking weighs a token by its count, which must not lag while it is small.
COUNT_CACHE_MIN = 50
#: ts_rank's weights for {D, C, B, A}: content 1, disclosure 2, path 4, as the SQLite BM25 weights.
TS_RANK_WEIGHTS = "'{0.25, 0.25, 0.5, 1.0}'"


class PostgresEngine:
    """The team database's transactions, locks and full-text parts (``MemoryStore.engine``)."""

    tag_list = "string_agg(t.tag, chr(31))"

    def __init__(self, database: Database) -> None:
        self.database = database
        self._recent_counts: dict[str, tuple[int, float]] = {}  # token -> (count, when counted)

    # --- transactions -------------------------------------------------------------------

    def finish_write(self, conn: Connection) -> None:
        """Before a write commits: fill the word index of what it wrote."""
        self.index_words(conn)

    @staticmethod
    def index_words(conn: Connection) -> None:
        """Fill the word index of the memories this transaction created or whose text it changed."""
        pending = conn.execute(
            "SELECT id, path, content, disclosure FROM memories WHERE words IS NULL"
        ).fetchall()
        tokens: set[str] = set()
        for memory_id, path, content, disclosure in pending:
            entries = search_text.ts_entries(path, content, disclosure)
            conn.execute(
                "UPDATE memories SET words = ?::tsvector WHERE id = ?",
                (search_text.ts_vector_literal(entries), memory_id),
            )
            tokens.update(entries)
        if tokens:
            # Sorted, in one statement: two writers adding the same new tokens wait in one order.
            conn.execute(
                "INSERT INTO memory_lexemes (token) SELECT unnest(?::text[]) ON CONFLICT DO NOTHING",
                (sorted(tokens),),
            )

    # --- dialect ------------------------------------------------------------------------

    @staticmethod
    def index_hint(index: str) -> str:
        return ""

    @staticmethod
    def insert_returning_id(conn: Connection, sql: str, params: Sequence[Any]) -> int:
        return int(conn.execute(sql + " RETURNING id", params).fetchone()[0])

    @staticmethod
    def database_bytes(conn: Connection) -> int:
        row = conn.execute(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() "
            "AND c.relkind = 'r'"
        ).fetchone()
        return int(row[0])

    def compact(self) -> None:
        """After a bulk import: refresh the planner's statistics of the word index (ANALYZE).

        A token count stops early (``LIMIT``) only for common tokens; for rare ones the GIN index
        must be used. Without statistics of the tsvector's elements the planner guesses every
        token common and scans the table, reading each memory's words: a search at a few
        thousand memories took 100 ms. (A GIN index has no segments to merge as FTS5's has.)
        """
        self.database.read(lambda conn: conn.execute("ANALYZE memories"), snapshot=False)

    # --- full text ----------------------------------------------------------------------

    def bounded_counts(self, conn: Connection, tokens: Sequence[str], bound: int) -> dict[str, int]:
        """As on SQLite, with the positive counts of the last ``COUNT_CACHE_SECONDS`` reused.

        Each count is a bitmap scan of the GIN index (a few tenths of a millisecond, against
        microseconds for FTS5), and a query has dozens of tokens (every form of each word). A
        positive count is kept a short while: counts drive only choices of how to search (which
        forms and pieces to rank, where to cap), every match is still read from the index, and
        a count only grows as memories are added. Counts under ``COUNT_CACHE_MIN`` are never kept,
        so a token that just appeared in a new memory is searched for at once and a rare one's
        weight follows every memory that comes to hold it.
        """
        now = time.monotonic()
        counts: dict[str, int] = {}
        missing = []
        for token in tokens:
            kept = self._recent_counts.get(token)
            if kept is not None and now - kept[1] < COUNT_CACHE_SECONDS and kept[0] <= bound:
                counts[token] = min(kept[0], bound)
            else:
                missing.append(token)
        fresh = self._count_now(conn, missing, bound)
        counts.update(fresh)
        if len(self._recent_counts) > COUNT_CACHE_SIZE:
            self._recent_counts.clear()
        self._recent_counts.update((t, (c, now)) for t, c in fresh.items() if c >= COUNT_CACHE_MIN)
        return counts

    def _count_now(self, conn: Connection, tokens: Sequence[str], bound: int) -> dict[str, int]:
        """Count now, each token up to ``bound``: those never indexed are 0 at once."""
        counts: dict[str, int] = {}
        queries = {token: search_text.ts_query(search_text.fts_literal(token)) for token in tokens}
        counted = [t for t in tokens if queries[t] is not None]
        counts.update({t: 0 for t in tokens if queries[t] is None})
        # A token no memory ever held is known without the GIN index (one look-up for all).
        known = {
            str(r[0])
            for r in conn.execute("SELECT token FROM memory_lexemes WHERE token = ANY(?)", (counted,))
        }
        counts.update({t: 0 for t in counted if t not in known})
        counted = [t for t in counted if t in known]
        batch = 100
        for start in range(0, len(counted), batch):
            chunk = counted[start : start + batch]
            params: list[Any] = []
            for token in chunk:
                params += [queries[token], bound]
            row = conn.execute(
                "SELECT "
                + ", ".join(
                    ["(SELECT count(*) FROM (SELECT 1 FROM memories WHERE words @@ ?::tsquery LIMIT ?) c)"]
                    * len(chunk)
                ),
                params,
            ).fetchone()
            counts.update(zip(chunk, (int(c) for c in row), strict=True))
        return counts

    @staticmethod
    def words_clause(expression: str) -> tuple[str, list[Any]]:
        query = search_text.ts_query(expression)
        return (" AND FALSE", []) if query is None else (" AND m.words @@ ?::tsquery", [query])

    @staticmethod
    def mention_candidates(conn: Connection, name: str, memory_id: int) -> Iterable[tuple[str, str]]:
        query = search_text.ts_query("content : " + search_text.fts_literal(name))
        if query is None:
            return []
        rows: list[tuple[str, str]] = conn.execute(
            f"SELECT m.uri, m.content FROM memories m WHERE m.words @@ ?::tsquery AND {VISIBLE} "
            "AND m.id != ? LIMIT 200",
            (query, memory_id),
        ).fetchall()
        return rows

    @staticmethod
    def _substring_condition(node: Any) -> tuple[str, list[Any]]:
        """SQL for an FTS5 trigram expression: each literal a case-folded substring of a field."""
        if node.kind == "phrase":
            columns = [node.column] if node.column else ["path", "content", "disclosure"]
            sql = " OR ".join(f"strpos(lower(m.{c}), lower(?)) > 0" for c in columns)
            return f"({sql})", [node.text] * len(columns)
        parts = [PostgresEngine._substring_condition(child) for child in node.children]
        joiner = " AND " if node.kind == "and" else " OR "
        return "(" + joiner.join(p[0] for p in parts) + ")", [v for p in parts for v in p[1]]

    def _match(self, query: RankQuery) -> tuple[str, list[Any]] | None:
        """What a match of ``query`` meets: ``memory_words`` expressions match the ``words``
        tsvector (None: no memory can match), ``memory_fts`` ones are substring conditions."""
        if query.table == "memory_words":
            words = search_text.ts_query(query.expression)
            return None if words is None else ("m.words @@ ?::tsquery", [words])
        return self._substring_condition(search_text.parse_expression(query.expression))

    def newest_match(self, conn: Connection, query: RankQuery, cap: int) -> int | None:
        """The id of the ``cap``-th newest match; None if fewer match."""
        matched = self._match(query)
        if matched is None:
            return None
        match, match_params = matched
        # ``m.id + 0``: sort the index's matches, rather than walk the primary key newest first
        # testing every memory's words.
        row = conn.execute(
            f"SELECT m.id FROM memories m WHERE {match} ORDER BY m.id + 0 DESC LIMIT 1 OFFSET ?",
            [*match_params, cap - 1],
        ).fetchone()
        return int(row[0]) if row else None

    def rank(self, conn: Connection, query: RankQuery, floor: int | None) -> list[tuple[int, float]]:
        """The matches from id ``floor`` on (all with None), as the SQLite ranking orders them:
        ``memory_words`` by ``ts_rank`` (negated, so lower is better as with BM25), ``memory_fts``
        as listings are."""
        matched = self._match(query)
        if matched is None:
            return []
        match, match_params = matched
        if query.table == "memory_words":
            score, score_params = f"-ts_rank({TS_RANK_WEIGHTS}, m.words, ?::tsquery, 1)", match_params
            # The rare pieces a memory holds first, as BM25's IDF would have it, and once more
            # those in its path (the final score weighs the path most: search.FIELD_WEIGHTS).
            weighted = [
                (q, w)
                for e, w in query.weights
                for q in (search_text.ts_query(e), search_text.ts_query(f"path : {e}"))
                if q is not None
            ]
            score += "".join(" - CASE WHEN m.words @@ ?::tsquery THEN ? ELSE 0 END" for _ in weighted)
            score_params = [*score_params, *(v for pair in weighted for v in pair)]
            order = "score, m.id DESC"
        else:
            score, score_params = "0.0", []
            order = "m.priority, m.updated_at DESC, m.id DESC"
        bound = " AND m.id >= ?" if floor is not None else ""
        bounds = [floor] if floor is not None else []
        where, params = query.filters.sql()
        sql = (
            f"SELECT m.id, {score} AS score FROM memories m "
            f"WHERE {match} AND {where}{query.extra}{bound} ORDER BY {order} LIMIT ?"
        )
        return [
            (int(r[0]), float(r[1]))
            for r in conn.execute(
                sql, [*score_params, *match_params, *params, *query.extra_params, *bounds, query.limit]
            )
        ]
