"""``hostd.core.records``: the merge rule each kind declares and the copy loop written once in the host.

Two real SQLite files play the local store and the team database: a small store of entries
with a history (versions, oldest first) and notes that need an entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hostd.core.records import PROGRESS_EVERY, CopyReport, Merge, import_records, merge
from hostd_db import Column, ColumnType, Connection, Database, Schema, Table, open_database
from pydantic import TypeAdapter
from typing_extensions import TypedDict

from hostd import Record, RecordData, RecordKind, Text, pages

SCHEMA = Schema(
    migrations=[
        [
            Table(
                "entries",
                (
                    Column("key", ColumnType.KEY, primary_key=True),
                    Column("history", ColumnType.TEXT, not_null=True),
                    Column("seen", ColumnType.INTEGER, not_null=True),
                ),
            ),
            Table(
                "notes",
                (
                    Column("key", ColumnType.KEY, primary_key=True),
                    Column("entry", ColumnType.KEY, not_null=True, references="entries (key)"),
                ),
            ),
        ]
    ],
    sqlite_file="ledger.db",
)

ENTRIES = RecordKind(
    "entries",
    lambda key: Text(en=f"entry {key}", zh=f"条目 {key}"),
    parts="versions",
    history=True,
    merged=("seen",),
)
NOTES = RecordKind("notes", lambda key: Text(en=f"note {key}", zh=f"笔记 {key}"))


class EntryData(TypedDict):
    versions: list[str]
    seen: int


class NoteData(TypedDict):
    entry: str


#: What the ledger parses a record's data into before writing it.
ENTRY, NOTE = TypeAdapter(EntryData), TypeAdapter(NoteData)


class Ledger:
    """A ``hostd.RecordStore`` over one database; ``fail_on`` makes one import raise."""

    record_kinds = (ENTRIES, NOTES)
    import_lock = "ledger"

    def __init__(self, database: Database, fail_on: str | None = None) -> None:
        self.database = database
        self.fail_on = fail_on
        self.exported: list[str] = []
        self.damaged: set[str] = set()

    def add(self, key: str, *versions: str, seen: int = 0) -> None:
        self.database.write(
            lambda c: c.execute(
                "INSERT INTO entries (key, history, seen) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET history = excluded.history, seen = excluded.seen",
                (key, json.dumps(list(versions)), seen),
            )
        )

    def note(self, key: str, entry: str) -> None:
        self.database.write(lambda c: c.execute("INSERT INTO notes (key, entry) VALUES (?, ?)", (key, entry)))

    def entries(self) -> dict[str, list[str]]:
        rows = self.database.read(
            lambda c: c.execute("SELECT key, history FROM entries ORDER BY key").fetchall()
        )
        return {key: json.loads(history) for key, history in rows}

    def export_records(self) -> Iterator[Record]:
        def entries(after: str | None) -> list[Any]:
            return self.database.read(
                lambda c: c.execute(
                    "SELECT key, history, seen FROM entries WHERE key > ? ORDER BY key LIMIT 100",
                    (after or "",),
                ).fetchall()
            )

        for key, history, seen in pages(entries, lambda row: str(row[0])):
            self.exported.append(key)
            if key in self.damaged:
                yield Record(
                    "entries", key, damaged=Text(en=f"entry {key} is damaged", zh=f"条目 {key} 已损坏")
                )
            else:
                yield Record("entries", key, {"versions": json.loads(history), "seen": seen})
        rows = self.database.read(lambda c: c.execute("SELECT key, entry FROM notes ORDER BY key").fetchall())
        for key, entry in rows:
            yield Record("notes", key, {"entry": entry}, needs=(("entries", entry),))

    def begin_import(self, conn: Connection) -> None:
        pass

    def find_record(self, conn: Connection, kind: str, key: str) -> RecordData | None:
        if kind == "notes":
            row = conn.execute("SELECT entry FROM notes WHERE key = ?", (key,)).fetchone()
            return None if row is None else {"entry": row[0]}
        row = conn.execute("SELECT history, seen FROM entries WHERE key = ?", (key,)).fetchone()
        return None if row is None else {"versions": json.loads(row[0]), "seen": row[1]}

    def import_record(self, conn: Connection, record: Record, theirs: RecordData | None) -> Text | None:
        if record.key == self.fail_on:
            raise RuntimeError("the disk went away")
        if record.kind == "notes":
            note = NOTE.validate_python(record.data)
            conn.execute("INSERT INTO notes (key, entry) VALUES (?, ?)", (record.key, note["entry"]))
            return None
        if record.key.startswith("taken"):
            return Text(en=f"entry {record.key}: its name is taken", zh=f"条目 {record.key} 的名字已被占用")
        entry = ENTRY.validate_python(record.data)
        seen = max(entry["seen"], ENTRY.validate_python(theirs)["seen"]) if theirs else entry["seen"]
        conn.execute(
            "INSERT INTO entries (key, history, seen) VALUES (?, ?, ?) "
            "ON CONFLICT (key) DO UPDATE SET history = excluded.history, seen = excluded.seen",
            (record.key, json.dumps(entry["versions"]), seen),
        )
        return None

    def end_import(self, conn: Connection) -> None:
        pass

    def close(self) -> None:
        self.database.close()


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[tuple[Ledger, Ledger]]:
    (tmp_path / "local").mkdir()
    (tmp_path / "team").mkdir()
    local = Ledger(open_database(SCHEMA, "ledger", data_dir=tmp_path / "local", team=None))
    team = Ledger(open_database(SCHEMA, "ledger", data_dir=tmp_path / "team", team=None))
    yield local, team
    local.close()
    team.close()


def copy(local: Ledger, team: Ledger, **options: Any) -> CopyReport:
    return import_records(local, team, team.database, lambda text: text.en, **options)


def test_the_merge_rule_of_a_kind() -> None:
    mine: RecordData = {"versions": ["a", "b"], "seen": 1}
    assert merge(ENTRIES, mine, None) is Merge.NEW
    assert merge(ENTRIES, mine, {"versions": ["a", "b"], "seen": 1}) is Merge.SAME
    assert merge(ENTRIES, mine, {"versions": ["a"], "seen": 5}) is Merge.AHEAD  # `seen` is merged
    assert merge(ENTRIES, mine, {"versions": ["a", "b", "c"], "seen": 0}) is Merge.BEHIND
    assert merge(ENTRIES, mine, {"versions": ["a", "x"], "seen": 1}) is Merge.CONFLICT  # diverged
    assert merge(ENTRIES, mine, {"versions": ["a", "b"], "seen": 2}) is Merge.CONFLICT  # same history
    assert merge(ENTRIES, {**mine, "extra": 1}, {"versions": ["a"], "seen": 1}) is Merge.CONFLICT
    # Without a history, any difference is a conflict; ignored fields are never compared.
    plain = RecordKind("plain", ENTRIES.label, parts="versions")
    assert merge(plain, mine, {"versions": ["a"], "seen": 1}) is Merge.CONFLICT
    loose = RecordKind("loose", ENTRIES.label, ignored=("seen",))
    assert merge(loose, mine, {"versions": ["a", "b"], "seen": 9}) is Merge.SAME
    # A store whose parts are not a list is wrong, and says so rather than comparing characters.
    with pytest.raises(TypeError, match="'versions' must be a list, not str"):
        merge(ENTRIES, mine, {"versions": "ab", "seen": 1})


def test_copy_then_again_then_fast_forward_behind_and_diverged(stores: tuple[Ledger, Ledger]) -> None:
    local, team = stores
    local.add("e1", "v1", "v2")
    local.add("e2", "v1")
    local.note("n1", "e1")
    first = copy(local, team)
    assert first == CopyReport(copied={"entries": 2, "versions": 3, "notes": 1})
    assert team.entries() == {"e1": ["v1", "v2"], "e2": ["v1"]}
    assert copy(local, team) == CopyReport(
        copied={"entries": 0, "versions": 0, "notes": 0}, unchanged={"entries": 2, "versions": 3, "notes": 1}
    )
    local.add("e1", "v1", "v2", "v3", seen=4)  # made locally after the copy: a fast-forward
    team.add("e2", "v1", "team v2")  # the team went on: already there
    assert copy(local, team) == CopyReport(
        copied={"entries": 0, "versions": 1, "notes": 0},
        unchanged={"entries": 1, "versions": 3, "notes": 1},
        updated={"entries": 1},
    )
    assert team.entries() == {"e1": ["v1", "v2", "v3"], "e2": ["v1", "team v2"]}
    local.add("e1", "v1", "v2", "v3", "mine")
    team.add("e1", "v1", "v2", "v3", "theirs")
    diverged = copy(local, team)
    assert diverged.conflicts == ["entry e1 differs in the team database"]
    assert team.entries()["e1"] == ["v1", "v2", "v3", "theirs"]  # never overwritten


def test_a_record_needing_one_in_conflict_is_held_back_and_damaged_ones_are_reported(
    stores: tuple[Ledger, Ledger],
) -> None:
    local, team = stores
    local.add("e1", "mine")
    team.add("e1", "theirs")
    local.add("e2", "v1")
    local.add("e3", "v1")
    local.add("taken-1", "v1")
    local.note("n1", "e1")  # waits on the entry in conflict
    local.note("n2", "e2")
    local.note("n3", "taken-1")  # waits on an entry the target refused
    local.damaged = {"e3"}
    report = copy(local, team)
    assert report.conflicts == [
        "entry e1 differs in the team database",
        "entry e3 is damaged",
        "entry taken-1: its name is taken",
        "note n1 not copied: it waits on entry e1, which is in conflict",
        "note n3 not copied: it waits on entry taken-1, which is in conflict",
    ]
    assert (report.copied, report.unchanged) == ({"entries": 1, "versions": 1, "notes": 1}, {})
    # Held back only when it would be written: a note already there is unchanged.
    team.note("n1", "e1")
    again = copy(local, team)
    assert again.unchanged == {"entries": 1, "versions": 1, "notes": 2}
    assert "note n1 not copied" not in " ".join(again.conflicts)


def test_data_not_in_the_stores_shape_is_that_records_conflict(stores: tuple[Ledger, Ledger]) -> None:
    local, team = stores
    local.add("e1", "v1")
    local.add("e2", "v1")
    local.note("n2", "e2")
    # A hand-edited file: the history holds a number where the store keeps text.
    local.database.write(lambda c: c.execute("UPDATE entries SET history = '[\"v1\", 2]' WHERE key = 'e2'"))
    report = import_records(local, team, team.database, lambda text: text.zh)
    assert report.conflicts == [
        "条目 e2 未复制：其数据不是存储所保存的形式（versions.1：必须是字符串）",
        "笔记 n2 未复制：它等待的条目 e2存在冲突",
    ]
    assert team.entries() == {"e1": ["v1"]}
    english = copy(local, team).conflicts[0]
    assert (
        english == "entry e2 not copied: its data is not as the store keeps it "
        "(versions.1: Input should be a valid string)"
    )


def test_every_conflict_says_nothing_was_copied_not_that_nothing_is_stored(
    stores: tuple[Ledger, Ledger],
) -> None:
    local, team = stores
    local.add("e1", "mine")
    team.add("e1", "theirs")
    report = copy(local, team)
    # No kind is counted, so the command says "nothing copied" beside the conflict.
    assert report == CopyReport(conflicts=["entry e1 differs in the team database"])
    assert copy(Ledger(local.database), team).conflicts == report.conflicts


def test_all_or_nothing_in_one_transaction(stores: tuple[Ledger, Ledger]) -> None:
    local, team = stores
    for number in range(5):
        local.add(f"e{number}", "v1")
    with pytest.raises(RuntimeError, match="disk went away"):
        copy(local, Ledger(team.database, fail_on="e3"))
    assert team.entries() == {}  # the three before the failure are not kept either
    assert copy(local, team).copied["entries"] == 5


def test_records_stream_page_by_page_with_progress(stores: tuple[Ledger, Ledger]) -> None:
    local, team = stores
    count = 2 * PROGRESS_EVERY + 500
    local.database.write(
        lambda c: c.executemany(
            "INSERT INTO entries (key, history, seen) VALUES (?, '[\"v1\"]', 0)",
            [(f"e{number:05d}",) for number in range(count)],
        )
    )
    progress: list[tuple[int, int]] = []

    class Watching(Ledger):
        def find_record(self, conn: Connection, kind: str, key: str) -> Mapping[str, Any] | None:
            if key == "e00000":
                progress.append((0, len(local.exported)))  # how much was read when the first arrived
            return super().find_record(conn, kind, key)

    report = copy(local, Watching(team.database), progress=lambda read: progress.append((1, read)))
    assert report.copied["entries"] == count
    # The first record was merged as soon as it was read, not after all of them were.
    assert progress == [(0, 1), (1, PROGRESS_EVERY), (1, 2 * PROGRESS_EVERY)]
