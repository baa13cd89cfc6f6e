"""SqliteDatabase: migrations once across processes, nothing lost between writers, a connection per thread."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hostd_db.sqlite import SqliteDatabase
from hostd_testing.processes import assert_overlapped, run_processes_on_barrier
from sqlite_workers import MIGRATIONS, increment_counter, open_and_insert


@pytest.fixture
def database(tmp_path: Path) -> Iterator[SqliteDatabase]:
    opened = SqliteDatabase(tmp_path / "store" / "data.db", MIGRATIONS)
    yield opened
    opened.close()


def test_the_folder_is_created_and_the_connection_is_set_up(database: SqliteDatabase) -> None:
    connection = database.connection()
    assert database.path.exists()
    pragmas = {
        name: connection.execute(f"PRAGMA {name}").fetchone()[0]
        for name in ("journal_mode", "foreign_keys", "synchronous", "busy_timeout", "user_version")
    }
    assert pragmas == {
        "journal_mode": "wal",
        "foreign_keys": 1,
        "synchronous": 1,
        "busy_timeout": 10_000,
        "user_version": 2,
    }
    row = connection.execute("SELECT value FROM counter").fetchone()
    assert isinstance(row, sqlite3.Row)
    assert row["value"] == 0


def test_migrations_apply_once_when_four_processes_open_at_once(tmp_path: Path) -> None:
    db_path = tmp_path / "data.db"
    run_processes_on_barrier(open_and_insert, [(db_path, f"w{n}", 0) for n in range(4)])
    with SqliteDatabase(db_path, MIGRATIONS) as database:
        connection = database.connection()
        assert connection.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)
        assert [row[0] for row in connection.execute("SELECT n FROM applied ORDER BY n")] == [1, 2]


def test_inserts_from_four_processes_are_all_kept(tmp_path: Path) -> None:
    db_path = tmp_path / "data.db"
    intervals = run_processes_on_barrier(open_and_insert, [(db_path, f"w{n}", 250) for n in range(4)])
    assert_overlapped(intervals)
    with SqliteDatabase(db_path, MIGRATIONS) as database:
        counts = dict(
            database.connection().execute("SELECT writer, COUNT(DISTINCT n) FROM items GROUP BY writer")
        )
    assert counts == {f"w{n}": 250 for n in range(4)}


def test_read_modify_write_in_two_processes_loses_no_increment(tmp_path: Path) -> None:
    db_path = tmp_path / "data.db"
    with SqliteDatabase(db_path, MIGRATIONS) as database:
        database.connection()
    intervals = run_processes_on_barrier(increment_counter, [(db_path, 100), (db_path, 100)])
    assert_overlapped(intervals)
    with SqliteDatabase(db_path, MIGRATIONS) as database:
        assert database.connection().execute("SELECT value FROM counter").fetchone()[0] == 200


def test_each_thread_gets_its_own_connection_and_all_writes_land(database: SqliteDatabase) -> None:
    barrier = threading.Barrier(8)
    connections: dict[int, sqlite3.Connection] = {}

    def writer(number: int) -> None:
        barrier.wait()
        connections[number] = database.connection()
        for n in range(100):
            with database.write() as connection:
                connection.execute("INSERT INTO items (writer, n) VALUES (?, ?)", (f"t{number}", n))

    threads = [threading.Thread(target=writer, args=(number,)) for number in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(connection) for connection in connections.values()}) == 8
    assert database.connection() not in connections.values()
    assert database.connection().execute("SELECT COUNT(*) FROM items").fetchone()[0] == 800


def test_close_closes_every_threads_connection_and_a_later_use_reopens(database: SqliteDatabase) -> None:
    opened: list[sqlite3.Connection] = [database.connection()]
    thread = threading.Thread(target=lambda: opened.append(database.connection()))
    thread.start()
    thread.join()
    database.close()
    for connection in opened:
        with pytest.raises(sqlite3.ProgrammingError):
            connection.execute("SELECT 1")
    fresh = database.connection()
    assert fresh not in opened
    assert fresh.execute("SELECT COUNT(*) FROM applied").fetchone()[0] == 2


def test_a_failing_write_is_rolled_back(database: SqliteDatabase) -> None:
    with pytest.raises(ZeroDivisionError), database.write() as connection:
        connection.execute("INSERT INTO items (writer, n) VALUES ('x', 1)")
        _ = 1 / 0
    assert not database.connection().in_transaction
    assert database.connection().execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0


def test_a_constraint_from_a_migrated_trigger_aborts_the_write(database: SqliteDatabase) -> None:
    with pytest.raises(sqlite3.IntegrityError, match="negative"), database.write() as connection:
        connection.execute("INSERT INTO items (writer, n) VALUES ('x', 1)")
        connection.execute("INSERT INTO items (writer, n) VALUES ('x', -1)")
    assert database.connection().execute("SELECT COUNT(*) FROM items").fetchone()[0] == 0


def test_a_read_sees_one_snapshot_while_another_thread_commits(database: SqliteDatabase) -> None:
    with database.read() as connection:
        before = connection.execute("SELECT COUNT(*) FROM items").fetchone()[0]

        def insert() -> None:
            with database.write() as other:
                other.execute("INSERT INTO items (writer, n) VALUES ('other', 1)")

        thread = threading.Thread(target=insert)
        thread.start()
        thread.join()
        assert connection.execute("SELECT COUNT(*) FROM items").fetchone()[0] == before
    assert database.connection().execute("SELECT COUNT(*) FROM items").fetchone()[0] == before + 1


def test_transactions_do_not_nest(database: SqliteDatabase) -> None:
    with database.write(), pytest.raises(RuntimeError, match="nest"), database.read():
        pass


def test_new_migrations_apply_on_top_of_old_ones_and_may_be_callables(tmp_path: Path) -> None:
    db_path = tmp_path / "data.db"
    with SqliteDatabase(db_path, MIGRATIONS) as database:
        database.connection()

    def add_column(connection: sqlite3.Connection) -> None:
        connection.execute("ALTER TABLE items ADD COLUMN note TEXT")
        connection.execute("INSERT INTO applied VALUES (3)")

    with SqliteDatabase(db_path, [*MIGRATIONS, add_column]) as database:
        connection = database.connection()
        assert [row[0] for row in connection.execute("SELECT n FROM applied ORDER BY n")] == [1, 2, 3]
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 3
        assert "note" in [row["name"] for row in connection.execute("PRAGMA table_info(items)")]


def test_a_failing_migration_leaves_the_schema_as_it_was(tmp_path: Path) -> None:
    db_path = tmp_path / "data.db"
    broken = [*MIGRATIONS, "CREATE TABLE extra (x); INSERT INTO no_such_table VALUES (1);"]
    with (
        SqliteDatabase(db_path, broken) as database,
        pytest.raises(sqlite3.OperationalError, match="no_such_table"),
    ):
        database.connection()
    with SqliteDatabase(db_path, []) as database:
        connection = database.connection()
        assert connection.execute("PRAGMA user_version").fetchone()[0] == 0
        assert connection.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0
