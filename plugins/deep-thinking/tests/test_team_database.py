"""deep-thinking and `storage` (the team database): refused at start-up until its PostgreSQL store exists.

Sessions kept in each user's data folder while the rest of the profile shares one database
would look shared and not be: the plugin stops start-up instead, naming what to change.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import PLUGIN
from hostd_testing import write_config


def _closed_port_url() -> str:
    """A postgresql:// URL nobody answers at: the refusal must come before any connection."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    return f"postgresql://hostd:secret@127.0.0.1:{port}/team"


def _hostd(tmp_path: Path, language: str, *args: str) -> subprocess.CompletedProcess[str]:
    config = write_config(
        tmp_path, [PLUGIN], config={"language": language, "storage": {"url_env": "TEAM_DB"}}
    )
    env = {**os.environ, "HOSTD_CACHE_DIR": "off", "TEAM_DB": _closed_port_url()}
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args, "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("command", [("serve",), ("config", "check"), ("call", "list_sessions")])
def test_a_team_database_is_refused_at_start_up_with_what_to_do(
    tmp_path: Path, command: tuple[str, ...]
) -> None:
    result = _hostd(tmp_path, "en", *command)
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "deep-thinking cannot keep its sessions in the team database yet" in result.stderr
    assert "remove deep-thinking from profiles.<name>.plugins" in result.stderr
    assert "secret" not in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "data" / PLUGIN / "sessions").exists()  # nothing was written locally


def test_the_refusal_speaks_chinese_on_a_zh_server(tmp_path: Path) -> None:
    result = _hostd(tmp_path, "zh", "serve")
    assert result.returncode == 2
    message = result.stderr.removeprefix("hostd: ").strip()
    assert "deep-thinking 暂不能把会话保存在团队数据库中" in message
    # Only names the user types stay Latin: the plugin, the config keys.
    leftover = message
    for name in ("deep-thinking", "storage", "plugins", "profiles"):
        leftover = leftover.replace(name, "")
    assert not any("a" <= char.lower() <= "z" for char in leftover), message
