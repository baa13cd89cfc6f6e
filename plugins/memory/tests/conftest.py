"""Shared fixtures: an in-memory MCP client over a host running only the memory plugin.

Every tool test runs on both stores: ``backend`` is ``sqlite`` (the file in the data folder) or
``postgres`` (``storage`` in the config, a fresh database of the session's PostgreSQL server).
The PostgreSQL cases skip cleanly where no server or no driver is installed. A module about
SQLite file itself is marked ``@sqlite_only``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import envelope_of, in_memory_client
from mcp import Client


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool and return its envelope (checked against the text block)."""
    return envelope_of(await client.call_tool(tool, arguments))


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "success", envelope
    return envelope


async def error_code(client: Client, tool: str, **arguments: Any) -> str:
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "error", envelope
    return str(envelope["error"]["code"])


MemoryClient = Callable[..., AbstractAsyncContextManager[Client]]

TEAM_DATABASE_ENV = "HOSTD_MEMORY_TEST_DATABASE_URL"
BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The config that picks the store: nothing (SQLite), or ``storage`` naming a fresh database."""
    if request.param == "sqlite":
        return {}
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    monkeypatch.setenv(TEAM_DATABASE_ENV, request.getfixturevalue("postgres_url"))
    return {"storage": {"url_env": TEAM_DATABASE_ENV}}


#: For a test about the SQLite file itself (its schema upgrades): run it on that backend only.
sqlite_only = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@pytest.fixture
def memory_client(hostd_data_dir: Path, hostd_roots: Path, backend: dict[str, object]) -> MemoryClient:
    """Open a client: ``async with memory_client(language="zh", budget=5000) as client``."""

    @asynccontextmanager
    async def open_client(
        language: str = "en", budget: int | None = None, **options: Any
    ) -> AsyncIterator[Client]:
        settings = {"memory": {"answer_budget": budget}} if budget else None
        config = {"language": language, "allowed_roots": [str(hostd_roots)], **backend}
        async with in_memory_client(
            ["memory"], data_dir=hostd_data_dir, config=config, settings=settings, **options
        ) as client:
            yield client

    return open_client
