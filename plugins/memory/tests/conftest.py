"""Shared fixtures: an in-memory MCP client over a host running only the memory plugin.

Every tool test runs on both stores through hostd-testing's ``backend`` fixture (``[sqlite]``,
the file in the data folder, and ``[postgres]``, a fresh database of the session's PostgreSQL
server). A module about the SQLite file itself is marked ``@sqlite_only`` (``memory_support``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import Client, in_memory_client, mark_external
from memory_support import MemoryClient


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
