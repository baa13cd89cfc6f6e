"""Applying a checked import document in one transaction: create, skip, overwrite or merge
each item, then its aliases and links (``transfer.py`` checks the document first).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Sequence

from hostd_db import Connection, utc_stamp

from hostd_memory.store import listings, ranking, tuning, writes
from hostd_memory.store.access import Access
from hostd_memory.store.rows import MAX_TAGS, Change, ImportItem, ImportReport, MemoryRow


class ImportStopped(Exception):
    """Raised inside the import's transaction when the caller cancelled: nothing is kept."""


class MemoryImports(Access):
    """Applying a checked import document in one transaction."""

    def import_items(
        self,
        items: Sequence[ImportItem],
        strategy: str,
        report: ImportReport,
        *,
        author: str | None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> None:
        """Apply validated items in one transaction (all or nothing if the database fails).

        A new memory keeps the authors its item carries; an overwrite or merge is a new version by
        ``author`` (the importing member). ``cancelled`` is asked before each item and before the
        commit: once it says yes, ``ImportStopped`` rolls the whole import back.
        """
        stamp = utc_stamp()
        begun = copy.deepcopy(report)

        def work(conn: Connection) -> None:
            # Run again after a deadlock, the report starts over from where it stood before.
            for name in vars(begun):
                setattr(report, name, copy.deepcopy(getattr(begun, name)))
            for item in items:
                if cancelled():
                    raise ImportStopped
                uri = str(item.uri)
                existing = self.memory_by_uri(conn, uri)
                if existing is None and self.alias_target(conn, uri) is not None:
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
                        change = _merged(existing, item)
                        done = report.merged
                    if change.changes_nothing(existing):
                        report.unchanged.append(uri)  # an identical version would only bury the history
                    else:
                        writes.apply_change(conn, existing, change, "import", strategy, author=author)
                        done.append(uri)
                self._import_aliases(conn, item, report)
            for item in items:  # links last: their targets may come later in the document
                self._import_links(conn, item, report)
            if cancelled():  # the last safe point: after it the transaction commits
                raise ImportStopped

        self.write(work, exclusive=True)
        changed = len(report.created) + len(report.overwritten) + len(report.merged)
        if changed >= tuning.COMPACT_AFTER_IMPORT and changed * 4 >= self.read(ranking.memory_total):
            self.engine.compact()

    def _insert_imported(self, conn: Connection, item: ImportItem, stamp: str) -> None:
        versions = sorted(item.versions, key=lambda v: v.version)
        current_version = item.version or (versions[-1].version if versions else 1)
        older = [v for v in versions if v.version < current_version]
        created_at = item.created_at or stamp
        updated_at = item.updated_at or created_at
        current = next((v for v in versions if v.version == current_version), None)
        change, note = (current.change, current.change_note) if current else ("import", "")
        memory_id = self.engine.insert_returning_id(
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
            conn.executemany(writes.INSERT_VERSION, [writes.version_values(memory_id, v) for v in older])

    def _import_aliases(self, conn: Connection, item: ImportItem, report: ImportReport) -> None:
        uri = str(item.uri)
        memory = self.memory_by_uri(conn, uri)
        if memory is None:
            return
        for alias in item.aliases:
            if self.alias_target(conn, alias) == memory.id:
                continue
            if self.taken(conn, alias):
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
                (alias, memory.id, utc_stamp()),
            )

    def _import_links(self, conn: Connection, item: ImportItem, report: ImportReport) -> None:
        """The item's outgoing links whose target exists (a memory or an alias); a link already there
        is left as it is, so importing twice adds nothing."""
        if not item.links:
            return
        source = self.memory_by_uri(conn, str(item.uri))
        if source is None:
            return
        for number, (target_uri, relation) in enumerate(item.links):
            target_id = self.memory_id_of(conn, target_uri)
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
            report.links_added += listings.insert_link(conn, source.id, target_id, relation)


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
