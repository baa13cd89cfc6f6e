"""Code the hostd-db tests run in child processes ("spawn" children import it by name)."""

from __future__ import annotations

import time
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any

from hostd_db.sqlite import SqliteDatabase

# -- a database shared by processes ----------------------------------------------------------------

MIGRATIONS = [
    # Each migration logs itself: a migration applied twice would log twice (or fail to create).
    "CREATE TABLE applied (n INTEGER NOT NULL); INSERT INTO applied VALUES (1);",
    """
    CREATE TABLE items (id INTEGER PRIMARY KEY, writer TEXT NOT NULL, n INTEGER NOT NULL);
    CREATE TABLE counter (id INTEGER PRIMARY KEY CHECK (id = 1), value INTEGER NOT NULL);
    INSERT INTO counter VALUES (1, 0);
    CREATE TRIGGER items_no_negative BEFORE INSERT ON items WHEN NEW.n < 0
    BEGIN SELECT RAISE(ABORT, 'negative n; not allowed'); END;
    INSERT INTO applied VALUES (2);
    """,
]


def open_and_insert(db_path: Path, writer: str, count: int, barrier: Barrier, results: Any) -> None:
    barrier.wait()
    started = time.monotonic()
    with SqliteDatabase(db_path, MIGRATIONS) as database:
        database.connection()
        for n in range(count):
            with database.write() as connection:
                connection.execute("INSERT INTO items (writer, n) VALUES (?, ?)", (writer, n))
    results.put((started, time.monotonic()))


def increment_counter(db_path: Path, times: int, barrier: Barrier, results: Any) -> None:
    with SqliteDatabase(db_path, MIGRATIONS) as database:
        database.connection()
        barrier.wait()
        started = time.monotonic()
        for n in range(times):
            if n == times // 2:  # every writer is half way here at once: the runs overlap, whatever the load
                barrier.wait()
            with database.write() as connection:
                value = connection.execute("SELECT value FROM counter WHERE id = 1").fetchone()[0]
                connection.execute("UPDATE counter SET value = ? WHERE id = 1", (value + 1,))
    results.put((started, time.monotonic()))
