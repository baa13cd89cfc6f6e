"""deep-thinking on the team database (`storage`), through real processes and real failures.

The tool behaviour itself is checked on both backends by every ``client`` test (see
``conftest.backend``); here: migrations, a database that is down, and a statement that waits
too long, each as a user meets it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from deep_thinking_support import PLUGIN, TEAM_DB_ENV, config_for, thought
from dirty_equals import IsStr
from hostd_testing import call, check_team_database, envelope_error, fails, in_memory_client, ok, run_hostd

pytestmark = pytest.mark.anyio


def _hostd(tmp_path: Path, url: str, *args: str, language: str = "en") -> subprocess.CompletedProcess[str]:
    return run_hostd(tmp_path, [PLUGIN], *args, url=url, language=language)


def test_migrate_then_sessions_are_shared_between_processes(tmp_path: Path, postgres_url: str) -> None:
    migrated = _hostd(tmp_path, postgres_url, "db", "migrate")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    arguments = json.dumps({**thought(1, 2, "团队共享的思考"), "session_id": "team"})
    first = _hostd(tmp_path, postgres_url, "call", "sequential_thinking", "--json", arguments)
    assert first.returncode == 0, first.stderr
    found = _hostd(tmp_path, postgres_url, "call", "search_thoughts", "--arg", "query=共享")
    assert found.returncode == 0, found.stderr
    assert [hit["session_id"] for hit in json.loads(found.stdout)["hits"]] == ["team"]
    assert not (tmp_path / "data" / PLUGIN / "sessions").exists()  # nothing was kept locally


def test_the_team_database_suite(tmp_path: Path, postgres_url: str) -> None:
    """hostd-testing's checks: ``hostd db migrate`` (pending, applied, then current) and a
    database that is down at start-up (exit 2, named without its password)."""
    check_team_database(tmp_path, PLUGIN, postgres_url=postgres_url, version=2)


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
        assert "300" in envelope["error"]["message"]
        assert envelope["error"]["hint"]
        if language == "zh":
            assert "毫秒" in envelope["error"]["message"]
        answer = await ok(client, "sequential_thinking", **thought(2, 3, session_id="busy"))
        assert answer["sequence"] == 2  # the refused call left no gap


async def _local_sessions(data_dir: Path, roots: Path) -> None:
    """Sessions in the data folder: one with revisions and branches, one archived, one deleted."""
    from deep_thinking_support import sample_session

    async with in_memory_client([PLUGIN], data_dir=data_dir, config=config_for(roots)) as client:
        await sample_session(client, "trip")
        await ok(
            client,
            "sequential_thinking",
            **thought(1, 2, "标签", session_id="labels", stage="分析", tags=["t"]),
        )
        await ok(client, "update_session_status", session_id="labels", status="archived")
        await ok(client, "sequential_thinking", **thought(1, 1, "to be deleted", session_id="gone"))
        await ok(client, "delete_session", session_id="gone")


@pytest.mark.slow
async def test_db_copy_copies_every_field_once_and_never_overwrites(
    tmp_path: Path, hostd_roots: Path, postgres_url: str
) -> None:
    from hostd_db import TeamDatabaseSettings, open_database
    from hostd_deep_thinking.store import SessionStore
    from hostd_deep_thinking.store.postgres import PostgresSessionStore
    from hostd_deep_thinking.store.schema import schema

    data_dir = tmp_path / "data"
    await _local_sessions(data_dir, hostd_roots)
    first = _hostd(tmp_path, postgres_url, "db", "copy")
    assert first.returncode == 0, first.stdout + first.stderr
    assert (
        "deep-thinking: backups: 6 copied, 0 unchanged, sessions: 2 copied, 0 unchanged, "
        "thoughts: 9 copied, 0 unchanged" in first.stdout
    )
    local = SessionStore(data_dir / PLUGIN)
    team = PostgresSessionStore(
        open_database(schema(), "deep-thinking", data_dir=data_dir, team=TeamDatabaseSettings(postgres_url))
    )
    try:
        for session_id in ("trip", "labels", "gone"):
            mine, theirs = local.load(session_id), team.load(session_id)
            assert (mine is None, theirs is None) == (session_id == "gone", session_id == "gone")
            if mine is not None and theirs is not None:
                assert theirs.to_document() == mine.to_document()  # every field, thoughts included
            assert team.backup_names(session_id) == local.backup_names(session_id)
        restored, _, _ = team.restore("gone")
        assert [t["content"] for t in restored.thoughts] == ["to be deleted"]
        team.delete("gone")

        again = _hostd(tmp_path, postgres_url, "db", "copy")
        assert again.returncode == 0, again.stdout + again.stderr
        assert "0 copied" in again.stdout
        assert "sessions: 0 copied, 2 unchanged" in again.stdout

        team.append("trip", lambda state: ({**state.thoughts[-1], "content": "team-only"}, None))
        conflict = _hostd(tmp_path, postgres_url, "db", "copy")
        assert conflict.returncode == 1
        assert "deep-thinking: CONFLICT session 'trip' differs in the team database" in conflict.stdout
        trip = team.load("trip")
        assert trip is not None
        assert trip.thoughts[-1]["content"] == "team-only"
    finally:
        local.close()
        team.close()


async def test_a_connection_lost_mid_call_is_unavailable_and_leaves_no_gap(
    hostd_data_dir: Path, hostd_roots: Path, postgres_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import anyio
    import psycopg

    monkeypatch.setenv(TEAM_DB_ENV, postgres_url)
    config: dict[str, Any] = {**config_for(hostd_roots), "storage": {"url_env": TEAM_DB_ENV}}
    async with in_memory_client([PLUGIN], data_dir=hostd_data_dir, config=config) as client:
        await ok(client, "sequential_thinking", **thought(1, 3, session_id="cut"))
        answers: list[dict[str, Any]] = []

        async def blocked_call() -> None:
            answers.append(await call(client, "sequential_thinking", **thought(2, 3, session_id="cut")))

        with (
            psycopg.connect(postgres_url, autocommit=True) as admin,
            psycopg.connect(postgres_url) as holder,
            holder.transaction(),
        ):
            holder.execute("SELECT 1 FROM deep_thinking.sessions WHERE session_id = 'cut' FOR UPDATE")
            async with anyio.create_task_group() as group:
                group.start_soon(blocked_call)
                waiting = None
                with anyio.fail_after(20):
                    while waiting is None:  # the call's connection is waiting for the row lock
                        waiting = admin.execute(
                            "SELECT pid FROM pg_stat_activity WHERE application_name = "
                            "'hostd-deep-thinking' AND wait_event_type = 'Lock'"
                        ).fetchone()
                        await anyio.sleep(0.01)
                admin.execute("SELECT pg_terminate_backend(%s)", (waiting[0],))
        (envelope,) = answers
        assert envelope == envelope_error("UNAVAILABLE", hint=IsStr(min_length=1))
        answer = await ok(client, "sequential_thinking", **thought(2, 3, session_id="cut"))
        assert answer["sequence"] == 2  # the lost call wrote nothing
