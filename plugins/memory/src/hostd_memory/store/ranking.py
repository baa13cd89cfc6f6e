"""Full-text search ranked by BM25, and related memories by shared rare tags and terms.

Both are bounded whatever the size of the store (see ``tuning.py``): a search ranks at most a
few hundred candidates per stage, a related-memories lookup counts pieces with queries that stop
early.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any

from hostd_db import Connection

from hostd_memory import search as search_text
from hostd_memory.store import tuning
from hostd_memory.store.listings import MemoryListings
from hostd_memory.store.rows import Filters, Hit, MemoryRow, RankQuery
from hostd_memory.store.schema import (
    VISIBLE,
)


def memory_total(conn: Connection) -> int:
    """About how many memories there are (the newest id: cheap, and close enough)."""
    return int(conn.execute("SELECT max(id) FROM memories").fetchone()[0] or 0)


class MemoryRanking(MemoryListings):
    """Search, near copies and related memories; it reads rows through the listings."""

    def _ranked(self, conn: Connection, query: RankQuery, cap: int | None = None) -> list[tuple[int, float]]:
        """Visible memories matching ``query``, best first (each engine ranks its own way).

        With ``cap``, when more than ``cap`` memories match, only the ``cap`` newest are ranked
        (found cheaply, without scoring); if the filters then leave fewer than ``query.limit``, the
        query runs again over ten times as many newest (up to ``tuning.RANK_WIDEN_MAX``), then over
        every match.
        """
        floor = self.engine.newest_match(conn, query, cap) if cap is not None else None
        rows = self.engine.rank(conn, query, floor)
        if cap is not None and floor is not None and len(rows) < query.limit:
            # Filters (a tag, a time window) may keep few of the newest: widen tenfold before
            # ranking every match, which costs a score per match.
            return self._ranked(conn, query, cap * 10 if cap * 10 <= tuning.RANK_WIDEN_MAX else None)
        return rows

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
        bound = max(tuning.RELAXED_RANK_CAP, tuning.PREFIX_FLOOR, int(total * tuning.SCORE_SHARE)) + 1
        wanted: dict[str, None] = {}
        for piece in pieces:
            if not piece.counted:
                continue
            for form in piece.forms:
                for token in form.split(" "):
                    if token in counts or token in wanted:
                        continue
                    known = self.large_counts.get(token)
                    if known is not None:
                        counts[token] = known
                    else:
                        wanted[token] = None
        for token, count in self.engine.bounded_counts(conn, list(wanted), bound).items():
            counts[token] = count
            if count > tuning.RELAXED_RANK_CAP:
                self.large_counts[token] = count

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
                cut = _cut(piece, counts, total)
                if cut is None:
                    return None, 0
                at_most = min(at_most, cut[0])
                piece = cut[1]
            parts.append(piece.expression)
        return " AND ".join(parts), at_most

    def useful_pieces(
        self,
        pieces: list[search_text.Piece],
        total: int | None = None,
        counts: dict[str, int] | None = None,
    ) -> list[search_text.Piece]:
        """The relaxed pieces that occur and say something, rarest first (see ``_useful``)."""
        return [piece for _, piece in self._useful(pieces, total, counts)]

    def _useful(
        self,
        pieces: list[search_text.Piece],
        total: int | None = None,
        counts: dict[str, int] | None = None,
    ) -> list[tuple[float, search_text.Piece]]:
        """Pieces that occur, cut to their forms that do, rarest first, with how many memories hold them.

        A piece in more than half the memories (and more than ``tuning.PREFIX_FLOOR``) adds nothing to
        BM25 and is left out, unless every piece is that common: then the rarest stays, alone.
        """

        def work(conn: Connection) -> list[tuple[float, search_text.Piece]]:
            known = memory_total(conn) if total is None else total
            counted = {} if counts is None else counts
            self._count_tokens(conn, pieces, known, counted)
            cuts = [cut for piece in pieces if (cut := _cut(piece, counted, known)) is not None]
            cuts.sort(key=lambda cut: cut[0])
            useful_max = max(tuning.PREFIX_FLOOR, int(known * tuning.SCORE_SHARE))
            useful = [cut for cut in cuts if cut[0] <= useful_max or cut[0] == math.inf]
            return useful or cuts[:1]

        return self.read(work)

    def _relaxed_queries(
        self, pieces: list[search_text.Piece], total: int, counts: dict[str, int]
    ) -> tuple[str, str | None, bool] | None:
        """The relaxed stage's queries: (first, top-up, whether the first is capped), or None.

        Candidates are the memories holding the rarest pieces, as many pieces as hold together
        at most ``tuning.RELAXED_RANK_CAP`` memories (the rarest alone, capped to its newest, when even
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
            if not fetch or together + found_in <= tuning.RELAXED_RANK_CAP:
                fetch.append(piece)
                together += found_in
            else:
                rank_only.append(piece)
        fetched = " OR ".join(p.expression for p in fetch)
        if not rank_only:
            return fetched, None, together > tuning.RELAXED_RANK_CAP
        everything = " OR ".join(p.expression for p in (*fetch, *rank_only))
        # A candidate holds a rare piece, so the second group always matches: its other pieces
        # only add to the score.
        return f"({fetched}) AND ({everything})", everything, together > tuning.RELAXED_RANK_CAP

    def _scan_clause(self, terms: Iterable[str]) -> tuple[str, list[Any]]:
        """Conditions keeping the memories whose content, path or disclosure holds every term
        (case-folded substrings: what the word index cannot answer)."""
        position = self.database.dialect.position
        fields = ("m.content", "m.path", "m.disclosure")
        clause = ""
        params: list[Any] = []
        for term in terms:
            clause += " AND (" + " OR ".join(f"{position('?', f'lower({f})')} > 0" for f in fields) + ")"
            params += [term.lower()] * len(fields)
        return clause, params

    def search(
        self, plan: search_text.QueryPlan, filters: Filters, limit: int, *, rescore: bool = True
    ) -> list[Hit]:
        """Memories holding every term first, then those holding some; each group's best
        ``tuning.RESCORE_POOL`` by the engine's ranking scored again the same way on both backends
        (``search.Scorer``)."""

        def work(conn: Connection) -> list[Hit]:
            total = memory_total(conn)
            counts: dict[str, int] = {}
            found: dict[int, tuple[float, str]] = {}
            pool = max(limit, tuning.RESCORE_POOL)
            scorer = self._scorer(conn, plan, total, counts)
            weights = [(scored.piece.expression, scored.weight) for scored in scorer.pieces]
            scan, scan_params = self._scan_clause(plan.strict_scan)
            words, at_most = (
                self._strict_expression(conn, plan.strict_pieces, total, counts)
                if plan.strict_pieces
                else (None, math.inf)
            )
            cap = (
                tuning.STRICT_RANK_CAP if at_most > tuning.STRICT_RANK_CAP else None
            )  # else no need to find the newest few
            if plan.strict_pieces and words is None:
                strict = []  # some term occurs in no memory
            elif plan.strict_trigram:
                extra, extra_params = scan, scan_params
                if words:
                    words_sql, words_params = self.engine.words_clause(words)
                    extra += words_sql
                    extra_params = [*extra_params, *words_params]
                strict = self._ranked(
                    conn,
                    RankQuery("memory_fts", plan.strict_trigram, filters, pool, extra, extra_params),
                    cap,
                )
            elif words:
                strict = self._ranked(
                    conn, RankQuery("memory_words", words, filters, pool, scan, scan_params, weights), cap
                )
            elif plan.strict_scan:
                where, params = filters.sql()
                strict = [
                    (int(r[0]), 0.0)
                    for r in conn.execute(
                        f"SELECT m.id FROM memories m WHERE {where}{scan} "
                        "ORDER BY m.priority, m.updated_at DESC LIMIT ?",
                        [*params, *scan_params, pool],
                    )
                ]
            else:
                strict = []
            for memory_id, score in strict:
                found[memory_id] = (score, "all_terms")
            queries = self._relaxed_queries(plan.relaxed, total, counts) if len(found) < limit else None
            if queries is not None:
                first, top_up, capped = queries
                wanted = max(limit, pool + len(found))
                _add_relaxed(
                    found,
                    self._ranked(
                        conn,
                        RankQuery("memory_words", first, filters, wanted, weights=weights),
                        tuning.RELAXED_RANK_CAP if capped else None,
                    ),
                    wanted,
                )
                if top_up and len(found) < wanted:
                    _add_relaxed(
                        found,
                        self._ranked(
                            conn,
                            RankQuery("memory_words", top_up, filters, wanted, weights=weights),
                            tuning.RELAXED_RANK_CAP,
                        ),
                        wanted,
                    )
            if not rescore:
                return self._hits(dict(list(found.items())[:limit]))
            return self._hits(_rescored(conn, scorer, found, limit))

        return self.read(work)

    def _scorer(
        self, conn: Connection, plan: search_text.QueryPlan, total: int, counts: dict[str, int]
    ) -> search_text.Scorer:
        """The final scoring of ``plan``: every relaxed piece that occurs, weighed by its count."""
        self._count_tokens(conn, plan.relaxed, total, counts)
        cuts = [cut for piece in plan.relaxed if (cut := _cut(piece, counts, total)) is not None]
        return search_text.Scorer(cuts, total, plan.names)

    def _hits(self, found: dict[int, tuple[float, str]]) -> list[Hit]:
        by_id = self.memories_for(list(found))
        return [Hit(by_id[i], found[i][0], found[i][1]) for i in found if i in by_id]

    def match_ids(self, table: str, expression: str, limit: int) -> list[tuple[int, float]]:
        """Visible memories matching one expression, best first (used by preload)."""
        return self.read(lambda conn: self._ranked(conn, RankQuery(table, expression, Filters(), limit)))

    def core_memories(self, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        """Active memories with priority at most 2 (what ``system://boot`` shows)."""
        return self.list_page(Filters(status="active", priority_max=2), after, limit)

    # --- near duplicates ----------------------------------------------------------------

    def similar(self, memory: MemoryRow) -> list[tuple[MemoryRow, float]]:
        """Visible memories other than ``memory`` whose text is very like its own: (memory, how
        similar, 0-1), most similar first, at most ``tuning.SIMILAR_LIMIT``.

        A near copy holds the same words: the candidates hold every one of the first
        ``tuning.SIMILAR_PROBE`` distinct words (or CJK bigrams) of the memory's start, or every one of
        the last, each as written (one index token, nothing to count), at most
        ``tuning.SIMILAR_CANDIDATES`` of each, the engine's best; each is then compared on its text's
        words and CJK bigrams (``search.similarity``). Two look-ups that intersect a few posting lists
        whatever the size of the store.
        """
        text = memory.content[: tuning.SIMILAR_QUERY_CHARS]
        pieces = [
            search_text.Piece((piece.forms[0],))
            for piece in search_text.relaxed_pieces(search_text.split_terms(text))
            if not piece.prefix
        ]
        probes = {tuple(pieces[: tuning.SIMILAR_PROBE]), tuple(pieces[-tuning.SIMILAR_PROBE :])}
        seen: dict[int, MemoryRow] = {}
        for probe in probes:
            if not probe:
                continue
            plan = search_text.QueryPlan(terms=[], strict_pieces=list(probe))
            for hit in self.search(plan, Filters(), tuning.SIMILAR_CANDIDATES + 1, rescore=False):
                if hit.memory.id != memory.id:
                    seen.setdefault(hit.memory.id, hit.memory)
        found = []
        for row in seen.values():
            degree = search_text.similarity(memory.content, row.content)
            if degree >= tuning.SIMILAR_THRESHOLD:
                found.append((row, degree))
        found.sort(key=lambda pair: (-pair[1], pair[0].id))
        return found[: tuning.SIMILAR_LIMIT]

    # --- related memories ---------------------------------------------------------------

    def related(
        self, memory: MemoryRow, limit: int = tuning.RELATED_LIMIT
    ) -> list[tuple[MemoryRow, list[str], list[str]]]:
        """A few visible memories sharing rare tags or rare terms with ``memory``: (memory, shared
        tags, shared terms), those sharing tags first.

        The cost does not grow with the store: at most ``tuning.RELATED_TERMS`` terms from the start of
        the memory and its tags are counted by queries that stop at ``tuning.RELATED_RARE`` memories, and
        only the memories holding the ``tuning.RELATED_PIECES`` rarest are ranked.
        """

        def work(conn: Connection) -> list[tuple[MemoryRow, list[str], list[str]]]:
            excluded = {memory.id}
            found: dict[int, tuple[list[str], list[str]]] = {}
            rare_tags = [
                tag
                for tag in memory.tags
                if conn.execute(
                    "SELECT count(*) FROM (SELECT 1 FROM memory_tags WHERE tag = ? LIMIT ?) AS bounded",
                    (tag, tuning.RELATED_RARE + 1),
                ).fetchone()[0]
                <= tuning.RELATED_RARE
            ]
            if rare_tags:
                marks = ",".join("?" * len(rare_tags))
                for memory_id, shared in conn.execute(
                    f"SELECT t.memory_id, {self.engine.tag_list} FROM memory_tags t "
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
                    sharing = self._ranked(
                        conn,
                        RankQuery(
                            "memory_words",
                            expression,
                            Filters(),
                            limit - len(found),
                            f" AND m.id NOT IN ({marks})",
                            list(excluded),
                        ),
                    )
                    for memory_id, _ in sharing:
                        found[memory_id] = ([], [])
                    rows = self.memories_for([i for i, _ in sharing])
                    for memory_id, _ in sharing:
                        row = rows.get(memory_id)
                        if row is not None:
                            text = search_text.words_text(
                                f"{row.path} {row.content} {row.disclosure}"
                            ).lower()
                            found[memory_id][1].extend(
                                term for _, piece, term in pieces if any(f in text for f in piece.forms)
                            )
            rows = self.memories_for(list(found))
            return [(rows[i], *found[i]) for i in found if i in rows]

        return self.read(work)

    def _rare_pieces(self, conn: Connection, memory: MemoryRow) -> list[tuple[int, search_text.Piece, str]]:
        """The rarest pieces of the memory's text that some other memory holds: (count, piece, term).

        A piece here is one exact index token (a word as written, a CJK bigram) or phrase, not a
        word's every form: counting forms would multiply the queries by ten for little gain.
        """
        text = f"{memory.path}\n{memory.disclosure}\n{memory.content[: tuning.RELATED_TEXT_CHARS]}"
        candidates: dict[str, None] = {}
        for line in re.split(r"[\n。！？!?；;]+", text):
            for piece in search_text.relaxed_pieces(search_text.split_terms(line)):
                form = piece.forms[0]
                if piece.counted and len(form) >= 2:
                    candidates.setdefault(form)
            if len(candidates) >= tuning.RELATED_TERMS:
                break
        forms = list(candidates)[: tuning.RELATED_TERMS]
        tokens = [
            t
            for t in dict.fromkeys(t for form in forms for t in form.split(" "))
            if t not in self.common_tokens and t not in self.large_counts  # known to be common
        ]
        counts = self.engine.bounded_counts(conn, tokens, tuning.RELATED_RARE + 2)
        if (
            len(self.common_tokens) < tuning.COMMON_TOKENS_KEPT
        ):  # a token's count falls only rarely: remember it
            self.common_tokens.update(t for t, c in counts.items() if c > tuning.RELATED_RARE + 1)
        rare = []
        for form in forms:
            found_in = min(counts.get(t, tuning.RELATED_RARE + 2) for t in form.split(" "))
            if 2 <= found_in <= tuning.RELATED_RARE + 1:  # the memory itself is one of them
                rare.append((found_in, search_text.Piece((form,)), form))
        rare.sort(key=lambda r: r[0])
        return rare[: tuning.RELATED_PIECES]


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
    if (
        piece.stem
        and len(existing) > 1
        and found_in <= max(tuning.PREFIX_FLOOR, int(total * tuning.PREFIX_SHARE))
    ):
        return found_in, search_text.Piece((piece.stem,), prefix=True)
    return found_in, search_text.Piece(tuple(existing))


def _rescored(
    conn: Connection, scorer: search_text.Scorer, found: dict[int, tuple[float, str]], limit: int
) -> dict[int, tuple[float, str]]:
    """The best ``limit`` of ``found``: each stage's first ``tuning.RESCORE_POOL`` candidates ordered
    by ``search.Scorer`` (the score given is its negation: lower is better, as with BM25; ties keep
    the engine's order), then the rest of the stage in the engine's order. The pool does not
    depend on ``limit``, so the pages of one search follow one order."""
    if not found:
        return found
    stages: dict[str, list[int]] = {}
    for memory_id, (_, stage) in found.items():
        stages.setdefault(stage, []).append(memory_id)
    ids = [i for members in stages.values() for i in members[: tuning.RESCORE_POOL]]
    marks = ",".join("?" * len(ids))
    texts = {
        int(r[0]): (str(r[1]), str(r[2] or ""), str(r[3] or ""))
        for r in conn.execute(
            f"SELECT id, path, disclosure, substr(content, 1, {search_text.SCORE_TEXT_CHARS}) "
            f"FROM memories WHERE id IN ({marks})",
            ids,
        )
    }
    kept = [i for i in ids if i in texts]
    scores = dict(zip(kept, scorer.score([texts[i] for i in kept]), strict=True))
    order = {memory_id: place for place, memory_id in enumerate(found)}
    best: list[int] = []
    for members in stages.values():
        pooled = [i for i in members[: tuning.RESCORE_POOL] if i in scores]
        best += sorted(pooled, key=lambda i: (-scores[i], order[i]))
        best += members[tuning.RESCORE_POOL :]
    return {i: (-scores[i] if i in scores else found[i][0], found[i][1]) for i in best[:limit]}


def _add_relaxed(found: dict[int, tuple[float, str]], ranked: list[tuple[int, float]], limit: int) -> None:
    for memory_id, score in ranked:
        if len(found) >= limit:
            return
        if memory_id not in found:
            found[memory_id] = (score, "any_term")
