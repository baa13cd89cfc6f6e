"""``hostd ... | head``: a reader that goes away ends the command quietly, as Python tools do."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hostd_testing import write_config

COMMANDS = [
    ("tools", "--json"),
    ("tools",),
    ("plugins",),
    ("call", "echo", "--arg", "text=hello", "--arg", "times=3"),
    ("config", "show"),
    ("config", "check"),
    ("client-config", "cursor"),
]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda command: " ".join(command[:2]))
def test_a_closed_stdout_ends_the_command_without_a_traceback(
    tmp_path: Path, probe_install: dict[str, str], command: tuple[str, ...]
) -> None:
    """Like ``| head`` after it exited: the read end is closed before the command writes."""
    config = write_config(tmp_path, ["probe"], config={"language": "en"})
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "hostd", *command, "--config", str(config)],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={**os.environ, **probe_install},
        )
    finally:
        os.close(write_end)
        os.close(read_end)  # the reader is gone: every write to stdout fails with EPIPE
    _, err = process.communicate(timeout=60)
    stderr = err.decode()
    assert "Traceback" not in stderr, stderr
    assert "Exception ignored" not in stderr, stderr
    assert "BrokenPipe" not in stderr, stderr
    assert process.returncode == 1  # what Python's docs recommend for EPIPE on stdout


def test_serve_over_stdio_ends_quietly_when_the_client_closes_stdout(
    tmp_path: Path, probe_install: dict[str, str]
) -> None:
    """A client that closed the server's stdout has gone: the session ends, status 0, no traceback."""
    import json

    config = write_config(tmp_path, ["probe"], config={"language": "en"})
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "hostd", "serve", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=write_end,
            stderr=subprocess.PIPE,
            env={**os.environ, **probe_install},
        )
    finally:
        os.close(write_end)
        os.close(read_end)
    _, err = process.communicate((json.dumps(initialize) + "\n").encode(), timeout=60)
    stderr = err.decode()
    assert "Traceback" not in stderr, stderr
    assert "BrokenPipe" not in stderr, stderr
    assert process.returncode == 0
