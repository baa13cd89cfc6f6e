"""What the memory tests share besides fixtures: the client opener's type, the team-database
variable, the SQLite-only marker. Tool calls and envelope matchers come from ``hostd_testing``.

A module of its own (not ``conftest.py``): test modules import it by name, which a conftest
must not be.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from hostd_testing import TEAM_DATABASE_ENV as BACKEND_DATABASE_ENV
from hostd_testing import Client

#: The ``memory_client`` fixture: ``async with memory_client(language="zh", budget=5000) as client``.
MemoryClient = Callable[..., AbstractAsyncContextManager[Client]]

if TYPE_CHECKING:
    from hostd_memory.store import MemoryStore

#: The environment variable the PostgreSQL test configs name in ``storage.url_env`` (the
#: ``backend`` fixture's).
TEAM_DATABASE_ENV = BACKEND_DATABASE_ENV

#: For a test about the SQLite file itself (its schema upgrades): run it on that backend only.
sqlite_only = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


def sqlite_store(path: Path) -> MemoryStore:
    """The store on a SQLite file opened here, as the host opens it (``close`` closes the file)."""
    from hostd_db import open_database
    from hostd_memory.store import open_store
    from hostd_memory.store.schema import schema

    return open_store(open_database(schema(path.name), "memory", data_dir=path.parent, team=None))


def team_store(url: str, *, pool_size: int = 8) -> MemoryStore:
    """The store on the memory schema of the team database at ``url`` (``close`` closes the pool)."""
    from hostd_db import TeamDatabaseSettings, open_database
    from hostd_memory.store import open_store
    from hostd_memory.store.schema import schema

    team = TeamDatabaseSettings(url, pool_size=pool_size)
    return open_store(open_database(schema("memory.db"), "memory", data_dir=Path("."), team=team))
