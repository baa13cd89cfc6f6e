"""Statement spans: none and nothing wrapped while tracing is off; with a tracer provider, one
CLIENT span per statement on SQLite and on PostgreSQL, carrying no parameter."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_db import PostgresDatabase, spans
from hostd_db.pgtext import QmarkConnection
from hostd_db.sqlite import SqliteDatabase

SCHEMA = ["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL)"]
POSTGRES_SCHEMA = ["CREATE TABLE notes (id bigserial PRIMARY KEY, body text NOT NULL)"]


@pytest.fixture
def exported(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Tracing on for this test only: a provider of its own (the global one is never set here)."""
    pytest.importorskip("opentelemetry.sdk", reason="the hostd[otel] extra is not installed")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    monkeypatch.setattr(spans, "_api", trace)
    monkeypatch.setattr(spans, "_tracer", provider.get_tracer("test"))
    yield exporter
    provider.shutdown()


def test_tracing_off_hands_out_the_plain_connection(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(spans, "_tracer", spans._UNKNOWN)  # looked up: no provider is set in tests
    database = SqliteDatabase(tmp_path / "notes.db", SCHEMA)
    assert type(database.connection()) is sqlite3.Connection
    assert spans.active_tracer() is None
    with spans.trace_span("anything", kind="CLIENT", key="value") as span:
        span.set("more", 1)
        span.fail("NOPE")  # a no-op handle, nothing raised
    database.close()


def test_each_sqlite_statement_is_a_span(tmp_path: Path, exported: Any) -> None:
    database = SqliteDatabase(tmp_path / "notes.db", SCHEMA)
    with database.write() as connection:
        connection.execute("INSERT INTO notes (body) VALUES (?)", ("secret-body",))
        connection.executemany("INSERT INTO notes (body) VALUES (?)", [("secret-2",)])
    assert database.connection().execute("  select count(*) from notes").fetchone()[0] == 2
    database.close()
    found = [(s.name, dict(s.attributes or {})) for s in exported.get_finished_spans()]
    assert [name for name, _ in found] == [
        "BEGIN notes.db",
        "INSERT notes.db",
        "INSERT notes.db",
        "COMMIT notes.db",
        "SELECT notes.db",
    ]
    assert found[1][1] == {"db.system": "sqlite", "db.operation.name": "INSERT", "db.namespace": "notes.db"}
    assert all(s.kind.name == "CLIENT" for s in exported.get_finished_spans())
    assert "secret" not in repr(found)


def test_each_postgres_statement_is_a_span(postgres_url: str, exported: Any) -> None:
    database = PostgresDatabase(postgres_url, "notes", POSTGRES_SCHEMA)
    try:
        exported.clear()  # the migration's own statements
        with database.write() as raw:
            connection = QmarkConnection(raw)
            connection.execute("INSERT INTO notes (body) VALUES (?)", ("secret-body",))
            connection.executemany("UPDATE notes SET body = ? WHERE id = ?", [("secret-2", 1)])
            dbname = raw.info.dbname
    finally:
        database.close()
    found = [(s.name, dict(s.attributes or {})) for s in exported.get_finished_spans()]
    assert [name for name, _ in found] == [f"INSERT {dbname}", f"UPDATE {dbname}"]
    assert found[0][1] == {"db.system": "postgresql", "db.operation.name": "INSERT", "db.namespace": dbname}
    assert "secret" not in repr(found)
