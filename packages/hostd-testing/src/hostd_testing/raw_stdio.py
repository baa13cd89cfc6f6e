"""A ``hostd serve`` process spoken to in raw JSON-RPC lines over stdio, without an MCP client.

For what a client library would hide: garbage lines, a batch written at once, stdin closed or
the process killed in the middle of a call, the exact bytes on stdout, cold-start timings. The
host's tests, the wechat plugin's tests and the benchmarks each had a copy of this.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

Message = dict[str, Any]

PROTOCOL_VERSION = "2025-06-18"

#: The notification a client sends after the initialize answer.
INITIALIZED: Message = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def initialize(request_id: int = 1, client_name: str = "raw") -> Message:
    """The ``initialize`` request of a client with no capabilities."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": {"name": client_name, "version": "1"},
        },
    }


def request(request_id: int, method: str, params: Mapping[str, Any] | None = None) -> Message:
    """A JSON-RPC request (``params`` left out when None)."""
    message: Message = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = dict(params)
    return message


def tools_call(request_id: int, name: str, arguments: Mapping[str, Any] | None = None) -> Message:
    """A ``tools/call`` request."""
    return request(request_id, "tools/call", {"name": name, "arguments": dict(arguments or {})})


def handshake(client_name: str = "raw") -> list[Message]:
    """``initialize`` (id 1) then ``notifications/initialized``: what every session starts with."""
    return [initialize(1, client_name), INITIALIZED]


def encode(*lines: Message | str) -> bytes:
    """Messages (dicts) and raw text lines, one per line, as the bytes written to stdin."""
    return "".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines).encode()


class RawStdioServer:
    """One ``python -m hostd serve`` process with pipes; write lines, read answers by id."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process

    @property
    def stdin(self) -> IO[bytes]:
        assert self.process.stdin is not None, "started without a stdin pipe"
        return self.process.stdin

    def send(self, *lines: Message | str) -> None:
        """Write messages (dicts) or raw lines (str) and flush."""
        self.stdin.write(encode(*lines))
        self.stdin.flush()

    def read_message(self) -> Message:
        """The next line of stdout, which must be one JSON-RPC message."""
        assert self.process.stdout is not None, "started with stdout not piped"
        line = self.process.stdout.readline()
        assert line, "server closed stdout early"
        message = json.loads(line)
        assert isinstance(message, dict), message
        return message

    def read_until(self, ids: set[Any]) -> list[Message]:
        """Every message read until answers to all ``ids`` arrived (notifications included)."""
        answers: list[Message] = []
        while not ids <= {answer.get("id") for answer in answers}:
            answers.append(self.read_message())
        return answers

    def close_stdin(self) -> None:
        self.stdin.close()

    def finish(self, timeout: float = 60) -> tuple[bytes, bytes]:
        """Close stdin (the server ends) and return what is left on stdout and stderr."""
        out, err = self.process.communicate(timeout=timeout)
        return out or b"", err or b""

    def wait_until(self, condition: Any, timeout: float, message: str = "") -> None:
        """Poll ``condition()`` while the server runs; fail after ``timeout`` seconds or if it exits."""
        deadline = time.monotonic() + timeout
        while not condition():
            assert self.process.poll() is None, f"the server exited ({self.process.returncode}) {message}"
            assert time.monotonic() < deadline, f"timed out {message}"
            time.sleep(0.02)

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


def serve_command(config: Path | None = None, *extra: str) -> list[str]:
    """``python -m hostd serve [--config CONFIG] ...`` with this interpreter."""
    command = [sys.executable, "-m", "hostd", "serve"]
    if config is not None:
        command += ["--config", str(config)]
    return [*command, *extra]


@contextmanager
def raw_stdio_server(
    config: Path | None = None,
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    capture_stdout: bool = True,
    capture_stderr: bool = True,
    command: Sequence[str] | None = None,
) -> Iterator[RawStdioServer]:
    """Start ``hostd serve`` (or ``command``) with pipes; killed on the way out if still running.

    ``env`` is added to this process's environment. With ``capture_*`` False the stream goes
    to /dev/null (a test that never reads it must not fill a pipe and block the server).
    """
    process = subprocess.Popen(
        list(command) if command is not None else serve_command(config),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
        stderr=subprocess.PIPE if capture_stderr else subprocess.DEVNULL,
        env={**os.environ, **(env or {})},
        cwd=cwd,
    )
    server = RawStdioServer(process)
    try:
        yield server
    finally:
        server.kill()
        for stream in (process.stdin, process.stdout, process.stderr):
            if stream is not None:
                stream.close()


__all__ = [
    "INITIALIZED",
    "PROTOCOL_VERSION",
    "Message",
    "RawStdioServer",
    "encode",
    "handshake",
    "initialize",
    "raw_stdio_server",
    "request",
    "serve_command",
    "tools_call",
]
