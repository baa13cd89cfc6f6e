"""Where a plugin's store lives in a test: the embedded default, or the team database.

Every plugin with a store runs its tool tests on both backends through the ``backend`` fixture
(``hostd_testing.pytest_plugin``): its value is the config that picks the store, merged into the
config of the host under test. The ids are the same in every suite (``[sqlite]``,
``[postgres]``), so ``-k postgres`` picks the team-database half of any suite.
"""

from __future__ import annotations

from typing import Any

import pytest

#: The ``backend`` fixture's parameters, in order: the embedded store, then the team database.
BACKENDS = ["sqlite", "postgres"]
#: The variable the team-database config names (``storage.url_env``) in the tests.
TEAM_DATABASE_ENV = "HOSTD_TEST_DATABASE_URL"


def backend_config(
    kind: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Any]:
    """The config for ``kind``: ``{}`` for the embedded store (``sqlite``, or a suite's own
    name for it), ``storage`` naming a fresh database of the session's PostgreSQL server for
    ``postgres``. Without the driver (the lowest-direct session installs no extras) it skips."""
    if kind != "postgres":
        return {}
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    monkeypatch.setenv(TEAM_DATABASE_ENV, request.getfixturevalue("postgres_url"))
    return {"storage": {"url_env": TEAM_DATABASE_ENV}}


__all__ = ["BACKENDS", "TEAM_DATABASE_ENV", "backend_config"]
