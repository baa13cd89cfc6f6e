"""Listings in rank order (keyset pages), the system views, statistics, mentions and links."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hostd_db import Connection, utc_stamp

from hostd_memory.store import refusals, tuning, writes
from hostd_memory.store.access import Access
from hostd_memory.store.rows import Filters, MemoryRow, VersionRow
from hostd_memory.store.schema import (
    MEMORY_COLUMNS,
    STATUSES,
    VERSION_COLUMNS,
    VISIBLE,
)
from hostd_memory.uris import mentions

#: Above every character: ``prefix + _LAST_CHARACTER`` bounds the texts starting with ``prefix``
#: (binary order in SQLite, the C collation of the team database's key columns).
_LAST_CHARACTER = "\U0010ffff"


class MemoryListings(Access):
    """Listings in rank order, completion, statistics, mentions and links."""

    def existing_uris(self, uris: Sequence[str]) -> set[str]:
        """Which of ``uris`` name a visible memory or an alias."""
        if not uris:
            return set()

        def work(conn: Connection) -> set[str]:
            marks = ",".join("?" * len(uris))
            found = {
                r[0]
                for r in conn.execute(
                    f"SELECT uri FROM memories m WHERE uri IN ({marks}) AND {VISIBLE}", list(uris)
                )
            }
            found |= {
                r[0]
                for r in conn.execute(
                    f"SELECT alias_uri FROM aliases WHERE alias_uri IN ({marks})", list(uris)
                )
            }
            return found

        return self.read(work)

    def mentioned_by(self, memory: MemoryRow, limit: int = 20) -> list[str]:
        """Visible memories whose content mentions this memory's URI or one of its aliases."""

        def work(conn: Connection) -> list[str]:
            found: dict[str, None] = {}
            for name in [memory.uri, *memory.aliases]:
                for uri, content in self.engine.mention_candidates(conn, name, memory.id):
                    if mentions(content, name):
                        found.setdefault(uri)
                        if len(found) >= limit:
                            return list(found)
            return list(found)

        return self.read(work)

    # --- listings -----------------------------------------------------------------------

    def _selective_source(self, conn: Connection, filters: Filters) -> tuple[int, str, str, list[Any]]:
        """The filter keeping the fewest memories, counted up to ``tuning.LISTING_SELECTIVE`` + 1:
        (count, index hint, driving clause, its params) to read only what it keeps."""
        bound = tuning.LISTING_SELECTIVE + 1
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
                f"SELECT count(*) FROM (SELECT 1 FROM memories {self.engine.index_hint(index)} "
                f"WHERE {column} >= ? AND {column} < ? LIMIT ?) AS bounded",
                (low or "", high or "\uffff", bound),
            ).fetchone()[0]
            if best is None or count < best[0]:
                best = (count, self.engine.index_hint(index), "", [])
        assert best is not None
        return best

    def _walk_rank(
        self, conn: Connection, where: str, params: list[Any], after: list[Any] | None, limit: int
    ) -> list[MemoryRow] | None:
        """The page, if the first ``tuning.LISTING_WALK`` memories in rank order after ``after`` hold it."""
        keyset, keyset_params = _after_rank("m", after)
        cursor = conn.execute(
            f"SELECT m.id, CASE WHEN {where} THEN 1 ELSE 0 END FROM memories m "
            f"{self.engine.index_hint('memories_by_rank')} WHERE 1 = 1{keyset} "
            "ORDER BY m.priority ASC, m.updated_at DESC, m.id DESC LIMIT ?",
            [*params, *keyset_params, tuning.LISTING_WALK],
        )
        kept: list[int] = []
        walked = 0
        try:
            while walked < tuning.LISTING_WALK and len(kept) < limit:
                batch = cursor.fetchmany(min(500, tuning.LISTING_WALK - walked))
                if not batch:
                    break
                walked += len(batch)
                kept += [int(r[0]) for r in batch if r[1]]
        finally:
            cursor.close()
        if len(kept) < limit and walked >= tuning.LISTING_WALK:
            return None
        kept = kept[:limit]
        rows = self.memories_for(kept)
        return [rows[i] for i in kept if i in rows]

    def list_page(self, filters: Filters, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        """Most important first, then most recently updated; ``after`` is the last row's key.

        Under tag or time filters, a filter keeping at most ``tuning.LISTING_SELECTIVE`` memories is read
        alone and sorted. Otherwise the first ``tuning.LISTING_WALK`` memories in rank order are checked
        against the filters, which finds a page at once when the filters keep many; only if they
        hold too few is the most selective filter's whole set read and sorted.
        """

        def work(conn: Connection) -> list[MemoryRow]:
            where, params = filters.sql()
            keyset, keyset_params = _after_rank("m", after)
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
                if count > tuning.LISTING_SELECTIVE:
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
                f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where}{keyset} {order}",
                [*params, *keyset_params, limit],
            ).fetchall()
            return self._with_aliases([MemoryRow.from_row(r) for r in rows])

        return self.read(work)

    def recent_page(self, after: list[Any] | None, limit: int) -> list[MemoryRow]:
        where, params = Filters().sql()
        if after is not None:
            where += " AND (m.updated_at < ? OR (m.updated_at = ? AND m.id < ?))"
            params += [after[0], after[0], after[1]]
        rows = self.rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} "
            "ORDER BY m.updated_at DESC, m.id DESC LIMIT ?",
            [*params, limit],
        )
        return self._with_aliases([MemoryRow.from_row(r) for r in rows])

    def index_page(self, after: str | None, limit: int) -> list[tuple[str, str, int]]:
        """Active URIs with domain and priority, in URI order."""
        rows = self.rows(
            "SELECT uri, domain, priority FROM memories WHERE status = 'active' AND uri > ? "
            "ORDER BY uri LIMIT ?",
            (after or "", limit),
        )
        return [(r[0], r[1], int(r[2])) for r in rows]

    # --- completion -----------------------------------------------------------------------

    def recent_paths(self, domain: str, prefix: str, limit: int) -> list[str]:
        """Paths of visible memories in ``domain`` starting with ``prefix``, newest change first.

        A narrow prefix (at most ``tuning.COMPLETE_SELECTIVE`` memories, counted in the URI index)
        is read whole and sorted here; a broader one walks the domain's memories newest first in
        ``memories_by_domain_change``, which holds path and status (no row is read), until
        ``limit``: the prefix holds more than that many, so the walk meets them often.
        """
        if "\x00" in domain + prefix:  # no stored text holds NUL (PostgreSQL refuses it)
            return []
        low, high = f"{domain}://{prefix}", f"{domain}://{prefix}{_LAST_CHARACTER}"
        hint = self.engine.index_hint("memories_by_domain_change")

        def work(conn: Connection) -> list[str]:
            # Counted in the URI index alone (no row is read), up to one past the bound.
            held = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memories WHERE uri >= ? AND uri < ? LIMIT ?) AS bounded",
                (low, high, tuning.COMPLETE_SELECTIVE + 1),
            ).fetchone()[0]
            if held <= tuning.COMPLETE_SELECTIVE:
                rows = list(
                    conn.execute(
                        "SELECT m.path, m.updated_at FROM memories m "
                        f"WHERE m.uri >= ? AND m.uri < ? AND {VISIBLE}",
                        (low, high),
                    ).fetchall()
                )
                rows.sort(key=lambda row: row[1], reverse=True)
                return [str(row[0]) for row in rows[:limit]]
            rows = conn.execute(
                f"SELECT m.path FROM memories m {hint} "
                f"WHERE m.domain = ? AND m.path >= ? AND m.path < ? AND {VISIBLE} "
                "ORDER BY m.updated_at DESC LIMIT ?",
                (domain, prefix, prefix + _LAST_CHARACTER, limit),
            ).fetchall()
            return [str(row[0]) for row in rows]

        return self.read(work)

    def recent_domains(self, prefix: str, limit: int) -> list[str]:
        """Domains starting with ``prefix`` that hold a visible memory, newest change first.

        Two index seeks per domain: the next domain (``memories_by_domain``), and its newest
        visible memory (``memories_by_domain_change``).
        """
        if "\x00" in prefix:
            return []
        high = prefix + _LAST_CHARACTER
        hint = self.engine.index_hint("memories_by_domain_change")

        def work(conn: Connection) -> list[str]:
            domains: list[str] = []
            row = conn.execute(
                "SELECT domain FROM memories WHERE domain >= ? AND domain < ? ORDER BY domain LIMIT 1",
                (prefix, high),
            ).fetchone()
            while row is not None and len(domains) < tuning.COMPLETE_DOMAINS_MAX:
                domains.append(str(row[0]))
                row = conn.execute(
                    "SELECT domain FROM memories WHERE domain > ? AND domain < ? ORDER BY domain LIMIT 1",
                    (domains[-1], high),
                ).fetchone()
            newest: dict[str, str] = {}
            for domain in domains:
                found = conn.execute(
                    f"SELECT m.updated_at FROM memories m {hint} "
                    f"WHERE m.domain = ? AND {VISIBLE} ORDER BY m.updated_at DESC LIMIT 1",
                    (domain,),
                ).fetchone()
                if found is not None:
                    newest[domain] = str(found[0])
            return sorted(newest, key=lambda domain: (newest[domain], domain), reverse=True)[:limit]

        return self.read(work)

    def recent_tags(self, prefix: str, limit: int) -> list[str]:
        """Tags starting with ``prefix`` that a visible memory carries: the tag of the most recently
        changed memory first, then the most used.

        A narrow prefix (at most ``tuning.COMPLETE_TAG_ROWS`` tag rows, counted in ``memory_tags``'
        key) is ranked exactly. A broader one is ranked over the newest
        ``tuning.COMPLETE_TAG_WALK`` visible memories (``memories_by_change``; their ``tags``
        column), so the cost stays bounded whatever the store's size; tags only older memories
        carry follow in name order, from a skip over ``memory_tags``' key.
        """
        if "\x00" in prefix:
            return []
        high = prefix + _LAST_CHARACTER

        def work(conn: Connection) -> list[str]:
            held = conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM memory_tags WHERE tag >= ? AND tag < ? LIMIT ?) AS held",
                (prefix, high, tuning.COMPLETE_TAG_ROWS + 1),
            ).fetchone()[0]
            if held <= tuning.COMPLETE_TAG_ROWS:
                rows = conn.execute(
                    "SELECT t.tag, max(m.updated_at) AS latest, count(*) AS uses "
                    "FROM memory_tags t JOIN memories m ON m.id = t.memory_id "
                    f"WHERE t.tag >= ? AND t.tag < ? AND {VISIBLE} "
                    "GROUP BY t.tag ORDER BY latest DESC, uses DESC, t.tag LIMIT ?",
                    (prefix, high, limit),
                ).fetchall()
                return [str(row[0]) for row in rows]
            seen: dict[str, tuple[str, int]] = {}  # tag -> (latest change, uses in the walk)
            for tags, updated_at in conn.execute(
                f"SELECT m.tags, m.updated_at FROM memories m WHERE {VISIBLE} AND m.tags != '[]' "
                "ORDER BY m.updated_at DESC LIMIT ?",
                (tuning.COMPLETE_TAG_WALK,),
            ).fetchall():
                for tag in json.loads(tags) if isinstance(tags, str) else tags:
                    if prefix <= tag < high:
                        latest, uses = seen.get(tag, (str(updated_at), 0))
                        seen[tag] = (latest, uses + 1)
            ranked = sorted(seen, key=lambda tag: (seen[tag][0], seen[tag][1]), reverse=True)[:limit]
            step = "SELECT tag FROM memory_tags WHERE tag > ? AND tag < ? ORDER BY tag LIMIT 1"
            visible = (  # a deleted memory keeps its tag rows: only a visible one's tag is offered
                "SELECT 1 FROM memory_tags t JOIN memories m ON m.id = t.memory_id "
                f"WHERE t.tag = ? AND {VISIBLE} LIMIT 1"
            )
            row = conn.execute(step.replace("tag > ?", "tag >= ?"), (prefix, high)).fetchone()
            for _ in range(limit + len(seen)):  # one index seek per distinct tag, bounded
                if row is None or len(ranked) >= limit:
                    break
                if str(row[0]) not in seen and conn.execute(visible, (row[0],)).fetchone() is not None:
                    ranked.append(str(row[0]))
                row = conn.execute(step, (row[0], high)).fetchone()
            return ranked

        return self.read(work)

    def export_page(self, filters: Filters, after: int, limit: int) -> list[MemoryRow]:
        where, params = filters.sql()
        rows = self.rows(
            f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE {where} AND m.id > ? ORDER BY m.id LIMIT ?",
            [*params, after, limit],
        )
        return self._with_aliases([MemoryRow.from_row(r) for r in rows])

    def all_versions(self, memory: MemoryRow) -> list[VersionRow]:
        """Every version, oldest first, the current one last."""
        rows = self.rows(
            f"SELECT {VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? ORDER BY version",
            (memory.id,),
        )
        return [*(VersionRow.from_row(r) for r in rows), writes.current_version(memory)]

    def memories_for(self, ids: Sequence[int]) -> dict[int, MemoryRow]:
        """The memories with these ids (any status), with their aliases, by id."""
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        rows = self.rows(f"SELECT {MEMORY_COLUMNS} FROM memories m WHERE m.id IN ({marks})", list(ids))
        return {m.id: m for m in self._with_aliases([MemoryRow.from_row(r) for r in rows])}

    def _with_aliases(self, memories: list[MemoryRow]) -> list[MemoryRow]:
        if not memories:
            return memories
        by_id = {m.id: m for m in memories}
        marks = ",".join("?" * len(by_id))
        for alias_uri, memory_id in self.rows(
            f"SELECT alias_uri, memory_id FROM aliases WHERE memory_id IN ({marks}) ORDER BY alias_uri",
            list(by_id),
        ):
            by_id[memory_id].aliases.append(alias_uri)
        return memories

    # --- statistics ---------------------------------------------------------------------

    def stats(self) -> dict[str, Any]:
        """The statistics from ``memory_counts`` (kept by triggers in each write's transaction), so
        they cost the same at any size; only the most read memories come from an index."""

        def work(conn: Connection) -> dict[str, Any]:
            counts: dict[tuple[str, str], int] = {}
            for kind, key, n in conn.execute(
                "SELECT kind, key, sum(n) FROM memory_counts GROUP BY kind, key HAVING sum(n) != 0"
            ):
                counts[(str(kind), str(key))] = int(n)
            by_status = {s: counts.get(("status", s), 0) for s in STATUSES}
            by_domain = dict(sorted((key, n) for (kind, key), n in counts.items() if kind == "domain"))
            tags = sorted(
                ((key, n) for (kind, key), n in counts.items() if kind == "tag"), key=lambda t: (-t[1], t[0])
            )
            most_read = [
                (r[0], int(r[1]))
                for r in conn.execute(
                    f"SELECT uri, access_count FROM memories m WHERE access_count > 0 AND {VISIBLE} "
                    "ORDER BY access_count DESC, uri LIMIT 5"
                )
            ]
            return {
                "by_status": by_status,
                "by_domain": by_domain,
                "total_accesses": counts.get(("accesses", ""), 0),
                "most_read": most_read,
                "version_count": counts.get(("versions", ""), 0) + sum(by_status.values()),
                "alias_count": counts.get(("aliases", ""), 0),
                "session_count": counts.get(("sessions", ""), 0),
                "database_bytes": self.engine.database_bytes(conn),
                "by_tag": dict(tags[: tuning.STATS_TAGS]),
                "tag_count": len(tags),
                "link_count": counts.get(("links", ""), 0),
            }

        return self.read(work)

    # --- links --------------------------------------------------------------------------

    def link(self, from_uri: str, to_uri: str, relation: str) -> tuple[MemoryRow, MemoryRow, bool]:
        """Link two visible memories (through aliases); whether the link is new."""

        def work(conn: Connection) -> tuple[MemoryRow, MemoryRow, bool]:
            source, _ = self.resolve_in(conn, from_uri)
            target, _ = self.resolve_in(conn, to_uri)
            if source.id == target.id:
                raise refusals.self_link(source.uri)
            return source, target, bool(insert_link(conn, source.id, target.id, relation))

        return self.write(work)

    def unlink(
        self, from_uri: str, to_uri: str, relation: str | None
    ) -> tuple[MemoryRow, MemoryRow, list[str]]:
        """Remove the link of that relation (every link from one to the other when None); the
        relations removed. Works on deleted memories too, so a stale link can always go."""

        def work(conn: Connection) -> tuple[MemoryRow, MemoryRow, list[str]]:
            source, _ = self.resolve_in(conn, from_uri, include_deleted=True)
            target, _ = self.resolve_in(conn, to_uri, include_deleted=True)
            where = "from_id = ? AND to_id = ?" + (" AND relation = ?" if relation is not None else "")
            params: list[Any] = [source.id, target.id] + ([relation] if relation is not None else [])
            removed = [
                r[0]
                for r in conn.execute(
                    f"SELECT relation FROM memory_links WHERE {where} ORDER BY relation", params
                )
            ]
            if not removed:
                raise refusals.link_not_found(source.uri, target.uri, relation)
            conn.execute(f"DELETE FROM memory_links WHERE {where}", params)
            return source, target, removed

        return self.write(work)

    def links_of(
        self, memory_id: int, limit: int = 50
    ) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
        """(outgoing, incoming) links of a memory as (other URI, relation), visible memories only."""

        def work(conn: Connection) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
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

        return self.read(work)

    def outgoing_links(self, memory_ids: Sequence[int]) -> dict[int, list[tuple[str, str]]]:
        """Every outgoing link of these memories (to visible ones), for export."""
        if not memory_ids:
            return {}
        marks = ",".join("?" * len(memory_ids))
        found: dict[int, list[tuple[str, str]]] = {}
        for from_id, uri, relation in self.rows(
            f"SELECT l.from_id, m.uri, l.relation FROM memory_links l JOIN memories m ON m.id = l.to_id "
            f"WHERE l.from_id IN ({marks}) AND {VISIBLE} ORDER BY l.from_id, m.uri, l.relation",
            list(memory_ids),
        ):
            found.setdefault(int(from_id), []).append((uri, relation))
        return found


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


def insert_link(conn: Connection, from_id: int, to_id: int, relation: str) -> int:
    """Add a link unless it is there; 1 if it was added, else 0."""
    cursor = conn.execute(
        "INSERT INTO memory_links (from_id, to_id, relation, created_at) VALUES (?, ?, ?, ?) "
        "ON CONFLICT DO NOTHING",
        (from_id, to_id, relation, utc_stamp()),
    )
    return int(cursor.rowcount or 0)
