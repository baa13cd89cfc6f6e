"""memory on the team database (``storage``), through real processes and real failures.

The tool behaviour itself is checked on both backends by every ``memory_client`` test (see
``conftest.backend``); here: migrations and sharing between processes, a database that is down,
a statement that waits too long, and a connection lost in the middle of a write.
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
from conftest import TEAM_DATABASE_ENV, call, ok
from hostd_testing import in_memory_client, write_config

pytestmark = pytest.mark.anyio


def _hostd(tmp_path: Path, url: str, *args: str, language: str = "en") -> subprocess.CompletedProcess[str]:
    config = write_config(
        tmp_path,
        ["memory"],
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


def test_migrate_then_memories_are_shared_between_processes(tmp_path: Path, postgres_url: str) -> None:
    pending = _hostd(tmp_path, postgres_url, "db", "migrate", "--check")
    assert pending.returncode == 1 and "memory: version 0 of 1" in pending.stdout
    applied = _hostd(tmp_path, postgres_url, "db", "migrate")
    assert applied.returncode == 0 and "memory: version 1: current" in applied.stdout
    arguments = json.dumps({"uri": "team://cache", "content": "团队共享的缓存策略", "tags": ["团队"]})
    created = _hostd(tmp_path, postgres_url, "call", "create_memory", "--json", arguments)
    assert created.returncode == 0, created.stderr
    for query in ("缓存", "存", "团队共享"):  # two, one and four characters, from another process
        found = _hostd(tmp_path, postgres_url, "call", "search_memory", "--arg", f"query={query}")
        assert found.returncode == 0, found.stderr
        assert [hit["uri"] for hit in json.loads(found.stdout)["hits"]] == ["team://cache"], query
    assert not (tmp_path / "data" / "memory").exists()  # nothing was kept locally


def test_a_database_down_at_start_up_is_exit_2_naming_it_without_the_password(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = _hostd(tmp_path, f"postgresql://hostd:secret@127.0.0.1:{port}/team", "serve")
    assert result.returncode == 2
    assert "memory: " in result.stderr and f"127.0.0.1:{port}/team" in result.stderr
    assert "secret" not in result.stderr and "Traceback" not in result.stderr


def _team_config(hostd_roots: Path, language: str = "en", **storage: Any) -> dict[str, Any]:
    return {
        "language": language,
        "allowed_roots": [str(hostd_roots)],
        "storage": {"url_env": TEAM_DATABASE_ENV, **storage},
    }


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_a_write_waiting_past_the_statement_timeout_is_a_timeout_error(
    hostd_data_dir: Path, hostd_roots: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch, language: str
) -> None:
    import psycopg
    from hostd_memory.store_postgres import WRITE_LOCK_KEY

    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    config = _team_config(hostd_roots, language, statement_timeout_ms=300)
    async with in_memory_client(["memory"], data_dir=hostd_data_dir, config=config) as client:
        await ok(client, "create_memory", uri="busy://a", content="v1")
        with psycopg.connect(postgres_url) as other, other.transaction():
            other.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
            envelope = await call(client, "update_memory", uri="busy://a", content="v2")
        assert envelope["error"]["code"] == "TIMEOUT", envelope
        assert "300" in envelope["error"]["message"] and envelope["error"]["hint"]
        if language == "zh":
            assert "毫秒" in envelope["error"]["message"]
        await ok(client, "update_memory", uri="busy://a", content="v2")
        versions = await ok(client, "get_memory_versions", uri="busy://a")
        assert [v["version"] for v in versions["versions"]] == [2, 1]  # the refused call left no gap


async def test_a_connection_lost_mid_write_is_unavailable_and_leaves_no_gap(
    hostd_data_dir: Path, hostd_roots: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio
    import psycopg
    from hostd_memory.store_postgres import WRITE_LOCK_KEY

    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    async with in_memory_client(
        ["memory"], data_dir=hostd_data_dir, config=_team_config(hostd_roots)
    ) as client:
        await ok(client, "create_memory", uri="cut://a", content="v1")
        answers: list[dict[str, Any]] = []

        async def blocked_call() -> None:
            answers.append(await call(client, "update_memory", uri="cut://a", content="v2"))

        with (
            psycopg.connect(postgres_url, autocommit=True) as admin,
            psycopg.connect(postgres_url) as holder,
            holder.transaction(),
        ):
            holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK_KEY,))
            async with anyio.create_task_group() as group:
                group.start_soon(blocked_call)
                waiting = None
                with anyio.fail_after(20):
                    while waiting is None:  # the call's connection is waiting for the write lock
                        waiting = admin.execute(
                            "SELECT pid FROM pg_stat_activity WHERE application_name = "
                            "'hostd-memory' AND wait_event_type = 'Lock'"
                        ).fetchone()
                        await anyio.sleep(0.01)
                admin.execute("SELECT pg_terminate_backend(%s)", (waiting[0],))
        (envelope,) = answers
        assert envelope["status"] == "error" and envelope["error"]["code"] == "UNAVAILABLE", envelope
        assert envelope["error"]["hint"]
        read = await ok(client, "read_memory", uri="cut://a")
        assert read["content"] == "v1" and read["memory"]["version"] == 1  # nothing half-applied
        await ok(client, "update_memory", uri="cut://a", content="v2")
        versions = await ok(client, "get_memory_versions", uri="cut://a")
        assert [v["version"] for v in versions["versions"]] == [2, 1]
