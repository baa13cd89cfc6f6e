"""Fixtures hostd-testing adds to every pytest run where it is installed.

A plugin's ``conftest.py`` names what is its own and takes the rest from here:

    @pytest.fixture
    def hostd_plugins() -> list[str]:
        return ["tasks"]                      # what ``connect()`` serves by default

    @pytest.fixture
    def hostd_config(backend):
        return {"language": "en", **backend}  # what every ``connect()`` client starts from
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from hostd_testing.backends import BACKENDS, backend_config

if TYPE_CHECKING:  # the clients import the host and the SDK: only when a test asks for one
    from hostd_testing.connecting import Connect

#: ``connect``'s kinds of host, the test ids (``hostd_testing.connecting.CONNECT_KINDS``).
CONNECT_KINDS = ["in-memory", "served"]


@pytest.fixture
def hostd_data_dir(tmp_path: Path) -> Path:
    """A fresh data folder for one test's host."""
    path = tmp_path / "hostd-data"
    path.mkdir()
    return path


@pytest.fixture
def hostd_roots(tmp_path: Path) -> Path:
    """A fresh folder to use as the only allowed root."""
    path = tmp_path / "root"
    path.mkdir()
    return path


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The config that picks the store, one test per backend: ``{}`` (``[sqlite]``, the file in
    the data folder) or ``storage`` naming a fresh PostgreSQL database (``[postgres]``)."""
    return backend_config(request.param, request, monkeypatch)


@pytest.fixture
def hostd_plugins() -> list[str] | None:
    """The plugins ``connect()`` serves when a test names none (``None``: the config's profiles,
    else every installed plugin). A suite's conftest overrides it with its own plugin."""
    return None


@pytest.fixture
def hostd_config() -> dict[str, Any]:
    """The config every ``connect()`` client starts from. A suite with a store overrides it to
    include ``backend``, so its tests run on both stores."""
    return {}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "served: run this ``connect`` test through a real ``hostd serve`` too (on the embedded store)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A ``connect`` test runs through the in-memory host; one marked ``@pytest.mark.served``
    runs through a real ``hostd serve`` as well, on the embedded store only (the store behind a
    process is the store in-process; the process adds the transport). A process start costs
    about a second, so the served runs are kept for one test per tool and the hostile paths."""
    kept: list[pytest.Item] = []
    dropped: list[pytest.Item] = []
    for item in items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        served = params.get("connect") == "served"
        unwanted = item.get_closest_marker("served") is None or params.get("backend") == "postgres"
        (dropped if served and unwanted else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=CONNECT_KINDS)
def connect(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    hostd_data_dir: Path,
    hostd_plugins: list[str] | None,
    hostd_config: dict[str, Any],
) -> Connect:
    """Clients through the in-memory host; for a test marked ``served``, through a real ``hostd
    serve`` too (one test each)."""
    from hostd_testing.connecting import make_connect

    return make_connect(
        request.param, folder=tmp_path, data_dir=hostd_data_dir, plugins=hostd_plugins, config=hostd_config
    )


@pytest.fixture
def connect_in_memory(
    tmp_path: Path, hostd_data_dir: Path, hostd_plugins: list[str] | None, hostd_config: dict[str, Any]
) -> Connect:
    """Clients through the in-memory host only (for rules checked many times over)."""
    from hostd_testing.connecting import make_connect

    return make_connect(
        "in-memory", folder=tmp_path, data_dir=hostd_data_dir, plugins=hostd_plugins, config=hostd_config
    )


@pytest.fixture
def connect_served(
    tmp_path: Path, hostd_data_dir: Path, hostd_plugins: list[str] | None, hostd_config: dict[str, Any]
) -> Connect:
    """Clients through a real ``hostd serve`` process only."""
    from hostd_testing.connecting import make_connect

    return make_connect(
        "served", folder=tmp_path, data_dir=hostd_data_dir, plugins=hostd_plugins, config=hostd_config
    )


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (``hostd_testing.browser.chromium``; never a downloaded
    browser). Function-scoped: Playwright's sync API keeps an event loop running in this thread
    while it is open, which would stop the anyio tests that follow."""
    from hostd_testing.browser import chromium

    with chromium() as launched:
        yield launched


# PostgreSQL fixtures (a real server per test session, a fresh database per test).
from hostd_testing.postgres import postgres_server, postgres_url  # noqa: E402

__all__ = [
    "backend",
    "browser",
    "connect",
    "connect_in_memory",
    "connect_served",
    "hostd_config",
    "hostd_data_dir",
    "hostd_plugins",
    "hostd_roots",
    "postgres_server",
    "postgres_url",
]
