"""HTTP connection limits against a real ``hostd serve``, with raw sockets as a hostile client sends.

Header deadline (slowloris), body deadline (a trickled body), keep-alive idle time, and a cap
on open connections; after each, a normal client is served again.
"""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from hostd_testing import HttpServer, write_config

TOKEN = "s3cret-token"
INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }
).encode()


@contextmanager
def start_limited(
    tmp_path: Path, probe_install: dict[str, str], language: str = "en"
) -> Iterator[HttpServer]:
    transport = {
        "token_env": "PROBE_TOKEN",
        "header_timeout": 1,
        "body_timeout": 1,
        "idle_timeout": 1,
        "max_connections": 6,
        "max_body_bytes": 4096,
    }
    config = {"language": language, "profiles": {"default": {"plugins": ["probe"], "transport": transport}}}
    env = {**probe_install, "PROBE_TOKEN": TOKEN}
    with HttpServer.start(write_config(tmp_path, config=config), env=env) as server:
        yield server


@pytest.fixture(scope="module")
def limited_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    """One server for the limit tests (each leaves no connection open behind it)."""
    from hostd_testing import install_plugin_source, pythonpath_with

    folder = tmp_path_factory.mktemp("limited")
    site = install_plugin_source(
        folder / "site",
        entry_point="probe",
        module="probe_plugin",
        source=(Path(__file__).parent / "probe_plugin.py").read_text(encoding="utf-8"),
    )
    with start_limited(folder, pythonpath_with(site)) as server:
        yield server


def request_head(server: HttpServer, length: int, *, close: bool = False) -> bytes:
    return (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {TOKEN}\r\n"
        "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
        + ("Connection: close\r\n" if close else "")
        + f"Content-Length: {length}\r\n\r\n"
    ).encode()


def connect(server: HttpServer) -> socket.socket:
    return socket.create_connection(("127.0.0.1", server.port), timeout=10)


def read_until_closed(sock: socket.socket, limit: float = 10.0) -> bytes:
    """Everything the server sends until it closes the connection (or ``limit`` seconds pass)."""
    sock.settimeout(limit)
    received = b""
    try:
        while chunk := sock.recv(65536):
            received += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return received


def closed_within(sock: socket.socket, seconds: float) -> tuple[bool, bytes]:
    started = time.monotonic()
    received = read_until_closed(sock, seconds)
    return time.monotonic() - started < seconds, received


def served_normally(server: HttpServer) -> bool:
    """A well-behaved client's initialize is answered 200 (retrying while closed connections drain)."""
    deadline = time.monotonic() + 5
    while True:
        with connect(server) as sock:
            sock.sendall(request_head(server, len(INITIALIZE)) + INITIALIZE)
            answer = sock.recv(65536)
        if answer.startswith(b"HTTP/1.1 200") or time.monotonic() > deadline:
            return answer.startswith(b"HTTP/1.1 200")
        time.sleep(0.05)


def test_connections_that_never_finish_their_headers_are_closed(limited_server: HttpServer) -> None:
    silent = connect(limited_server)  # sends nothing at all
    partial = [connect(limited_server) for _ in range(3)]
    for sock in partial:
        sock.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
    trickler = connect(limited_server)
    started = time.monotonic()
    for byte in b"GET /mcp HTTP/1.1\r\nX-Slow: ":  # a byte at a time must not reset the deadline
        try:
            trickler.send(bytes([byte]))
        except OSError:
            break
        time.sleep(0.1)
        if time.monotonic() - started > 4:
            break
    trickled, _ = closed_within(trickler, 4 - (time.monotonic() - started))
    assert trickled, "a trickled header kept the connection open past header_timeout (1 s)"
    for sock in [silent, *partial]:
        closed, received = closed_within(sock, 3)
        assert closed, "a connection without complete headers outlived header_timeout (1 s)"
        assert received == b"" or received.startswith(b"HTTP/1.1 408"), received
        sock.close()
    trickler.close()
    assert served_normally(limited_server)


def test_a_trickled_body_gets_408_and_the_connection_closes(limited_server: HttpServer) -> None:
    with connect(limited_server) as sock:
        sock.sendall(request_head(limited_server, 1000) + b'{"jsonrpc": "2.0", ')
        started = time.monotonic()
        received = b""
        try:
            while time.monotonic() - started < 5:
                sock.send(b" ")  # one byte now and then: the body deadline is a total, not per read
                time.sleep(0.2)
        except OSError:
            pass  # closed by the server, as expected
        closed, rest = closed_within(sock, max(0.1, 5 - (time.monotonic() - started)))
        received += rest
    assert closed, "a trickled body kept the connection open"
    assert time.monotonic() - started < 5, "a trickled body kept the connection open"
    assert received.startswith(b"HTTP/1.1 408"), received
    assert b"connection: close" in received.lower()
    assert served_normally(limited_server)


def test_kept_alive_connections_close_after_idle_timeout(limited_server: HttpServer) -> None:
    with connect(limited_server) as sock:
        sock.sendall(request_head(limited_server, len(INITIALIZE)) + INITIALIZE)
        closed, received = closed_within(sock, 4)
    assert received.startswith(b"HTTP/1.1 200"), received
    assert closed, "an idle kept-alive connection outlived idle_timeout (1 s)"


def test_connections_beyond_max_connections_get_503_then_normal_clients_work(
    limited_server: HttpServer,
) -> None:
    held = [connect(limited_server) for _ in range(6)]
    try:
        for sock in held:  # complete headers, unfinished body: held open until body_timeout
            sock.sendall(request_head(limited_server, 100))
        deadline = time.monotonic() + 5
        while True:  # until the server has accepted all six, a seventh may still get in
            with connect(limited_server) as extra:
                closed, received = closed_within(extra, 3)
            if received.startswith(b"HTTP/1.1 503") or time.monotonic() > deadline:
                break
        assert received.startswith(b"HTTP/1.1 503"), received
        assert b"retry-after" in received.lower()
        assert closed
    finally:
        for sock in held:
            sock.close()
    assert served_normally(limited_server)


def test_refusals_speak_the_host_language(tmp_path: Path, probe_install: dict[str, str]) -> None:
    """A zh server's 408, 413 and 503 texts are Chinese; only config key names stay as they are."""
    import re

    def text_of(answer: bytes) -> str:
        body = answer.partition(b"\r\n\r\n")[2].decode()
        assert re.search(r"[\u4e00-\u9fff]", body), body
        assert not re.search(r"[A-Za-z]", re.sub(r"transport\.[a-z_]+", "", body)), body
        return body

    with start_limited(tmp_path, probe_install, "zh") as server:
        silent, large, slow = connect(server), connect(server), connect(server)
        large.sendall(request_head(server, 5000))
        slow.sendall(request_head(server, 100))
        for sock in (silent, large, slow):  # header deadline, over max_body_bytes, body deadline
            text_of(read_until_closed(sock, 5))
            sock.close()
        held = [connect(server) for _ in range(6)]
        try:
            for sock in held:
                sock.sendall(request_head(server, 100))
            deadline = time.monotonic() + 5
            while True:
                with connect(server) as extra:
                    answer = read_until_closed(extra, 3)
                if answer.startswith(b"HTTP/1.1 503") or time.monotonic() > deadline:
                    break
            text_of(answer)
        finally:
            for sock in held:
                sock.close()


def _proc_status_bytes(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="reads RSS from Linux /proc")
def test_large_bodies_cost_a_bounded_multiple_and_are_given_back(
    tmp_path: Path, probe_install: dict[str, str]
) -> None:
    """A run of 12 MB arguments (rejected by the tool as too long, so only the transport costs):
    the peak stays a small multiple of one body (it was 8x: the SDK's body limiter copied each
    body twice and held both), and nothing stays resident once a small request follows."""
    transport = {"max_body_bytes": 16 * 1024 * 1024}
    config = {"profiles": {"default": {"plugins": ["probe"], "transport": transport}}}
    import httpx2

    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    with (
        HttpServer.start(write_config(tmp_path, config=config), env=probe_install) as server,
        httpx2.Client(headers=headers, timeout=60) as http,
    ):
        opened = http.post(server.url, content=INITIALIZE)
        assert opened.status_code == 200
        http.headers["Mcp-Session-Id"] = opened.headers["mcp-session-id"]

        def call(text: str, index: int) -> int:
            message = {"name": "echo", "arguments": {"text": text}}
            body = json.dumps({"jsonrpc": "2.0", "id": index, "method": "tools/call", "params": message})
            answer = http.post(server.url, content=body.encode())
            assert answer.status_code == 200
            assert '"result"' in answer.text
            return len(body)

        call("warm", 1)
        pid = server.process.pid
        before = _proc_status_bytes(pid, "VmRSS")
        Path(f"/proc/{pid}/clear_refs").write_text("5")  # restart the peak (VmHWM) from here
        for index in range(5):
            size = call(f"large argument {index} " * (12_000_000 // 20), 10 + index)
        peak = _proc_status_bytes(pid, "VmHWM")
        call("small", 20)  # replaces the last large request the SDK's loop still holds
        after = _proc_status_bytes(pid, "VmRSS")
    assert (peak - before) / size < 5, f"peak grew {(peak - before) / size:.1f}x one body"
    assert (after - before) / size < 1, f"{(after - before) / size:.1f}x one body stayed resident"


def test_limit_keys_have_bounded_defaults_and_bad_values_name_their_key() -> None:
    from hostd.core.config import TransportConfig, parse_config
    from hostd.core.errors import HostError

    defaults = TransportConfig()
    assert defaults.max_body_bytes == 8 * 1024 * 1024
    assert (defaults.header_timeout, defaults.body_timeout, defaults.idle_timeout) == (10, 60, 5)
    assert defaults.max_connections == 100
    for key, value in (("header_timeout", 0), ("body_timeout", -1), ("max_connections", 0)):
        text = f"profiles: {{default: {{transport: {{type: http, {key}: {value}}}}}}}"
        with pytest.raises(HostError) as caught:
            parse_config(text, "test.yaml")
        assert f"profiles.default.transport.{key}" in str(caught.value)
