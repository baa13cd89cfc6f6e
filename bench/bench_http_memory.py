"""HTTP memory: what a run of large-argument requests costs a served process, as ratios of the payload.

A real ``hostd serve --transport http`` process (summary-writer only) receives a run of
``update_summary`` calls whose ``content`` is about 30 MB (mode ``overwrite``, so the disk
stays small), with ``max_body_bytes`` and ``max_content_bytes`` raised so they are accepted.
The server's resident set (``VmRSS`` from ``/proc``) is read before the run, at its peak
(``VmHWM``, reset through ``/proc/PID/clear_refs`` first) and a second after the run; each
is reported as growth over "before", divided by one request's body size. A second server
with the default ``max_body_bytes`` gets the same requests, to show what refusing them costs.

Linux only (``/proc``). Run: ``.venv/bin/python bench/bench_http_memory.py``.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import yaml
from benchlib import WORK, table, write_section

SCRATCH = WORK / "http-memory"
PAYLOAD_BYTES = 30 * 1000 * 1000
REQUESTS = 10
RAISED_CAP = 64 * 1024 * 1024
MIB = 1024 * 1024
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def proc_status(pid: int, field: str) -> int:
    """A ``/proc/PID/status`` size field (``VmRSS``, ``VmHWM``) in bytes."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak(pid: int) -> None:
    """Start ``VmHWM`` again from the current resident set (Linux 4.0+)."""
    Path(f"/proc/{pid}/clear_refs").write_text("5")


def write_config(folder: Path, max_body_bytes: int | None) -> Path:
    transport: dict[str, object] = {"type": "http"}
    if max_body_bytes is not None:
        transport["max_body_bytes"] = max_body_bytes
    raw = {
        "data_dir": str(folder / "data"),
        "language": "en",
        "allowed_roots": [str(folder / "notes")],
        "profiles": {"default": {"plugins": ["summary-writer"], "transport": transport}},
        "plugins": {"summary-writer": {"max_content_bytes": RAISED_CAP}},
    }
    (folder / "notes").mkdir(parents=True, exist_ok=True)
    path = folder / "hostd.yaml"
    path.write_text(yaml.safe_dump(raw), encoding="utf-8")
    return path


@contextmanager
def served(config: Path) -> Iterator[tuple[int, int]]:
    """A real ``hostd serve`` on a free port: its pid and port."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "hostd", "serve", "--config", str(config), "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "HOSTD_CACHE_DIR": "off"},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("hostd serve did not start") from None
                time.sleep(0.05)
        yield process.pid, port
    finally:
        process.terminate()
        process.wait(timeout=30)


class McpSession:
    """A bare Streamable HTTP session over ``http.client``: the client's own memory stays out."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.session_id: str | None = None
        self.next_id = 1

    def post(self, body: bytes) -> tuple[int, bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=300)
        headers = {**MCP_HEADERS, "Content-Length": str(len(body))}
        if self.session_id:
            headers["Mcp-Session-Id"] = self.session_id
        try:
            connection.request("POST", "/mcp", body=body, headers=headers)
            response = connection.getresponse()
            self.session_id = response.getheader("mcp-session-id") or self.session_id
            return response.status, response.read()
        except (BrokenPipeError, ConnectionResetError):
            return 413, b""  # refused by its Content-Length while still being sent
        finally:
            connection.close()

    def request(self, method: str, params: dict[str, object]) -> tuple[int, bytes]:
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        return self.post(json.dumps(message).encode())

    def start(self) -> None:
        status, _ = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        )
        assert status == 200, status
        self.post(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')


def large_call_body(request_id: int) -> bytes:
    """One ``tools/call`` of about PAYLOAD_BYTES: Markdown lines, different per request."""
    line = f"- request {request_id}: a line of notes to fill the summary with text.\n"
    content = "# Large summary\n\n" + line * (PAYLOAD_BYTES // len(line))
    message = {
        "jsonrpc": "2.0",
        "id": 1000 + request_id,
        "method": "tools/call",
        "params": {
            "name": "update_summary",
            "arguments": {"content": content, "file_path": "large.md", "mode": "overwrite"},
        },
    }
    return json.dumps(message).encode()


@dataclass
class Run:
    """Resident set sizes of one server around a run of large requests, in bytes."""

    before: int
    peak: int
    after: int
    after_next: int
    body: int
    statuses: list[int]

    def row(self, label: str) -> list[object]:
        def growth(value: int) -> str:
            return f"{(value - self.before) / self.body:.2f}x"

        return [
            label,
            f"{self.body / MIB:.1f}",
            ", ".join(str(status) for status in self.statuses),
            f"{self.before / MIB:.0f}",
            f"{self.peak / MIB:.0f}",
            f"{self.after / MIB:.0f}",
            f"{self.after_next / MIB:.0f}",
            growth(self.peak),
            growth(self.after),
            growth(self.after_next),
        ]


def small_call(session: McpSession) -> None:
    arguments = {"content": "# small", "file_path": "large.md", "mode": "overwrite"}
    status, _ = session.request("tools/call", {"name": "update_summary", "arguments": arguments})
    assert status == 200, status


def measure(max_body_bytes: int | None, folder: Path) -> Run:
    """RSS before, at peak and after a run of REQUESTS large calls, then after one small call."""
    config = write_config(folder, max_body_bytes)
    with served(config) as (pid, port):
        session = McpSession(port)
        session.start()
        small_call(session)
        time.sleep(0.5)
        before = proc_status(pid, "VmRSS")
        reset_peak(pid)
        statuses = []
        body_bytes = 0
        for index in range(REQUESTS):
            body = large_call_body(index)
            body_bytes = len(body)
            status, answer = session.post(body)
            if status == 200:
                assert b'"status":"success"' in answer.replace(b" ", b""), answer[:300]
            statuses.append(status)
            del body, answer
        peak = proc_status(pid, "VmHWM")
        time.sleep(1.0)
        after = proc_status(pid, "VmRSS")
        small_call(session)
        time.sleep(1.0)
        after_next = proc_status(pid, "VmRSS")
    return Run(before, peak, after, after_next, body_bytes, sorted(set(statuses)))


def main() -> None:
    if not Path("/proc/self/status").exists():
        sys.exit("bench_http_memory needs Linux (/proc)")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    started = time.perf_counter()
    accepted = measure(RAISED_CAP, SCRATCH / "raised")
    refused = measure(None, SCRATCH / "default")
    body = "\n\n".join(
        [
            f"{REQUESTS} sequential `update_summary` calls (mode overwrite) over Streamable HTTP to a real "
            "`hostd serve` (summary-writer only), each body about 30 MB of Markdown. RSS of the "
            "server process in MiB; the ratios are growth over 'before', divided by one request body.",
            table(
                [
                    "server",
                    "body MiB",
                    "HTTP status",
                    "RSS before",
                    "peak",
                    "after",
                    "after next",
                    "peak / body",
                    "after / body",
                    "after next / body",
                ],
                [
                    accepted.row(f"`max_body_bytes: {RAISED_CAP // MIB} MiB` (accepted)"),
                    refused.row("default `max_body_bytes` (refused with 413)"),
                ],
            ),
            "'after' is read 1 s after the run; 'after next' 1 s after one more, small, call: until a "
            "connection's next message arrives, the SDK's message loop still holds the last request "
            "(its body and parsed arguments).",
            f"_Total run {time.perf_counter() - started:.0f} s._",
        ]
    )
    write_section(
        "http-memory",
        "HTTP: memory cost of large-argument requests",
        body,
        packages=("hostd-summary-writer", "uvicorn"),
    )


if __name__ == "__main__":
    main()
