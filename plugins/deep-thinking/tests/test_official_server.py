"""The same flows against the official npm server and ours: the official fields must agree.

The official ``@modelcontextprotocol/server-sequential-thinking`` is installed with npm into the
shared test cache; without npm the test is skipped (unless HOSTD_REQUIRE_BROWSER=1, as in CI).
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from deep_thinking_support import NPM_CACHE, PLUGIN, config_for, require_or_skip, thought
from hostd_testing import Client, StdioServerParameters, in_memory_client, npm_installed, ok

pytestmark = pytest.mark.anyio

OFFICIAL = "@modelcontextprotocol/server-sequential-thinking"
FIELDS = ("thoughtNumber", "totalThoughts", "nextThoughtNeeded", "branches", "thoughtHistoryLength")

FLOWS: dict[str, list[dict[str, Any]]] = {
    "basic sequence": [thought(1, 3), thought(2, 3), thought(3, 3, more=False)],
    "revision": [thought(1, 3), thought(2, 3), thought(3, 3, isRevision=True, revisesThought=1)],
    "branching": [
        thought(1, 3),
        thought(2, 3, branchFromThought=1, branchId="branch-a"),
        thought(3, 3, branchFromThought=1, branchId="branch-a"),
        thought(2, 3, branchFromThought=1, branchId="branch-b"),
    ],
    "number above total": [thought(5, 3), thought(6, 3)],
    "branch point without id": [thought(1, 2), thought(2, 2, branchFromThought=1)],
    "single thought": [thought(1, 1, more=False)],
    "long thought": [thought(1, 1, "y" * 10_000)],
    "revision of an unknown thought": [thought(1, 2), thought(2, 2, isRevision=True, revisesThought=9)],
}


@pytest.fixture(scope="module")
def official_script() -> Path:
    package = npm_installed(NPM_CACHE.with_name("npm-official-thinking"), OFFICIAL) / OFFICIAL
    if shutil.which("node") is None:
        require_or_skip("node is not installed")
    manifest = json.loads((package / "package.json").read_text(encoding="utf-8"))
    binary = manifest["bin"]
    return package / (binary if isinstance(binary, str) else next(iter(binary.values())))


def official_fields(result: Any) -> dict[str, Any]:
    data = result.structured_content or json.loads(result.content[0].text)
    return {key: data[key] for key in FIELDS}


async def test_flows_match_the_official_server(
    official_script: Path, hostd_data_dir: Path, hostd_roots: Path
) -> None:
    for name, calls in FLOWS.items():
        parameters = StdioServerParameters(
            command="node", args=[str(official_script)], env={**os.environ, "DISABLE_THOUGHT_LOGGING": "true"}
        )
        async with Client(parameters) as official:
            theirs = [official_fields(await official.call_tool("sequentialthinking", call)) for call in calls]
        async with in_memory_client(
            [PLUGIN], data_dir=hostd_data_dir / name.replace(" ", "-"), config=config_for(hostd_roots)
        ) as client:
            answers = [await ok(client, "sequential_thinking", **call) for call in calls]
        ours = [{key: answer[key] for key in FIELDS} for answer in answers]
        assert ours == theirs, name


async def test_needs_more_thoughts_is_the_documented_difference(
    official_script: Path, hostd_data_dir: Path, hostd_roots: Path
) -> None:
    call = thought(3, 3, needsMoreThoughts=True)
    parameters = StdioServerParameters(
        command="node", args=[str(official_script)], env={**os.environ, "DISABLE_THOUGHT_LOGGING": "true"}
    )
    async with Client(parameters) as official:
        theirs = official_fields(await official.call_tool("sequentialthinking", call))
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)) as client:
        ours = await ok(client, "sequential_thinking", **call)
    assert theirs["totalThoughts"] == 3
    assert ours["totalThoughts"] == 13  # the rule: +10, recorded as an adjustment
    assert {k: ours[k] for k in FIELDS if k != "totalThoughts"} == {
        k: theirs[k] for k in FIELDS if k != "totalThoughts"
    }
