"""Cross-distribution tests: every plugin installed, real server processes, real clients."""

from __future__ import annotations

import pytest
from hostd.core.plugins import installed_plugins

#: The shipped plugins and the example a new plugin copies (examples/notes).
#: The plugins a product install serves; examples/notes is the template a new plugin copies.
SHIPPED_PLUGINS = ["summary-writer", "wechat", "memory", "deep-thinking", "tasks"]
ALL_PLUGINS = [*SHIPPED_PLUGINS, "notes"]


@pytest.fixture(scope="session")
def every_plugin() -> list[str]:
    missing = sorted(set(ALL_PLUGINS) - set(installed_plugins()))
    if missing:
        pytest.fail(f"the cross-package tests need every plugin installed; missing: {missing}")
    return ALL_PLUGINS


@pytest.fixture(scope="session")
def shipped_plugins(every_plugin: list[str]) -> list[str]:
    """The default profile of a product install: every plugin but the example."""
    return SHIPPED_PLUGINS
