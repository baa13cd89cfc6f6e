"""``hostd db copy`` for memory: a user's SQLite memories into the team database, history and all.

Each local memory (deleted ones too: a soft delete is a version like any other) is looked up by
URI in the team database:

- absent (neither a memory nor an alias there): copied whole -- its current state, every
  earlier version, its tags, aliases and author, times and access counts kept -- under a new id;
- present and equal field by field (``snapshot``: state, versions, aliases): unchanged, so a
  second run changes nothing;
- present at an earlier point of the same history (every version the team holds, its current
  one included, is the local version of that number; the local memory has newer ones made
  after an earlier copy): a fast-forward -- the newer versions are added with their authors and
  the memory reported as updated;
- present at a later point of the same history (the team went on from what was copied): already
  there, unchanged;
- present and different otherwise (histories that diverge), or taken by an alias there: a
  conflict, reported and never overwritten.

Links are copied between memories that were copied or found identical (by URI: ids differ
between the two databases); a link already there is unchanged. Saved sessions are copied once
(a session with the same title, time and memory is already there). Both sides are read with the
same SQL (``snapshot``), so "equal" means equal as the tools would answer it. Everything runs in
one write transaction of the team store: all of it is copied, or none.
"""

from __future__ import annotations

import json
from typing import Any

from hostd_db import utc_stamp

from hostd import CopyReport, PluginContext, Text
from hostd_memory.models import Settings
from hostd_memory.store import MemoryStore
from hostd_memory.store.rows import Connection

_STATE = (
    "uri, domain, path, content, priority, disclosure, status, access_count, last_accessed_at, "
    "created_at, updated_at, version, change, change_note, tags, author"
)
_VERSION = "version, content, priority, disclosure, status, change, change_note, created_at, tags, author"


def _comparable(row: tuple[Any, ...], tags_at: int) -> tuple[Any, ...]:
    values = list(row)
    values[tags_at] = json.loads(values[tags_at])
    return tuple(values)


def snapshot(conn: Connection, uri: str) -> tuple[int, dict[str, Any]] | None:
    """(id, everything stored about the memory at ``uri`` in comparable values), or None."""
    row = conn.execute(f"SELECT id, {_STATE} FROM memories WHERE uri = ?", (uri,)).fetchone()
    if row is None:
        return None
    memory_id = int(row[0])
    return memory_id, {
        "state": _comparable(tuple(row[1:]), 14),
        "versions": [
            _comparable(tuple(v), 8)
            for v in conn.execute(
                f"SELECT {_VERSION} FROM memory_versions WHERE memory_id = ? ORDER BY version", (memory_id,)
            )
        ],
        "aliases": [
            str(a[0])
            for a in conn.execute(
                "SELECT alias_uri FROM aliases WHERE memory_id = ? ORDER BY alias_uri", (memory_id,)
            )
        ],
    }


def _history(memory: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every version of a snapshot as ``_VERSION`` values, oldest first, the current state last."""
    (_uri, _domain, _path, content, priority, disclosure, status, _count, _accessed, _created, updated,
     version, change, note, tags, author) = memory["state"]  # fmt: skip
    current = (version, content, priority, disclosure, status, change, note, updated, tags, author)
    return [*memory["versions"], current]


def _extends(longer: dict[str, Any], shorter: dict[str, Any]) -> bool:
    """Whether ``longer``'s history continues ``shorter``'s: the same memory, every version of
    ``shorter`` (its current one too) is ``longer``'s version of that number, and ``longer`` has more."""
    mine, theirs = _history(longer), _history(shorter)
    created_at = 9
    return (
        len(mine) > len(theirs)
        and mine[: len(theirs)] == theirs
        and longer["state"][created_at] == shorter["state"][created_at]
    )


def _fast_forward(conn: Connection, team_id: int, local: dict[str, Any], team: dict[str, Any]) -> int:
    """Bring the team's memory up to the local one's newer versions; how many versions were added.

    The team's current version becomes a kept version (as every write does), then each newer local
    version up to the current one, which becomes the memory's state; authors and times are kept.
    Accesses counted on either side are kept (the larger count, the later time).
    """
    mine, theirs = _history(local), _history(team)
    conn.executemany(
        f"INSERT INTO memory_versions (memory_id, {_VERSION}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(team_id, *v[:8], json.dumps(v[8]), v[9]) for v in mine[len(theirs) - 1 : -1]],
    )
    state = local["state"]
    accessed = [a for a in (state[8], team["state"][8]) if a is not None]
    conn.execute(
        "UPDATE memories SET content = ?, priority = ?, disclosure = ?, status = ?, access_count = ?, "
        "last_accessed_at = ?, updated_at = ?, version = ?, change = ?, change_note = ?, tags = ?, "
        "author = ? WHERE id = ?",
        (
            *state[3:7],
            max(int(state[7]), int(team["state"][7])),
            max(accessed) if accessed else None,
            *state[10:14],
            json.dumps(state[14]),
            state[15],
            team_id,
        ),
    )
    return len(mine) - len(theirs)


def _insert(conn: Connection, store: MemoryStore, local: dict[str, Any]) -> int:
    """Write a local snapshot as a new team memory (its aliases are free: checked by the caller)."""
    state = list(local["state"])
    state[14] = json.dumps(state[14])
    marks = ", ".join("?" * len(state))
    memory_id = store._insert_returning_id(conn, f"INSERT INTO memories ({_STATE}) VALUES ({marks})", state)
    conn.executemany(
        f"INSERT INTO memory_versions (memory_id, {_VERSION}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [(memory_id, *v[:8], json.dumps(v[8]), v[9]) for v in local["versions"]],
    )
    for alias in local["aliases"]:
        conn.execute(
            "INSERT INTO aliases (alias_uri, memory_id, created_at) VALUES (?, ?, ?)",
            (alias, memory_id, utc_stamp()),
        )
    return memory_id


def _taken(conn: Connection, uri: str) -> bool:
    return bool(
        conn.execute(
            "SELECT 1 FROM memories WHERE uri = ? UNION ALL SELECT 1 FROM aliases WHERE alias_uri = ?",
            (uri, uri),
        ).fetchone()
    )


def copy_memories(context: PluginContext[Settings], local: MemoryStore, team: MemoryStore) -> CopyReport:
    """Copy every memory, link and session of ``local`` into ``team`` (see the module's rules)."""
    reader = local._conn()
    uris = [str(r[0]) for r in reader.execute("SELECT uri FROM memories ORDER BY id")]
    mine = {uri: snap for uri in uris if (snap := snapshot(reader, uri)) is not None}
    links = [
        (str(f), str(t), str(rel), str(at))
        for f, t, rel, at in reader.execute(
            "SELECT a.uri, b.uri, l.relation, l.created_at FROM memory_links l "
            "JOIN memories a ON a.id = l.from_id JOIN memories b ON b.id = l.to_id "
            "ORDER BY a.id, b.id, l.relation"
        )
    ]
    sessions = [
        tuple(r)
        for r in reader.execute("SELECT title, summary, memory_uri, created_at FROM sessions ORDER BY id")
    ]
    report = CopyReport()

    def differs(uri: str) -> str:
        return context.render(
            Text(
                en=f"memory {uri} differs in the team database",
                zh=f"记忆 {uri} 在团队数据库中的内容与本地不同",
            )
        )

    def alias_taken(alias: str, uri: str) -> str:
        return context.render(
            Text(
                en=f"alias {alias} of memory {uri} is taken in the team database",
                zh=f"记忆 {uri} 的别名 {alias} 在团队数据库中已被占用",
            )
        )

    def count(kind: str, copied: bool, how_many: int = 1) -> None:
        bucket = report.copied if copied else report.unchanged
        bucket[kind] = bucket.get(kind, 0) + how_many

    with team._write(exclusive=True) as conn:
        team_ids: dict[str, int] = {}
        for uri, (_, memory) in mine.items():
            theirs = snapshot(conn, uri)
            if theirs is not None:
                team_id, team_memory = theirs
                if team_memory == memory or _extends(team_memory, memory):  # nothing new here
                    team_ids[uri] = team_id
                    count("memories", copied=False)
                    count("versions", copied=False, how_many=len(memory["versions"]) + 1)
                    continue
                new_aliases = [a for a in memory["aliases"] if a not in team_memory["aliases"]]
                taken = [alias for alias in new_aliases if _taken(conn, alias)]
                if not _extends(memory, team_memory) or not set(team_memory["aliases"]) <= set(
                    memory["aliases"]
                ):
                    report.conflicts.append(differs(uri))
                elif taken:
                    report.conflicts.extend(alias_taken(alias, uri) for alias in taken)
                else:
                    added = _fast_forward(conn, team_id, memory, team_memory)
                    for alias in new_aliases:
                        conn.execute(
                            "INSERT INTO aliases (alias_uri, memory_id, created_at) VALUES (?, ?, ?)",
                            (alias, team_id, utc_stamp()),
                        )
                    team_ids[uri] = team_id
                    report.updated["memories"] = report.updated.get("memories", 0) + 1
                    count("versions", copied=True, how_many=added)
                    count("versions", copied=False, how_many=len(team_memory["versions"]) + 1)
                continue
            if _taken(conn, uri):
                report.conflicts.append(differs(uri))
                continue
            taken = [alias for alias in memory["aliases"] if _taken(conn, alias)]
            if taken:
                report.conflicts.extend(alias_taken(alias, uri) for alias in taken)
                continue
            team_ids[uri] = _insert(conn, team, memory)
            count("memories", copied=True)
            count("versions", copied=True, how_many=len(memory["versions"]) + 1)
        for from_uri, to_uri, relation, created_at in links:
            if from_uri in team_ids and to_uri in team_ids:
                added = conn.execute(
                    "INSERT INTO memory_links (from_id, to_id, relation, created_at) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT DO NOTHING",
                    (team_ids[from_uri], team_ids[to_uri], relation, created_at),
                ).rowcount
                count("links", copied=bool(added))
        for title, summary, memory_uri, created_at in sessions:
            there = conn.execute(
                "SELECT 1 FROM sessions WHERE title = ? AND created_at = ? "
                "AND memory_uri IS NOT DISTINCT FROM ?",
                (title, created_at, memory_uri),
            ).fetchone()
            if there is None:
                conn.execute(
                    "INSERT INTO sessions (title, summary, memory_uri, created_at) VALUES (?, ?, ?, ?)",
                    (title, summary, memory_uri, created_at),
                )
            count("sessions", copied=there is None)
    return report


def copy_to_team_database(context: PluginContext[Settings]) -> CopyReport | None:
    """Copy the plugin's SQLite file (the ``database`` setting) into its team tables."""
    from hostd_db import open_database

    from hostd_memory.store import memory_store, open_store
    from hostd_memory.store.schema import schema

    if not context.has_team_database:
        return None  # no team database: the memories already are the local ones
    if not (context.data_dir / context.settings.database).exists():
        return CopyReport()
    local = open_store(
        open_database(schema(context.settings.database), "memory", data_dir=context.data_dir, team=None)
    )
    try:
        return copy_memories(context, local, memory_store(context))
    finally:
        local.close()
