"""A plugin's SQLite file locked by another process past its busy timeout is FILE_LOCKED, in every
plugin: hostd_db's ``Database`` says so (the host keeps no second copy of SQLite's busy errors)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest
from hostd_db import Column, ColumnType, Connection, Schema, Table
from hostd_testing import envelope_of, in_memory_client
from pydantic import Field

from hostd import ToolContext, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio


class Counted(ToolOutput):
    rows: int


class LockedStorePlugin:
    """A plugin keeping a table in its database (its SQLite file here)."""

    @hookimpl
    def hostd_database_schema(self) -> Schema:
        return Schema([[Table("notes", (Column("body", ColumnType.TEXT),))]], sqlite_file="store.db")

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        def add_row(
            ctx: ToolContext[None], note: Annotated[str, Field(description="text to store")]
        ) -> Counted:
            """Store one row."""

            def work(connection: Connection) -> int:
                connection.execute("INSERT INTO notes VALUES (?)", (note,))
                return int(connection.execute("SELECT count(*) FROM notes").fetchone()[0])

            return Counted(rows=ctx.database().write(work))

        register(add_row, destructive=False)


@pytest.mark.parametrize(("language", "words"), [("en", "locked by another process"), ("zh", "锁定")])
async def test_a_store_locked_by_another_process_is_file_locked(
    hostd_data_dir: Path, language: str, words: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hostd_db.database

    monkeypatch.setattr(hostd_db.database, "SQLITE_BUSY_TIMEOUT_MS", 200)
    plugins = {"locker": LockedStorePlugin()}
    async with in_memory_client(
        ["locker"], data_dir=hostd_data_dir, extra_plugins=plugins, config={"language": language}
    ) as client:
        assert envelope_of(await client.call_tool("add_row", {"note": "first"}))["rows"] == 1
        path = hostd_data_dir / "locker" / "store.db"
        holder = sqlite3.connect(path, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # what a busy writer in another process holds
        try:
            result = await client.call_tool("add_row", {"note": "second"})
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        envelope = envelope_of(result)
        assert result.is_error is True
        assert envelope["error"]["code"] == "FILE_LOCKED"
        assert words in envelope["error"]["message"]
        assert envelope["error"]["hint"]
        assert envelope["error"]["details"] == {"where": str(path), "timeout_ms": 200, "reason": "busy"}
        assert envelope_of(await client.call_tool("add_row", {"note": "third"}))["rows"] == 2
