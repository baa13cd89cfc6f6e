"""The ``npm`` and ``browser`` markers, put on tests by the fixtures they use or the module they live in.

Tests that reach npm (the official servers, the MCP Inspector, mermaid) or drive Chromium are
slow and need the network or a browser; ``nox -s external`` runs only them and every other
session deselects them (``-m "not npm and not browser"``). A suite marks them from its
``conftest.py``, so a new test that uses an npm-installing fixture is marked without thinking
of it::

    def pytest_itemcollected(item: pytest.Item) -> None:
        mark_external(item, HERE, npm={"official_server"}, browser={"test_headless.py"})
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import pytest


def mark_external(
    item: pytest.Item, folder: Path, *, npm: Collection[str] = (), browser: Collection[str] = ()
) -> None:
    """Mark ``item`` (a test of ``folder``) ``npm``/``browser`` when it uses one of the named
    fixtures, lives in one of the named modules (``test_x.py``) or is one of the named tests."""
    if item.path.parent != folder:
        return  # a conftest hook sees every suite's tests in a run over several suites
    used = {*getattr(item, "fixturenames", ()), item.path.name, getattr(item, "originalname", item.name)}
    if used & set(npm):
        item.add_marker(pytest.mark.npm)
    if used & set(browser):
        item.add_marker(pytest.mark.browser)


__all__ = ["mark_external"]
