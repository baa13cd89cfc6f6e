"""Where tasks are kept: a busy SQLite file, a failing team database, and ``hostd db copy``."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostd_testing import call, check_team_database, in_memory_client, ok, write_config
from tasks_support import TEAM_DATABASE_ENV, create, refused, walk_to

pytestmark = pytest.mark.anyio

TEAM = {"storage": {"url_env": TEAM_DATABASE_ENV, "connect_timeout_seconds": 2}}


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_busy_sqlite_file_is_file_locked_with_a_hint_and_nothing_written(
    hostd_data_dir: Path, monkeypatch: pytest.MonkeyPatch, language: str
) -> None:
    monkeypatch.setattr("hostd_db.database.SQLITE_BUSY_TIMEOUT_MS", 200)
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config={"language": language}) as client:
        await create(client, "first")
        other = sqlite3.connect(hostd_data_dir / "tasks" / "tasks.db", isolation_level=None)
        try:
            other.execute("BEGIN EXCLUSIVE")
            error = await refused(client, "create_task", "FILE_LOCKED", title="second")
        finally:
            other.close()
        listed = await ok(client, "list_tasks")
    assert [t["title"] for t in listed["tasks"]] == ["first"]
    assert error["hint"]
    assert "200" in error["message"]
    if language == "zh":
        assert "锁定" in error["message"]
        assert "locked" not in error["message"]


# --- the team database failing mid-call --------------------------------------------------------


def _hold_row_lock(url: str, task_id: str, locked: threading.Event, release: threading.Event) -> None:
    """Another client holding a task's row, as a slow agent would."""
    import psycopg

    with psycopg.connect(url, options="-c search_path=tasks") as conn, conn.transaction():
        conn.execute("SELECT 1 FROM tasks WHERE task_id = %s FOR UPDATE", (task_id,))
        locked.set()
        release.wait(30)


async def _with_row_held(url: str, task_id: str, during: Any) -> Any:
    locked, release = threading.Event(), threading.Event()
    holder = threading.Thread(target=_hold_row_lock, args=(url, task_id, locked, release))
    holder.start()
    try:
        assert await anyio.to_thread.run_sync(locked.wait, 30)
        return await during()
    finally:
        release.set()
        await anyio.to_thread.run_sync(holder.join)


async def test_a_statement_past_the_timeout_is_timeout_and_changes_nothing(
    hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    config = {"language": "en", "storage": {**TEAM["storage"], "statement_timeout_ms": 300}}
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=config) as client:
        await create(client, "held", task_id="held")

        async def move() -> dict[str, Any]:
            return await refused(
                client, "update_task_status", "TIMEOUT", task_id="held", new_status="in_progress"
            )

        error = await _with_row_held(postgres_url, "held", move)
        task = (await ok(client, "get_task", task_id="held"))["task"]
    assert "300 ms" in error["message"]
    assert error["hint"]
    assert task["status"] == "pending"


async def test_a_connection_lost_mid_call_is_unavailable_and_changes_nothing(
    hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    psycopg = pytest.importorskip("psycopg")
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    async with in_memory_client(
        ["tasks"], data_dir=hostd_data_dir, config={"language": "en", **TEAM}
    ) as client:
        await create(client, "held", task_id="held")

        async def move_while_cut_off() -> dict[str, Any]:
            async with anyio.create_task_group() as group:
                answers: list[dict[str, Any]] = []

                async def moving() -> None:
                    answers.append(
                        await call(client, "update_task_status", task_id="held", new_status="failed")
                    )

                group.start_soon(moving)
                # Wait (by asking the server, not by sleeping) until the call waits on the row lock,
                # then end its connection the way a database restart or a network cut would.
                with psycopg.connect(postgres_url, autocommit=True) as admin:
                    for _ in range(600):
                        cut = admin.execute(
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                            "WHERE application_name = 'hostd-tasks' AND wait_event_type = 'Lock'"
                        ).fetchall()
                        if cut:
                            break
                        await anyio.sleep(0.01)
            return answers[0]

        envelope = await _with_row_held(postgres_url, "held", move_while_cut_off)
        task = (await ok(client, "get_task", task_id="held"))["task"]
    assert envelope["status"] == "error", envelope
    assert envelope["error"]["code"] == "UNAVAILABLE", envelope
    assert envelope["error"]["hint"]
    assert task["status"] == "pending"


async def test_a_team_database_refusing_the_first_call_is_unavailable_and_the_next_call_works(
    hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A process whose first call finds the database unavailable (a restart, a loaded server)
    answers a retryable UNAVAILABLE, keeps nothing of the failed start (pool, migration), and its
    next call opens, migrates and writes."""
    psycopg = pytest.importorskip("psycopg")
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    name = postgres_url.rsplit("/", 1)[1]
    admin_url = postgres_url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin_url, autocommit=True) as admin:
        admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
        try:
            async with in_memory_client(
                ["tasks"], data_dir=hostd_data_dir, config={"language": "en", **TEAM}
            ) as client:
                envelope = await call(client, "create_task", title="first")
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
                await create(client, "second")
                listed = await ok(client, "list_tasks")
        finally:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
    assert envelope["status"] == "error"
    assert envelope["error"]["code"] == "UNAVAILABLE"
    assert envelope["error"]["hint"]
    assert [t["title"] for t in listed["tasks"]] == ["second"]


# --- storage wins over the database setting ----------------------------------------------------


async def test_with_storage_the_team_database_is_used_not_the_sqlite_file(
    hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    config = {"language": "en", **TEAM, "plugins": {"tasks": {"database": "mine.db"}}}
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=config) as client:
        await create(client, "in the team database", task_id="team-1")
    assert not (hostd_data_dir / "tasks" / "mine.db").exists()
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=config) as client:
        assert (await ok(client, "get_task", task_id="team-1"))["task"]["title"] == "in the team database"


# --- hostd db copy -----------------------------------------------------------------------------


def _db_copy(config: Path, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hostd", "db", "copy", "--config", str(config)],
        env={**os.environ, TEAM_DATABASE_ENV: url, "HOSTD_CACHE_DIR": "off"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


async def _fill_local_list(client: Any, act_as: Any) -> None:
    """A list using every feature: labels, notes, dependencies, subtasks, links, statuses, a deletion,
    written by two members (``act_as(name)`` switches the local login name the host records)."""
    act_as("alice")
    await create(client, "design", task_id="design", labels=["Arch"], acceptance="reviewed")
    await create(client, "build 数据库", depends_on=["design"], priority="P0", description="nul\x00inside")
    await ok(client, "split_task", task_id="design", subtasks=[{"title": "draft"}, {"title": "review"}])
    act_as("bob")
    await ok(client, "update_task", task_id="design", append_note="first note")
    await ok(client, "link_task_session", task_id="design", session_id="plan-1")
    await walk_to(client, "t-2", "completed")
    await walk_to(client, "t-3", "in_progress")
    await create(client, "scrap", task_id="scrap")
    await create(client, "needs scrap", task_id="needs-scrap", depends_on=["scrap"])
    await ok(client, "delete_task", task_id="scrap", drop_dependencies=True)


async def _everything(client: Any, ids: list[str]) -> dict[str, Any]:
    """What a client can see of the list: every task in full, the list, search and stats."""

    def strip(envelope: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in envelope.items() if k != "metadata"}

    seen = {task_id: strip(await ok(client, "get_task", task_id=task_id)) for task_id in ids}
    seen["list"] = strip(await ok(client, "list_tasks"))
    seen["search"] = strip(await ok(client, "list_tasks", query="数据"))
    stats = strip(await ok(client, "get_task_stats"))
    stats.pop("oldest_pending_age_seconds", None)
    seen["stats"] = stats
    return seen


async def test_db_copy_copies_every_task_field_by_field_then_changes_nothing_and_reports_conflicts(
    tmp_path: Path, hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("psycopg")
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    local = {"language": "en"}
    team = {"language": "en", **TEAM}
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=local) as client:
        await _fill_local_list(client, lambda member: monkeypatch.setenv("LOGNAME", member))
        ids = [t["task_id"] for t in (await ok(client, "list_tasks"))["tasks"]] + ["scrap"]
        before = await _everything(client, ids)
    # The members are part of what must arrive: who created, who claimed, who did each change.
    assert (before["t-2"]["task"]["created_by"], before["t-2"]["task"]["claimed_by"]) == ("alice", "bob")
    assert (before["t-3"]["task"]["created_by"], before["t-3"]["task"]["claimed_by"]) == ("alice", "bob")
    assert [entry["by"] for entry in before["design"]["history"]] == ["alice", "alice", "bob", "bob"]
    assert before["scrap"]["task"]["created_by"] == "bob"
    config = write_config(tmp_path, ["tasks"], config={**team, "data_dir": str(hostd_data_dir)})

    first = _db_copy(config, postgres_url)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "tasks: deleted tasks: 1 copied, 0 unchanged, tasks: 5 copied, 0 unchanged" in first.stdout
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=team) as client:
        assert await _everything(client, ids) == before

    second = _db_copy(config, postgres_url)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "tasks: deleted tasks: 0 copied, 1 unchanged, tasks: 0 copied, 5 unchanged" in second.stdout

    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=local) as client:
        await ok(client, "update_task", task_id="design", title="design, changed locally")
        await create(client, "new work", task_id="later")
    third = _db_copy(config, postgres_url)
    assert third.returncode == 1
    assert "tasks: CONFLICT task design differs in the team database" in third.stdout
    assert "tasks: 1 copied, 4 unchanged" in third.stdout
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=team) as client:
        assert (await ok(client, "get_task", task_id="design"))["task"]["title"] == "design"
        assert (await ok(client, "get_task", task_id="later"))["task"]["title"] == "new work"
        # Ids copied explicitly are never handed out again by the team database.
        fresh = await create(client, "made in the team")
    assert fresh["task_id"] not in ids


async def test_db_copy_keeps_where_imported_tasks_came_from(
    tmp_path: Path, hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document imported into the local file, then copied to the team database, is recognised there:
    importing it into the team database afterwards changes nothing."""
    pytest.importorskip("psycopg")
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    stamp = "2026-01-01T00:00:00.000000+00:00"
    document = {
        "format": "hostd-tasks-export",
        "version": 1,
        "tasks": [
            {"task_id": "far-1", "origin": "far-1@elsewhere", "title": "from elsewhere", "created_at": stamp},
            {"task_id": "far-2", "title": "also", "created_at": stamp, "depends_on": ["far-1"]},
        ],
    }
    team = {"language": "en", **TEAM}
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config={"language": "en"}) as client:
        assert (await ok(client, "import_tasks", data=document))["created"] == 2
    config = write_config(tmp_path, ["tasks"], config={**team, "data_dir": str(hostd_data_dir)})
    copied = _db_copy(config, postgres_url)
    assert copied.returncode == 0, copied.stdout + copied.stderr
    assert "tasks: 2 copied, 0 unchanged" in copied.stdout
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config=team) as client:
        again = await ok(client, "import_tasks", data=document)
    assert (again["created"], again["already_present"]) == (0, 2)
    assert _db_copy(config, postgres_url).returncode == 0  # and a second copy still finds them equal


async def test_db_copy_reports_a_hand_edited_task_as_a_conflict_and_copies_the_rest(
    tmp_path: Path, hostd_data_dir: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task whose history was edited by hand into a list cannot be read: it is reported as damaged
    (not a traceback that stops the copy), the task waiting on it is held back, the rest copied."""
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    async with in_memory_client(["tasks"], data_dir=hostd_data_dir, config={"language": "en"}) as client:
        await create(client, "design", task_id="design")
        await create(client, "build", task_id="build", depends_on=["design"])
        await create(client, "docs", task_id="docs")
    with sqlite3.connect(hostd_data_dir / "tasks" / "tasks.db") as file:
        file.execute("UPDATE task_history SET details = '[1]' WHERE task_id = 'design'")
    config = write_config(
        tmp_path, ["tasks"], config={"language": "en", **TEAM, "data_dir": str(hostd_data_dir)}
    )
    copied = _db_copy(config, postgres_url)
    assert copied.returncode == 1, copied.stdout + copied.stderr
    assert [line for line in copied.stdout.splitlines() if "CONFLICT" in line] == [
        "tasks: CONFLICT task design is damaged locally and was not copied "
        "(details: Input should be a valid dictionary)",
        "tasks: CONFLICT task build not copied: it waits on task design, which is in conflict",
    ], copied.stdout
    assert "tasks: 1 copied, 0 unchanged" in copied.stdout, copied.stdout
    async with in_memory_client(
        ["tasks"], data_dir=hostd_data_dir, config={"language": "en", **TEAM}
    ) as client:
        assert [task["task_id"] for task in (await ok(client, "list_tasks"))["tasks"]] == ["docs"]


async def test_db_copy_renumbers_a_second_members_tasks_whose_ids_the_team_holds(
    tmp_path: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every list numbers its own tasks from t-1. Alice's list is copied first; Bob's t-1.. are
    other tasks under the same ids: they get new ids, with every id their data names translated
    (dependencies, parent, subtasks, the ids in their history, a deleted task's record), the
    mapping printed, the linked session kept. A second copy of either list changes nothing."""
    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    monkeypatch.setenv("LOGNAME", "alice")
    local = {"language": "en"}
    team = {"language": "en", **TEAM}
    alice_data, bob_data = tmp_path / "alice-data", tmp_path / "bob-data"
    async with in_memory_client(["tasks"], data_dir=alice_data, config=local) as client:
        await create(client, "alice: first")  # t-1
        await create(client, "alice: second", depends_on=["t-1"])  # t-2
    monkeypatch.setenv("LOGNAME", "bob")
    async with in_memory_client(["tasks"], data_dir=bob_data, config=local) as client:
        await create(client, "bob: design")  # t-1
        await ok(
            client, "split_task", task_id="t-1", subtasks=[{"title": "bob: draft"}, {"title": "bob: review"}]
        )
        await create(client, "bob: build", depends_on=["t-2"])  # t-4
        await ok(client, "link_task_session", task_id="t-1", session_id="plan-1")
        await create(client, "bob: scrap")  # t-5
        await create(client, "bob: needs scrap", depends_on=["t-5"])  # t-6
        await ok(client, "delete_task", task_id="t-5", drop_dependencies=True)
        await ok(client, "update_task", task_id="t-4", depends_on=["t-3"])
        bob_ids = ["t-1", "t-2", "t-3", "t-4", "t-6", "t-5"]
        bob_before = {task_id: await ok(client, "get_task", task_id=task_id) for task_id in bob_ids}
    for name in ("alice", "bob"):
        (tmp_path / name).mkdir()
    configs = {
        name: write_config(tmp_path / name, ["tasks"], config={**team, "data_dir": str(folder)})
        for name, folder in (("alice", alice_data), ("bob", bob_data))
    }

    alice = _db_copy(configs["alice"], postgres_url)
    assert alice.returncode == 0, alice.stdout + alice.stderr
    assert "RENUMBERED" not in alice.stdout
    bob = _db_copy(configs["bob"], postgres_url)
    assert bob.returncode == 0, bob.stdout + bob.stderr
    # Bob's t-1 and t-2 are Alice's ids in the team: they get ids past every id of Bob's list
    # (so Bob's own free ids, t-3 to t-6, stay as they are).
    renumbered = [line for line in bob.stdout.splitlines() if "RENUMBERED" in line]
    assert renumbered == [
        "tasks: RENUMBERED task t-1 is task t-7 in the team database (its id was taken there)",
        "tasks: RENUMBERED task t-2 is task t-8 in the team database (its id was taken there)",
    ], bob.stdout
    assert "tasks: deleted tasks: 1 copied, 0 unchanged, tasks: 5 copied, 0 unchanged" in bob.stdout
    assert "CONFLICT" not in bob.stdout
    names = {"t-1": "t-7", "t-2": "t-8"}

    def translated(value: Any) -> Any:
        if isinstance(value, str):
            return names.get(value, value)
        if isinstance(value, list):
            return [translated(item) for item in value]
        if isinstance(value, dict):
            return {key: translated(item) for key, item in value.items()}
        return value

    def strip(envelope: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in envelope.items() if k not in ("metadata", "message")}

    async with in_memory_client(["tasks"], data_dir=tmp_path / "team-data", config=team) as client:
        for task_id, before in bob_before.items():
            after = await ok(client, "get_task", task_id=names.get(task_id, task_id))
            # Everything as Bob had it, with every task id translated (titles name no ids).
            assert strip(after) == translated(strip(before)), task_id
        design = await ok(client, "get_task", task_id="t-7")
        assert design["task"]["linked_session_id"] == "plan-1"
        assert [sub["task_id"] for sub in design["subtasks"]] == ["t-8", "t-3"]
        assert (await ok(client, "get_task", task_id="t-1"))["task"]["title"] == "alice: first"
        assert (await ok(client, "get_task", task_id="t-2"))["task"]["depends_on"] == ["t-1"]
        listed = [(t["task_id"], t["title"]) for t in (await ok(client, "list_tasks", limit=100))["tasks"]]
    assert len(listed) == 7
    assert ("t-2", "alice: second") in listed
    assert ("t-8", "bob: draft") in listed

    for name in ("bob", "alice", "bob"):
        again = _db_copy(configs[name], postgres_url)
        assert again.returncode == 0, again.stdout + again.stderr
        assert "RENUMBERED" not in again.stdout, again.stdout
        assert "CONFLICT" not in again.stdout, again.stdout
        assert " 0 copied" in again.stdout, again.stdout
        assert "1 copied" not in again.stdout, again.stdout
    async with in_memory_client(["tasks"], data_dir=tmp_path / "team-data", config=team) as client:
        assert (await ok(client, "get_task_stats"))["total"] == 7


def test_hostd_db_migrate_creates_the_tasks_schema_once(tmp_path: Path, postgres_url: str) -> None:
    """hostd-testing's team-database checks: ``hostd db migrate`` (pending, applied, then
    current) and a database that is down at start-up (exit 2, named without its password)."""
    pytest.importorskip("psycopg")
    check_team_database(tmp_path, "tasks", postgres_url=postgres_url, version=8)


def test_a_version_1_team_database_upgrades_with_its_members_unknown(postgres_url: str) -> None:
    """Tasks and history written before members were recorded read as null (unknown)."""
    pytest.importorskip("psycopg")
    from hostd_db import PostgresDatabase, TeamDatabaseSettings, open_database
    from hostd_tasks.store import TaskStore
    from hostd_tasks.store.schema import schema
    from tasks_released_schema import PG_MIGRATIONS

    old = PostgresDatabase(postgres_url, "tasks", PG_MIGRATIONS[:1])
    try:
        with old.write() as conn:
            conn.execute(
                "INSERT INTO tasks (task_id, title, status, priority, created_at, updated_at) "
                "VALUES ('old', 'from before members', 'pending', 0, now(), now())"
            )
            conn.execute("INSERT INTO task_history (task_id, event, at) VALUES ('old', 'created', now())")
    finally:
        old.close()
    team = TeamDatabaseSettings(postgres_url)
    database = open_database(schema("tasks.db"), "tasks", data_dir=Path("."), team=team)
    store = TaskStore(database)
    try:
        before = store.get("old")
        history = store.details("old").history
        claimed = store.next_task(claim=True, by="erin").task
        mine = store.list_page(status=None, priority=None, limit=10, after=None, claimed_by="erin")
        status = database.schema_status()
    finally:
        database.close()
    assert (before.created_by, before.claimed_by) == (None, None)
    assert [(h.event, h.by) for h in history] == [("created", None)]
    assert claimed is not None
    assert (claimed.created_by, claimed.claimed_by) == (None, "erin")
    assert [t.task_id for t in mine.tasks] == ["old"]
    # The release's version 1 stands for version 2 of the shared schema; version 3 added the members,
    # version 4 the leases, version 5 the task id in the status index, version 6 the ids copies gave,
    # version 7 the origins of imported tasks, version 8 one spelling of times.
    assert (status.current, status.known) == (8, 8)


def test_postgres_hot_statements_are_index_walks_at_10000_tasks(postgres_url: str) -> None:
    """The claim, a lookup by id and the first page never scan the whole table (as on SQLite)."""
    pytest.importorskip("psycopg")
    from hostd_db import Connection, TeamDatabaseSettings, open_database
    from hostd_tasks.store import TaskStore
    from hostd_tasks.store.base import _LAPSED
    from hostd_tasks.store.queries import NEXT_READY
    from hostd_tasks.store.schema import schema

    team = TeamDatabaseSettings(postgres_url)
    database = open_database(schema("tasks.db"), "tasks", data_dir=Path("."), team=team)
    store = TaskStore(database)

    def bulk(conn: Connection) -> None:
        conn.execute(
            "INSERT INTO tasks (task_id, title, status, priority, created_at, updated_at) "
            "SELECT 'b-' || n, 'bulk ' || n, (ARRAY['completed', 'in_progress', 'blocked', 'pending'])"
            "[1 + n % 4], n % 3, now(), now() FROM generate_series(1, 10000) AS n"
        )
        conn.execute("ANALYZE")

    try:
        database.migrate()
        database.write(bulk)
        statements = {
            "claim": (NEXT_READY + store.claim_lock, ()),
            "lapsed leases": (_LAPSED + " LIMIT 1", ("2026-01-01T00:00:00.000000Z",)),
            "by id": (f"SELECT {store.record_columns} FROM tasks AS t WHERE t.task_id = ?", ("b-5000",)),
            "first page": (
                f"SELECT {store.record_columns} FROM tasks AS t ORDER BY t.priority, t.seq LIMIT 100",
                (),
            ),
        }
        plans = database.write(
            lambda qmark: {
                name: "\n".join(row[0] for row in qmark.execute("EXPLAIN " + sql, parameters))
                for name, (sql, parameters) in statements.items()
            }
        )
        assert store.get("b-5000").title == "bulk 5000"
    finally:
        database.close()
    for name, plan in plans.items():
        assert "Seq Scan on tasks" not in plan, f"{name}:\n{plan}"
