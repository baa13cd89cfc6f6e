"""The MCP Inspector CLI (what many users try first) lists and calls update_summary."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import inspector_cli, write_config
from summary_writer_support import host_config

INSPECTOR = "0.15.0"


def inspector(config: Path, *method: str) -> dict[str, Any]:
    hostd = str(Path(sys.executable).with_name("hostd"))
    done = subprocess.run(
        [*inspector_cli(INSPECTOR), "--cli", "-e", f"HOSTD_CONFIG={config}", hostd, "serve", *method],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "npm_config_yes": "true"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.slow
def test_inspector_cli_calls_update_summary(tmp_path: Path, hostd_roots: Path) -> None:
    config = write_config(tmp_path, config=host_config([hostd_roots], "zh"))
    listed = inspector(config, "--method", "tools/list")
    assert "update_summary" in {tool["name"] for tool in listed["tools"]}
    arguments = ["--tool-arg", "content=# 总结", "--tool-arg", "file_path=inspected/a.md"]
    called = inspector(config, "--method", "tools/call", "--tool-name", "update_summary", *arguments)
    target = hostd_roots / "inspected" / "a.md"
    assert called["isError"] is False, called
    assert called["structuredContent"]["message"] == f"总结已写入新创建的文件：{target.resolve()}"
    assert target.read_text(encoding="utf-8") == "# 总结"
    refused = inspector(
        config,
        "--method",
        "tools/call",
        "--tool-name",
        "update_summary",
        "--tool-arg",
        "content=x",
        "--tool-arg",
        "file_path=../escape.md",
    )
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["code"] == "PATH_NOT_ALLOWED"
