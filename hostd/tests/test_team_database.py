"""`storage` in the config: the team database's migrations, checks and failures, through real processes.

A small plugin declares one table in the team database with ``hostd_database_schema`` and
reaches it through ``ctx.database()``; the host migrates it at start-up and in
``hostd db migrate``, reports it in ``hostd config check``, and renders its failures as
structured errors.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from hostd_testing import install_plugin_source, pythonpath_with
from hostd_testing.postgres import PostgresServer

LEDGER = '''
from pydantic import Field
from typing import Annotated
import json
from hostd import Record, RecordKind, Text, ToolContext, ToolOutput, hookimpl
from hostd_db import Only, Schema

# Only in the team database: the local store is a JSON file (no SQLite file).
SCHEMA = Schema(
    migrations=[
        [Only("postgres", "CREATE TABLE entries (id bigserial PRIMARY KEY, body text NOT NULL)")],
        [Only("postgres", "ALTER TABLE entries ADD COLUMN added_at timestamptz NOT NULL DEFAULT now()")],
    ]
)


class Count(ToolOutput):
    entries: int


def add_entry(ctx: ToolContext, body: Annotated[str, Field(description="what to note")]) -> Count:
    """Add one entry."""

    def add(conn):
        conn.execute("INSERT INTO entries (body) VALUES (?)", (body,))
        return conn.execute("SELECT count(*) FROM entries").fetchone()[0]

    return Count(entries=ctx.database().write(add))


def slow_count(ctx: ToolContext, seconds: Annotated[float, Field(description="how long", ge=0)]) -> Count:
    """Count entries slowly."""
    ctx.database().read(lambda conn: conn.execute("SELECT pg_sleep(?)", (seconds,)))
    return Count(entries=0)


@hookimpl
def hostd_database_schema(context):
    return SCHEMA


class Entries:
    """The ledger's entries as records: the local JSON list of [id, body] pairs in the plugin's data
    folder (``path``), or the team table."""

    record_kinds = (RecordKind("entries", lambda key: Text(en=f"entry {key}", zh=f"条目 {key}")),)
    import_lock = None

    def __init__(self, path=None):
        self.path = path

    def export_records(self):
        for entry_id, body in json.loads(self.path.read_text()):
            yield Record("entries", str(entry_id), {"body": body})

    def begin_import(self, conn):
        pass

    def find_record(self, conn, kind, key):
        row = conn.execute("SELECT body FROM entries WHERE id = ?", (int(key),)).fetchone()
        return None if row is None else {"body": row[0]}

    def import_record(self, conn, record, theirs):
        conn.execute("INSERT INTO entries (id, body) VALUES (?, ?)", (int(record.key), record.data["body"]))

    def end_import(self, conn):
        # Ids copied explicitly do not move the sequence: later inserts must not collide with them.
        conn.execute("SELECT setval('entries_id_seq', coalesce(max(id), 1)) FROM entries")

    def close(self):
        pass


@hookimpl
def hostd_record_store(context, local):
    if not local:
        return Entries()
    path = context.data_dir / "entries.json"
    return Entries(path) if path.exists() else None


@hookimpl
def hostd_register_tools(register):
    register(add_entry, destructive=False)
    register(slow_count, access="read")
'''


@pytest.fixture
def ledger_env(tmp_path: Path) -> dict[str, str]:
    site = install_plugin_source(
        tmp_path / "site", entry_point="ledger", module="ledger_plugin", source=LEDGER
    )
    return pythonpath_with(site)


def _config(tmp_path: Path, *, migrate: bool = True, statement_timeout_ms: int = 30_000) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"data_dir: {tmp_path / 'data'}\n"
        "language: en\n"
        "storage: {url_env: TEAM_DB, migrate: "
        + ("true" if migrate else "false")
        + f", statement_timeout_ms: {statement_timeout_ms}, connect_timeout_seconds: 2}}\n"
        "profiles:\n  default:\n    plugins: [ledger]\n",
        encoding="utf-8",
    )
    return path


def _hostd(
    env: dict[str, str], config: Path, url: str | None, *args: str, stdin: int | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {**os.environ, **env, "HOSTD_CACHE_DIR": "off"}
    full_env.pop("TEAM_DB", None)
    if url is not None:
        full_env["TEAM_DB"] = url
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args, "--config", str(config)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=stdin,
        check=False,
    )


def test_db_migrate_check_then_apply_then_current(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    config = _config(tmp_path)
    before = _hostd(ledger_env, config, postgres_url, "db", "migrate", "--check")
    assert before.returncode == 1, before.stderr
    assert "ledger: version 0 of 2: 2 migration(s) pending" in before.stdout
    applied = _hostd(ledger_env, config, postgres_url, "db", "migrate")
    assert applied.returncode == 0, applied.stderr
    assert "ledger: version 2: current" in applied.stdout
    assert "127.0.0.1:" in applied.stdout
    assert "postgres@" not in applied.stdout
    after = _hostd(ledger_env, config, postgres_url, "db", "migrate", "--check")
    assert (after.returncode, "ledger: version 2: current" in after.stdout) == (0, True)


def test_a_unix_socket_url_is_described_by_its_socket_folder_and_port(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str, postgres_server: PostgresServer
) -> None:
    """libpq's ``?host=<socket folder>&port=`` form: messages name that folder and port."""
    database = postgres_url.rsplit("/", 1)[1]
    folder, port = postgres_server.folder, postgres_server.port
    url = f"postgresql://{postgres_server.user}@/{database}?host={folder}&port={port}"
    config = _config(tmp_path)
    applied = _hostd(ledger_env, config, url, "db", "migrate")
    checked = _hostd(ledger_env, config, url, "config", "check")
    assert (applied.returncode, checked.returncode) == (0, 0), applied.stderr + checked.stderr
    assert f"storage: team database {folder}:{port}/{database}" in checked.stdout
    assert f"{folder}:{port}/{database}" in applied.stdout
    assert "localhost" not in applied.stdout + checked.stdout


def test_config_check_reports_the_database_and_its_schema(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    config = _config(tmp_path)
    pending = _hostd(ledger_env, config, postgres_url, "config", "check")
    assert pending.returncode == 1
    assert "2 migration(s) pending" in pending.stdout
    _hostd(ledger_env, config, postgres_url, "db", "migrate")
    current = _hostd(ledger_env, config, postgres_url, "config", "check")
    assert current.returncode == 0, current.stderr
    assert "storage: team database 127.0.0.1:" in current.stdout
    assert "ledger: version 2: current" in current.stdout


def test_serve_migrates_at_start_up_unless_told_not_to(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    refused = _hostd(
        ledger_env, _config(tmp_path, migrate=False), postgres_url, "serve", stdin=subprocess.DEVNULL
    )
    assert refused.returncode == 2
    assert "not current" in refused.stderr
    assert "hostd db migrate" in refused.stderr
    served = _hostd(ledger_env, _config(tmp_path), postgres_url, "serve", stdin=subprocess.DEVNULL)
    assert served.returncode == 0, served.stderr
    check = _hostd(ledger_env, _config(tmp_path), postgres_url, "db", "migrate", "--check")
    assert check.returncode == 0


def test_a_tool_writes_through_the_team_database(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    config = _config(tmp_path)
    for expected in (1, 2):
        called = _hostd(ledger_env, config, postgres_url, "call", "add_entry", "--arg", "body=思考")
        assert called.returncode == 0, called.stderr
        assert json.loads(called.stdout)["entries"] == expected


def test_a_slow_statement_is_a_timeout_envelope(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    config = _config(tmp_path, statement_timeout_ms=200)
    called = _hostd(ledger_env, config, postgres_url, "call", "slow_count", "--arg", "seconds=3")
    assert called.returncode == 1
    envelope = json.loads(called.stdout)
    assert envelope["error"]["code"] == "TIMEOUT"
    assert "200 ms" in envelope["error"]["message"]
    assert envelope["error"]["hint"]


def test_a_database_down_at_start_up_is_exit_2_naming_the_host_not_the_password(
    ledger_env: dict[str, str], tmp_path: Path
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"postgresql://team:hunter2-secret@127.0.0.1:{port}/hostd"
    served = _hostd(ledger_env, _config(tmp_path), url, "serve", stdin=subprocess.DEVNULL)
    assert served.returncode == 2
    assert f"127.0.0.1:{port}/hostd" in served.stderr
    assert "cannot be reached" in served.stderr
    assert "hunter2" not in served.stderr + served.stdout


def test_storage_without_its_environment_variable_says_what_to_set(
    ledger_env: dict[str, str], tmp_path: Path
) -> None:
    served = _hostd(ledger_env, _config(tmp_path), None, "serve", stdin=subprocess.DEVNULL)
    assert served.returncode == 2
    assert "$TEAM_DB" in served.stderr
    assert "postgresql://" in served.stderr
    wrong = _hostd(ledger_env, _config(tmp_path), "mysql://x@y/z", "db", "migrate")
    assert wrong.returncode == 2
    assert "must be a postgresql:// URL" in wrong.stderr


def test_without_storage_config_check_says_embedded(tmp_path: Path) -> None:
    config = tmp_path / "plain.yaml"
    config.write_text(
        f"data_dir: {tmp_path / 'data'}\nprofiles:\n  default:\n    plugins: []\n", encoding="utf-8"
    )
    checked = _hostd({}, config, None, "config", "check")
    assert checked.returncode == 0
    assert "storage: embedded" in checked.stdout
    migrate = _hostd({}, config, None, "db", "migrate")
    assert migrate.returncode == 2
    assert "storage: {url_env" in migrate.stderr


def test_db_copy_moves_the_local_store_once_and_reports_conflicts(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    config = _config(tmp_path)
    local = tmp_path / "data" / "ledger" / "entries.json"
    local.parent.mkdir(parents=True)
    local.write_text(json.dumps([[1, "first"], [2, "第二"]]), encoding="utf-8")
    first = _hostd(ledger_env, config, postgres_url, "db", "copy")
    assert first.returncode == 0, first.stderr
    assert "ledger: entries: 2 copied, 0 unchanged" in first.stdout
    again = _hostd(ledger_env, config, postgres_url, "db", "copy")
    assert again.returncode == 0
    assert "ledger: entries: 0 copied, 2 unchanged" in again.stdout
    local.write_text(json.dumps([[1, "first"], [2, "changed locally"]]), encoding="utf-8")
    conflict = _hostd(ledger_env, config, postgres_url, "db", "copy")
    assert conflict.returncode == 1
    assert "ledger: CONFLICT entry 2 differs in the team database" in conflict.stdout
    # Every local record in conflict: the store is not empty, it copied nothing (issue 27, item 8).
    local.write_text(json.dumps([[2, "changed again"]]), encoding="utf-8")
    only_conflicts = _hostd(ledger_env, config, postgres_url, "db", "copy")
    assert only_conflicts.returncode == 1
    assert "ledger: nothing copied\nledger: CONFLICT entry 2 differs" in only_conflicts.stdout
    assert "nothing stored locally" not in only_conflicts.stdout
    called = _hostd(ledger_env, config, postgres_url, "call", "add_entry", "--arg", "body=third")
    assert json.loads(called.stdout)["entries"] == 3  # the conflicting entry was not overwritten or added


def test_readyz_follows_the_team_database(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str, postgres_server: PostgresServer
) -> None:
    import urllib.error
    import urllib.request

    from hostd_testing import HttpServer

    def readyz(base: str) -> int:
        try:
            with urllib.request.urlopen(f"{base}/readyz", timeout=30) as answer:
                return int(answer.status)
        except urllib.error.HTTPError as refused:
            return int(refused.code)

    database = postgres_url.rsplit("/", 1)[1]
    env = {**ledger_env, "HOSTD_CACHE_DIR": "off", "TEAM_DB": postgres_url}
    with HttpServer.start(_config(tmp_path), env=env) as server:
        assert readyz(server.base) == 200
        postgres_server.psql(
            f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false;'
            f" SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '{database}'"
        )
        try:
            assert readyz(server.base) == 503
        finally:
            postgres_server.psql(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
        assert readyz(server.base) == 200


@pytest.mark.anyio
async def test_metrics_count_each_connection_the_pool_lends(
    ledger_env: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    """``hostd_db_pool_lends_total``: one lend per unit of work (add_entry is one write)."""
    import httpx2
    from hostd_testing import HttpServer
    from prometheus_client.parser import text_string_to_metric_families

    config = _config(tmp_path)
    transport = "    transport: {type: http, metrics: {enabled: true}}\n"
    config.write_text(config.read_text(encoding="utf-8") + transport, encoding="utf-8")

    def lends(base: str) -> float:
        text = httpx2.get(f"{base}/metrics", timeout=30).text
        found = [
            sample.value
            for family in text_string_to_metric_families(text)
            for sample in family.samples
            if sample.name == "hostd_db_pool_lends_total" and sample.labels == {"plugin": "ledger"}
        ]
        assert len(found) == 1, text
        return found[0]

    env = {**ledger_env, "HOSTD_CACHE_DIR": "off", "TEAM_DB": postgres_url}
    with HttpServer.start(config, env=env) as server:
        async with server.client() as client:
            await client.call_tool("add_entry", {"body": "first"})  # opens the pool
            before = lends(server.base)
            for body in ("second", "third", "fourth"):
                await client.call_tool("add_entry", {"body": body})
            assert lends(server.base) - before == 3
