"""What the deep-thinking tests share besides fixtures: the plugin's name and config, the
official tool's arguments, the sample session of the golden files, and the CI rule for missing
browsers/npm. Tool calls and envelope matchers come from ``hostd_testing``.

A module of its own (not ``conftest.py``): test modules import it by name, which a conftest
must not be.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import TEAM_DATABASE_ENV, Client, ok

PLUGIN = "deep-thinking"
NPM_CACHE = Path.home() / ".cache" / "hostd-tests" / "npm"
#: The environment variable the team-database variant's config names in ``storage.url_env``
#: (the ``backend`` fixture's).
TEAM_DB_ENV = TEAM_DATABASE_ENV


def config_for(roots: Path, language: str = "en") -> dict[str, Any]:
    return {"language": language, "allowed_roots": [str(roots)]}


def thought(
    number: int, total: int, text: str | None = None, *, more: bool = True, **extra: Any
) -> dict[str, Any]:
    """The official tool's arguments for one thought."""
    return {
        "thought": f"Thought number {number}" if text is None else text,
        "thoughtNumber": number,
        "totalThoughts": total,
        "nextThoughtNeeded": more,
        **extra,
    }


async def sample_session(client: Client, session_id: str = "trip") -> None:
    """A session with one revision and two branches (the golden files' session)."""
    steps = [
        thought(1, 4, "Define the goal: a weekend trip under 300 EUR"),
        thought(2, 4, "Gather the facts: trains, hostels, weather"),
        thought(3, 4, "Compare options: Lyon or Turin"),
        thought(4, 4, "Recheck the facts: the train strike on Saturday", isRevision=True, revisesThought=2),
        thought(4, 5, "Branch: stay home and hike", branchFromThought=3, branchId="stay-home"),
        thought(2, 5, "Branch: go by bus instead", branchFromThought=1, branchId="bus"),
        thought(3, 5, "Bus to Turin takes 9 hours", branchFromThought=1, branchId="bus"),
        thought(5, 5, "Decide: Lyon by car-share on Sunday", more=False),
    ]
    for arguments in steps:
        await ok(client, "sequential_thinking", session_id=session_id, **arguments)


def require_or_skip(what: str) -> None:
    if os.environ.get("HOSTD_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{what} (HOSTD_REQUIRE_BROWSER=1)")
    pytest.skip(what)
