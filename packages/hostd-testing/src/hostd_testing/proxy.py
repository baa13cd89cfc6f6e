"""A real forward HTTP proxy for tests: Debian's tinyproxy on a free 127.0.0.1 port.

Without tinyproxy the tests using it skip, unless ``HOSTD_REQUIRE_TINYPROXY=1`` (CI), which
makes that a failure. The proxy asks for a user and password (``BasicAuth``), so a test shows
both a refused request (no credentials: 407) and one let through, and it names itself in the
``Via`` header it adds, so the server behind it can tell a proxied request from a direct one.
Its log (``LogLevel Connect``) has one ``Request`` line per request it forwarded (``GET
http://...`` for a plain page, ``CONNECT host:port`` for a tunnel to an ``https://`` one), and
``self_signed_certificate`` makes the certificate of a loopback TLS server to tunnel to.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from hostd_testing.processes import free_port, stop_process

INSTALL_HINT = "install Debian's tinyproxy: apt-get install tinyproxy"
REQUIRE_ENV = "HOSTD_REQUIRE_TINYPROXY"
VIA_NAME = "hostd-test-proxy"


def find_tinyproxy() -> str:
    """The tinyproxy executable, or a skip (a failure with ``HOSTD_REQUIRE_TINYPROXY=1``)."""
    found = shutil.which("tinyproxy") or next(
        (path for path in ("/usr/bin/tinyproxy", "/usr/sbin/tinyproxy") if Path(path).is_file()), None
    )
    if found is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"tinyproxy is required ({REQUIRE_ENV}=1) but not installed: {INSTALL_HINT}")
        pytest.skip(f"tinyproxy is not installed: {INSTALL_HINT}")
    return found


@dataclass
class Tinyproxy:
    port: int
    user: str
    password: str
    log_file: Path

    @property
    def url(self) -> str:
        """The proxy's URL with its credentials (what a user puts in ``HTTP_PROXY``)."""
        return f"http://{self.user}:{self.password}@127.0.0.1:{self.port}"

    @property
    def url_without_credentials(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def forwarded(self) -> list[str]:
        """The request lines the proxy accepted to forward (``GET http://... HTTP/1.1``), in order."""
        if not self.log_file.exists():
            return []
        marker = "Request (file descriptor"
        return [
            line.split("): ", 1)[1].strip()
            for line in self.log_file.read_text(encoding="utf-8", errors="replace").splitlines()
            if marker in line and "): " in line
        ]


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 and its key (PEM), made with the ``openssl`` command; a client
    trusts it when ``SSL_CERT_FILE`` names the certificate."""
    openssl = shutil.which("openssl")
    if openssl is None:
        if os.environ.get(REQUIRE_ENV) == "1":
            pytest.fail(f"openssl is required ({REQUIRE_ENV}=1): apt-get install openssl")
        pytest.skip("openssl is not installed: apt-get install openssl")
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = folder / "cert.pem", folder / "key.pem"
    command = [openssl, "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1"]
    command += ["-nodes", "-keyout", str(key), "-out", str(cert), "-days", "2", "-subj", "/CN=127.0.0.1"]
    command += ["-addext", "subjectAltName=IP:127.0.0.1", "-addext", "basicConstraints=critical,CA:TRUE"]
    subprocess.run(
        command,
        check=True,
        capture_output=True,
    )
    return cert, key


def _accepts(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


@contextmanager
def tinyproxy(
    folder: Path, *, user: str = "proxy-user", password: str = "proxy-secret"
) -> Iterator[Tinyproxy]:
    """Run tinyproxy in the foreground on a free loopback port until the block ends."""
    executable = find_tinyproxy()
    folder.mkdir(parents=True, exist_ok=True)
    last_error = ""
    for _ in range(5):  # a free port may be taken between choosing it and tinyproxy binding it
        port = free_port()
        proxy = Tinyproxy(port, user, password, folder / f"tinyproxy-{port}.log")
        config = folder / f"tinyproxy-{port}.conf"
        config.write_text(
            "\n".join(
                [
                    f"Port {port}",
                    "Listen 127.0.0.1",
                    "Timeout 60",
                    f'LogFile "{proxy.log_file}"',
                    "LogLevel Connect",
                    "MaxClients 100",
                    "Allow 127.0.0.1",
                    f'ViaProxyName "{VIA_NAME}"',
                    f"BasicAuth {user} {password}",
                    "",
                ]
            ),
            encoding="utf-8",
        )
        process = subprocess.Popen(
            [executable, "-d", "-c", str(config)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 30  # a guard against a proxy that never starts, not a speed check
        while process.poll() is None and not _accepts(port) and time.monotonic() < deadline:
            time.sleep(0.05)
        if process.poll() is None and _accepts(port):
            break
        process.kill()
        _, err = process.communicate()
        last_error = err.decode(errors="replace")[-1000:]
    else:
        raise RuntimeError(f"tinyproxy did not start: {last_error}")
    try:
        yield proxy
    finally:
        stop_process(process)


__all__ = ["REQUIRE_ENV", "VIA_NAME", "Tinyproxy", "find_tinyproxy", "self_signed_certificate", "tinyproxy"]
