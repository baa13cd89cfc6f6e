"""Fixtures for the summary-writer tests: a client over the in-memory host or a real process."""

from __future__ import annotations

import itertools
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import in_memory_client, served_client, write_config
from hostd_testing.markers import mark_external
from mcp import Client
from summary_writer_support import Connect


@pytest.fixture(params=["in-memory", "served"])
def connect(request: pytest.FixtureRequest, tmp_path: Path, hostd_data_dir: Path) -> Connect:
    """Open a client on a host serving summary-writer: in-process, or a real ``hostd serve``.

    Call it with a whole config mapping (see ``host_config``), an optional working folder and
    the SDK client's options (``list_roots_callback``).
    """
    served_configs = itertools.count()

    def open_client(
        config: dict[str, Any], *, cwd: Path | None = None, **client_options: Any
    ) -> AbstractAsyncContextManager[Client]:
        if request.param == "in-memory":
            return in_memory_client(data_dir=hostd_data_dir, config=config, cwd=cwd, **client_options)
        folder = tmp_path / f"served-config-{next(served_configs)}"
        folder.mkdir()
        return served_client(write_config(folder, config=config), cwd=cwd, **client_options)

    return open_client


def pytest_itemcollected(item: pytest.Item) -> None:
    """The MCP Inspector (from npm) tests: for ``nox -s external`` only."""
    mark_external(item, Path(__file__).parent, npm={"test_summary_writer_inspector.py"})
