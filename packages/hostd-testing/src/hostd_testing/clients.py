"""Official MCP clients connected to a host: in-process, or to a real ``hostd serve``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, cast

import mcp_types
import yaml
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.protocol.server import build_server
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from pydantic import FileUrl

# ``free_port`` is offered here too, beside the servers it is for (tests import it from here).
from hostd_testing.processes import free_port as free_port
from hostd_testing.processes import stop_process


def envelope_of(result: Any) -> dict[str, Any]:
    """The envelope of a tool result, checking that the text block says the same (less its empty values)."""
    from hostd.core.tools import for_the_model

    structured = result.structured_content
    text = json.loads(result.content[0].text)
    assert for_the_model(structured) == text, "structuredContent and the text block differ"
    assert structured["status"] == ("error" if result.is_error else "success")
    return cast(dict[str, Any], structured)


def root_for(path: Path) -> mcp_types.Root:
    """A client root for a local folder (what an IDE answers to roots/list)."""
    return mcp_types.Root(uri=FileUrl(path.as_uri()))


def prompt_text(params: mcp_types.CreateMessageRequestParams) -> str:
    """The text of the first message of a sampling request (the server's prompt)."""
    content = params.messages[0].content
    assert isinstance(content, mcp_types.TextContent), content
    return content.text


def profile_config(
    plugins: list[str] | None, config: dict[str, Any] | None, settings: dict[str, Any] | None
) -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(json.dumps(config or {}))
    raw.setdefault("profiles", {"default": {"plugins": plugins}} if plugins is not None else {})
    if settings:
        raw.setdefault("plugins", {}).update(settings)
    return raw


@asynccontextmanager
async def in_memory_client(
    plugins: list[str] | None = None,
    *,
    data_dir: Path,
    config: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    extra_plugins: Mapping[str, object] | None = None,
    cwd: Path | None = None,
    profile: str | None = None,
    mode: str = "legacy",
    **client_options: Any,
) -> AsyncIterator[Client]:
    """A connected client over a host running ``plugins`` (entry-point names).

    ``config`` is a whole config mapping (as the YAML would hold); ``settings`` is merged
    into its ``plugins`` section. Start-up and shut-down hooks run around the block.
    """
    loaded = config_from_mapping(profile_config(plugins, config, settings), profile, data_dir=data_dir)
    host = Host(loaded, extra_plugins=extra_plugins, cwd=cwd)
    host.startup()
    try:
        async with Client(build_server(host), mode=mode, **client_options) as client:
            yield client
    finally:
        host.shutdown()


def write_config(
    directory: Path,
    plugins: list[str] | None = None,
    *,
    config: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
) -> Path:
    """Write a YAML config (data under ``directory/data``) and return its path."""
    raw = profile_config(plugins, config, settings)
    raw.setdefault("data_dir", str(directory / "data"))
    path = directory / "hostd.yaml"
    path.write_text(yaml.safe_dump(raw, allow_unicode=True), encoding="utf-8")
    return path


def _serve_command(config_path: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "hostd", "serve", "--config", str(config_path), *extra]


@asynccontextmanager
async def served_client(
    config_path: Path,
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    mode: str = "legacy",
    **client_options: Any,
) -> AsyncIterator[Client]:
    """A client talking over stdio to a real ``hostd serve`` subprocess."""
    parameters = StdioServerParameters(
        command=sys.executable,
        args=_serve_command(config_path)[1:],
        env={**os.environ, **(env or {})},
        cwd=str(cwd) if cwd else None,
    )
    async with Client(parameters, mode=mode, **client_options) as client:
        yield client


class HttpServer:
    """A real ``hostd serve --transport http`` process on a free loopback port."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, host: str = "127.0.0.1") -> None:
        self.process = process
        self.port = port
        self.host = host

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/mcp"

    @property
    def base(self) -> str:
        return f"http://{self.host}:{self.port}"

    @asynccontextmanager
    async def client(
        self, *, headers: dict[str, str] | None = None, mode: str = "legacy", **client_options: Any
    ) -> AsyncIterator[Client]:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        async with httpx2.AsyncClient(headers=headers or {}, timeout=httpx2.Timeout(30, read=300)) as http:
            transport = streamable_http_client(self.url, http_client=http)
            async with Client(transport, mode=mode, **client_options) as client:
                yield client

    @classmethod
    @contextmanager
    def start(
        cls,
        config_path: Path,
        *,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
        extra_args: tuple[str, ...] = (),
        startup_timeout: float = 120.0,
    ) -> Iterator[HttpServer]:
        """Serve ``config_path`` over HTTP on a free port, once the port accepts connections.

        ``startup_timeout`` only guards against a server that never starts: on a loaded machine
        (parallel test workers beside other suites) a start took over 30 s.
        """
        port = free_port()
        process = subprocess.Popen(
            _serve_command(config_path, "--transport", "http", "--port", str(port), *extra_args),
            env={**os.environ, **(env or {})},
            cwd=str(cwd) if cwd else None,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + startup_timeout
            while True:
                if process.poll() is not None:
                    _, err = process.communicate()
                    raise RuntimeError(
                        f"hostd serve exited with {process.returncode}: {err.decode()[-2000:]}"
                    )
                try:
                    with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                        break
                except OSError:
                    if time.monotonic() > deadline:
                        raise TimeoutError("hostd serve did not open its port in time") from None
                    time.sleep(0.05)
            yield cls(process, port)
        finally:
            stop_process(process)
