"""deep-thinking on the team database (`storage`), through real processes and real failures.

The tool behaviour itself is checked on both backends by every ``client`` test (see
``conftest.backend``); here: migrations, a database that is down, and a statement that waits
too long, each as a user meets it.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import PLUGIN, TEAM_DB_ENV, config_for, fails, ok, thought
from hostd_testing import in_memory_client, write_config

pytestmark = pytest.mark.anyio


def _hostd(tmp_path: Path, url: str, *args: str, language: str = "en") -> subprocess.CompletedProcess[str]:
    config = write_config(
        tmp_path,
        [PLUGIN],
        config={"language": language, "storage": {"url_env": "TEAM_DB", "connect_timeout_seconds": 2}},
    )
    env = {**os.environ, "HOSTD_CACHE_DIR": "off", "TEAM_DB": url}
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args, "--config", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def test_migrate_then_sessions_are_shared_between_processes(tmp_path: Path, postgres_url: str) -> None:
    pending = _hostd(tmp_path, postgres_url, "db", "migrate", "--check")
    assert pending.returncode == 1 and "deep-thinking: version 0 of 1" in pending.stdout
    applied = _hostd(tmp_path, postgres_url, "db", "migrate")
    assert applied.returncode == 0 and "deep-thinking: version 1: current" in applied.stdout
    arguments = json.dumps({**thought(1, 2, "团队共享的思考"), "session_id": "team"})
    first = _hostd(tmp_path, postgres_url, "call", "sequential_thinking", "--json", arguments)
    assert first.returncode == 0, first.stderr
    found = _hostd(tmp_path, postgres_url, "call", "search_thoughts", "--arg", "query=共享")
    assert found.returncode == 0, found.stderr
    assert [hit["session_id"] for hit in json.loads(found.stdout)["hits"]] == ["team"]
    assert not (tmp_path / "data" / PLUGIN / "sessions").exists()  # nothing was kept locally


def test_a_database_down_at_start_up_is_exit_2_naming_it_without_the_password(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _hostd(tmp_path, f"postgresql://hostd:secret@127.0.0.1:{port}/team", "serve")
    assert result.returncode == 2
    assert "deep-thinking: " in result.stderr and f"127.0.0.1:{port}/team" in result.stderr
    assert "secret" not in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_session_locked_past_the_statement_timeout_is_a_timeout_error(
    hostd_data_dir: Path, hostd_roots: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch, language: str
) -> None:
    import psycopg

    monkeypatch.setenv(TEAM_DB_ENV, postgres_url)
    config: dict[str, Any] = {
        **config_for(hostd_roots, language),
        "storage": {"url_env": TEAM_DB_ENV, "statement_timeout_ms": 300},
    }
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        await ok(client, "sequential_thinking", **thought(1, 3, session_id="busy"))
        with psycopg.connect(postgres_url) as other, other.transaction():
            other.execute("SELECT 1 FROM deep_thinking.sessions WHERE session_id = 'busy' FOR UPDATE")
            envelope = await fails(
                client, "sequential_thinking", "TIMEOUT", **thought(2, 3, session_id="busy")
            )
        assert "300" in envelope["error"]["message"] and envelope["error"]["hint"]
        if language == "zh":
            assert "毫秒" in envelope["error"]["message"]
        answer = await ok(client, "sequential_thinking", **thought(2, 3, session_id="busy"))
        assert answer["sequence"] == 2  # the refused call left no gap
