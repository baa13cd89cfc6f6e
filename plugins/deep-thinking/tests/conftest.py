"""Shared fixtures: an in-memory client over the plugin, call helpers, Chromium and Mermaid."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import envelope_of, in_memory_client
from mcp import Client

PLUGIN = "deep-thinking"
CHROMIUM = Path("/usr/bin/chromium")
NPM_CACHE = Path.home() / ".cache" / "hostd-tests" / "npm"
BROWSER_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


#: The environment variable the team-database variant's config names in ``storage.url_env``.
TEAM_DB_ENV = "HOSTD_DEEP_THINKING_TEST_DB"


def config_for(roots: Path, language: str = "en") -> dict[str, Any]:
    return {"language": language, "allowed_roots": [str(roots)]}


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "files_only: about the session files themselves; not run against the team database"
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """The team-database variant of a ``files_only`` test is not collected (it has nothing to check)."""
    kept, dropped = [], []
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("backend") if callspec is not None else None
        (dropped if backend == "postgres" and item.get_closest_marker("files_only") else kept).append(item)
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept


@pytest.fixture(params=["files", "postgres"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Where the sessions live, as config: the data folder (default), or the team database
    (``storage`` with a fresh PostgreSQL database per test). Every ``client`` test runs on both."""
    if request.param == "files":
        return {}
    # The lowest-direct session installs no extras: without the driver there is no team backend.
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    monkeypatch.setenv(TEAM_DB_ENV, request.getfixturevalue("postgres_url"))
    return {"storage": {"url_env": TEAM_DB_ENV}}


@pytest.fixture
async def client(hostd_data_dir: Path, hostd_roots: Path, backend: dict[str, Any]) -> AsyncIterator[Client]:
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config={**config_for(hostd_roots), **backend}
    ) as connected:
        yield connected


async def call(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    """The envelope of one call, whatever its status."""
    return envelope_of(await client.call_tool(tool, arguments))


async def ok(client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "success", envelope
    return envelope


async def fails(client: Client, tool: str, code: str, **arguments: Any) -> dict[str, Any]:
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "error", envelope
    assert envelope["error"]["code"] == code, envelope
    return envelope


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


@pytest.fixture
def browser() -> Iterator[Any]:
    """Debian's Chromium driven by Playwright (never a downloaded browser).

    Function-scoped: Playwright's sync API keeps an event loop running in this thread while it
    is open, which would stop the anyio tests that follow.
    """
    if not CHROMIUM.exists():
        require_or_skip(f"{CHROMIUM} is not installed (apt-get install chromium)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        require_or_skip("the playwright package is not installed")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_ARGS, headless=True)
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture(scope="session")
def mermaid_js() -> Path:
    """mermaid's browser bundle, installed with npm into the shared test cache when missing."""
    bundle = NPM_CACHE / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"
    if not bundle.exists():
        npm = shutil.which("npm")
        if npm is None:
            require_or_skip("npm is not installed, so mermaid cannot be fetched")
        NPM_CACHE.mkdir(parents=True, exist_ok=True)
        result = subprocess.run(
            [str(npm), "install", "--no-audit", "--no-fund", "--prefix", str(NPM_CACHE), "mermaid"],
            capture_output=True,
            text=True,
            timeout=600,
        )
        if result.returncode != 0 or not bundle.exists():
            require_or_skip(f"npm install mermaid failed: {result.stderr[-500:]}")
    return bundle
