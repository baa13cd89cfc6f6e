"""The PostgreSQL fixture starts a real server, isolates tests by database, and refuses to skip in CI."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_testing import postgres
from hostd_testing.postgres import PostgresServer


def test_each_test_database_is_separate(postgres_server: PostgresServer) -> None:
    first = postgres_server.create_database().rsplit("/", 1)[1]
    second = postgres_server.create_database().rsplit("/", 1)[1]
    assert first != second
    postgres_server.psql("CREATE TABLE notes (body text); INSERT INTO notes VALUES ('only here')", first)
    assert postgres_server.psql("SELECT body FROM notes", first).strip() == "only here"
    tables = postgres_server.psql("SELECT count(*) FROM pg_tables WHERE tablename = 'notes'", second)
    assert tables.strip() == "0"


def test_server_speaks_utf8_and_listens_on_loopback_only(postgres_server: PostgresServer) -> None:
    settings = postgres_server.psql("SHOW listen_addresses; SHOW server_encoding; SELECT '思考'")
    assert settings.split() == ["127.0.0.1", "UTF8", "思考"]


def test_a_server_started_with_settings_runs_with_them() -> None:
    with postgres.running_postgres(settings={"work_mem": "7MB", "log_min_messages": "notice"}) as server:
        assert server.psql("SHOW work_mem; SHOW log_min_messages").split() == ["7MB", "notice"]


def test_fresh_database_url_per_test(postgres_url: str, postgres_server: PostgresServer) -> None:
    assert postgres_url.startswith(f"postgresql://postgres@127.0.0.1:{postgres_server.port}/test_")


def test_missing_server_fails_when_required(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(postgres.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="apt-get install postgresql"):
        postgres._unavailable("initdb was not found")


def test_missing_server_skips_with_install_hint_locally(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(postgres.REQUIRE_ENV, raising=False)
    with pytest.raises(pytest.skip.Exception, match="apt-get install postgresql"):
        postgres._unavailable("initdb was not found")


def test_a_server_left_by_a_killed_run_is_stopped_and_removed() -> None:
    import subprocess
    import sys

    # A run killed before its teardown: the child starts a server, prints its folder, and is killed.
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from hostd_testing.postgres import running_postgres\n"
            "with running_postgres() as server:\n"
            "    print(server.folder, flush=True)\n"
            "    time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    with child.stdout:  # closed, or the pipe is a ResourceWarning (an error under filterwarnings)
        folder = Path(child.stdout.readline().strip())
        child.kill()
        child.wait()
    pid_file = folder / "data" / "postmaster.pid"
    assert pid_file.exists(), "the killed run's server should still be running"
    bindir = postgres.find_bindir()
    assert bindir is not None
    assert folder in postgres.reap_abandoned(bindir)
    assert not folder.exists()
