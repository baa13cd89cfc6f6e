"""PostgresDatabase against a real PostgreSQL server: schemas, migrations, retries, failures."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hostd_db import DatabaseError, PostgresDatabase, describe_url
from hostd_testing.postgres import PostgresServer

NOTES_MIGRATIONS = [
    "CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL)",
    "CREATE TABLE counters (name text PRIMARY KEY, value bigint NOT NULL);"
    " INSERT INTO counters VALUES ('hits', 0)",
]


@pytest.fixture
def notes(postgres_url: str) -> Iterator[PostgresDatabase]:
    database = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS)
    yield database
    database.close()


def test_tables_live_in_the_component_schema(notes: PostgresDatabase, postgres_url: str) -> None:
    with notes.write() as connection:
        connection.execute("INSERT INTO notes (body) VALUES (%s)", ("思考",))
    with notes.read() as connection:
        row = connection.execute("SELECT body, current_schema() AS schema FROM notes").fetchone()
    assert row == {"body": "思考", "schema": "notes"}
    other = PostgresDatabase(postgres_url, "deep-thinking", ["CREATE TABLE notes (other int)"])
    try:
        with other.read() as connection:
            columns = connection.execute(
                "SELECT column_name FROM information_schema.columns WHERE table_schema = current_schema()"
            ).fetchall()
        assert [c["column_name"] for c in columns] == ["other"]
        assert other.schema == "deep_thinking"
    finally:
        other.close()


def test_pool_stats_count_lends_and_never_open_the_pool(postgres_url: str) -> None:
    database = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS)
    try:
        assert database.pool_stats() is None  # reading the counters opened nothing
        with database.write() as connection:  # opens the pool (and migrates: that borrows too)
            connection.execute("INSERT INTO notes (body) VALUES ('one')")
        stats = database.pool_stats()
        assert stats is not None
        before = stats["requests_num"]
        for _ in range(3):
            with database.read() as connection:
                connection.execute("SELECT count(*) FROM notes")
        with database.autocommit() as connection:
            connection.execute("SELECT 1")
        stats = database.pool_stats()
        assert stats is not None
        assert stats["requests_num"] - before == 4
    finally:
        database.close()
    assert database.pool_stats() is None


def test_a_failed_write_leaves_nothing(notes: PostgresDatabase) -> None:
    with pytest.raises(RuntimeError), notes.write() as connection:
        connection.execute("INSERT INTO notes (body) VALUES ('half')")
        raise RuntimeError("the tool failed after its first statement")
    with notes.read() as connection:
        assert connection.execute("SELECT count(*) AS n FROM notes").fetchone() == {"n": 0}


def test_read_transactions_refuse_writes(notes: PostgresDatabase) -> None:
    import psycopg

    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction), notes.read() as connection:
        connection.execute("INSERT INTO notes (body) VALUES ('no')")


def test_a_read_begins_read_only_and_repeatable_in_one_statement_and_leaves_the_connection_plain(
    postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A read's options are its BEGIN's (no ``SET TRANSACTION`` round trips), and the one pooled
    connection a write borrows next begins read-write at the default isolation again."""
    import psycopg

    statements: list[str] = []
    real_execute = psycopg.Cursor.execute

    def counted(cursor: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        statements.append(str(query))
        return real_execute(cursor, query, *args, **kwargs)

    monkeypatch.setattr(psycopg.Cursor, "execute", counted)
    database = PostgresDatabase(postgres_url, "plain", NOTES_MIGRATIONS, max_connections=1)
    show = (
        "SELECT current_setting('transaction_isolation') AS isolation,"
        " current_setting('transaction_read_only') AS ro"
    )
    try:
        database.pool()
        statements.clear()
        read = database.run(lambda c: c.execute(show).fetchone(), write=False, repeatable=True)
        assert statements == [show]  # the options travelled in the BEGIN
        written = database.run(lambda c: c.execute(show).fetchone(), write=True)
        plain_read = database.run(lambda c: c.execute(show).fetchone(), write=False)
    finally:
        database.close()
    assert read == {"isolation": "repeatable read", "ro": "on"}
    assert written == {"isolation": "read committed", "ro": "off"}
    assert plain_read == {"isolation": "read committed", "ro": "on"}


def test_schema_status_and_refusing_a_newer_schema(notes: PostgresDatabase, postgres_url: str) -> None:
    assert notes.migrate().pending == 0
    older_code = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS[:1])
    try:
        status = older_code.schema_status()
        assert (status.current, status.known, status.too_new) == (2, 1, True)
        with pytest.raises(DatabaseError) as refused:
            older_code.read().__enter__()
        assert refused.value.code == "SCHEMA_TOO_NEW"
        assert "version 2" in refused.value.message.en
        assert "up to 1" in refused.value.message.en
        assert refused.value.hint is not None
        assert "升级" in refused.value.hint.zh
    finally:
        older_code.close()


def test_without_auto_migrate_an_outdated_schema_says_what_to_run(postgres_url: str) -> None:
    database = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS, auto_migrate=False)
    try:
        assert database.schema_status().pending == 2
        with pytest.raises(DatabaseError) as outdated:
            database.write().__enter__()
        assert outdated.value.code == "SCHEMA_OUTDATED"
        assert outdated.value.hint is not None
        assert "hostd db migrate" in outdated.value.hint.en
        database.migrate()
        with database.write() as connection:
            connection.execute("INSERT INTO notes (body) VALUES ('after migrate')")
    finally:
        database.close()


def _migrate_on_barrier(url: str, barrier: Any, results: Any) -> None:
    log_migrations = [
        "CREATE TABLE applied (step int)",
        "INSERT INTO applied VALUES (2); SELECT pg_sleep(0.2)",
        "INSERT INTO applied VALUES (3)",
    ]
    database = PostgresDatabase(url, "race", log_migrations)
    barrier.wait()
    started = time.monotonic()
    database.migrate()
    results.put((started, time.monotonic()))
    database.close()


def test_processes_starting_together_apply_each_migration_once(postgres_url: str) -> None:
    spawn = multiprocessing.get_context("spawn")
    barrier = spawn.Barrier(3)
    results = spawn.Queue()
    workers = [
        spawn.Process(target=_migrate_on_barrier, args=(postgres_url, barrier, results)) for _ in range(3)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
        assert worker.exitcode == 0
    spans = [results.get(timeout=5) for _ in workers]
    # They really overlapped: each started before any had finished.
    assert max(start for start, _ in spans) < min(end for _, end in spans)
    check = PostgresDatabase(
        postgres_url, "race", ["CREATE TABLE applied (step int)", "", ""], auto_migrate=False
    )
    try:
        with check.read() as connection:
            steps = [r["step"] for r in connection.execute("SELECT step FROM applied ORDER BY step")]
        assert steps == [2, 3]
        assert check.schema_status().current == 3
    finally:
        check.close()


def test_serialization_failures_are_retried_until_every_increment_lands(notes: PostgresDatabase) -> None:
    def increment(connection: Any) -> None:
        connection.execute("SET TRANSACTION ISOLATION LEVEL SERIALIZABLE")
        value = connection.execute("SELECT value FROM counters WHERE name = 'hits'").fetchone()["value"]
        time.sleep(0.001)  # widen the read-modify-write window so the two threads collide
        connection.execute("UPDATE counters SET value = %s WHERE name = 'hits'", (value + 1,))

    retried = PostgresDatabase(notes.url, "notes", NOTES_MIGRATIONS, attempts=50)
    failures: list[BaseException] = []

    def worker() -> None:
        try:
            for _ in range(40):
                retried.run(increment)
        except BaseException as exc:  # pragma: no cover - reported below
            failures.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    retried.close()
    assert failures == []
    with notes.read() as connection:
        assert connection.execute("SELECT value FROM counters").fetchone() == {"value": 80}


def test_contention_beyond_the_attempts_is_conflict(notes: PostgresDatabase) -> None:
    import psycopg

    calls = 0

    def always_serialization_failure(connection: Any) -> None:
        nonlocal calls
        calls += 1
        raise psycopg.errors.SerializationFailure("forced")

    limited = PostgresDatabase(notes.url, "notes", NOTES_MIGRATIONS, attempts=3)
    try:
        with pytest.raises(DatabaseError) as gave_up:
            limited.run(always_serialization_failure)
    finally:
        limited.close()
    assert (gave_up.value.code, calls) == ("CONFLICT", 3)


def test_an_unreachable_server_names_the_host_and_never_the_password(postgres_server: PostgresServer) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    url = f"postgresql://team:s3cret-password@127.0.0.1:{closed_port}/hostd"
    database = PostgresDatabase(url, "notes", NOTES_MIGRATIONS, connect_timeout_s=1)
    with pytest.raises(DatabaseError) as unreachable:
        database.read().__enter__()
    error = unreachable.value
    assert error.code == "UNAVAILABLE"
    assert error.hint is not None
    text = error.message.en + error.hint.en + error.message.zh + str(error.details)
    assert f"127.0.0.1:{closed_port}/hostd" in text
    assert "s3cret" not in text
    assert "team" not in text


def test_a_slow_statement_is_timeout(postgres_url: str) -> None:
    database = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS, statement_timeout_ms=100)
    try:
        with pytest.raises(DatabaseError) as slow, database.read() as connection:
            connection.execute("SELECT pg_sleep(2)")
        assert slow.value.code == "TIMEOUT"
        assert "100 ms" in slow.value.message.en
    finally:
        database.close()


def test_a_connection_lost_mid_call_is_unavailable_and_the_next_call_reconnects(
    notes: PostgresDatabase, postgres_server: PostgresServer
) -> None:
    with notes.read() as connection:
        row = connection.execute("SELECT pg_backend_pid() AS pid").fetchone()
        assert row is not None
        pid = row["pid"]

    def kill_backend_soon() -> None:
        time.sleep(0.3)
        postgres_server.psql(f"SELECT pg_terminate_backend({pid})")

    killer = threading.Thread(target=kill_backend_soon)
    killer.start()
    with pytest.raises(DatabaseError) as lost, notes.write() as connection:
        assert connection.execute("SELECT pg_backend_pid() AS pid").fetchone() == {"pid": pid}
        connection.execute("INSERT INTO notes (body) VALUES ('never acknowledged')")
        connection.execute("SELECT pg_sleep(3)")
    killer.join()
    assert lost.value.code == "UNAVAILABLE"
    assert lost.value.reason == "connection_lost"
    with notes.read() as connection:
        assert connection.execute("SELECT count(*) AS n FROM notes").fetchone() == {"n": 0}


def _terminate_backends_of(postgres_server: PostgresServer, component: str) -> int:
    """End every server session of the component's pool, as a restart or an idle cut would."""
    ended = postgres_server.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE application_name = 'hostd-{component}'"
    )
    return int(ended.strip().splitlines()[-1].strip())


def test_a_call_costs_no_connection_check(notes: PostgresDatabase, monkeypatch: pytest.MonkeyPatch) -> None:
    """Checking a connection before lending it is one more round trip per call: the pool does not."""
    from psycopg_pool import ConnectionPool

    checks: list[object] = []
    real_check = ConnectionPool.check_connection

    def counted(connection: Any) -> None:
        checks.append(connection)
        real_check(connection)

    monkeypatch.setattr(ConnectionPool, "check_connection", staticmethod(counted))
    notes.close()  # a new pool, built under the counter
    for _ in range(10):
        notes.run(lambda c: c.execute("SELECT 1").fetchone(), write=False)
    assert checks == []


def test_pooled_connections_the_server_dropped_are_replaced_at_the_next_call(
    postgres_url: str, postgres_server: PostgresServer
) -> None:
    """The pool lends connections unchecked (no extra round trip per call); one found dead at BEGIN
    is replaced and the call goes through, for a transaction, a read on its own and a Database."""
    from hostd_db import Column, ColumnType, Schema, Table, TeamDatabaseSettings
    from hostd_db.database import PostgresBackend

    schema = Schema([[Table("notes", (Column("id", ColumnType.SERIAL), Column("body", ColumnType.TEXT)))]])
    backend = PostgresBackend(TeamDatabaseSettings(postgres_url, pool_size=3), "dropped", schema)
    try:
        backend.write(lambda c: c.execute("INSERT INTO notes (body) VALUES (?)", ("before",)))
        for call in (
            lambda: backend.write(lambda c: c.execute("INSERT INTO notes (body) VALUES (?)", ("after",))),
            lambda: backend.read(lambda c: c.execute("SELECT count(*) FROM notes").fetchone()),
            lambda: backend.read(
                lambda c: c.execute("SELECT count(*) FROM notes").fetchone(), snapshot=False
            ),
            lambda: backend.database.run(lambda c: c.execute("SELECT 1").fetchone(), write=False),
        ):
            assert _terminate_backends_of(postgres_server, "dropped") >= 1
            call()
        bodies = backend.read(lambda c: [r[0] for r in c.execute("SELECT body FROM notes ORDER BY id")])
    finally:
        backend.close()
    assert bodies == ["before", "after"]  # the write after the cut landed once


@pytest.mark.parametrize(
    ("url", "described"),
    [
        ("postgresql://u:pw@db.internal:6543/team", "db.internal:6543/team"),
        ("postgres://u@[::1]/hostd", "[::1]:5432/hostd"),
        ("postgresql:///hostd", "localhost:5432/hostd"),
        ("postgresql://u:pw@host:notaport/x", "(an unreadable database URL)"),
        # libpq's query parameters win: a Unix socket folder and its port, a host, a database.
        ("postgresql://u@/hostd?host=/run/pg&port=5433", "/run/pg:5433/hostd"),
        ("postgresql://u:pw@ignored:1/x?host=db.internal&port=6000&dbname=team", "db.internal:6000/team"),
        ("postgresql:///hostd?host=%2Fvar%2Frun%2Fpostgresql", "/var/run/postgresql:5432/hostd"),
        ("postgresql:///hostd?port=seven", "(an unreadable database URL)"),
    ],
)
def test_describe_url_keeps_host_port_and_database_only(url: str, described: str) -> None:
    assert describe_url(url) == described


def test_a_statement_the_server_refuses_is_not_reported_as_a_lost_connection(notes: PostgresDatabase) -> None:
    import psycopg

    # A tsvector word over 2,046 bytes is refused (program_limit_exceeded, an OperationalError):
    # the request's fault, not the connection's.
    with pytest.raises(psycopg.errors.ProgramLimitExceeded), notes.read() as connection:
        connection.execute("SELECT %s::tsvector", ("x" * 5000,))
    with notes.read() as connection:
        assert connection.execute("SELECT 1 AS one").fetchone() == {"one": 1}


def test_autocommit_runs_each_statement_on_its_own_in_the_schema_and_translates_failures(
    postgres_url: str,
) -> None:
    database = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS, statement_timeout_ms=100)
    try:
        with database.autocommit() as connection:
            connection.execute("INSERT INTO notes (body) VALUES ('kept')")
            row = connection.execute(
                "SELECT count(*) AS n, current_schema() AS schema, now() = statement_timestamp() AS alone "
                "FROM notes"
            ).fetchone()
        assert row == {"n": 1, "schema": "notes", "alone": True}  # committed, in no open transaction
        with pytest.raises(DatabaseError) as slow, database.autocommit() as connection:
            connection.execute("SELECT pg_sleep(2)")
        assert slow.value.code == "TIMEOUT"
    finally:
        database.close()


def test_a_lock_not_available_is_unavailable_to_retry_never_the_drivers_error(
    notes: PostgresDatabase, postgres_url: str
) -> None:
    """A database that cannot take the call now (here: a lock it may not wait for; alike: too many
    connections, out of memory) is UNAVAILABLE with a retry hint, not the driver's error (which a
    tool answered INTERNAL); the same write goes through once the lock is free."""
    import psycopg

    def change(connection: Any) -> None:
        connection.execute("SET LOCAL lock_timeout = '100ms'")
        connection.execute("UPDATE notes SET body = 'changed'")

    notes.run(lambda connection: connection.execute("INSERT INTO notes (body) VALUES ('first')"))
    with psycopg.connect(postgres_url) as other, other.transaction():
        other.execute("SELECT * FROM notes.notes FOR UPDATE")
        with pytest.raises(DatabaseError) as refused:
            notes.run(change)
    assert (refused.value.code, refused.value.details) == (
        "UNAVAILABLE",
        {"where": describe_url(postgres_url), "state": "55P03", "reason": "refused_now"},
    )
    hint = refused.value.hint
    assert hint is not None
    assert hint.en.startswith("Retry in a moment")
    notes.run(change)
    with notes.read() as connection:
        assert connection.execute("SELECT body FROM notes").fetchall() == [{"body": "changed"}]


# --- a busy or briefly unavailable database: a retry or a retryable error, and nothing kept -----


def test_a_deadlock_in_a_write_outside_run_is_conflict_never_the_drivers_error(
    notes: PostgresDatabase,
) -> None:
    """Two ``write()`` blocks (the context manager, which cannot run its block again) taking two
    locks in opposite orders: PostgreSQL breaks the deadlock by failing one of them, which is
    CONFLICT with a retry hint (the driver's DeadlockDetected was answered INTERNAL); the other
    commits."""
    barrier = threading.Barrier(2, timeout=30)
    outcomes: dict[str, object] = {}

    def take(name: str, first: int, second: int) -> None:
        try:
            with notes.write() as connection:
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (first,))
                barrier.wait()
                connection.execute("SELECT pg_advisory_xact_lock(%s)", (second,))
            outcomes[name] = "committed"
        except Exception as exc:
            outcomes[name] = exc

    threads = [
        threading.Thread(target=take, args=("a", 1, 2)),
        threading.Thread(target=take, args=("b", 2, 1)),
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    failed = [outcome for outcome in outcomes.values() if outcome != "committed"]
    assert len(outcomes) == 2
    assert len(failed) == 1, outcomes
    refused = failed[0]
    assert isinstance(refused, DatabaseError), repr(refused)
    assert (refused.code, refused.details) == (
        "CONFLICT",
        {"where": notes.where, "attempts": 1, "reason": "contention"},
    )
    assert refused.hint is not None
    assert refused.hint.en.startswith("Retry the call")


def test_a_first_call_that_fails_while_the_schema_is_checked_keeps_nothing_and_the_next_works(
    postgres_url: str,
) -> None:
    """A process whose first call finds the database too busy to check its schema (here: another
    process holds the migration lock past the statement timeout) answers a retryable error and
    keeps nothing of the failed start (pool, connections): its next call opens and checks
    afresh and works, instead of living on with what the failure left."""
    import psycopg
    from hostd_db.postgres import MIGRATION_LOCK_KEY

    database = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS, statement_timeout_ms=300)
    try:
        with psycopg.connect(postgres_url) as other, other.transaction():
            other.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK_KEY,))
            with pytest.raises(DatabaseError) as busy:
                database.run(lambda connection: connection.execute("SELECT 1"))
            assert database.pool_stats() is None  # nothing of the failed start is kept
        assert (busy.value.code, busy.value.details) == (
            "TIMEOUT",
            {"where": describe_url(postgres_url), "timeout_ms": 300, "reason": "statement_timeout"},
        )
        database.run(lambda connection: connection.execute("INSERT INTO notes (body) VALUES ('after')"))
        with database.read() as connection:
            assert connection.execute("SELECT body FROM notes").fetchall() == [{"body": "after"}]
    finally:
        database.close()


def test_a_write_never_begins_read_only_on_a_pooled_connection_left_so(postgres_url: str) -> None:
    """The one pooled connection a process reuses for every call keeps the driver's read-only and
    isolation settings between lends. Left read-only (a read whose clearing failed), every later
    write on it failed with the server's 'read-only transaction' (answered INTERNAL, call after
    call); a write now begins read-write on it whatever it was left with."""
    database = PostgresDatabase(postgres_url, "notes", NOTES_MIGRATIONS, max_connections=1)
    try:
        with database.pool().connection() as connection:
            connection.read_only = True  # as a read whose clearing did not happen leaves it
        for body in ("first", "second"):

            def insert(connection: Any, body: str = body) -> None:
                connection.execute("INSERT INTO notes (body) VALUES (%s)", (body,))

            database.run(insert)
        with database.read() as connection:
            bodies = [row["body"] for row in connection.execute("SELECT body FROM notes ORDER BY id")]
    finally:
        database.close()
    assert bodies == ["first", "second"]
