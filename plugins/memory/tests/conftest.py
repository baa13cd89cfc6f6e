"""Shared fixtures: an in-memory MCP client over a host running only the memory plugin.

``memory_client`` is hostd-testing's ``connect_in_memory`` with memory's options. Every tool
test runs on both stores through hostd-testing's ``backend`` fixture (``[sqlite]``,
the file in the data folder, and ``[postgres]``, a fresh database of the session's PostgreSQL
server). A module about the SQLite file itself is marked ``@sqlite_only`` (``memory_support``).
"""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import Client, Connect, mark_external
from memory_support import MemoryClient


@pytest.fixture
def hostd_plugins() -> list[str]:
    return ["memory"]


@pytest.fixture
def hostd_config(backend: dict[str, Any], hostd_roots: Path) -> dict[str, Any]:
    """Every client starts in English on the test's store, the test's own folder its only root."""
    return {"language": "en", "allowed_roots": [str(hostd_roots)], **backend}


@pytest.fixture
def memory_client(connect_in_memory: Connect) -> MemoryClient:
    """Open a client: ``async with memory_client(language="zh", budget=5000) as client``."""

    def open_client(
        language: str = "en", budget: int | None = None, **options: Any
    ) -> AbstractAsyncContextManager[Client]:
        settings = {"memory": {"max_answer_chars": budget}} if budget else None
        return connect_in_memory(language=language, settings=settings, **options)

    return open_client


def pytest_itemcollected(item: pytest.Item) -> None:
    """The comparison with the npm-installed official server: for ``nox -s external`` only."""
    mark_external(item, Path(__file__).parent, npm={"official_server"})
