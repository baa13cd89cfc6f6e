"""The table, declared once for both databases; a new migration is added at the end, never edited."""

from __future__ import annotations

from hostd_db import Column, ColumnType, Schema, Table


def schema() -> Schema:
    notes = Table(
        "notes",
        (
            Column("seq", ColumnType.SERIAL),  # insertion order: the listing's keyset
            Column("title", ColumnType.KEY, not_null=True, unique=True),
            Column("body", ColumnType.TEXT, not_null=True, default="''"),
            Column("created_by", ColumnType.TEXT, not_null=True),
            Column("created_at", ColumnType.KEY, not_null=True),  # hostd_db.utc_stamp(): sorts as text
        ),
    )
    return Schema(migrations=[[notes]], sqlite_file="notes.db")
