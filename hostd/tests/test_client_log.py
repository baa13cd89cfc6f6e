"""Log notifications: a client gets the server's log records of its own requests, at or above its
level, through the official client against real ``hostd serve`` processes (stdio and HTTP, both
protocol eras)."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import mcp_types
import pytest
from hostd_testing import HttpServer, served_client, write_config
from hostd_testing.raw_stdio import handshake, raw_stdio_server, request, tools_call
from mcp.shared.exceptions import MCPDeprecationWarning

pytestmark = pytest.mark.anyio

PROBE_LOGGER = "hostd.plugin.probe"


class Received:
    """What the client's logging callback was handed."""

    def __init__(self) -> None:
        self.messages: list[mcp_types.LoggingMessageNotificationParams] = []

    async def __call__(self, params: mcp_types.LoggingMessageNotificationParams) -> None:
        self.messages.append(params)

    def take(self) -> list[tuple[str, str | None, Any]]:
        taken: list[tuple[str, str | None, Any]] = [(m.level, m.logger, m.data) for m in self.messages]
        self.messages.clear()
        return taken


async def set_level(client: Any, level: str) -> None:
    """logging/setLevel, deprecated from 2026-07-28 on and the way of every earlier version."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", MCPDeprecationWarning)
        await client.set_logging_level(level)


def noisy_says(*levels: str) -> list[tuple[str, str | None, Any]]:
    return [(level, PROBE_LOGGER, f"noisy says {level}") for level in levels]


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    return write_config(tmp_path, ["probe"])


async def test_stdio_handshake_era_sends_what_is_at_or_above_the_level_set(
    config_path: Path, probe_install: dict[str, str]
) -> None:
    received = Received()
    async with served_client(config_path, env=probe_install, logging_callback=received) as client:
        assert (await client.call_tool("noisy", {})).is_error is False
        assert received.take() == [], "nothing is sent before the client sets a level"

        await set_level(client, "warning")
        assert (await client.call_tool("noisy", {})).is_error is False
        assert received.take() == noisy_says("warning", "error")

        await set_level(client, "debug")
        await client.call_tool("noisy", {})
        assert received.take() == noisy_says("debug", "info", "warning", "error")

        await set_level(client, "emergency")
        await client.call_tool("noisy", {})
        assert received.take() == []

        # A tool that crashes: the host's error record is sent, its traceback never is.
        await set_level(client, "error")
        crashed = await client.call_tool("fail", {"kind": "crash"})
        assert crashed.is_error is True
        sent = received.take()
        assert [(level, name) for level, name, _ in sent] == [("error", "hostd")]
        assert "fail" in str(sent[0][2])
        assert "secret internal detail" not in str(sent[0][2])


def test_stdio_a_level_that_does_not_exist_is_refused(
    config_path: Path, probe_install: dict[str, str]
) -> None:
    """The official client refuses to send one, so this speaks raw JSON-RPC."""
    with raw_stdio_server(config_path, env=probe_install) as server:
        server.send(
            *handshake("t"),
            request(2, "logging/setLevel", {"level": "loud"}),
            request(3, "logging/setLevel", {"level": "notice"}),
            tools_call(4, "echo", {"text": "ok"}),
        )
        by_id = {answer.get("id"): answer for answer in server.read_until({1, 2, 3, 4})}
        server.finish()
    assert by_id[2]["error"]["code"] == -32602
    assert by_id[3]["result"] == {}
    assert by_id[4]["result"]["isError"] is False


async def test_stdio_2026_era_sends_what_each_request_opts_in_to(
    config_path: Path, probe_install: dict[str, str]
) -> None:
    received = Received()
    async with served_client(
        config_path, env=probe_install, mode="2026-07-28", logging_callback=received, log_level="info"
    ) as client:
        await client.call_tool("noisy", {})
        assert received.take() == noisy_says("info", "warning", "error")


@pytest.mark.parametrize(
    ("mode", "level", "expected"),
    [
        ("legacy", "info", ("info", "warning", "error")),
        ("2026-07-28", "error", ("error",)),
    ],
)
async def test_http_sends_the_records_of_a_real_call_at_or_above_the_level(
    config_path: Path, probe_install: dict[str, str], mode: str, level: str, expected: tuple[str, ...]
) -> None:
    received = Received()
    options: dict[str, Any] = {"log_level": level} if mode != "legacy" else {}
    with HttpServer.start(config_path, env=probe_install) as server:
        async with server.client(mode=mode, logging_callback=received, **options) as client:
            if mode == "legacy":
                await set_level(client, level)
            assert (await client.call_tool("noisy", {})).is_error is False
            assert received.take() == noisy_says(*expected)
        # Another client that set no level gets none of it.
        quiet = Received()
        async with server.client(mode=mode, logging_callback=quiet) as client:
            await client.call_tool("noisy", {})
            assert quiet.take() == []


async def test_the_logging_capability_is_declared(config_path: Path, probe_install: dict[str, str]) -> None:
    async with served_client(config_path, env=probe_install) as client:
        capabilities = client.server_capabilities
        assert capabilities.logging is not None
