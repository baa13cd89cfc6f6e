"""A plugin's SQLite file locked by another process past its busy timeout is FILE_LOCKED, in every plugin."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Annotated, Any

import pytest
from hostd_testing import envelope_of, in_memory_client
from pydantic import Field

from hostd import ToolContext, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio


class Counted(ToolOutput):
    rows: int


class LockedStorePlugin:
    """A plugin keeping its own SQLite file, with a short busy timeout."""

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        def add_row(
            ctx: ToolContext[None], note: Annotated[str, Field(description="text to store")]
        ) -> Counted:
            """Store one row."""
            connection = sqlite3.connect(ctx.data_dir / "store.db", timeout=0.2, isolation_level=None)
            try:
                connection.execute("CREATE TABLE IF NOT EXISTS notes (body TEXT)")
                connection.execute("INSERT INTO notes VALUES (?)", (note,))
                return Counted(rows=connection.execute("SELECT count(*) FROM notes").fetchone()[0])
            finally:
                connection.close()

        register(add_row, destructive=False)


@pytest.mark.parametrize(("language", "words"), [("en", "locked by another process"), ("zh", "锁定")])
async def test_a_store_locked_by_another_process_is_file_locked(
    hostd_data_dir: Path, language: str, words: str
) -> None:
    plugins = {"locker": LockedStorePlugin()}
    async with in_memory_client(
        ["locker"], data_dir=hostd_data_dir, extra_plugins=plugins, config={"language": language}
    ) as client:
        assert envelope_of(await client.call_tool("add_row", {"note": "first"}))["rows"] == 1
        holder = sqlite3.connect(hostd_data_dir / "locker" / "store.db", isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")  # what a busy writer in another process holds
        try:
            result = await client.call_tool("add_row", {"note": "second"})
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        envelope = envelope_of(result)
        assert result.is_error is True
        assert envelope["error"]["code"] == "FILE_LOCKED" and words in envelope["error"]["message"]
        assert envelope["error"]["hint"] and envelope["error"]["details"] == {"reason": "database_busy"}
        assert envelope_of(await client.call_tool("add_row", {"note": "third"}))["rows"] == 2
