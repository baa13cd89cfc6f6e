"""The ``hostd`` command as a user runs it: real subprocesses, real exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import write_config


def hostd(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hostd", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return write_config(tmp_path, ["probe"], config={"language": "en"})


@pytest.mark.smoke
def test_plugins_lists_installed_plugins(probe_install: dict[str, str]) -> None:
    done = hostd("plugins", env=probe_install)
    assert done.returncode == 0
    assert "probe" in done.stdout
    assert "probe_plugin 0.0.0" in done.stdout


def test_tools_json_gives_full_definitions(config_path: Path, probe_install: dict[str, str]) -> None:
    done = hostd("tools", "--json", "--config", str(config_path), env=probe_install)
    assert done.returncode == 0, done.stderr
    tools = {tool["name"]: tool for tool in json.loads(done.stdout)}
    assert tools["echo"]["inputSchema"]["properties"]["times"]["maximum"] == 5
    assert "outputSchema" in tools["echo"]
    assert tools["echo"]["annotations"]["readOnlyHint"] is True
    plain = hostd("tools", "--config", str(config_path), env=probe_install)
    assert "echo" in plain.stdout
    assert "[probe]" in plain.stdout


def test_call_prints_the_envelope_and_exit_codes(config_path: Path, probe_install: dict[str, str]) -> None:
    ok = hostd(
        "call",
        "echo",
        "--arg",
        "text=123",
        "--arg",
        "times=2",
        "--config",
        str(config_path),
        env=probe_install,
    )
    assert ok.returncode == 0, ok.stderr
    envelope = json.loads(ok.stdout)
    assert envelope["text"] == "123123"  # a string parameter keeps "123" as text
    as_json = hostd(
        "call",
        "echo",
        "--json",
        '{"text": "j", "style": "upper"}',
        "--config",
        str(config_path),
        env=probe_install,
    )
    assert json.loads(as_json.stdout)["text"] == "J"
    failed = hostd("call", "echo", "--arg", "times=9", "--config", str(config_path), env=probe_install)
    assert failed.returncode == 1
    assert json.loads(failed.stdout)["error"]["code"] == "INVALID_ARGUMENT"


def test_event_loop_choice(config_path: Path, probe_install: dict[str, str]) -> None:
    on_asyncio = hostd(
        "call",
        "echo",
        "--arg",
        "text=a",
        "--config",
        str(config_path),
        env={**probe_install, "HOSTD_EVENT_LOOP": "asyncio"},
    )
    assert on_asyncio.returncode == 0, on_asyncio.stderr
    assert json.loads(on_asyncio.stdout)["text"] == "a"
    unknown = hostd(
        "call",
        "echo",
        "--arg",
        "text=a",
        "--config",
        str(config_path),
        env={**probe_install, "HOSTD_EVENT_LOOP": "trio"},
    )
    assert unknown.returncode == 2
    assert "HOSTD_EVENT_LOOP" in unknown.stderr
    assert "'uvloop' or 'asyncio'" in unknown.stderr


def test_usage_and_config_errors_exit_2(tmp_path: Path, probe_install: dict[str, str]) -> None:
    assert hostd("call", "echo", "--arg", "novalue", env=probe_install).returncode == 2
    assert hostd("no-such-command").returncode == 2
    bad = tmp_path / "bad.yaml"
    bad.write_text("profiles: {x: {plugins: [not-installed]}}\n")
    done = hostd("serve", "--config", str(bad), env=probe_install)
    assert done.returncode == 2
    assert "not-installed" in done.stderr
    assert "installed plugins:" in done.stderr
    assert "probe" in done.stderr
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("plugins: {probe: {repeat_limit: -1}}\n")
    checked = hostd("config", "check", "--config", str(wrong), env=probe_install)
    assert checked.returncode == 2
    assert "plugins.probe.repeat_limit" in checked.stderr


def test_config_check_and_show(config_path: Path, probe_install: dict[str, str]) -> None:
    checked = hostd("config", "check", "--config", str(config_path), env=probe_install)
    assert checked.returncode == 0, checked.stderr
    assert "profile default: ok (1 plugins, 6 tools)" in checked.stdout
    shown = hostd("config", "show", "--config", str(config_path), env=probe_install)
    assert "profile: default" in shown.stdout
    assert "language: en" in shown.stdout


@pytest.mark.parametrize("ide", ["claude-desktop", "claude-code", "cursor", "vscode", "windsurf"])
def test_client_config_prints_an_absolute_command_with_the_config(
    config_path: Path, probe_install: dict[str, str], ide: str
) -> None:
    done = hostd("client-config", ide, "--config", str(config_path), env=probe_install)
    assert done.returncode == 0, done.stderr
    snippet = json.loads(done.stdout)
    servers = snippet["servers"] if ide == "vscode" else snippet["mcpServers"]
    entry = servers["hostd"]
    assert Path(entry["command"]).is_absolute()
    assert entry["args"][-5:] == ["serve", "--config", str(config_path.resolve()), "--profile", "default"]
    if ide == "claude-code":
        assert "claude mcp add hostd -- " in done.stderr


def test_client_config_for_claude_code_says_or_run_once(
    config_path: Path, probe_install: dict[str, str]
) -> None:
    done = hostd("client-config", "claude-code", "--config", str(config_path), env=probe_install)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("or run") == 1, done.stderr


TEAM_SECRET = "s3cret-team-token-value"


@pytest.fixture
def http_config(tmp_path: Path) -> Path:
    transport = {
        "type": "http",
        "host": "0.0.0.0",
        "port": 8765,
        "token_env": "TEAM_TOKEN",
        "allowed_hosts": ["mcp.example.internal:8765", "10.0.0.5:8765"],
    }
    return write_config(
        tmp_path,
        config={"language": "en", "profiles": {"team": {"plugins": ["probe"], "transport": transport}}},
    )


def http_client_config(
    config: Path, env: dict[str, str], ide: str, *extra: str
) -> tuple[dict[str, Any], str]:
    done = hostd(
        "client-config", ide, "--config", str(config), *extra, env={**env, "TEAM_TOKEN": TEAM_SECRET}
    )
    assert done.returncode == 0, done.stderr
    assert TEAM_SECRET not in done.stdout + done.stderr, "the token must never be written out"
    assert "0.0.0.0" not in done.stdout, "the bind address is no address a client can reach"
    snippet: dict[str, Any] = json.loads(done.stdout)
    return snippet, done.stderr


def test_client_config_for_http_uses_the_first_allowed_host_and_each_ides_secret_reference(
    http_config: Path, probe_install: dict[str, str]
) -> None:
    url = "http://mcp.example.internal:8765/mcp"
    cursor, _ = http_client_config(http_config, probe_install, "cursor")
    assert cursor == {
        "mcpServers": {"hostd": {"url": url, "headers": {"Authorization": "Bearer ${env:TEAM_TOKEN}"}}}
    }
    windsurf, _ = http_client_config(http_config, probe_install, "windsurf")
    assert windsurf == {
        "mcpServers": {"hostd": {"serverUrl": url, "headers": {"Authorization": "Bearer ${env:TEAM_TOKEN}"}}}
    }
    vscode, _ = http_client_config(http_config, probe_install, "vscode")
    [prompt] = vscode["inputs"]
    assert prompt["type"] == "promptString"
    assert prompt["password"] is True
    assert prompt["description"]
    assert vscode["servers"] == {
        "hostd": {
            "type": "http",
            "url": url,
            "headers": {"Authorization": f"Bearer ${{input:{prompt['id']}}}"},
        }
    }
    claude_code, notes = http_client_config(http_config, probe_install, "claude-code")
    assert claude_code == {
        "mcpServers": {
            "hostd": {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${TEAM_TOKEN}"}}
        }
    }
    assert notes.count("or run") == 1
    assert "claude mcp add --transport http" in notes
    assert url in notes
    assert "'Authorization: Bearer ${TEAM_TOKEN}'" in notes  # quoted: the shell does not expand it


def test_client_config_url_option_is_used_exactly(http_config: Path, probe_install: dict[str, str]) -> None:
    url = "https://mcp.example.com/team/mcp"
    cursor, _ = http_client_config(http_config, probe_install, "cursor", "--url", url)
    assert cursor["mcpServers"]["hostd"]["url"] == url
    refused = hostd(
        "client-config", "cursor", "--config", str(http_config), "--url", "mcp.example.com", env=probe_install
    )
    assert refused.returncode == 2
    assert "--url" in refused.stderr


def test_client_config_for_claude_desktop_over_http_points_to_connectors(
    http_config: Path, probe_install: dict[str, str]
) -> None:
    """Claude Desktop reads only stdio servers from its config file: a URL there is skipped."""
    done = hostd("client-config", "claude-desktop", "--config", str(http_config), env=probe_install)
    assert done.returncode == 2
    assert "Connectors" in done.stderr
    assert "stdio" in done.stderr


def test_global_options_work_before_and_after_the_command(
    config_path: Path, probe_install: dict[str, str]
) -> None:
    before = hostd("--config", str(config_path), "tools", env=probe_install)
    after = hostd("tools", "--config", str(config_path), env=probe_install)
    assert before.returncode == after.returncode == 0
    assert before.stdout == after.stdout
