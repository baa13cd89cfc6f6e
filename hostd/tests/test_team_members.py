"""Team members over HTTP: a tokens file of member-name: token, each call knowing its member
(``ctx.member``), tokens limited to a profile, and the file reloaded without a restart."""

from __future__ import annotations

import getpass
import hmac
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd.core.errors import HostError
from hostd.team.members import MemberDirectory, TokenBook, parse_tokens_file
from hostd_testing import HttpServer, envelope_of, in_memory_client, write_config
from team_support import install_team_plugins, write_tokens

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"
PROFILES = {"default", "readonly"}


# --- the file --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("alice: alice-token-0123456789\nbad name!: another-token-0123456\n", 2, "must match"),
        ("alice: short\n", 1, "at least 16 characters"),
        (
            "alice: alice-token-0123456789\nbob: {token: bob-token-0123456789ab, profile: nope}\n",
            2,
            "no profile",
        ),
        ("alice: alice-token-0123456789\nbob: alice-token-0123456789\n", 2, "same token"),
        ("alice: {token: alice-token-0123456789, role: admin}\n", 1, "only 'token' and 'profile'"),
        ("- alice\n", 1, "must be a mapping"),
        ("alice: [a, b]\n", 1, "give a token"),
        ("alice: alice-token-0123456789\nalice: other-token-0123456789\n", 2, "listed twice"),
    ],
)
def test_a_bad_tokens_file_names_its_line(text: str, line: int, problem: str) -> None:
    with pytest.raises(HostError) as caught:
        parse_tokens_file(text, "tokens.yaml", PROFILES)
    assert f"tokens.yaml:{line}:" in str(caught.value)
    assert problem in str(caught.value)
    assert "0123456789" not in str(caught.value)  # a token never reaches a message


def test_short_and_long_forms() -> None:
    parsed = parse_tokens_file(f"alice: {ALICE}\nbob: {{token: {BOB}, profile: readonly}}\n", "t", PROFILES)
    assert parsed["alice"][0] == ALICE
    assert parsed["alice"][1].profile is None
    assert parsed["bob"][0] == BOB
    assert parsed["bob"][1].profile == "readonly"


def test_a_token_is_compared_with_every_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """No early exit: the time taken does not tell which token (or whether any) matched."""
    import hostd.core.identity

    book = TokenBook(
        {name: (token, hostd.core.identity.Member(name)) for name, token in [("a", ALICE), ("b", BOB)]}
    )
    compared: list[int] = []
    real = hmac.compare_digest

    def counting(left: bytes, right: bytes) -> bool:
        compared.append(len(left))
        return real(left, right)

    monkeypatch.setattr("hostd.team.members.hmac.compare_digest", counting)
    member = book.identify(ALICE)
    assert member is not None
    assert member.name == "a"
    assert book.identify("unknown-token-0000000") is None
    assert compared == [32, 32, 32, 32]  # both tokens both times, as digests of equal length


def test_the_file_is_reloaded_when_it_changes(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    path = write_tokens(tmp_path / "tokens.yaml", {"alice": ALICE})
    directory = MemberDirectory(
        env_token=None, tokens_file=path, known_profiles=PROFILES, clock=lambda: now[0]
    )
    assert directory.identify(ALICE).name == "alice"  # type: ignore[union-attr]
    write_tokens(path, {"bob": BOB})
    os.utime(path, ns=(time.time_ns() + 10**9,) * 2)
    assert directory.identify(ALICE) is not None, "looked at no more than once a second"
    now[0] += 1.5
    assert directory.identify(ALICE) is None  # removed: refused
    assert directory.identify(BOB).name == "bob"  # type: ignore[union-attr]
    path.write_text("bob: short\n", encoding="utf-8")  # a bad edit keeps the members loaded before
    now[0] += 1.5
    assert directory.identify(BOB).name == "bob"  # type: ignore[union-attr]
    assert "tokens.yaml:1:" in caplog.text
    assert BOB not in caplog.text


def test_token_env_belongs_to_the_member_default(tmp_path: Path) -> None:
    path = write_tokens(tmp_path / "tokens.yaml", {"alice": ALICE})
    directory = MemberDirectory(env_token="env-token", tokens_file=path, known_profiles=PROFILES)
    assert directory.identify("env-token").name == "default"  # type: ignore[union-attr]
    assert directory.identify(ALICE).name == "alice"  # type: ignore[union-attr]
    write_tokens(path, {"default": BOB})
    with pytest.raises(HostError, match="token_env"):
        MemberDirectory(env_token="env-token", tokens_file=path, known_profiles=PROFILES)


def test_serve_refuses_to_start_with_a_bad_tokens_file(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {ALICE}\nbob: short\n", encoding="utf-8")
    config = write_config(
        tmp_path,
        ["summary-writer"],
        config={"profiles": {"default": {"transport": {"tokens_file": str(tokens)}}}},
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "hostd",
            "serve",
            "--config",
            str(config),
            "--transport",
            "http",
            "--port",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert f"{tokens}:2:" in done.stderr
    assert "at least 16 characters" in done.stderr


# --- the member in the tool context ---------------------------------------------------------------


def _whoami_plugin() -> dict[str, object]:
    import team_probe_plugin

    return {"team": team_probe_plugin}


async def test_in_process_calls_are_the_local_user(tmp_path: Path) -> None:
    async with in_memory_client(["team"], data_dir=tmp_path, extra_plugins=_whoami_plugin()) as client:
        envelope = envelope_of(await client.call_tool("whoami", {}))
    assert envelope["member"] == getpass.getuser()


async def test_stdio_is_the_local_user(tmp_path: Path) -> None:
    from hostd_testing import served_client

    config = write_config(tmp_path, ["team"])
    async with served_client(config, env=install_team_plugins(tmp_path)) as client:
        envelope = envelope_of(await client.call_tool("whoami", {}))
    assert envelope["member"] == getpass.getuser()


def test_hostd_call_is_the_local_user(tmp_path: Path) -> None:
    env = {**os.environ, **install_team_plugins(tmp_path)}
    config = write_config(tmp_path, ["team"])
    done = subprocess.run(
        [sys.executable, "-m", "hostd", "call", "whoami", "--config", str(config)],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["member"] == getpass.getuser()


# --- served -----------------------------------------------------------------------------------


@pytest.fixture
def team_server(tmp_path: Path) -> Iterator[tuple[HttpServer, Path]]:
    tokens = write_tokens(
        tmp_path / "tokens.yaml", {"alice": ALICE, "bob": {"token": BOB, "profile": "readonly"}}
    )
    transport = {"tokens_file": str(tokens), "token_env": "TEAM_TOKEN"}
    config = write_config(
        tmp_path,
        config={
            "profiles": {
                "default": {"plugins": ["probe", "team"], "transport": transport},
                "readonly": {
                    "plugins": ["probe", "team"],
                    "tools": {"probe": {"exclude": ["fail", "noisy"]}},
                },
            }
        },
    )
    env = {**install_team_plugins(tmp_path), "TEAM_TOKEN": "env-token-for-default"}
    with HttpServer.start(config, env=env) as server:
        yield server, tokens


async def _whoami(server: HttpServer, token: str) -> str:
    async with server.client(headers={"Authorization": f"Bearer {token}"}) as client:
        return str(envelope_of(await client.call_tool("whoami", {}))["member"])


async def test_each_token_is_its_member(team_server: tuple[HttpServer, Path]) -> None:
    server, _ = team_server
    assert await _whoami(server, ALICE) == "alice"
    assert await _whoami(server, BOB) == "bob"
    assert await _whoami(server, "env-token-for-default") == "default"


def _status(server: HttpServer, token: str) -> int:
    from team_support import INITIALIZE, post

    return int(post(server.url, INITIALIZE, {"Authorization": f"Bearer {token}"}).status_code)


def test_unknown_token_is_401_and_not_logged(team_server: tuple[HttpServer, Path]) -> None:
    server, _ = team_server
    assert _status(server, "stolen-token-00000000000") == 401
    assert _status(server, ALICE) == 200
    server.process.send_signal(signal.SIGINT)
    _, err = server.process.communicate(timeout=30)
    assert b"stolen-token" not in err
    assert ALICE.encode() not in err


async def test_a_profile_limits_what_a_member_sees_and_calls(team_server: tuple[HttpServer, Path]) -> None:
    server, _ = team_server
    async with server.client(headers={"Authorization": f"Bearer {BOB}"}) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert "fail" not in names
        assert "noisy" not in names
        assert {"echo", "whoami"} <= names
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError) as limited:
            await client.call_tool("fail", {"kind": "tool_error"})
        with pytest.raises(MCPError) as missing:
            await client.call_tool("no_such_tool", {})
        # As if the tool did not exist: the same code, the same words, and no hint that it does.
        assert limited.value.error.code == missing.value.error.code
        assert limited.value.error.message.replace("fail", "no_such_tool") == missing.value.error.message
        assert "fail," not in limited.value.error.message
    async with server.client(headers={"Authorization": f"Bearer {ALICE}"}) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert {"fail", "noisy"} <= names


def _until(condition: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def test_the_tokens_file_is_reloaded_on_change_and_on_sighup(team_server: tuple[HttpServer, Path]) -> None:
    server, tokens = team_server
    assert _status(server, ALICE) == 200
    carol = "carol-token-0123456789"
    write_tokens(tokens, {"bob": {"token": BOB, "profile": "readonly"}, "carol": carol})
    _until(lambda: _status(server, carol) == 200)  # within about a second, no restart
    assert _status(server, ALICE) == 401  # removed
    # Change carol's token but keep the file's size and time: only SIGHUP can notice.
    stat = tokens.stat()
    carol2 = "carol-token-9876543210"
    write_tokens(tokens, {"bob": {"token": BOB, "profile": "readonly"}, "carol": carol2})
    os.utime(tokens, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    time.sleep(1.2)  # past the once-a-second look at the file, which must find nothing new
    assert _status(server, carol) == 200
    server.process.send_signal(signal.SIGHUP)
    _until(lambda: _status(server, carol2) == 200)
    assert _status(server, carol) == 401


def test_a_request_state_is_bound_to_its_member(team_server: tuple[HttpServer, Path]) -> None:
    """The sealed answers of one member's call cannot be replayed under another member's token."""
    from team_support import call_modern

    server, _ = team_server
    asked = call_modern(server.url, "ask", {"prompt": "two words?"}, {"sampling": {}}, token=ALICE)["result"]
    ((key, _),) = asked["inputRequests"].items()
    reply = {"role": "assistant", "content": {"type": "text", "text": "green tea"}, "model": "m"}
    retry = {"inputResponses": {key: reply}, "requestState": asked["requestState"]}
    replayed = call_modern(server.url, "ask", {"prompt": "two words?"}, {"sampling": {}}, token=BOB, **retry)
    assert replayed["error"]["code"] == -32602
    answered = call_modern(
        server.url, "ask", {"prompt": "two words?"}, {"sampling": {}}, token=ALICE, **retry
    )
    assert answered["result"]["structuredContent"]["text"] == "green tea"


def test_the_local_member_falls_back_when_there_is_no_login_name(monkeypatch: pytest.MonkeyPatch) -> None:
    import hostd.core.identity

    def no_login() -> str:
        raise KeyError("getpwuid(): uid not found: 12345")

    monkeypatch.setattr("hostd.core.identity.getpass.getuser", no_login)
    assert hostd.core.identity.local_member() == "local"
    monkeypatch.setattr("hostd.core.identity.getpass.getuser", lambda: "name with spaces")
    assert hostd.core.identity.local_member() == "local"  # not a valid member name: never passed on


def test_the_local_member_follows_the_login_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    """The login name is remembered between calls, but never past a change of what it comes from."""
    import hostd.core.identity

    for variable in ("LOGNAME", "USER", "LNAME", "USERNAME"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("LOGNAME", "alice")
    assert hostd.core.identity.local_member() == "alice"
    assert hostd.core.identity.local_member() == "alice"
    monkeypatch.setenv("LOGNAME", "bob")
    assert hostd.core.identity.local_member() == "bob"
