"""The memory store's records, for ``hostd db copy`` (``hostd.RecordStore``; the copy is the host's).

Three kinds, exported in this order, each read page by page in a stable order:

- ``memories``, keyed by URI (deleted ones too: a soft delete is a version like any other):
  every version, the current one last, with its tags and author, plus the memory's aliases,
  times and access counts. The versions are a history: a local memory whose versions continue
  the team's is a fast-forward (the newer versions are added with their authors), one the
  team's continue is already there, diverging histories are a conflict. A new memory, or the
  new aliases of a fast-forward, whose URI is taken by an alias there is a conflict too.
- ``links``, keyed by both URIs and the relation; each needs both memories.
- ``sessions`` (``save_session``), keyed by title, time and memory: copied once.

Both sides are read with the same SQL (``snapshot``), so "equal" means equal as the tools would
answer it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from hostd.paging import JSONValue
from hostd_db import Connection, utc_stamp
from pydantic import TypeAdapter
from typing_extensions import TypedDict

from hostd import Record, RecordData, RecordKind, Text, pages
from hostd_memory.store import MemoryStore
from hostd_memory.store.rows import VersionRow
from hostd_memory.store.schema import VERSION_COLUMNS
from hostd_memory.store.writes import INSERT_VERSION, version_values

#: How many records one read of the local file returns.
PAGE = 500

_STATE = (
    "uri, domain, path, content, priority, disclosure, status, access_count, last_accessed_at, "
    "created_at, updated_at, version, change, change_note, tags, author"
)

#: One version as ``VERSION_COLUMNS`` lists it, its tags decoded.
Version = tuple[int, str, int, str, str, str, str, str, list[str], str | None]


class MemoryData(TypedDict):
    """A ``memories`` record's data (``snapshot``)."""

    domain: str
    path: str
    created_at: str
    access_count: int
    last_accessed_at: str | None
    aliases: list[str]
    versions: list[Version]


LinkData = TypedDict("LinkData", {"from": str, "to": str, "relation": str, "created_at": str})


class SessionData(TypedDict):
    """A ``sessions`` record's data."""

    title: str
    summary: str
    memory_uri: str | None
    created_at: str


_MEMORY, _LINK, _SESSION = TypeAdapter(MemoryData), TypeAdapter(LinkData), TypeAdapter(SessionData)


def _version(row: Sequence[Any]) -> list[Any]:
    """A version as ``VERSION_COLUMNS`` values, its tags decoded."""
    values = list(row)
    values[8] = json.loads(values[8])
    return values


def snapshot(conn: Connection, uri: str) -> dict[str, JSONValue] | None:
    """Everything stored about the memory at ``uri`` as plain values (a record's data), or None."""
    row = conn.execute(f"SELECT id, {_STATE} FROM memories WHERE uri = ?", (uri,)).fetchone()
    if row is None:
        return None
    (memory_id, _uri, domain, path, content, priority, disclosure, status, access_count, accessed,
     created, updated, version, change, note, tags, author) = row  # fmt: skip
    versions = [
        _version(v)
        for v in conn.execute(
            f"SELECT {VERSION_COLUMNS} FROM memory_versions WHERE memory_id = ? ORDER BY version",
            (memory_id,),
        )
    ]
    versions.append(
        _version((version, content, priority, disclosure, status, change, note, updated, tags, author))
    )
    aliases = conn.execute(
        "SELECT alias_uri FROM aliases WHERE memory_id = ? ORDER BY alias_uri", (memory_id,)
    )
    return {
        "domain": domain,
        "path": path,
        "created_at": created,
        "access_count": int(access_count),
        "last_accessed_at": accessed,
        "aliases": [str(alias) for (alias,) in aliases],
        "versions": versions,
    }


def _snapshot_or_damage(conn: Connection, uri: str) -> dict[str, JSONValue] | Text:
    """The memory's data, or why it cannot be read (a row edited by hand: tags that are not JSON, a
    count that is not a number), so the copy reports that memory instead of stopping."""
    try:
        return snapshot(conn, uri) or {}
    except ValueError as exc:
        return Text(
            en=f"memory {uri} is damaged locally and was not copied ({exc})",
            zh=f"记忆 {uri} 在本地已损坏，未复制（{exc}）",
        )


def _label(noun_en: str, noun_zh: str) -> Callable[[str], Text]:
    return lambda key: Text(en=f"{noun_en} {key}", zh=f"{noun_zh} {key}")


def _link_label(key: str) -> Text:
    from_uri, relation, to_uri = json.loads(key)
    return Text(
        en=f"link {from_uri} -> {to_uri} ({relation})", zh=f"关联 {from_uri} -> {to_uri}（{relation}）"
    )


class MemoryRecords:
    """The ``hostd.RecordStore`` of one memory store (the local file's, or the team database's)."""

    record_kinds = (
        RecordKind(
            "memories",
            _label("memory", "记忆"),
            parts="versions",
            history=True,
            merged=("aliases", "access_count", "last_accessed_at"),
        ),
        RecordKind("links", _link_label, ignored=("created_at",)),
        RecordKind("sessions", _label("session", "会话"), ignored=("summary",)),
    )
    import_lock = None  # the copy holds the store-wide lock alone instead (``begin_import``)

    def __init__(self, store: MemoryStore) -> None:
        self.store = store
        self._ids: dict[str, int] = {}  # URI -> id in this store, of the memories the copy touched

    def close(self) -> None:
        self.store.close()

    # --- export ---------------------------------------------------------------------------

    def _read(self, sql: str, parameters: Sequence[Any]) -> list[Any]:
        return list(self.store.database.read(lambda conn: conn.execute(sql, parameters).fetchall()))

    def export_records(self) -> Iterator[Record]:
        def memories(after: int | None) -> list[tuple[int, str, dict[str, JSONValue] | Text]]:
            def work(conn: Connection) -> list[tuple[int, str, dict[str, JSONValue] | Text]]:
                rows = conn.execute(
                    "SELECT id, uri FROM memories WHERE id > ? ORDER BY id LIMIT ?", (after or 0, PAGE)
                ).fetchall()
                return [
                    (int(memory_id), str(uri), _snapshot_or_damage(conn, str(uri))) for memory_id, uri in rows
                ]

            return self.store.database.read(work)

        for _, uri, data in pages(memories, lambda item: item[0]):
            if isinstance(data, Text):
                yield Record("memories", uri, damaged=data)
            else:
                yield Record("memories", uri, data)

        def links(after: tuple[int, int, str] | None) -> list[Any]:
            return self._read(
                "SELECT l.from_id, l.to_id, l.relation, a.uri, b.uri, l.created_at FROM memory_links l "
                "JOIN memories a ON a.id = l.from_id JOIN memories b ON b.id = l.to_id "
                "WHERE (l.from_id, l.to_id, l.relation) > (?, ?, ?) "
                "ORDER BY l.from_id, l.to_id, l.relation LIMIT ?",
                (*(after or (0, 0, "")), PAGE),
            )

        for _, _, relation, from_uri, to_uri, created_at in pages(links, lambda row: tuple(row[:3])):
            yield Record(
                "links",
                json.dumps([from_uri, relation, to_uri], ensure_ascii=False),
                {"from": from_uri, "to": to_uri, "relation": relation, "created_at": created_at},
                needs=(("memories", from_uri), ("memories", to_uri)),
            )

        def sessions(after: int | None) -> list[Any]:
            return self._read(
                "SELECT id, title, summary, memory_uri, created_at FROM sessions "
                "WHERE id > ? ORDER BY id LIMIT ?",
                (after or 0, PAGE),
            )

        for _, title, summary, memory_uri, created_at in pages(sessions, lambda row: int(row[0])):
            yield Record(
                "sessions",
                json.dumps([title, created_at, memory_uri], ensure_ascii=False),
                {"title": title, "summary": summary, "memory_uri": memory_uri, "created_at": created_at},
            )

    # --- import ---------------------------------------------------------------------------

    def begin_import(self, conn: Connection) -> None:
        """Hold the store-wide lock alone: the copy sees and changes the store as a single writer."""
        self._ids = {}
        self.store.database.hold(conn, exclusive=True)

    def _id(self, conn: Connection, uri: str) -> int | None:
        if uri not in self._ids:
            row = conn.execute("SELECT id FROM memories WHERE uri = ?", (uri,)).fetchone()
            if row is None:
                return None
            self._ids[uri] = int(row[0])
        return self._ids[uri]

    def find_record(self, conn: Connection, kind: str, key: str) -> RecordData | None:
        if kind == "memories":
            found = snapshot(conn, key)
            if found is None and self._taken(conn, key):
                return {"alias of": key}  # the URI names an alias there: differs from any memory
            return found
        if kind == "links":
            from_uri, relation, to_uri = json.loads(key)
            from_id, to_id = self._id(conn, from_uri), self._id(conn, to_uri)
            row = conn.execute(
                "SELECT created_at FROM memory_links WHERE from_id = ? AND to_id = ? AND relation = ?",
                (from_id, to_id, relation),
            ).fetchone()
            return None if row is None else {"from": from_uri, "to": to_uri, "relation": relation}
        title, created_at, memory_uri = json.loads(key)
        row = conn.execute(
            "SELECT summary FROM sessions WHERE title = ? AND created_at = ? "
            "AND memory_uri IS NOT DISTINCT FROM ?",
            (title, created_at, memory_uri),
        ).fetchone()
        return None if row is None else {"title": title, "memory_uri": memory_uri, "created_at": created_at}

    @staticmethod
    def _taken(conn: Connection, uri: str) -> bool:
        return bool(
            conn.execute(
                "SELECT 1 FROM memories WHERE uri = ? UNION ALL SELECT 1 FROM aliases WHERE alias_uri = ?",
                (uri, uri),
            ).fetchone()
        )

    def import_record(self, conn: Connection, record: Record, theirs: RecordData | None) -> Text | None:
        # Each kind's data is parsed into its shape before any of it is written (the host reports
        # a ``ValidationError`` as this record's conflict).
        if record.kind == "links":
            self._insert_link(conn, _LINK.validate_python(record.data))
            return None
        if record.kind == "sessions":
            session = _SESSION.validate_python(record.data)
            conn.execute(
                "INSERT INTO sessions (title, summary, memory_uri, created_at) VALUES (?, ?, ?, ?)",
                (session["title"], session["summary"], session["memory_uri"], session["created_at"]),
            )
            return None
        team = None if theirs is None else _MEMORY.validate_python(theirs)
        return self._import_memory(conn, record.key, _MEMORY.validate_python(record.data), team)

    def _insert_link(self, conn: Connection, link: LinkData) -> None:
        conn.execute(
            "INSERT INTO memory_links (from_id, to_id, relation, created_at) VALUES (?, ?, ?, ?)",
            (self._id(conn, link["from"]), self._id(conn, link["to"]), link["relation"], link["created_at"]),
        )

    def _import_memory(
        self, conn: Connection, uri: str, data: MemoryData, theirs: MemoryData | None
    ) -> Text | None:
        known = [] if theirs is None else theirs["aliases"]
        if not set(known) <= set(data["aliases"]):
            return Text(
                en=f"memory {uri} differs in the team database",
                zh=f"记忆 {uri} 在团队数据库中的内容与本地不同",
            )
        taken = [alias for alias in data["aliases"] if alias not in known and self._taken(conn, alias)]
        if taken:
            return Text(
                en="; ".join(
                    f"alias {alias} of memory {uri} is taken in the team database" for alias in taken
                ),
                zh="；".join(f"记忆 {uri} 的别名 {alias} 在团队数据库中已被占用" for alias in taken),
            )
        if theirs is None:
            memory_id = self._insert(conn, uri, data)
        else:
            memory_id = self._fast_forward(conn, uri, data, theirs)
        conn.executemany(
            "INSERT INTO aliases (alias_uri, memory_id, created_at) VALUES (?, ?, ?)",
            [(alias, memory_id, utc_stamp()) for alias in data["aliases"] if alias not in known],
        )
        return None

    @staticmethod
    def _version_rows(memory_id: int, versions: Sequence[Version]) -> list[tuple[object, ...]]:
        """``writes.INSERT_VERSION``'s values for each of ``versions`` (as a record lists them)."""
        return [version_values(memory_id, VersionRow(*v[:8], tags=v[8], author=v[9])) for v in versions]

    def _insert(self, conn: Connection, uri: str, data: MemoryData) -> int:
        """A new memory: its current state from the last version, the earlier ones kept as versions."""
        (version, content, priority, disclosure, status, change, note, updated, tags, author) = data[
            "versions"
        ][-1]
        state = (
            uri, data["domain"], data["path"], content, priority, disclosure, status,
            data["access_count"], data["last_accessed_at"], data["created_at"], updated, version, change,
            note, json.dumps(tags), author,
        )  # fmt: skip
        marks = ", ".join("?" * len(state))
        memory_id = self.store.engine.insert_returning_id(
            conn, f"INSERT INTO memories ({_STATE}) VALUES ({marks})", state
        )
        self._ids[uri] = memory_id
        conn.executemany(
            INSERT_VERSION,
            self._version_rows(memory_id, data["versions"][:-1]),
        )
        return memory_id

    def _fast_forward(self, conn: Connection, uri: str, data: MemoryData, theirs: MemoryData) -> int:
        """Bring the team's memory up to the local one's newer versions (authors and times kept).

        The team's current version becomes a kept version (as every write does), then each newer
        local version up to the current one, which becomes the memory's state. Accesses counted
        on either side are kept (the larger count, the later time).
        """
        memory_id = self._id(conn, uri)
        assert memory_id is not None
        mine = data["versions"]
        conn.executemany(
            INSERT_VERSION,
            self._version_rows(memory_id, mine[len(theirs["versions"]) - 1 : -1]),
        )
        (version, content, priority, disclosure, status, change, note, updated, tags, author) = mine[-1]
        accessed = [a for a in (data["last_accessed_at"], theirs["last_accessed_at"]) if a is not None]
        conn.execute(
            "UPDATE memories SET content = ?, priority = ?, disclosure = ?, status = ?, access_count = ?, "
            "last_accessed_at = ?, updated_at = ?, version = ?, change = ?, change_note = ?, tags = ?, "
            "author = ? WHERE id = ?",
            (
                content, priority, disclosure, status, max(data["access_count"], theirs["access_count"]),
                max(accessed) if accessed else None, updated, version, change, note, json.dumps(tags), author,
                memory_id,
            ),
        )  # fmt: skip
        return memory_id

    def end_import(self, conn: Connection) -> None:
        """Fill the word index of the memories the copy wrote (the team database's; SQLite's triggers did)."""
        if self.store.database.dialect.is_postgres:
            self.store.engine.index_words(conn)
