"""Fixtures for the tasks tests: a client on a host serving tasks, in-process or a real process.

Every tool test runs on both stores: ``backend`` is ``sqlite`` (the file in the data folder)
or ``postgres`` (``storage`` in the config, a fresh database of the session's PostgreSQL
server). The PostgreSQL cases skip cleanly where no server or no driver is installed.
"""

from __future__ import annotations

import itertools
from contextlib import AbstractAsyncContextManager
from pathlib import Path

import pytest
from hostd_testing import in_memory_client, served_client, write_config
from mcp import Client
from tasks_support import TEAM_DATABASE_ENV, Connect

BACKENDS = ["sqlite", "postgres"]


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """The config that picks the store: nothing (SQLite), or ``storage`` naming a fresh database."""
    if request.param == "sqlite":
        return {}
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    monkeypatch.setenv(TEAM_DATABASE_ENV, request.getfixturevalue("postgres_url"))
    return {"storage": {"url_env": TEAM_DATABASE_ENV}}


def make_connect(
    kind: str, tmp_path: Path, data_dir: Path, backend: dict[str, object] | None = None
) -> Connect:
    """Open clients on one data folder and store; ``kind`` is 'in-memory' or 'served' (``hostd serve``)."""
    served_configs = itertools.count()

    def open_client(
        plugins: list[str] | None = None,
        *,
        language: str = "en",
        extra_plugins: dict[str, object] | None = None,
    ) -> AbstractAsyncContextManager[Client]:
        names = plugins or ["tasks"]
        config = {"language": language, **(backend or {})}
        if kind == "in-memory":
            return in_memory_client(names, data_dir=data_dir, config=config, extra_plugins=extra_plugins)
        assert extra_plugins is None, "in-line plugins cannot cross into a subprocess"
        folder = tmp_path / f"served-{next(served_configs)}"
        folder.mkdir()
        return served_client(write_config(folder, names, config={**config, "data_dir": str(data_dir)}))

    return open_client


@pytest.fixture(params=["in-memory", "served"])
def connect(
    request: pytest.FixtureRequest, tmp_path: Path, hostd_data_dir: Path, backend: dict[str, object]
) -> Connect:
    """Clients through the in-memory host and through a real server process, one test each, per store."""
    return make_connect(request.param, tmp_path, hostd_data_dir, backend)


@pytest.fixture
def connect_in_memory(tmp_path: Path, hostd_data_dir: Path, backend: dict[str, object]) -> Connect:
    """Clients through the in-memory host only (rules checked many times over), per store."""
    return make_connect("in-memory", tmp_path, hostd_data_dir, backend)


@pytest.fixture
def connect_served(tmp_path: Path, hostd_data_dir: Path, backend: dict[str, object]) -> Connect:
    return make_connect("served", tmp_path, hostd_data_dir, backend)
