"""What the tasks tests serve: the tasks plugin, in English, on both stores.

hostd-testing's fixtures do the rest: ``backend`` (``[sqlite]``, the file in the data folder,
and ``[postgres]``, a fresh database of the session's PostgreSQL server), ``connect`` (a client
through the in-memory host and through a real ``hostd serve``, one test each),
``connect_in_memory`` and ``connect_served``.
"""

from __future__ import annotations

from typing import Any

import pytest


@pytest.fixture
def hostd_plugins() -> list[str]:
    return ["tasks"]


@pytest.fixture
def hostd_config(backend: dict[str, Any]) -> dict[str, Any]:
    """Every client starts in English on the test's store."""
    return {"language": "en", **backend}
