"""What the memory tests share besides fixtures: the client opener's type, the team-database
variable, the SQLite-only marker. Tool calls and envelope matchers come from ``hostd_testing.calls``.

A module of its own (not ``conftest.py``): test modules import it by name, which a conftest
must not be.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

import pytest
from mcp import Client

#: The ``memory_client`` fixture: ``async with memory_client(language="zh", budget=5000) as client``.
MemoryClient = Callable[..., AbstractAsyncContextManager[Client]]

#: The environment variable the PostgreSQL test configs name in ``storage.url_env``.
TEAM_DATABASE_ENV = "HOSTD_MEMORY_TEST_DATABASE_URL"

#: For a test about the SQLite file itself (its schema upgrades): run it on that backend only.
sqlite_only = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
