"""HTTP memory: what a run of large-argument requests costs a served process, as ratios of the payload.

A real ``hostd serve --transport http`` process receives a run of calls whose argument is about
30 MB, with ``max_body_bytes`` (and the plugins' own caps) raised so they are accepted:

- ``update_summary`` with 30 MB of Markdown ``content`` (mode ``overwrite``, so the disk stays small);
- ``import_session`` with a 30 MB session document as ``path_or_data`` (1,000 thoughts of mixed
  Chinese and English text; each call under its own ``session_id``);
- ``import_session`` with 30 MB that is no JSON, so a path far too long: an error answer
  (``PATH_TOO_LONG``) that once echoed the whole argument.

The server's resident set (``VmRSS`` from ``/proc``) is read before the run, at its peak
(``VmHWM``, reset through ``/proc/PID/clear_refs`` first) and a second after the run; each
is reported as growth over "before", divided by one request's body size. A server with the
default ``max_body_bytes`` gets the same ``update_summary`` requests, to show what refusing
them costs. Target (issue 27): peak at most 4x one payload above "before", and back within
150 MiB of it after one more small call.

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
from collections.abc import Callable, Iterator
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
PEAK_TARGET = 4.0
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


@dataclass(frozen=True)
class Scenario:
    """One kind of large call: the plugin that serves it, how to build it, what it must answer."""

    label: str
    plugin: str
    build: Callable[[int], bytes]
    expect: str  # '"status":"success"' or the error code the answer must carry
    small: dict[str, object]  # the small call made before and after the run


def write_config(folder: Path, plugin: str, max_body_bytes: int | None) -> Path:
    transport: dict[str, object] = {"type": "http"}
    if max_body_bytes is not None:
        transport["max_body_bytes"] = max_body_bytes
    raw = {
        "data_dir": str(folder / "data"),
        "language": "en",
        "allowed_roots": [str(folder / "notes")],
        "profiles": {"default": {"plugins": [plugin], "transport": transport}},
        "plugins": {"summary-writer": {"max_content_bytes": RAISED_CAP}}
        if plugin == "summary-writer"
        else {},
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


def tools_call(request_id: int, name: str, arguments: dict[str, object]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1000 + request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(message, ensure_ascii=False).encode()


def summary_body(request_id: int) -> bytes:
    """``update_summary`` with about PAYLOAD_BYTES of Markdown, different per request."""
    line = f"- request {request_id}: a line of notes to fill the summary with text.\n"
    content = "# Large summary\n\n" + line * (PAYLOAD_BYTES // len(line))
    return tools_call(
        request_id, "update_summary", {"content": content, "file_path": "large.md", "mode": "overwrite"}
    )


def session_body(request_id: int) -> bytes:
    """``import_session`` with a session document of about PAYLOAD_BYTES: 1,000 thoughts of 9,900
    Chinese characters (3 bytes each in UTF-8; the thought limit is 10,000 characters)."""
    sentence = f"第{request_id}轮分析缓存命中率检查网关超时与重试预算。"
    content = (sentence * (9_900 // len(sentence) + 1))[:9_900]
    count = 1000
    document = {
        "session_id": f"large-{request_id}",
        "name": f"large {request_id}",
        "thoughts": [
            {
                "thought_number": n,
                "total_thoughts": count,
                "content": content,
                "next_thought_needed": n < count,
            }
            for n in range(1, count + 1)
        ],
    }
    data = json.dumps(document, ensure_ascii=False)
    return tools_call(request_id, "import_session", {"path_or_data": data})


def long_path_body(request_id: int) -> bytes:
    """``import_session`` with about PAYLOAD_BYTES that is no JSON: read as a path, far too long."""
    return tools_call(
        request_id, "import_session", {"path_or_data": f"notes/{request_id}/" + "p" * PAYLOAD_BYTES}
    )


SCENARIOS = [
    Scenario(
        "`update_summary`, 30 MB `content`",
        "summary-writer",
        summary_body,
        '"status":"success"',
        {
            "name": "update_summary",
            "arguments": {"content": "# small", "file_path": "large.md", "mode": "overwrite"},
        },
    ),
    Scenario(
        "`import_session`, 30 MB session document",
        "deep-thinking",
        session_body,
        '"status":"success"',
        {"name": "list_sessions", "arguments": {"limit": 1}},
    ),
    Scenario(
        "`import_session`, 30 MB path (`PATH_TOO_LONG`)",
        "deep-thinking",
        long_path_body,
        "PATH_TOO_LONG",
        {"name": "list_sessions", "arguments": {"limit": 1}},
    ),
]


@dataclass
class Run:
    """Resident set sizes of one server around a run of large requests, in bytes."""

    before: int
    peak: int
    after: int
    after_next: int
    body: int
    statuses: list[int]
    answer: int = 0

    @property
    def met(self) -> bool:
        """Issue 27's target: peak at most 4x one payload above 'before', then back within 150 MiB."""
        return (
            self.peak - self.before <= PEAK_TARGET * self.body and self.after_next - self.before <= 150 * MIB
        )

    def row(self, label: str) -> list[object]:
        def growth(value: int) -> str:
            return f"{(value - self.before) / self.body:.2f}x"

        return [
            label,
            f"{self.body / MIB:.1f}",
            ", ".join(str(status) for status in self.statuses),
            f"{self.answer / 1024:.1f}",
            f"{self.before / MIB:.0f}",
            f"{self.peak / MIB:.0f}",
            f"{self.after / MIB:.0f}",
            f"{self.after_next / MIB:.0f}",
            growth(self.peak),
            growth(self.after),
            f"{(self.after_next - self.before) / MIB:+.0f} MiB",
            "met" if self.met else "NOT met",
        ]


def small_call(session: McpSession, scenario: Scenario) -> None:
    status, _ = session.request("tools/call", scenario.small)
    assert status == 200, status


def measure(scenario: Scenario, max_body_bytes: int | None, folder: Path) -> Run:
    """RSS before, at peak and after a run of REQUESTS large calls, then after one small call."""
    config = write_config(folder, scenario.plugin, max_body_bytes)
    with served(config) as (pid, port):
        session = McpSession(port)
        session.start()
        small_call(session, scenario)
        time.sleep(0.5)
        before = proc_status(pid, "VmRSS")
        reset_peak(pid)
        statuses = []
        body_bytes = 0
        answer_bytes = 0
        for index in range(REQUESTS):
            body = scenario.build(index)
            body_bytes = len(body)
            status, answer = session.post(body)
            if status == 200:
                assert scenario.expect.encode() in answer.replace(b" ", b""), answer[:300]
                answer_bytes = max(answer_bytes, len(answer))
            statuses.append(status)
            del body, answer
        peak = proc_status(pid, "VmHWM")
        time.sleep(1.0)
        after = proc_status(pid, "VmRSS")
        small_call(session, scenario)
        time.sleep(1.0)
        after_next = proc_status(pid, "VmRSS")
    return Run(before, peak, after, after_next, body_bytes, sorted(set(statuses)), answer_bytes)


def main() -> None:
    if not Path("/proc/self/status").exists():
        sys.exit("bench_http_memory needs Linux (/proc)")
    shutil.rmtree(SCRATCH, ignore_errors=True)
    started = time.perf_counter()
    rows = []
    for number, scenario in enumerate(SCENARIOS):
        run = measure(scenario, RAISED_CAP, SCRATCH / f"raised-{number}")
        rows.append(run.row(f"{scenario.label}, `max_body_bytes: {RAISED_CAP // MIB} MiB`"))
        shutil.rmtree(SCRATCH / f"raised-{number}", ignore_errors=True)
    refused = measure(SCENARIOS[0], None, SCRATCH / "default")
    rows.append(refused.row(f"{SCENARIOS[0].label}, default `max_body_bytes` (refused with 413)"))
    body = "\n\n".join(
        [
            f"Per row, a fresh `hostd serve` over Streamable HTTP (only the plugin the tool needs) gets "
            f"{REQUESTS} sequential calls, each body about 30 MB. RSS of the server process in MiB; the "
            "ratios are growth over 'before', divided by one request body. Target: peak / body at most "
            f"{PEAK_TARGET:g}x and 'after next' within 150 MiB of 'before'.",
            table(
                [
                    "calls",
                    "body MiB",
                    "HTTP status",
                    "answer KiB",
                    "RSS before",
                    "peak",
                    "after",
                    "after next",
                    "peak / body",
                    "after / body",
                    "after next - before",
                    "target",
                ],
                rows,
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
        packages=("hostd-summary-writer", "hostd-deep-thinking", "uvicorn"),
    )


if __name__ == "__main__":
    main()
