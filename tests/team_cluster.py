"""A team deployment on loopback: real ``hostd serve`` replicas behind the real nginx running
``deploy/nginx.conf``, and a plain JSON-RPC client that tells "answered" from "no answer".

Used by ``tests/test_team_deploy.py`` and ``bench/bench_team.py``.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
NGINX_TEMPLATE = REPO / "deploy" / "nginx.conf"
NGINX_PLACEHOLDERS = ("NGINX_LISTEN", "NGINX_DIR", "HOSTD_PORT_1", "HOSTD_PORT_2", "HOSTD_PORT_3")
NGINX_INSTALL = "apt-get install -y nginx"
MODERN = "2026-07-28"
HANDSHAKE = "2025-11-25"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def find_nginx() -> str | None:
    return shutil.which("nginx") or next(
        (path for path in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if os.access(path, os.X_OK)), None
    )


def render_nginx_conf(values: dict[str, str]) -> str:
    """``deploy/nginx.conf`` with its placeholders filled, as ``envsubst`` naming them would."""
    text = NGINX_TEMPLATE.read_text(encoding="utf-8")
    assert set(values) == set(NGINX_PLACEHOLDERS)
    for name, value in values.items():
        text = text.replace("${" + name + "}", value)
    body = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
    left = re.findall(r"\$\{[A-Z0-9_]+\}", body)
    assert not left, f"placeholders not filled: {left}"
    return text


def _http_status(port: int, path: str) -> int | None:
    """The status of a GET, or None when nothing answers. The standard library's client: making an
    httpx client costs 50 ms of CPU, paid ten times a second by every replica waiting to start."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", path)
        return connection.getresponse().status
    except (OSError, http.client.HTTPException):
        return None
    finally:
        connection.close()


def start_together(replicas: list[Replica]) -> None:
    """Start the replicas at once (each start waits on its /readyz; on a team database their
    migrations at start-up take turns under the database's lock, as replicas started together do)."""
    with ThreadPoolExecutor(len(replicas)) as pool:
        list(pool.map(lambda replica: replica.start(), replicas))


@dataclass
class Replica:
    """One ``hostd serve`` process on a fixed port (a restart comes back on the same one)."""

    config: Path
    port: int
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self, timeout: float = 180) -> None:  # a guard: a loaded machine took over 60 s
        command = [sys.executable, "-m", "hostd", "serve", "--config", str(self.config)]
        command += ["--transport", "http", "--port", str(self.port)]
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                command, env={**os.environ, **self.env}, stdin=subprocess.DEVNULL, stdout=log, stderr=log
            )
        deadline = time.monotonic() + timeout
        while _http_status(self.port, "/readyz") != 200:
            if self.process.poll() is not None:
                raise RuntimeError(f"replica on {self.port} exited: {self.log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"replica on {self.port} not ready in {timeout} s")
            time.sleep(0.1)

    def signal(self, signum: int) -> None:
        assert self.process is not None
        self.process.send_signal(signum)

    def wait(self, timeout: float) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def rss_kib(self) -> int:
        assert self.process is not None
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")


@dataclass
class Balancer:
    """nginx running the deploy template in front of the replicas."""

    binary: str
    folder: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/mcp"

    def start(self, replica_ports: list[int]) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        values = {"NGINX_LISTEN": f"127.0.0.1:{self.port}", "NGINX_DIR": str(self.folder)}
        values.update({f"HOSTD_PORT_{i}": str(port) for i, port in enumerate(replica_ports, 1)})
        conf = self.folder / "nginx.conf"
        conf.write_text(render_nginx_conf(values), encoding="utf-8")
        # Only what a process manager would add: stay in the foreground and (as root) keep the
        # workers' user, which must reach the temporary folders. The pid file is the file's own.
        globals_ = "daemon off;"
        if os.geteuid() == 0:
            globals_ += " user root;"
        command = [self.binary, "-p", str(self.folder), "-e", str(self.folder / "startup.log")]
        command += ["-c", str(conf), "-g", globals_]
        checked = subprocess.run([*command, "-t"], capture_output=True, text=True)
        assert checked.returncode == 0, checked.stderr
        self.process = subprocess.Popen(command, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while _http_status(self.port, "/healthz") != 200:
            assert self.process.poll() is None, (self.folder / "error.log").read_text()
            assert time.monotonic() < deadline, "nginx did not start"
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # nginx's graceful stop
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


class NoAnswer(Exception):
    """No answer came from a replica (connection failed, 502/503/504, or the stream ended early):
    the call may or may not have run."""


@dataclass
class Outcome:
    """What one client saw, for the checks at the end."""

    attempts_without_answer: int = 0
    seconds: list[float] = field(default_factory=list)


class TeamClient:
    """One member's MCP client speaking plain JSON-RPC over HTTP, on either protocol era, with no
    session (the server is stateless). It never retries by itself: the caller decides."""

    def __init__(self, url: str, token: str, era: str) -> None:
        import httpx2

        self.url = url
        self.era = era
        self._http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
            timeout=httpx2.Timeout(30),
        )
        self._next_id = 0

    async def aclose(self) -> None:
        await self._http.aclose()

    def _body(self, name: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], dict[str, str]]:
        self._next_id += 1
        params: dict[str, Any] = {"name": name, "arguments": arguments}
        headers = {"Content-Type": "application/json"}
        if self.era == MODERN:
            params["_meta"] = {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "team-test", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            }
            headers.update({"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name})
        else:
            headers["MCP-Protocol-Version"] = HANDSHAKE
        return {"jsonrpc": "2.0", "id": self._next_id, "method": "tools/call", "params": params}, headers

    async def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The tool's envelope; ``NoAnswer`` when no replica answered."""
        import httpx2

        body, headers = self._body(name, arguments)
        try:
            response = await self._http.post(self.url, content=json.dumps(body), headers=headers)
        except httpx2.TransportError as exc:
            raise NoAnswer(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code in (502, 503, 504):
            raise NoAnswer(f"HTTP {response.status_code}")
        assert response.status_code == 200, (response.status_code, response.text[:500])
        if response.headers.get("content-type", "").startswith("text/event-stream"):
            lines = response.text.splitlines()
            messages = [
                json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip()
            ]
        else:
            messages = [response.json()]
        answer = next((m for m in messages if m.get("id") == body["id"]), None)
        if answer is None:
            raise NoAnswer("the stream ended without the answer")
        assert "result" in answer, answer
        return dict(answer["result"]["structuredContent"])
