"""Shared fixtures: an in-memory client over the plugin (both backends), Chromium and Mermaid.

Helpers the tests import live in ``deep_thinking_support``; tool calls (``call``, ``ok``,
``fails``) come from ``hostd_testing``.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from deep_thinking_support import NPM_CACHE, PLUGIN, config_for, require_or_skip
from hostd_testing import Client, Connect, backend_config, mark_external, npm_installed


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "files_only: about the session files themselves; not run against the team database"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The team-database variant of a ``files_only`` test is not collected (it has nothing to check)."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend") if callspec is not None else None
        (dropped if backend == "postgres" and item.get_closest_marker("files_only") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """hostd-testing's ``backend`` under this suite's ids: the sessions live as JSON files in
    the data folder (``[files]``, the spec's layout, not SQLite) or in the team database
    (``[postgres]``). Every ``client`` test runs on both."""
    return backend_config(request.param, request, monkeypatch)


@pytest.fixture
def hostd_plugins() -> list[str]:
    return [PLUGIN]


@pytest.fixture
def hostd_config(hostd_roots: Path, backend: dict[str, Any]) -> dict[str, Any]:
    """What every client starts from: English, the test's folder as the only root, its store."""
    return {**config_for(hostd_roots), **backend}


@pytest.fixture
async def client(connect_in_memory: Connect) -> AsyncIterator[Client]:
    """hostd-testing's ``connect_in_memory``, opened for the whole test."""
    async with connect_in_memory() as connected:
        yield connected


@pytest.fixture(scope="session")
def mermaid_js() -> Path:
    """mermaid's browser bundle, installed with npm into the shared test cache when missing."""
    modules = npm_installed(NPM_CACHE.with_name("npm-mermaid"), "mermaid")
    bundle = modules / "mermaid" / "dist" / "mermaid.min.js"
    if not bundle.exists():
        require_or_skip(f"mermaid's browser bundle is not where it was: {bundle}")
    return bundle


def pytest_itemcollected(item: pytest.Item) -> None:
    """Chromium and npm (mermaid, the official server) tests: for ``nox -s external`` only."""
    mark_external(
        item,
        Path(__file__).parent,
        npm={"mermaid_js", "test_official_server.py"},
        browser={"browser"},
    )
