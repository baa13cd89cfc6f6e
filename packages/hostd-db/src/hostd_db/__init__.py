"""The database layer hostd plugins share.

A plugin declares its tables once (``Schema``: ``Table``, ``Column``, ``Index``... rendered for
both engines) and writes its store once against ``Database`` (``read(work)``, ``write(work,
lock=)``, a ``Connection`` taking ``?`` placeholders, the ``Dialect``'s few differing
spellings); the host opens and migrates it (``open_database``).

SQLite is the embedded default for one user: a file shared by threads and processes (WAL, busy
timeout, ``BEGIN IMMEDIATE`` writes, migrations counted in ``user_version``; the engine is
``hostd_db.sqlite``, behind ``Database``). PostgreSQL serves teams: ``PostgresDatabase`` keeps a
pool, a schema per plugin, transactions retried on serialization failures and deadlocks, and
versioned migrations applied exactly once across processes. A plugin sees only ``Database``
(``open_database`` picks the engine; the two classes behind it are not public names).
Failures a person can act on are ``DatabaseError`` with a stable code (``UNAVAILABLE``,
``TIMEOUT``, ``CONFLICT``, ``FILE_LOCKED``, ``SCHEMA_TOO_NEW``, ``SCHEMA_OUTDATED``).

Importing this package loads no driver: ``sqlite3`` is imported when a SQLite file is first
opened, psycopg when a ``PostgresDatabase`` first connects.
"""

from hostd_db.clock import utc_now, utc_stamp
from hostd_db.database import (
    POSTGRES,
    SQLITE,
    Connection,
    Database,
    Dialect,
    TeamDatabaseSettings,
    open_database,
    store_lock_key,
)
from hostd_db.errors import DatabaseError, busy_as_file_locked
from hostd_db.postgres import PostgresDatabase, SchemaStatus, schema_name
from hostd_db.schema import AddColumn, Column, ColumnType, Index, Only, Operation, Schema, Table
from hostd_db.urls import describe_url, is_postgres_url

__all__ = [
    "POSTGRES",
    "SQLITE",
    "AddColumn",
    "Column",
    "ColumnType",
    "Connection",
    "Database",
    "DatabaseError",
    "Dialect",
    "Index",
    "Only",
    "Operation",
    "PostgresDatabase",
    "Schema",
    "SchemaStatus",
    "Table",
    "TeamDatabaseSettings",
    "busy_as_file_locked",
    "describe_url",
    "is_postgres_url",
    "open_database",
    "schema_name",
    "store_lock_key",
    "utc_now",
    "utc_stamp",
]
