"""A plugin's ``hostd_db.Schema`` migrated on both engines ends up with the same tables and columns.

``check_schema_parity`` migrates a fresh SQLite file and a fresh PostgreSQL schema from the same
declaration and compares what each database really holds, table by table and column by column,
with each other and with what the schema declares. What one engine alone holds is named by the
caller (an FTS5 table and the tables FTS5 keeps it in; a ``tsvector`` column).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from hostd_db import Schema, TeamDatabaseSettings, schema_name
from hostd_db.database import PostgresBackend, SqliteBackend

__all__ = [
    "ReleasedSqliteMigration",
    "check_schema_parity",
    "postgres_tables",
    "released_sqlite_file",
    "sqlite_tables",
]

#: One migration of a SQLite file of an earlier release: SQL, or a callable of the connection.
ReleasedSqliteMigration = str | Callable[[sqlite3.Connection], None]


@contextlib.contextmanager
def released_sqlite_file(
    path: Path,
    migrations: Sequence[ReleasedSqliteMigration],
    *,
    on_connect: Callable[[sqlite3.Connection], None] | None = None,
) -> Iterator[sqlite3.Connection]:
    """A SQLite file as an earlier release left it: its ``migrations`` (SQL, or callables of the
    connection) applied as hostd_db applies them (``PRAGMA user_version`` counts them), then one
    write transaction on it for the rows that release wrote; the file is closed at the end.

    For tests of upgrades: a plugin's tests never open hostd_db's engines themselves."""
    from hostd_db.sqlite import SqliteDatabase

    with SqliteDatabase(path, migrations, on_connect=on_connect) as old, old.write() as connection:
        yield connection


def sqlite_tables(path: Path) -> dict[str, list[str]]:
    """Every table of a SQLite file with its columns in order (SQLite's own tables left out)."""
    with sqlite3.connect(path) as connection:
        names = [
            str(name)
            for (name,) in connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' "
                "ORDER BY name"
            )
        ]
        return {
            name: [str(row[1]) for row in connection.execute(f'PRAGMA table_info("{name}")')]
            for name in names
        }


def postgres_tables(url: str, component: str) -> dict[str, list[str]]:
    """Every table of a component's PostgreSQL schema with its columns in order."""
    import psycopg

    with psycopg.connect(url) as connection:
        rows = connection.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = %s "
            "ORDER BY table_name, ordinal_position",
            (schema_name(component),),
        ).fetchall()
    tables: dict[str, list[str]] = {}
    for table, column in rows:
        tables.setdefault(str(table), []).append(str(column))
    return tables


def _without(
    tables: Mapping[str, list[str]], only_tables: Collection[str], only_columns: Mapping[str, Collection[str]]
) -> dict[str, list[str]]:
    kept: dict[str, list[str]] = {}
    for table, columns in tables.items():
        if any(table == name or table.startswith(f"{name}_") for name in only_tables):
            continue
        kept[table] = [c for c in columns if c not in only_columns.get(table, ())]
    return kept


def check_schema_parity(
    schema: Schema,
    component: str,
    folder: Path,
    postgres_url: str,
    *,
    sqlite_only_tables: Collection[str] = (),
    postgres_only_tables: Collection[str] = (),
    postgres_only_columns: Mapping[str, Collection[str]] | None = None,
) -> dict[str, Any]:
    """Migrate ``schema`` into a new SQLite file in ``folder`` and into ``component``'s schema at
    ``postgres_url``; assert both hold the declared tables with the declared columns, apart from
    what is named as one engine's own. Returns what each holds, for further checks."""
    sqlite = SqliteBackend(folder / f"{component}-parity.db", component, schema)
    postgres = PostgresBackend(TeamDatabaseSettings(postgres_url), component, schema)
    try:
        sqlite.migrate()
        postgres.migrate()
    finally:
        sqlite.close()
        postgres.close()
    on_sqlite = sqlite_tables(folder / f"{component}-parity.db")
    on_postgres = postgres_tables(postgres_url, component)
    declared = schema.tables()
    assert _without(on_sqlite, sqlite_only_tables, {}) == declared, "SQLite differs from the declared tables"
    assert _without(on_postgres, postgres_only_tables, postgres_only_columns or {}) == declared, (
        "PostgreSQL differs from the declared tables"
    )
    return {"sqlite": on_sqlite, "postgres": on_postgres}
