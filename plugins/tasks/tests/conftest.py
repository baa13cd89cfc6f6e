"""What the tasks tests serve: the tasks plugin, in English, on both stores.

hostd-testing's fixtures do the rest: ``backend`` (``[sqlite]``, the file in the data folder,
and ``[postgres]``, a fresh database of the session's PostgreSQL server), ``connect`` (a client
through the in-memory host, and for a test marked ``served`` through a real ``hostd serve`` on
SQLite too: one per tool and the hostile paths), ``connect_in_memory`` and ``connect_served``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def hostd_plugins() -> list[str]:
    return ["tasks"]


@pytest.fixture
def hostd_config(backend: dict[str, Any], hostd_roots: Path) -> dict[str, Any]:
    """Every client starts in English on the test's store, with the test's own folder as the only
    allowed root: export_tasks and import_tasks (the fuzz check's calls too) write and read there,
    never in the folder the tests run from."""
    return {"language": "en", "allowed_roots": [str(hostd_roots)], **backend}
