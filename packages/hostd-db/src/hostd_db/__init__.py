"""The database layer hostd plugins share.

SQLite stays the embedded default (``hostd_fs.Database`` today; it moves here when the plugin
stores gain their PostgreSQL twins). PostgreSQL serves teams: ``PostgresDatabase`` keeps a
pool, a schema per plugin, transactions retried on serialization failures and deadlocks, and
versioned migrations applied exactly once across processes. Failures a person can act on are
``DatabaseError`` with a stable code (``UNAVAILABLE``, ``TIMEOUT``, ``CONFLICT``,
``FILE_LOCKED``, ``SCHEMA_TOO_NEW``, ``SCHEMA_OUTDATED``).

Importing this package loads no driver.
"""

from hostd_db.errors import DatabaseError, busy_as_file_locked
from hostd_db.postgres import PostgresDatabase, SchemaStatus, schema_name
from hostd_db.urls import describe_url, is_postgres_url

__all__ = [
    "DatabaseError",
    "PostgresDatabase",
    "SchemaStatus",
    "busy_as_file_locked",
    "describe_url",
    "is_postgres_url",
    "schema_name",
]
