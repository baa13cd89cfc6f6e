"""Memory and the team database (``storage`` in the config): not supported yet, so refused clearly.

The memory store has no PostgreSQL backend yet. Serving memories from each replica's own SQLite
file while the config names a shared database would split a team's memories silently, so every
command that would use the team database stops, in the configured language, before anything
is written.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostd_testing import in_memory_client

from hostd import HostError

# Nothing listens here: the refusal must come before any connection is tried.
UNUSED_URL = "postgresql://team:hunter2-secret@127.0.0.1:9/hostd"


def _config(tmp_path: Path, language: str, plugins: str = "[memory]") -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"data_dir: {tmp_path / 'data'}\n"
        f"language: {language}\n"
        "storage: {url_env: TEAM_DB, connect_timeout_seconds: 1}\n"
        f"profiles:\n  default:\n    plugins: {plugins}\n",
        encoding="utf-8",
    )
    return path


def _hostd(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOSTD_CACHE_DIR": "off", "TEAM_DB": UNUSED_URL}
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args, "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize(
    ("language", "expected"),
    [("en", "memory cannot use the team database yet"), ("zh", "记忆插件暂不支持团队数据库")],
)
def test_serve_refuses_memory_on_a_team_database(tmp_path: Path, language: str, expected: str) -> None:
    served = _hostd(_config(tmp_path, language), "serve")
    assert served.returncode == 2, served.stderr
    assert expected in served.stderr
    assert "hunter2" not in served.stderr + served.stdout
    assert not (tmp_path / "data" / "memory").exists()  # no local file was opened instead
    if language == "zh":
        assert "memory cannot" not in served.stderr and "storage" in served.stderr  # the key is named


def test_config_check_db_and_call_refuse_memory_on_a_team_database(tmp_path: Path) -> None:
    config = _config(tmp_path, "en", "[memory, tasks]")
    commands = (
        ["config", "check"],
        ["db", "migrate"],
        ["db", "copy"],
        ["call", "create_memory", "--arg", "uri=core://x", "--arg", "content=x"],
    )
    for command in commands:
        done = _hostd(config, *command)
        assert done.returncode == 2, (command, done.stdout, done.stderr)
        assert "memory cannot use the team database yet" in done.stderr, command
        assert "cannot be reached" not in done.stderr  # refused before connecting
    assert not (tmp_path / "data" / "memory").exists()


async def test_the_in_process_host_refuses_memory_on_a_team_database(
    hostd_data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_DB", UNUSED_URL)
    config = {"language": "en", "storage": {"url_env": "TEAM_DB"}}
    with pytest.raises(HostError, match="memory cannot use the team database yet"):
        async with in_memory_client(["memory"], data_dir=hostd_data_dir, config=config):
            pass
    assert not (hostd_data_dir / "memory").exists()


pytestmark = pytest.mark.anyio
