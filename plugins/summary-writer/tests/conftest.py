"""The summary-writer tests: hostd-testing's ``connect`` (a client over the in-memory host, and
for the tests marked ``served`` over a real ``hostd serve`` too), called with a whole config
(``host_config``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_testing import mark_external


def pytest_itemcollected(item: pytest.Item) -> None:
    """The MCP Inspector (from npm) tests: for ``nox -s external`` only."""
    mark_external(item, Path(__file__).parent, npm={"test_summary_writer_inspector.py"})
