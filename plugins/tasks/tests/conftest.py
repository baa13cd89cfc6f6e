"""Fixtures for the tasks tests: a client on a host serving tasks, in-process or a real process."""

from __future__ import annotations

import itertools
import sys
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from hostd_testing import in_memory_client, served_client, write_config
from mcp import Client

# Tests and the concurrency tests' child processes import the support module by name.
sys.path.insert(0, str(Path(__file__).parent))

from tasks_support import Connect


def make_connect(kind: str, tmp_path: Path, data_dir: Path) -> Connect:
    """Open clients on one data folder; ``kind`` is 'in-memory' or 'served' (a real ``hostd serve``)."""
    served_configs = itertools.count()

    def open_client(
        plugins: list[str] | None = None,
        *,
        language: str = "en",
        extra_plugins: dict[str, object] | None = None,
    ) -> AbstractAsyncContextManager[Client]:
        names = plugins or ["tasks"]
        config = {"language": language}
        if kind == "in-memory":
            return in_memory_client(names, data_dir=data_dir, config=config, extra_plugins=extra_plugins)
        assert extra_plugins is None, "in-line plugins cannot cross into a subprocess"
        folder = tmp_path / f"served-{next(served_configs)}"
        folder.mkdir()
        return served_client(write_config(folder, names, config={**config, "data_dir": str(data_dir)}))

    return open_client


@pytest.fixture(params=["in-memory", "served"])
def connect(request: pytest.FixtureRequest, tmp_path: Path, hostd_data_dir: Path) -> Connect:
    """Clients through the in-memory host and through a real server process, one test each."""
    return make_connect(request.param, tmp_path, hostd_data_dir)


@pytest.fixture
def connect_in_memory(tmp_path: Path, hostd_data_dir: Path) -> Connect:
    """Clients through the in-memory host only (rules checked many times over)."""
    return make_connect("in-memory", tmp_path, hostd_data_dir)


@pytest.fixture
def connect_served(tmp_path: Path, hostd_data_dir: Path) -> Connect:
    return make_connect("served", tmp_path, hostd_data_dir)
