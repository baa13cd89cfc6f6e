"""A fence around the SDK's stdio transport (issue 32, item 10).

``hostd.protocol.stdio_pipes`` hands the SDK's ``stdio_server(stdin, stdout)`` streams of its own
(read and written by the event loop), and copies what the SDK's transport does with the
process's descriptors when it serves them itself: private duplicates above fd 2 with
close-on-exec, fd 0 pointed at the null device and fd 1 at stderr while serving, both restored
after. ``hostd.protocol.stdio`` relies on what the SDK's read stream carries (a line that is
not JSON-RPC arrives as the exception that refused it; ``last_context``; ``receive``/``aclose``).

hostd/pyproject.toml pins the SDK to the minor release this was written against. These tests say
which of those things changed when the pin is raised: exactly the functions, parameters and
behaviour hostd relies on, and the text of the SDK functions whose behaviour hostd copies.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import anyio
import pytest

pytestmark = pytest.mark.anyio

#: SHA-256 of the source of the SDK functions whose behaviour ``stdio_pipes`` copies (mcp 2.3.0).
#: A change means: read the new code against hostd/src/hostd/protocol/stdio_pipes.py (and
#: ``serve_stdio`` in transports.py), mend what no longer matches, then write the new digests.
COPIED = {
    "stdio_server": "9b12b189ab100f8274eca577176714aee6a2f73f661dcae5981c3443e6e1434c",
    "_dup_above_std": "0a3b75e2e08d4a1d1a836a7923ea6dbed80ae4968833e8dad1970f2059840359",
    "_open_stdin_diversion": "10b187dc47f6f7fd0d1b32d6056145adcc70a9a7caf8393d922871dabec98384",
    "_open_stdout_diversion": "22db2da9a5815d161d3fe1788f5e05021a0a31bbed576cff8d92bde58fc1df6a",
    "_claim_fd": "3cce69df9ddcaf07de3eeb1f55d4af1eee4bb4ec751245ba10b86001725eeb40",
}


def digest(function: Any) -> str:
    return hashlib.sha256(inspect.getsource(function).encode()).hexdigest()


def test_the_sdk_functions_hostd_copies_are_unchanged() -> None:
    import mcp.server.stdio as sdk

    found = {name: digest(getattr(sdk, name)) for name in COPIED}
    assert found == COPIED, (
        "the SDK's stdio transport changed: compare it with hostd.protocol.stdio_pipes before "
        "raising the pin in hostd/pyproject.toml"
    )


def test_stdio_server_takes_the_streams_hostd_hands_it() -> None:
    from mcp.server.stdio import stdio_server

    parameters = inspect.signature(stdio_server).parameters
    assert list(parameters) == ["stdin", "stdout"]
    assert all(p.default is None and p.kind is p.POSITIONAL_OR_KEYWORD for p in parameters.values())
    assert inspect.isasyncgenfunction(inspect.unwrap(stdio_server))  # an async context manager


class OnlyLines:
    """What ``PipeLines`` offers the SDK (``async for line in stdin``); any other use fails."""

    def __init__(self, lines: list[str]) -> None:
        self._lines = lines
        self.used: list[str] = []

    def __aiter__(self) -> OnlyLines:
        self.used.append("__aiter__")
        return self

    async def __anext__(self) -> str:
        if not self._lines:
            raise StopAsyncIteration
        return self._lines.pop(0)

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the SDK used stdin.{name}, which hostd's PipeLines does not offer")


class OnlyWriteAndFlush:
    """What ``PipeWriter`` offers the SDK (``await write(text)``, ``await flush()``)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def write(self, text: str) -> None:
        self.calls.append(("write", text))

    async def flush(self) -> None:
        self.calls.append(("flush", ""))

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the SDK used stdout.{name}, which hostd's PipeWriter does not offer")


def fd_identity(fd: int) -> tuple[int, int]:
    stat = os.fstat(fd)
    return stat.st_dev, stat.st_ino


async def test_explicit_streams_are_read_by_line_and_written_then_flushed() -> None:
    import mcp_types as types
    from hostd.protocol.stdio import protocol_error_for
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    ping = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}) + "\n"
    stdin = OnlyLines([ping, "not json\n", '{"jsonrpc": "2.0"}\n'])
    stdout = OnlyWriteAndFlush()
    before = (fd_identity(0), fd_identity(1))
    with anyio.fail_after(10):
        async with stdio_server(stdin, stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
            assert (fd_identity(0), fd_identity(1)) == before  # explicit streams: no descriptor claimed
            first = await read_stream.receive()
            assert isinstance(first, SessionMessage)
            assert isinstance(first.message, types.JSONRPCRequest)
            assert first.message.method == "ping"
            assert hasattr(read_stream, "last_context")  # what the session reads the sender's context from
            unreadable = await read_stream.receive()
            not_a_message = await read_stream.receive()
            # The line's refusal arrives as the exception itself, telling JSON from non-JSON.
            assert isinstance(unreadable, Exception)
            assert isinstance(not_a_message, Exception)
            assert protocol_error_for(unreadable, "en").error.code == types.PARSE_ERROR
            assert protocol_error_for(not_a_message, "en").error.code == types.INVALID_REQUEST
            answer = types.JSONRPCResponse(jsonrpc="2.0", id=1, result={})
            await write_stream.send(SessionMessage(answer))
            while len(stdout.calls) < 2:
                await anyio.sleep(0.01)
            await read_stream.aclose()
            write_stream.close()
    assert stdout.calls == [("write", '{"jsonrpc":"2.0","id":1,"result":{}}\n'), ("flush", "")]
    assert stdin.used == ["__aiter__"]


async def test_hostds_pipe_streams_serve_the_sdk_transport(tmp_path: Path) -> None:
    """The real ``PipeLines`` / ``PipeWriter`` through the SDK's ``stdio_server``, on a pipe pair."""
    from hostd.protocol.stdio_pipes import PipeLines, PipeWriter, _WriteSide
    from mcp.server.stdio import stdio_server
    from mcp.shared.message import SessionMessage

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    reader.feed_data(b'{"jsonrpc": "2.0", "id": 5, "method": "ping"}\n')
    reader.feed_eof()
    read_end, write_end = os.pipe()
    side = _WriteSide(loop)
    transport, _ = await loop.connect_write_pipe(lambda: side, os.fdopen(write_end, "wb", buffering=0))
    try:
        with anyio.fail_after(10):
            lines: Any = PipeLines(reader)  # the SDK types them as anyio files; it uses what they offer
            writer: Any = PipeWriter(transport, side)
            async with stdio_server(lines, writer) as (read_stream, write_stream):
                message = await read_stream.receive()
                assert isinstance(message, SessionMessage)
                await write_stream.send(message)
                written = b""
                while not written.endswith(b"\n"):
                    written += await anyio.to_thread.run_sync(os.read, read_end, 4096)
                write_stream.close()
                await read_stream.aclose()
    finally:
        transport.close()
        os.close(read_end)
    assert json.loads(written) == {"jsonrpc": "2.0", "id": 5, "method": "ping"}


WHERE_FDS_POINT = textwrap.dedent(
    """
    import anyio, fcntl, json, os, sys

    def where(fd):
        return os.readlink(f"/proc/self/fd/{fd}")

    def report(kind, private):
        flags = [fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC for fd in private]
        return {"kind": kind, "stdin": where(0), "stdout": where(1), "stderr": where(2),
                "private_above_std": all(fd > 2 for fd in private), "cloexec": all(flags)}

    async def sdk():
        from mcp.server import stdio
        async with stdio.stdio_server() as (read_stream, write_stream):
            private = [claim.private_fd for claim in stdio._claims.values()]
            found = report("sdk", private)
            write_stream.close()
            await read_stream.aclose()
        return found

    def hostd():
        from hostd.protocol.stdio_pipes import claimed_std_fds
        with claimed_std_fds() as private:
            return report("hostd", list(private))

    before = {"stdin": where(0), "stdout": where(1)}
    found = [anyio.run(sdk), hostd()]
    after = {"stdin": where(0), "stdout": where(1)}
    sys.stderr.write(json.dumps({"before": before, "found": found, "after": after}))
    """
)


@pytest.mark.skipif(not Path("/proc/self/fd").exists(), reason="reads /proc/self/fd (Linux)")
def test_hostd_claims_stdin_and_stdout_as_the_sdk_does(tmp_path: Path) -> None:
    """While serving, fd 0 reads the null device and fd 1 writes to stderr, private duplicates
    above fd 2 (close-on-exec) carry the wire, and both are restored afterwards: the SDK's
    guarantee, which ``claimed_std_fds`` copies."""
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    os.close(stdin_write)  # the SDK's reader meets EOF at once, so its transport can end
    try:
        done = subprocess.run(
            [sys.executable, "-c", WHERE_FDS_POINT],
            stdin=stdin_read,
            stdout=stdout_write,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        for fd in (stdin_read, stdout_read, stdout_write):
            os.close(fd)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    seen = json.loads(done.stderr.decode().splitlines()[-1])
    sdk, hostd = seen["found"]
    assert seen["after"] == seen["before"]
    for report in (sdk, hostd):
        assert report["stdin"] == os.devnull, report
        assert report["stdout"] == report["stderr"], report
        assert report["private_above_std"], report
        assert report["cloexec"], report
    assert {k: v for k, v in sdk.items() if k != "kind"} == {k: v for k, v in hostd.items() if k != "kind"}
