"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, npm) against a real
``hostd serve`` over HTTP: its resources (subscribe and unsubscribe too), prompts, completion and
logging scenarios.

The suite asks the server under test for fixtures of its own (``test://static-text``, the
``test_prompt_with_arguments`` prompt, ...): the test-only ``conformance-test`` plugin
(``conformance_plugin.py``) serves them, beside memory, tasks and deep-thinking holding a record
each, so the suite's listing checks also cover the real plugins' resources and prompts. The suite
is a Node.js client (the TypeScript SDK, the initialize handshake, protocol 2025-11-25); each
scenario is one run of its CLI, whose checks must all succeed.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from conformance_plugin import LOG_MESSAGES
from conformance_support import install_npm_packages, install_test_plugin, node_env, served_plugins
from hostd_testing import HttpServer, envelope_of, write_config

pytestmark = pytest.mark.npm  # the suite and Node.js 22 come from npm: `nox -s external`

#: The suite's scenarios for what hostd serves besides tools (``conformance list``).
RESOURCES = [
    "resources-list",
    "resources-read-text",
    "resources-read-binary",
    "resources-templates-read",
    "resources-subscribe",
    "resources-unsubscribe",
]
PROMPTS = [
    "prompts-list",
    "prompts-get-simple",
    "prompts-get-with-args",
    "prompts-get-embedded-resource",
    "prompts-get-with-image",
]
COMPLETION = ["completion-complete"]
LOGGING = ["logging-set-level", "tools-call-with-logging"]
SCENARIOS = [*RESOURCES, *PROMPTS, *COMPLETION, *LOGGING]
#: Scenarios hostd is known to fail, with the reason (strict xfail: one that passes must leave).
EXPECTED_TO_FAIL: dict[str, str] = {}


@pytest.fixture(scope="module")
def node_modules() -> Path:
    return install_npm_packages()


async def _seed(server: HttpServer) -> None:
    """A memory, a task and a thinking session, so the real plugins list a resource each."""
    async with server.client() as client:
        with anyio.fail_after(120):
            for tool, arguments in (
                ("create_memory", {"uri": "ops://deploy/steps", "content": "Run the playbook."}),
                ("create_task", {"title": "Check the suite", "task_id": "suite-1"}),
                (
                    "sequential_thinking",
                    {
                        "session_id": "suite-plan",
                        "thought": "Run every scenario.",
                        "thoughtNumber": 1,
                        "totalThoughts": 1,
                        "nextThoughtNeeded": False,
                    },
                ),
            ):
                assert envelope_of(await client.call_tool(tool, arguments))["status"] == "success"


@pytest.fixture(scope="module")
def server_url(node_modules: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("conformance")
    config = write_config(folder, served_plugins(), config={"language": "en"})
    env = {**install_test_plugin(folder / "site"), "HOSTD_CACHE_DIR": str(folder / "cache")}
    with HttpServer.start(config, env=env) as server:
        anyio.run(_seed, server)
        yield server.url


@dataclass
class ScenarioRun:
    returncode: int
    checks: list[dict[str, Any]]
    output: str


def run_scenario(node_modules: Path, url: str, scenario: str, output: Path) -> ScenarioRun:
    """One scenario through the suite's CLI (exit 0 only when every check succeeds) and its checks."""
    cli = node_modules / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    command = ["node", str(cli), "server", "--url", url, "--scenario", scenario, "-o", str(output)]
    done = subprocess.run(command, env=node_env(), capture_output=True, text=True, timeout=120)
    found = list(output.glob(f"server-{scenario}-*/checks.json"))
    checks = json.loads(found[0].read_text(encoding="utf-8")) if len(found) == 1 else []
    return ScenarioRun(done.returncode, checks, (done.stdout + done.stderr)[-3000:])


@pytest.fixture(scope="module")
def runs(
    node_modules: Path, server_url: str, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, ScenarioRun]:
    """Every scenario, a few at a time: each run is mostly Node.js starting (about 1.5 s)."""
    output = tmp_path_factory.mktemp("conformance-results")
    with ThreadPoolExecutor(3) as pool:
        futures = {
            name: pool.submit(run_scenario, node_modules, server_url, name, output) for name in SCENARIOS
        }
        return {name: future.result() for name, future in futures.items()}


def _scenarios() -> list[Any]:
    marked = []
    for scenario in SCENARIOS:
        reason = EXPECTED_TO_FAIL.get(scenario)
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        marked.append(pytest.param(scenario, marks=marks, id=scenario))
    return marked


@pytest.mark.parametrize("scenario", _scenarios())
def test_scenario_passes(runs: dict[str, ScenarioRun], scenario: str) -> None:
    run = runs[scenario]
    assert run.checks, run.output  # the CLI wrote its checks
    failed = [
        (check["id"], check.get("errorMessage")) for check in run.checks if check["status"] != "SUCCESS"
    ]
    assert not failed, failed
    assert run.returncode == 0, run.output
    if scenario == "resources-list":
        # The suite checked the real plugins' resources too, not only the test plugin's.
        listed = set(run.checks[0]["details"]["resources"])
        assert {"memory://ops/deploy/steps", "task://suite-1", "thinking://suite-plan"} <= listed, listed
    if scenario == "tools-call-with-logging":
        # The plugin's ctx.logger records, in order, each as a notification at info level.
        logs = [(log["level"], log["logger"], log["data"]) for log in run.checks[0]["details"]["logs"]]
        assert logs == [("info", "hostd.plugin.conformance-test", message) for message in LOG_MESSAGES], logs
    if scenario == "prompts-list":
        listed = set(run.checks[0]["details"]["prompts"])
        assert {"test_simple_prompt", "test_prompt_with_arguments", "think_problem_solving"} <= listed, listed
