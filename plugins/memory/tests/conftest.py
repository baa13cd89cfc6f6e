"""Shared fixtures: an in-memory MCP client over a host running only the memory plugin.

Every tool test runs on both stores: ``backend`` is ``sqlite`` (the file in the data folder) or
``postgres`` (``storage`` in the config, a fresh database of the session's PostgreSQL server).
The PostgreSQL cases skip cleanly where no server or no driver is installed. A module about
the SQLite file itself is marked ``@sqlite_only`` (``memory_support``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import in_memory_client
from hostd_testing.markers import mark_external
from mcp import Client
from memory_support import TEAM_DATABASE_ENV, MemoryClient

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The config that picks the store: nothing (SQLite), or ``storage`` naming a fresh database."""
    if request.param == "sqlite":
        return {}
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    monkeypatch.setenv(TEAM_DATABASE_ENV, request.getfixturevalue("postgres_url"))
    return {"storage": {"url_env": TEAM_DATABASE_ENV}}


@pytest.fixture
def memory_client(hostd_data_dir: Path, hostd_roots: Path, backend: dict[str, object]) -> MemoryClient:
    """Open a client: ``async with memory_client(language="zh", budget=5000) as client``."""

    @asynccontextmanager
    async def open_client(
        language: str = "en", budget: int | None = None, **options: Any
    ) -> AsyncIterator[Client]:
        settings = {"memory": {"max_answer_chars": budget}} if budget else None
        config = {"language": language, "allowed_roots": [str(hostd_roots)], **backend}
        async with in_memory_client(
            ["memory"], data_dir=hostd_data_dir, config=config, settings=settings, **options
        ) as client:
            yield client

    return open_client


def pytest_itemcollected(item: pytest.Item) -> None:
    """The comparison with the npm-installed official server: for ``nox -s external`` only."""
    mark_external(item, Path(__file__).parent, npm={"official_server"})
