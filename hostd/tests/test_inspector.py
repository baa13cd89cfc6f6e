"""The MCP Inspector CLI (what many users try first) lists and calls our tools."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hostd_testing import write_config

INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"


def inspector(env_vars: dict[str, str], *method: str) -> dict:
    if shutil.which("npx") is None:
        pytest.skip("npx (Node.js) is not installed: the Inspector CLI cannot run")
    hostd = str(Path(sys.executable).with_name("hostd"))  # the command of the environment under test
    env_args = [arg for key, value in env_vars.items() for arg in ("-e", f"{key}={value}")]
    done = subprocess.run(
        ["npx", "-y", INSPECTOR, "--cli", *env_args, hostd, "serve", *method],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "npm_config_yes": "true"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


@pytest.mark.slow
def test_inspector_cli_lists_and_calls_tools(tmp_path: Path, probe_install: dict[str, str]) -> None:
    config = write_config(tmp_path, ["probe"])
    env = {"HOSTD_CONFIG": str(config), **probe_install}
    listed = inspector(env, "--method", "tools/list")
    assert "echo" in {tool["name"] for tool in listed["tools"]}
    called = inspector(env, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=inspected")
    assert called["isError"] is False
    assert called["structuredContent"]["text"] == "inspected"
    refused = inspector(
        env, "--method", "tools/call", "--tool-name", "echo", "--tool-arg", "text=x", "--tool-arg", "times=99"
    )
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT"
