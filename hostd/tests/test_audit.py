"""The audit trail: every tool call recorded (who, what, outcome, duration, replica, a digest of
the arguments, never their content or a token), read back by ``hostd audit``; a rotated JSON Lines
file without ``storage``, a table in the team database with it; old records pruned."""

from __future__ import annotations

import datetime
import hashlib
import hmac
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hostd.core.observe import CallRecord
from hostd.core.ops_settings import AuditConfig
from hostd.team.audit import AuditQuery, AuditTrail, DatabaseTrail, FileTrail, arguments_digest, entry_of
from hostd_testing import HttpServer, write_config
from team_support import install_team_plugins, write_tokens

pytestmark = pytest.mark.anyio

ALICE = "alice-audit-token-0123456789"
KEY = b"k" * 32
SECRET = "do-not-store-this-0123"


def hostd(env: dict[str, str], config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args, "--config", str(config)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=60,
    )


def audit_json(env: dict[str, str], config: Path, *filters: str) -> list[dict[str, Any]]:
    result = hostd(env, config, "audit", "--json", *filters)
    assert result.returncode == 0, result.stderr
    return [json.loads(line) for line in result.stdout.splitlines()]


def record(
    tool: str = "echo", member: str = "alice", outcome: str = "ok", at: float | None = None
) -> CallRecord:
    return CallRecord(
        tool=tool,
        plugin="probe",
        member=member,
        outcome=outcome,
        started_at=at if at is not None else time.time(),
        duration=0.0012,
        arguments={"text": SECRET},
    )


def test_calls_in_process_are_recorded_and_read_back(tmp_path: Path) -> None:
    env = install_team_plugins(tmp_path)
    config = write_config(tmp_path, ["probe"], config={"audit": {}})
    assert hostd(env, config, "call", "echo", "--arg", f"text={SECRET}").returncode == 0
    assert hostd(env, config, "call", "fail", "--arg", "kind=tool_error").returncode == 1
    entries = audit_json(env, config)
    assert [(e["tool"], e["outcome"]) for e in entries] == [("echo", "ok"), ("fail", "CONFLICT")]
    first = entries[0]
    assert set(first) == {
        "time",
        "member",
        "surface",
        "tool",
        "outcome",
        "duration_ms",
        "replica",
        "arguments_hmac",
    }
    assert first["surface"] == "cli"
    # Keyed with the deployment's key (made once in the data folder): a reader of the trail
    # cannot confirm a guess of the arguments by hashing it.
    canonical = json.dumps({"text": SECRET}).replace(" ", "").encode()
    key = (tmp_path / "data" / "audit.key").read_bytes()
    assert len(key) >= 32
    assert first["arguments_hmac"] == hmac.new(key, canonical, hashlib.sha256).hexdigest()
    assert first["arguments_hmac"] != hashlib.sha256(canonical).hexdigest()
    assert first["duration_ms"] > 0
    assert datetime.datetime.fromisoformat(first["time"]).tzinfo is not None
    assert first["replica"].endswith(tuple("0123456789"))  # host:pid
    files = list((tmp_path / "data" / "audit").glob("audit.jsonl*"))
    assert files
    assert all(SECRET not in path.read_text(encoding="utf-8") for path in files)
    # Filters.
    assert [e["tool"] for e in audit_json(env, config, "--tool", "fail")] == ["fail"]
    assert audit_json(env, config, "--member", "nobody") == []
    assert len(audit_json(env, config, "--since", "1h")) == 2
    assert audit_json(env, config, "--since", "2999-01-01T00:00Z") == []
    table = hostd(env, config, "audit")
    assert table.returncode == 0, table.stderr
    header, *rows = table.stdout.splitlines()
    names = ["time", "member", "surface", "tool", "outcome", "duration", "replica", "arguments_hmac"]
    assert header.split() == names
    assert [row.split()[2:5] for row in rows] == [["cli", "echo", "ok"], ["cli", "fail", "CONFLICT"]]
    # Each column starts where its header does (the duration is right-aligned under its name).
    starts = [header.index(name) for name in names]
    for row, entry in zip(rows, entries, strict=True):
        cells = [entry["time"], entry["member"], entry["surface"], entry["tool"], entry["outcome"]]
        assert [row.index(cell, start) for cell, start in zip(cells, starts, strict=False)] == starts[:5]
        assert row.index(entry["replica"]) == starts[6]
        assert row[starts[7] :] == entry["arguments_hmac"][:16]
    bad = hostd(env, config, "audit", "--since", "yesterday-ish")
    assert bad.returncode == 2
    assert "--since expects" in bad.stderr


async def test_served_calls_are_recorded_with_their_member_never_the_token(tmp_path: Path) -> None:
    env = {**install_team_plugins(tmp_path), "HOSTD_REPLICA": "replica-a"}
    tokens = write_tokens(tmp_path / "tokens.yaml", {"alice": ALICE})
    transport = {"type": "http", "tokens_file": str(tokens)}
    config = write_config(
        tmp_path,
        config={"audit": {}, "profiles": {"default": {"plugins": ["probe", "team"], "transport": transport}}},
    )
    with HttpServer.start(config, env=env) as server:
        async with server.client(headers={"Authorization": f"Bearer {ALICE}"}) as client:
            await client.call_tool("whoami", {})
            await client.call_tool("echo", {"text": SECRET})
    entries = audit_json(env, config)  # the server wrote its queue out at shut-down
    assert [(e["member"], e["tool"], e["outcome"], e["replica"]) for e in entries] == [
        ("alice", "whoami", "ok", "replica-a"),
        ("alice", "echo", "ok", "replica-a"),
    ]
    written = (tmp_path / "data" / "audit" / "audit.jsonl").read_text(encoding="utf-8")
    assert ALICE not in written
    assert SECRET not in written


def test_the_file_rotates_and_keeps_its_backups(tmp_path: Path) -> None:
    trail = FileTrail(tmp_path, max_bytes=4096, backups=2)
    entries = [
        {
            "time": f"2026-01-01T00:00:{n % 60:02d}.000+00:00",
            "member": "m",
            "tool": f"t{n}",
            "outcome": "ok",
            "duration_ms": 1.0,
            "replica": "r",
            "surface": "mcp",
            "arguments_hmac": "0" * 64,
        }
        for n in range(200)
    ]
    for entry in entries:
        trail.append([entry])
    assert sorted(p.name for p in tmp_path.glob("audit.jsonl*")) == [
        "audit.jsonl",
        "audit.jsonl.1",
        "audit.jsonl.2",
    ]
    assert all(p.stat().st_size <= 4096 for p in tmp_path.glob("audit.jsonl*"))
    kept = trail.read(AuditQuery(limit=10_000))
    assert kept[-1]["tool"] == "t199"  # the newest kept, in order
    assert [e["tool"] for e in kept] == [f"t{n}" for n in range(200 - len(kept), 200)]
    assert trail.read(AuditQuery(tool="t199")) == [entries[199]]


def test_retention_removes_rotated_files_older_than_the_cutoff(tmp_path: Path) -> None:
    trail = FileTrail(tmp_path, max_bytes=4096, backups=3)
    (tmp_path / "audit.jsonl.1").write_text("{}\n", encoding="utf-8")
    (tmp_path / "audit.jsonl.2").write_text("{}\n", encoding="utf-8")
    (tmp_path / "audit.jsonl").write_text("{}\n", encoding="utf-8")
    old = time.time() - 100 * 86400
    os.utime(tmp_path / "audit.jsonl.2", (old, old))
    cutoff = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=90)
    assert trail.prune(cutoff) == 1
    assert sorted(p.name for p in tmp_path.glob("audit.jsonl*")) == ["audit.jsonl", "audit.jsonl.1"]


def test_the_observer_queues_and_the_writer_flushes_at_close(tmp_path: Path) -> None:
    store = FileTrail(tmp_path, max_bytes=1 << 20, backups=1)
    trail = AuditTrail(store, AuditConfig(), KEY, replica="r1")
    for n in range(1000):
        trail.observe(record(tool=f"t{n}"))
    trail.close()
    entries = store.read(AuditQuery(limit=5000))
    assert len(entries) == 1000
    assert entries[0]["tool"] == "t0"
    assert entries[-1]["tool"] == "t999"
    assert entries[0]["arguments_hmac"] == arguments_digest({"text": SECRET}, KEY)


def test_the_team_database_table(postgres_url: str) -> None:
    from hostd.team.ops_databases import AUDIT_MIGRATIONS as MIGRATIONS
    from hostd_db import PostgresDatabase

    database = PostgresDatabase(postgres_url, "audit", MIGRATIONS)
    store = DatabaseTrail(database)
    old = time.time() - 40 * 86400
    records = [record(tool="old", at=old), *(record(member=member) for member in ("alice", "bob", "alice"))]
    store.append([entry_of(item, "db-replica", KEY) for item in records])
    assert [(e["tool"], e["member"]) for e in store.read(AuditQuery())] == [
        ("old", "alice"),
        ("echo", "alice"),
        ("echo", "bob"),
        ("echo", "alice"),
    ]  # in time order
    assert len(store.read(AuditQuery(member="alice"))) == 3
    day_ago = datetime.datetime.now(datetime.UTC) - datetime.timedelta(days=1)
    assert [e["tool"] for e in store.read(AuditQuery(since=day_ago))] == ["echo"] * 3
    entry = store.read(AuditQuery(member="bob"))[0]
    assert entry["replica"] == "db-replica"
    assert entry["arguments_hmac"] == arguments_digest({"text": SECRET}, KEY)
    # A trail prunes past its retention when it starts (and hourly).
    trail = AuditTrail(DatabaseTrail(database), AuditConfig(retention_days=30), KEY, replica="db-replica")
    trail.observe(record(tool="new"))
    trail.close()
    assert [e["tool"] for e in store.read(AuditQuery())] == ["echo", "echo", "echo", "new"]


def test_with_storage_the_trail_is_a_migrated_table_that_hostd_audit_reads(
    tmp_path: Path, postgres_url: str
) -> None:
    env = {**install_team_plugins(tmp_path), "HOSTD_AUDIT_TEST_DB": postgres_url}
    config = write_config(
        tmp_path,
        ["probe"],
        config={
            "audit": {},
            "limits": {"per_member": {"calls_per_minute": 100}},
            "storage": {"url_env": "HOSTD_AUDIT_TEST_DB"},
        },
    )
    check = hostd(env, config, "db", "migrate", "--check")
    assert check.returncode == 1, check.stdout + check.stderr
    assert "hostd_audit: version 0 of 2" in check.stdout, check.stdout + check.stderr
    migrated = hostd(env, config, "db", "migrate")
    assert migrated.returncode == 0, migrated.stderr
    assert "hostd_audit: version 2: current" in migrated.stdout
    assert "hostd_quotas: version 1: current" in migrated.stdout
    assert hostd(env, config, "call", "echo", "--arg", f"text={SECRET}").returncode == 0
    entries = audit_json(env, config)
    assert [(e["tool"], e["outcome"]) for e in entries] == [("echo", "ok")]
    assert not (tmp_path / "data" / "audit").exists()  # nothing local with storage
