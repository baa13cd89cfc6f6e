"""The README's example config works as shown, ``client-config IDE`` takes the IDE's own
profile, and ``config check`` checks every profile and what start-up needs from the machine
(the data folder, the ports, the tokens file, the database, the identity provider), naming each
problem by its config key. Real files, sockets and a real PostgreSQL."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

README = Path(__file__).resolve().parents[2] / "README.md"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def busy_port() -> Iterator[int]:
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    try:
        yield holder.getsockname()[1]
    finally:
        holder.close()


def _readme_example() -> str:
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Config reference") :]
    found = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert found is not None
    return found.group(1)


@pytest.fixture
def user_home(tmp_path: Path) -> dict[str, str]:
    """A fresh user: HOME and the XDG folders under tmp_path (the user config is read from there)."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "HOSTD_CACHE_DIR": "off",
    }


def _hostd(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v for k, v in os.environ.items() if k not in ("HOSTD_CONFIG", "HOSTD_PROFILE", "HOSTD_DATA_DIR")
    }
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args],
        capture_output=True,
        text=True,
        env={**clean, **env},
        stdin=subprocess.DEVNULL,
        timeout=120,
    )


def test_the_readme_example_config_works_as_shown_from_the_user_config(user_home: dict[str, str]) -> None:
    """It had no profile named ``default``: every command below exited 2."""
    example = _readme_example().replace("port: 8765", f"port: {_free_port()}")
    config = Path(user_home["XDG_CONFIG_HOME"]) / "hostd" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(example, encoding="utf-8")
    names = list(yaml.safe_load(example)["profiles"])
    checked = _hostd(user_home, "config", "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert [line.split(":")[0] for line in checked.stdout.splitlines() if line.startswith("profile ")] == [
        f"profile {name}" for name in names
    ]
    for args in (("tools",), ("call", "list_tasks"), ("config", "show")):
        done = _hostd(user_home, *args)
        assert done.returncode == 0, (args, done.stderr)
    for ide, profile in (("cursor", "cursor"), ("claude-desktop", "claude-desktop"), ("vscode", "default")):
        done = _hostd(user_home, "client-config", ide)
        assert done.returncode == 0, done.stderr
        entry = json.loads(done.stdout)
        servers = entry["servers"] if ide == "vscode" else entry["mcpServers"]
        args = servers["hostd"]["args"]
        assert args[args.index("--profile") + 1] == profile
    with subprocess.Popen(
        [sys.executable, "-m", "hostd", "web", "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **user_home},
    ) as web:
        try:
            assert web.stdout is not None
            first = web.stdout.readline()
        finally:
            web.terminate()
            web.wait(timeout=30)
    assert first.startswith("hostd dashboard for profile default: open http://127.0.0.1:"), first


def test_client_config_takes_the_named_profile_over_the_ides(
    user_home: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "profiles:\n  cursor: {plugins: [memory]}\n  other: {plugins: [tasks]}\n", encoding="utf-8"
    )
    named = _hostd(user_home, "client-config", "cursor", "--config", str(config), "--profile", "other")
    args = json.loads(named.stdout)["mcpServers"]["hostd"]["args"]
    assert args[args.index("--profile") + 1] == "other"
    own = _hostd(user_home, "client-config", "cursor", "--config", str(config))
    args = json.loads(own.stdout)["mcpServers"]["hostd"]["args"]
    assert args[args.index("--profile") + 1] == "cursor"
    windsurf = _hostd(user_home, "client-config", "windsurf", "--config", str(config))
    assert windsurf.returncode == 2
    assert "several profiles and none named 'default'" in windsurf.stderr


def test_config_check_checks_every_profile_even_without_a_default(
    user_home: dict[str, str], tmp_path: Path
) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        f"data_dir: {tmp_path / 'data'}\nprofiles:\n  a: {{plugins: [memory]}}\n  b: {{plugins: [tasks]}}\n",
        encoding="utf-8",
    )
    checked = _hostd(user_home, "config", "check", "--config", str(config))
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.splitlines()[:2] == [
        "profile a: ok (1 plugins, 18 tools)",
        "profile b: ok (1 plugins, 17 tools)",
    ]
    one = _hostd(user_home, "config", "check", "--config", str(config), "--profile", "b")
    assert one.stdout.splitlines()[0] == "profile b: ok (1 plugins, 17 tools)"
    assert "profile a" not in one.stdout


def _problems(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith(("problem: ", "warning: "))]


def test_config_check_names_what_start_up_would_hit_by_its_key(
    user_home: dict[str, str], tmp_path: Path, busy_port: int
) -> None:
    (tmp_path / "afile").write_text("not a folder", encoding="utf-8")
    data = tmp_path / "afile" / "data"
    missing = tmp_path / "no-such-tokens.yaml"
    transport = {
        "type": "http",
        "port": busy_port,
        "tokens_file": str(missing),
        "metrics": {"port": busy_port},
    }
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {"data_dir": str(data), "profiles": {"team": {"plugins": ["tasks"], "transport": transport}}}
        ),
        encoding="utf-8",
    )
    checked = _hostd(user_home, "config", "check", "--config", str(config))
    assert checked.returncode == 2, checked.stdout + checked.stderr
    in_use = "is already in use by another process: stop it, or choose another port with"
    assert _problems(checked.stdout) == [
        f"problem: data_dir: the data folder {data} cannot be created: {tmp_path / 'afile'} is a file, not a "
        "folder (ENOTDIR): point data_dir ($HOSTD_DATA_DIR) at a writable folder",
        f"problem: profiles.team.transport.port: port {busy_port} on 127.0.0.1 {in_use} "
        "profiles.team.transport.port",
        f"problem: profiles.team.transport.metrics.port: port {busy_port} on 127.0.0.1 {in_use} "
        "profiles.team.transport.metrics.port",
        f"problem: profiles.team.transport.tokens_file: cannot read {missing}: "
        "No such file or directory (ENOENT)",
    ]
    assert sorted(path.name for path in tmp_path.iterdir()) == ["afile", "c.yaml", "home"]  # nothing made


def test_an_identity_provider_that_does_not_answer_is_a_warning(
    user_home: dict[str, str], tmp_path: Path
) -> None:
    closed = _free_port()  # nothing listens there
    issuer = f"http://127.0.0.1:{closed}/realms/team"
    transport = {
        "type": "http",
        "port": _free_port(),
        "oauth": {"issuer": issuer, "resource": "http://127.0.0.1/mcp"},
    }
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(tmp_path / "data"),
                "profiles": {"team": {"plugins": ["tasks"], "transport": transport}},
            }
        ),
        encoding="utf-8",
    )
    checked = _hostd(user_home, "config", "check", "--config", str(config))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    [warning] = _problems(checked.stdout)
    assert warning.startswith(
        "warning: profiles.team.transport.oauth.issuer: the identity provider's metadata could not be read ("
        f"http://127.0.0.1:{closed}/.well-known/oauth-authorization-server/realms/team: "
    )
    assert warning.endswith("): members cannot sign in until it can")
    assert "Connection refused" in warning


def _storage_config(tmp_path: Path) -> Path:
    config = tmp_path / "db.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(tmp_path / "data"),
                "storage": {"url_env": "CHECK_DATABASE_URL", "connect_timeout_seconds": 2},
                "profiles": {"default": {"plugins": ["tasks"]}},
            }
        ),
        encoding="utf-8",
    )
    return config


def test_config_check_reaches_the_database(
    user_home: dict[str, str], tmp_path: Path, postgres_url: str
) -> None:
    config = _storage_config(tmp_path)
    _hostd({**user_home, "CHECK_DATABASE_URL": postgres_url}, "db", "migrate", "--config", str(config))
    reached = _hostd(
        {**user_home, "CHECK_DATABASE_URL": postgres_url}, "config", "check", "--config", str(config)
    )
    assert reached.returncode == 0, reached.stdout + reached.stderr
    assert _problems(reached.stdout) == []
    assert "tasks: version" in reached.stdout
    down = f"postgresql://nobody@127.0.0.1:{_free_port()}/nothing"
    unreached = _hostd({**user_home, "CHECK_DATABASE_URL": down}, "config", "check", "--config", str(config))
    assert unreached.returncode == 2
    [problem] = _problems(unreached.stdout)
    assert problem.startswith("problem: storage.url_env: ")
