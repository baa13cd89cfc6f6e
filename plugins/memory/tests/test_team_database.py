"""memory on the team database (``storage``), through real processes and real failures.

The tool behaviour itself is checked on both backends by every ``memory_client`` test (see
``conftest.backend``); here: migrations and sharing between processes, a database that is down,
a statement that waits too long, and a connection lost in the middle of a write.
"""

from __future__ import annotations

import json
import subprocess
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from dirty_equals import IsStr
from hostd_testing import call, check_team_database, envelope_error, in_memory_client, ok, run_hostd
from memory_support import TEAM_DATABASE_ENV

pytestmark = pytest.mark.anyio


def _hostd(tmp_path: Path, url: str, *args: str, language: str = "en") -> subprocess.CompletedProcess[str]:
    return run_hostd(tmp_path, ["memory"], *args, url=url, language=language)


def test_migrate_then_memories_are_shared_between_processes(tmp_path: Path, postgres_url: str) -> None:
    migrated = _hostd(tmp_path, postgres_url, "db", "migrate")
    assert migrated.returncode == 0, migrated.stdout + migrated.stderr
    arguments = json.dumps({"uri": "team://cache", "content": "团队共享的缓存策略", "tags": ["团队"]})
    created = _hostd(tmp_path, postgres_url, "call", "create_memory", "--json", arguments)
    assert created.returncode == 0, created.stderr
    for query in ("缓存", "存", "团队共享"):  # two, one and four characters, from another process
        found = _hostd(tmp_path, postgres_url, "call", "search_memory", "--arg", f"query={query}")
        assert found.returncode == 0, found.stderr
        assert [hit["uri"] for hit in json.loads(found.stdout)["hits"]] == ["team://cache"], query
    assert not (tmp_path / "data" / "memory").exists()  # nothing was kept locally


def test_the_team_database_suite(tmp_path: Path, postgres_url: str) -> None:
    """hostd-testing's checks: ``hostd db migrate`` (pending, applied, then current) and a
    database that is down at start-up (exit 2, named without its password)."""
    check_team_database(tmp_path, "memory", postgres_url=postgres_url, version=6)


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
    from hostd_db import store_lock_key

    monkeypatch.setenv(TEAM_DATABASE_ENV, postgres_url)
    config = _team_config(hostd_roots, language, statement_timeout_ms=300)
    async with in_memory_client(["memory"], data_dir=hostd_data_dir, config=config) as client:
        await ok(client, "create_memory", uri="busy://a", content="v1")
        with psycopg.connect(postgres_url) as other, other.transaction():
            other.execute("SELECT pg_advisory_xact_lock(%s)", (store_lock_key("memory"),))
            envelope = await call(client, "update_memory", uri="busy://a", content="v2")
        assert envelope["error"]["code"] == "TIMEOUT", envelope
        assert "300" in envelope["error"]["message"]
        assert envelope["error"]["hint"]
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
    from hostd_db import store_lock_key

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
            holder.execute("SELECT pg_advisory_xact_lock(%s)", (store_lock_key("memory"),))
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
        assert envelope == envelope_error("UNAVAILABLE", hint=IsStr(min_length=1))
        read = await ok(client, "read_memory", uri="cut://a")
        assert read["content"] == "v1"
        assert read["memory"]["version"] == 1
        await ok(client, "update_memory", uri="cut://a", content="v2")
        versions = await ok(client, "get_memory_versions", uri="cut://a")
        assert [v["version"] for v in versions["versions"]] == [2, 1]


async def _local_memories(data_dir: Path, roots: Path) -> None:
    """Memories in the data folder's SQLite file: versions, aliases, tags, links, a deleted one."""
    config = {"language": "en", "allowed_roots": [str(roots)]}
    async with in_memory_client(["memory"], data_dir=data_dir, config=config) as client:
        await ok(client, "create_memory", uri="proj://db", content="数据库 v1", tags=["db", "团队"])
        await ok(client, "update_memory", uri="proj://db", content="数据库 v2", priority=2)
        await ok(client, "update_memory", uri="proj://db", tags=["db"])
        await ok(client, "add_alias", target_uri="proj://db", alias_uri="old://database")
        await ok(
            client, "create_memory", uri="proj://cache", content="cache notes", disclosure="when caching"
        )
        await ok(client, "link_memories", from_uri="proj://cache", to_uri="proj://db", relation="depends on")
        await ok(client, "create_memory", uri="proj://gone", content="to be deleted")
        await ok(client, "delete_memory", uri="proj://gone")
        await ok(client, "save_session", title="sprint", summary="we chose postgres")


@pytest.mark.slow
async def test_db_copy_copies_every_field_once_and_never_overwrites(
    tmp_path: Path, hostd_roots: Path, postgres_url: str
) -> None:
    from hostd_memory.store.records import snapshot
    from memory_support import sqlite_store, team_store

    data_dir = tmp_path / "data"
    await _local_memories(data_dir, hostd_roots)
    first = _hostd(tmp_path, postgres_url, "db", "copy")
    assert first.returncode == 0, first.stdout + first.stderr
    assert (
        "memory: links: 1 copied, 0 unchanged, memories: 4 copied, 0 unchanged, "
        "sessions: 1 copied, 0 unchanged, versions: 7 copied, 0 unchanged\n" in first.stdout
    ), first.stdout
    local = sqlite_store(data_dir / "memory" / "memory.db")
    team = team_store(postgres_url)
    try:
        uris = [r[0] for r in local.rows("SELECT uri FROM memories ORDER BY id")]
        assert len(uris) == 4  # the session's memory too
        for uri in uris:
            mine = local.read(partial(snapshot, uri=uri))
            theirs = team.read(partial(snapshot, uri=uri))
            assert mine is not None
            assert theirs is not None
            assert theirs == mine, uri  # state, every version, tags, aliases, authors
        (cache,), _ = team.links_of(team.resolve("proj://cache")[0].id)
        assert cache == ("proj://db", "depends on")
        assert [h.memory.uri for h in team.search(_plan("数据库"), _filters(), 5)] == ["proj://db"]
        assert team.resolve("old://database")[0].uri == "proj://db"

        again = _hostd(tmp_path, postgres_url, "db", "copy")
        assert again.returncode == 0, again.stdout + again.stderr
        assert (
            "memory: links: 0 copied, 1 unchanged, memories: 0 copied, 4 unchanged, "
            "sessions: 0 copied, 1 unchanged, versions: 0 copied, 7 unchanged\n" in again.stdout
        ), again.stdout

        from hostd_memory.store import Change

        # A local version made after the copy extends the team's history: a fast-forward, copied
        # with its author and reported as updated, not a conflict (issue 27, item 8).
        local.update("proj://db", edit=None, change=Change(priority=8), author="alice")
        local.add_alias("proj://db", "new://alias")
        forward = _hostd(tmp_path, postgres_url, "db", "copy")
        assert forward.returncode == 0, forward.stdout + forward.stderr
        assert (
            "memory: links: 0 copied, 1 unchanged, memories: 0 copied, 1 updated, 3 unchanged, "
            "sessions: 0 copied, 1 unchanged, versions: 1 copied, 7 unchanged\n" in forward.stdout
        ), forward.stdout
        assert "CONFLICT" not in forward.stdout
        mine, theirs = (
            local.read(partial(snapshot, uri="proj://db")),
            team.read(partial(snapshot, uri="proj://db")),
        )
        assert mine is not None
        assert theirs is not None
        assert theirs == mine
        assert (team.resolve("proj://db")[0].author, team.resolve("new://alias")[0].uri) == (
            "alice",
            "proj://db",
        )
        assert [h.memory.uri for h in team.search(_plan("数据库"), _filters(), 5)] == ["proj://db"]

        # The team went on from there: the local memory has nothing new, so it is already there.
        team.update("proj://db", edit=None, change=Change(priority=9), author="team")
        behind = _hostd(tmp_path, postgres_url, "db", "copy")
        assert behind.returncode == 0, behind.stdout
        assert "CONFLICT" not in behind.stdout, behind.stdout
        assert "memories: 0 copied, 4 unchanged" in behind.stdout, behind.stdout

        # Both went on from the same version: the histories diverge, a conflict left as it is.
        local.update("proj://db", edit=None, change=Change(priority=1), author="alice")
        conflict = _hostd(tmp_path, postgres_url, "db", "copy")
        assert conflict.returncode == 1, conflict.stdout
        assert "memory: CONFLICT memory proj://db differs in the team database" in conflict.stdout
        assert team.resolve("proj://db")[0].priority == 9  # never overwritten
    finally:
        local.close()
        team.close()


def _plan(query: str) -> Any:
    from hostd_memory.search import plan_query

    return plan_query(query)


def _filters() -> Any:
    from hostd_memory.store import Filters

    return Filters()


@pytest.mark.slow
async def test_db_copy_reports_a_hand_edited_memory_as_a_conflict_and_copies_the_rest(
    tmp_path: Path, hostd_roots: Path, postgres_url: str
) -> None:
    """Hand-edited rows are that memory's conflict, not a failed copy: one that cannot be read (a
    count that is not a number) is reported as damaged; one whose data is not the store's shape
    (tags edited into numbers) is refused before anything of it is written, and its link held back."""
    import sqlite3

    from hostd_memory.store.records import snapshot
    from memory_support import team_store

    data_dir = tmp_path / "data"
    await _local_memories(data_dir, hostd_roots)
    with sqlite3.connect(data_dir / "memory" / "memory.db") as file:
        file.execute("UPDATE memories SET tags = '[1, 2]' WHERE uri = 'proj://cache'")
        file.execute("UPDATE memories SET access_count = 'many' WHERE uri = 'proj://gone'")
    copied = _hostd(tmp_path, postgres_url, "db", "copy")
    assert copied.returncode == 1, copied.stdout + copied.stderr
    conflicts = [line for line in copied.stdout.splitlines() if "CONFLICT" in line]
    assert conflicts == [
        "memory: CONFLICT memory proj://cache not copied: its data is not as the store keeps it "
        "(versions.0.8.0: Input should be a valid string)",
        "memory: CONFLICT memory proj://gone is damaged locally and was not copied "
        "(invalid literal for int() with base 10: 'many')",
        "memory: CONFLICT link proj://cache -> proj://db (depends on) not copied: it waits on memory "
        "proj://cache, which is in conflict",
    ], copied.stdout
    team = team_store(postgres_url)
    try:
        assert team.read(partial(snapshot, uri="proj://cache")) is None
        assert team.resolve("proj://db")[0].content == "数据库 v2"
    finally:
        team.close()
