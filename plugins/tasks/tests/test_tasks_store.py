"""The store under the tools: its hot paths stay index seeks, and its data survives reopening.

"Costs the same at 10,000 tasks as at 100" is checked without a stopwatch: SQLite's progress
handler counts the virtual-machine steps each operation executes, which does not depend on
how busy the machine is. A full scan would grow a hundredfold between the two sizes.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

import pytest

pytest.importorskip("hostd_fs")

from hostd_db import Connection, Database, Schema, TeamDatabaseSettings, open_database, utc_stamp
from hostd_tasks.store import TaskStore
from hostd_tasks.store.results import TaskEdit
from hostd_tasks.store.schema import schema


class SqliteTaskStore(TaskStore):
    """The store on a SQLite file opened here, as the host opens it, with the file at hand."""

    def __init__(self, path: Path) -> None:
        super().__init__(open_database(schema(path.name), "tasks", data_dir=path.parent, team=None))

    def connection(self) -> sqlite3.Connection:
        """This thread's connection to the file (what a read outside a transaction runs on)."""
        return cast("sqlite3.Connection", self.database.read(lambda conn: conn, snapshot=False))

    def close(self) -> None:
        self.database.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTaskStore]:
    opened = SqliteTaskStore(tmp_path / "tasks.db")
    try:
        yield opened
    finally:
        opened.close()


def fill(store: SqliteTaskStore, count: int) -> None:
    """Add ``count`` tasks in one transaction: a realistic mix, a third done, some with dependencies."""
    stamp = utc_stamp()
    statuses = ["completed", "completed", "in_progress", "blocked", "failed", "pending"]

    def work(conn: Connection) -> None:
        (start,) = conn.execute("SELECT COALESCE(MAX(seq), 0) FROM tasks").fetchone()
        rows = [
            (f"bulk-{start + n}", f"bulk task {n}", "", statuses[n % len(statuses)], n % 3, stamp, stamp)
            for n in range(count)
        ]
        conn.executemany(
            "INSERT INTO tasks (task_id, title, description, status, priority, created_at, updated_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        conn.executemany(
            "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES (?, ?, 0)",
            [(f"bulk-{start + n}", f"bulk-{start + n - 1}") for n in range(1, count, 7)],
        )

    store.database.write(work)


@contextmanager
def counting_steps(store: SqliteTaskStore) -> Iterator[list[int]]:
    """Count the SQLite VM steps run on this thread's connection inside the block."""
    steps = [0]

    def tick() -> int:
        steps[0] += 1
        return 0

    conn = store.connection()
    conn.set_progress_handler(tick, 1)
    try:
        yield steps
    finally:
        conn.set_progress_handler(None, 1)


def steps_of(store: SqliteTaskStore, operation: Callable[[], Any]) -> int:
    with counting_steps(store) as steps:
        operation()
    return steps[0]


def hot_operations(store: SqliteTaskStore, label: str) -> dict[str, Callable[[], Any]]:
    """Create a task, change a status, read the next task and claim it: what a busy list repeats."""
    return {
        "create": lambda: store.create(
            title=f"new {label}", description="", priority="P0", task_id=f"new-{label}", depends_on=["bulk-1"]
        ),
        "change status": lambda: store.set_status(f"new-{label}", "blocked"),
        "release": lambda: store.set_status(f"new-{label}", "pending"),
        "next": lambda: store.next_task(claim=False),
        "claim": lambda: store.next_task(claim=True),
    }


def test_hot_paths_cost_the_same_at_10000_tasks_as_at_100(store: SqliteTaskStore) -> None:
    fill(store, 100)
    store.database.write(  # bulk-1 done, so the new P0 task is ready and claimable
        lambda conn: conn.execute("UPDATE tasks SET status = 'completed' WHERE task_id = 'bulk-1'")
    )
    small = {name: steps_of(store, op) for name, op in hot_operations(store, "small").items()}
    fill(store, 9_900)
    large = {name: steps_of(store, op) for name, op in hot_operations(store, "large").items()}
    for name in small:
        assert large[name] <= small[name] * 1.5 + 50, (
            f"{name}: {small[name]} steps at 100 tasks, {large[name]} at 10,000"
        )


def test_hot_statements_never_scan_the_task_table(store: SqliteTaskStore) -> None:
    fill(store, 50)
    statements: list[str] = []
    conn = store.connection()
    conn.set_trace_callback(statements.append)
    try:
        for operation in hot_operations(store, "traced").values():
            operation()
    finally:
        conn.set_trace_callback(None)
    plans = {}
    for sql in statements:
        if not sql.lstrip().upper().startswith(("SELECT", "UPDATE", "INSERT")):
            continue
        plans[sql] = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql)]
    assert plans, "no statement was traced"
    scans = {sql: plan for sql, plan in plans.items() if any(step.startswith("SCAN t") for step in plan)}
    assert not scans, scans


def test_data_survives_reopening_and_the_schema_is_versioned(tmp_path: Path) -> None:
    path = tmp_path / "tasks.db"
    first = SqliteTaskStore(path)
    try:
        first.create(title="keep me", description="d", priority="P1", task_id=None, depends_on=[])
    finally:
        first.close()
    second = SqliteTaskStore(path)
    try:
        page = second.list_page(status=None, priority=None, limit=10, after=None)
    finally:
        second.close()
    assert [t.title for t in page.tasks] == ["keep me"]
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] >= 1
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_a_version_1_database_upgrades_in_place_with_its_tasks_intact(tmp_path: Path) -> None:
    """A tasks.db written by the first schema (before subtasks, labels, notes, history, search)."""
    from hostd_testing import released_sqlite_file
    from tasks_released_schema import SQLITE_MIGRATIONS as MIGRATIONS

    path = tmp_path / "tasks.db"
    stamp = "2026-01-02T03:04:05.123456+00:00"
    with released_sqlite_file(path, MIGRATIONS[:1]) as conn:
        conn.executemany(
            "INSERT INTO tasks (task_id, title, description, status, priority, linked_session_id, "
            "created_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                ("base", "迁移数据库", "旧的描述", "completed", 0, "s-1", stamp, stamp),
                ("next", "ship the upgrade", "", "pending", 2, None, stamp, stamp),
            ],
        )
        conn.execute(
            "INSERT INTO task_dependencies (task_id, depends_on, position) VALUES ('next', 'base', 0)"
        )
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 1

    store = SqliteTaskStore(path)
    try:
        base, following = store.get("base"), store.get("next")
        found = store.list_page(status=None, priority=None, limit=10, after=None, query="数据库")
        history = store.details("next").history
        offered = store.next_task(claim=True)
        store.update("next", TaskEdit(labels=["upgrade"], append_note="went fine"))
        after = store.get("next")
    finally:
        store.close()
    assert (base.title, base.description, base.status, base.priority) == (
        "迁移数据库",
        "旧的描述",
        "completed",
        "P0",
    )
    assert base.linked_session_id == "s-1"
    assert base.created_at.isoformat() == stamp
    assert following.depends_on == ["base"]
    assert following.parent_id is None
    assert (following.labels, following.notes, following.acceptance, following.subtasks) == ([], [], "", None)
    assert [t.task_id for t in found.tasks] == ["base"]
    assert [(h.event, h.at.isoformat()) for h in history] == [("created", stamp)]
    assert offered.task is not None
    assert offered.task.task_id == "next"
    assert after.labels == ["upgrade"]
    assert [n.text for n in after.notes] == ["went fine"]
    with sqlite3.connect(path) as raw:
        # leases, index, copied ids, origins, one spelling of times
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 5 == 8
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        assert raw.execute("PRAGMA foreign_key_check").fetchall() == []


def test_a_version_2_database_upgrades_with_its_members_unknown(tmp_path: Path) -> None:
    """Tasks, history and deletion records from before members were recorded read as null (unknown)."""
    from hostd_testing import released_sqlite_file
    from tasks_released_schema import SQLITE_MIGRATIONS as MIGRATIONS

    path = tmp_path / "tasks.db"
    stamp = "2026-01-02T03:04:05.123456+00:00"
    old_record: dict[str, Any] = {  # a deleted task's last record as version 2 stored it: no member fields
        "task_id": "gone", "title": "gone", "description": "", "status": "pending", "priority": "P2",
        "depends_on": [], "linked_session_id": None, "parent_id": None, "labels": [], "acceptance": "",
        "notes": [], "subtasks": None, "created_at": stamp, "updated_at": stamp,
    }  # fmt: skip
    with released_sqlite_file(path, MIGRATIONS[:2]) as conn:
        conn.execute(
            "INSERT INTO tasks (task_id, title, status, priority, created_at, updated_at) "
            "VALUES ('old', 'from before members', 'in_progress', 1, ?, ?)",
            (stamp, stamp),
        )
        conn.executemany(
            "INSERT INTO task_history (task_id, event, at, details) VALUES (?, ?, ?, '{}')",
            [("old", "created", stamp), ("old", "claimed", stamp), ("gone", "created", stamp)],
        )
        conn.execute(
            "INSERT INTO deleted_tasks (task_id, record, deleted_at) VALUES ('gone', ?, ?)",
            (json.dumps(old_record), stamp),
        )

    store = SqliteTaskStore(path)
    try:
        before = store.get("old")
        history = store.details("old").history
        gone = store.details("gone").task
        released = store.set_status("old", "pending", by="erin").task
        claimed = store.next_task(claim=True, by="erin").task
        unknown = store.list_page(status=None, priority=None, limit=10, after=None, created_by="erin")
        mine = store.list_page(status=None, priority=None, limit=10, after=None, claimed_by="erin")
    finally:
        store.close()
    assert (before.created_by, before.claimed_by) == (None, None)
    assert [(h.event, h.by) for h in history] == [("created", None), ("claimed", None)]
    assert (gone.created_by, gone.claimed_by) == (None, None)
    assert released.claimed_by is None
    assert claimed is not None
    assert (claimed.created_by, claimed.claimed_by) == (None, "erin")
    assert unknown.total == 0
    assert [t.task_id for t in mine.tasks] == ["old"]
    with sqlite3.connect(path) as raw:
        # leases, index, copied ids, origins, one spelling of times
        assert raw.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS) + 5 == 8
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_a_version_3_database_upgrades_with_leases_on_the_work_in_progress(tmp_path: Path) -> None:
    """Tasks in_progress before leases get the default lease from the upgrade; claims are counted
    from the history; a lease that later lapses frees the task as any other."""
    from hostd_testing import released_sqlite_file
    from tasks_released_schema import SQLITE_MIGRATIONS as MIGRATIONS

    path = tmp_path / "tasks.db"
    stamp = "2026-01-02T03:04:05.123456+00:00"
    with released_sqlite_file(path, MIGRATIONS) as conn:
        conn.executemany(
            "INSERT INTO tasks (task_id, title, status, priority, created_at, updated_at, claimed_by) "
            "VALUES (?, ?, ?, 1, ?, ?, ?)",
            [
                ("held", "held", "in_progress", stamp, stamp, "dora"),
                ("done", "done", "completed", stamp, stamp, "dora"),
            ],
        )
        conn.executemany(
            "INSERT INTO task_history (task_id, event, at, actor, details) VALUES (?, ?, ?, 'dora', ?)",
            [
                ("held", "claimed", stamp, '{"from": "pending", "to": "in_progress"}'),
                ("done", "status", stamp, '{"from": "pending", "to": "in_progress"}'),
                ("done", "status", stamp, '{"from": "in_progress", "to": "pending"}'),
                ("done", "claimed", stamp, '{"from": "pending", "to": "in_progress"}'),
                ("done", "status", stamp, '{"from": "in_progress", "to": "completed"}'),
            ],
        )
    upgraded_at = datetime.now(UTC)
    store = SqliteTaskStore(path)
    try:
        held, done = store.get("held"), store.get("done")
        renewed = store.renew("held", by="dora", lease_seconds=1)
        store.database.write(  # as if a second passed: the lease lapsed
            lambda conn: conn.execute(
                "UPDATE tasks SET lease_expires_at = ? WHERE task_id = 'held'", (stamp,)
            )
        )
        offered = store.next_task(claim=True, by="erin", lease_seconds=60).task
    finally:
        store.close()
    assert held.lease_expires_at is not None
    assert 1799 <= (held.lease_expires_at - upgraded_at).total_seconds() <= 1801 + 60
    assert (held.claim_count, held.expired_claims, done.claim_count) == (1, 0, 2)
    assert done.lease_expires_at is None
    assert renewed.lease_expires_at is not None
    assert renewed.lease_expires_at < held.lease_expires_at
    assert offered is not None
    assert offered.task_id == "held"
    assert offered.claimed_by == "erin"
    assert (offered.claim_count, offered.expired_claims) == (2, 1)
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA user_version").fetchone()[0] == 8
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


#: Times as stores wrote them before version 8, and as version 8 spells them.
OLD, NEW = "2026-01-02T03:04:05.123456+00:00", "2026-01-02T03:04:05.123456Z"
LAPSED, LATER = "2026-01-02T04:00:00.000000+00:00", "2999-01-01T00:00:00.000000+00:00"


def _store_at_version(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Callable[[int], Database]:
    """Opens the tasks' database with its first ``n`` migrations: a SQLite file, or a PostgreSQL one."""
    team = None
    if engine == "postgres":
        pytest.importorskip("psycopg")
        team = TeamDatabaseSettings(request.getfixturevalue("postgres_url"))
    full = schema("tasks.db")

    def opened(count: int) -> Database:
        migrations = full.migrations[:count]
        part = Schema(migrations, full.sqlite_file, full.postgres_versions, full.sqlite_functions)
        return open_database(part, "tasks", data_dir=tmp_path, team=team)

    return opened


@pytest.mark.parametrize("engine", ["sqlite", "postgres"])
def test_a_version_7_store_has_every_time_rewritten_and_its_leases_still_compare(
    engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Version 8 spells every stored time as ``hostd_db.utc_stamp`` does (``...Z``): SQLite's time
    columns, and on both databases the text that holds a time (``hostd db copy``'s keys, imported
    tasks' origins and their history, deleted tasks' records). A lease that lapsed in the old
    spelling still lapses, one that has not still holds."""
    opened = _store_at_version(engine, tmp_path, request)
    record = {
        "task_id": "gone", "title": "gone", "description": "", "status": "pending", "priority": "P2",
        "depends_on": [], "linked_session_id": None, "parent_id": None, "labels": [], "acceptance": "",
        "notes": [{"text": "n", "at": OLD}], "subtasks": None, "created_at": OLD, "updated_at": OLD,
        "created_by": None, "claimed_by": None, "lease_expires_at": None, "claim_count": 0,
        "expired_claims": 0,
    }  # fmt: skip

    def written_by_version_7(conn: Connection) -> None:
        conn.executemany(
            "INSERT INTO tasks (task_id, title, status, priority, created_at, updated_at, claimed_by, "
            "lease_expires_at, lease_seconds, claim_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                ("held", "lapsed lease", "in_progress", 0, OLD, OLD, "dora", LAPSED, 60, 1),
                ("kept", "lease holds", "in_progress", 0, OLD, OLD, "dora", LATER, 60, 1),
                ("plain", "imported", "pending", 2, OLD, OLD, None, None, None, 0),
            ],
        )
        conn.execute("INSERT INTO task_notes (task_id, text, at) VALUES ('plain', 'a note', ?)", (OLD,))
        conn.executemany(
            "INSERT INTO task_history (task_id, event, at, details) VALUES (?, ?, ?, ?)",
            [
                ("plain", "imported", OLD, json.dumps({"origin": f"t-9@{OLD}"})),
                ("gone", "deleted", OLD, "{}"),
            ],
        )
        conn.execute(
            "INSERT INTO deleted_tasks (task_id, record, deleted_at) VALUES ('gone', ?, ?)",
            (json.dumps(record), OLD),
        )
        conn.execute("INSERT INTO task_origins (origin, task_id) VALUES (?, 'plain')", (f"t-9@{OLD}",))
        conn.execute(
            "INSERT INTO copied_tasks (local_id, created_at, task_id) VALUES ('t-1', ?, 'kept')", (OLD,)
        )

    old = opened(7)
    try:
        old.write(written_by_version_7)
    finally:
        old.close()

    database = opened(8)
    store = TaskStore(database)
    try:

        def stored(conn: Connection) -> dict[str, Any]:
            def rows(sql: str) -> list[tuple[Any, ...]]:
                return [tuple(row) for row in conn.execute(sql).fetchall()]

            return {
                "tasks": rows(
                    "SELECT task_id, created_at, updated_at, lease_expires_at FROM tasks ORDER BY seq"
                ),
                "notes": rows("SELECT at FROM task_notes"),
                "history": rows("SELECT task_id, at, details FROM task_history ORDER BY seq"),
                "deleted": rows("SELECT deleted_at, record FROM deleted_tasks"),
                "origins": rows("SELECT origin, task_id FROM task_origins"),
                "copied": rows("SELECT local_id, created_at, task_id FROM copied_tasks"),
            }

        after = database.read(stored)
        gone = store.details("gone").task
        offered = store.next_task(claim=True, by="erin").task
        kept = store.get("kept")
        status = database.schema_status()
    finally:
        database.close()
    # Text that holds a time, the same on both databases.
    assert after["origins"] == [(f"t-9@{NEW}", "plain")]
    assert after["copied"] == [("t-1", NEW, "kept")]
    assert [json.loads(details) for _, _, details in after["history"]] == [{"origin": f"t-9@{NEW}"}, {}]
    (deleted_at, stored_record) = after["deleted"][0]
    rewritten = {**record, "notes": [{"text": "n", "at": NEW}], "created_at": NEW, "updated_at": NEW}
    assert json.loads(stored_record) == rewritten
    if engine == "sqlite":  # PostgreSQL keeps these as timestamptz: instants, not text
        assert after["tasks"] == [
            ("held", NEW, NEW, "2026-01-02T04:00:00.000000Z"),
            ("kept", NEW, NEW, "2999-01-01T00:00:00.000000Z"),
            ("plain", NEW, NEW, None),
        ]
        assert after["notes"] == [(NEW,)]
        assert [at for _, at, _ in after["history"]] == [NEW, NEW]
        assert deleted_at == NEW
    assert gone.created_at == datetime.fromisoformat(OLD)
    assert offered is not None
    assert (offered.task_id, offered.claimed_by, offered.expired_claims) == ("held", "erin", 1)
    assert (kept.status, kept.claimed_by, kept.lease_expires_at) == (
        "in_progress",
        "dora",
        datetime.fromisoformat(LATER),
    )
    assert (status.current, status.known) == (8, 8)


def test_update_and_delete_stay_index_seeks_at_10000_tasks(store: SqliteTaskStore) -> None:
    """Editing, appending a note and deleting a task cost the same in a big list as in a small one."""

    def operations(label: str) -> dict[str, Callable[[], Any]]:
        return {
            "create": lambda: store.create(
                title=f"edit {label}", description="", priority="P1", task_id=f"e-{label}", depends_on=[]
            ),
            "edit": lambda: store.update(
                f"e-{label}", TaskEdit(title=f"edited {label}", labels=["x"], depends_on=["bulk-1"])
            ),
            "note": lambda: store.update(f"e-{label}", TaskEdit(append_note="progress")),
            "delete": lambda: store.delete(f"e-{label}", drop_dependencies=False, even_if_in_progress=False),
        }

    fill(store, 100)
    small = {name: steps_of(store, op) for name, op in operations("small").items()}
    fill(store, 9_900)
    large = {name: steps_of(store, op) for name, op in operations("large").items()}
    for name in small:
        assert large[name] <= small[name] * 1.5 + 50, (
            f"{name}: {small[name]} steps at 100, {large[name]} at 10,000"
        )


def test_the_schema_makes_the_same_tables_and_columns_on_sqlite_and_postgresql(
    tmp_path: Path, postgres_url: str
) -> None:
    pytest.importorskip("psycopg")
    from hostd_tasks.store.schema import POSTGRES_ONLY_COLUMNS, SQLITE_ONLY_TABLES
    from hostd_testing import check_schema_parity

    held = check_schema_parity(
        schema("tasks.db"),
        "tasks",
        tmp_path,
        postgres_url,
        sqlite_only_tables=[SQLITE_ONLY_TABLES],
        postgres_only_columns=POSTGRES_ONLY_COLUMNS,
    )
    assert set(held["sqlite"]) - set(held["postgres"]) >= {"task_search"}  # FTS5: SQLite's own
    assert "search" in held["postgres"]["tasks"]
    assert "search" not in held["sqlite"]["tasks"]
