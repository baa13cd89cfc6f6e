"""A client that writes its requests and closes stdin is owed every answer (``printf ... |
hostd serve``, or stdin from a file): the requests read before end of input are answered, within
``transport.shutdown_grace_seconds``, on the pipe transport and on the SDK's (stdin a file)."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import write_config
from hostd_testing.raw_stdio import encode, handshake, tools_call

SLOW_CALLS = [tools_call(request_id, "count_slowly", {"steps": 30}) for request_id in (2, 3, 4)]


def _answers(stdout: str) -> dict[Any, dict[str, Any]]:
    return {message.get("id"): message for message in map(json.loads, stdout.splitlines())}


def _config(tmp_path: Path, grace: float | None = None) -> Path:
    transport = {} if grace is None else {"transport": {"shutdown_grace_seconds": grace}}
    return write_config(
        tmp_path, config={"language": "en", "profiles": {"default": {"plugins": ["probe"], **transport}}}
    )


def _assert_every_call_answered(answers: dict[Any, dict[str, Any]]) -> None:
    assert sorted(answers, key=str) == [1, 2, 3, 4]
    for request_id in (2, 3, 4):
        assert answers[request_id]["result"]["structuredContent"] == {
            "status": "success",
            "message": "count_slowly succeeded.",
            "steps": 30,
            "metadata": answers[request_id]["result"]["structuredContent"]["metadata"],
        }


def test_a_printf_pipe_gets_every_answer(tmp_path: Path, probe_install: dict[str, str]) -> None:
    """Through a shell pipe, as the README's examples do: the calls were answered "Connection closed"."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(encode(*handshake("t"), *SLOW_CALLS))
    serve = shlex.join([sys.executable, "-m", "hostd", "serve", "--config", str(_config(tmp_path))])
    done = subprocess.run(
        ["sh", "-c", f'printf "%s" "$(cat {shlex.quote(str(requests))})" | {serve}'],
        capture_output=True,
        text=True,
        env={**os.environ, **probe_install},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    _assert_every_call_answered(_answers(done.stdout))


def test_stdin_from_a_file_gets_every_answer(tmp_path: Path, probe_install: dict[str, str]) -> None:
    """A regular file on stdin is served by the SDK's transport (not pipes): the same promise."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(encode(*handshake("t"), *SLOW_CALLS))
    output = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, output.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-m", "hostd", "serve", "--config", str(_config(tmp_path))],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env={**os.environ, **probe_install},
            timeout=60,
        )
    assert done.returncode == 0, done.stderr
    _assert_every_call_answered(_answers(output.read_text(encoding="utf-8")))


@pytest.mark.parametrize("stdin_kind", ["pipe", "file"])
def test_the_wait_is_bounded_by_the_grace_time(
    tmp_path: Path, probe_install: dict[str, str], stdin_kind: str
) -> None:
    """A call still running after ``shutdown_grace_seconds`` is cut: the process does not hang."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(encode(*handshake("t"), tools_call(2, "count_slowly", {"steps": 50})))
    command = [sys.executable, "-m", "hostd", "serve", "--config", str(_config(tmp_path, grace=0.05))]
    started = time.monotonic()
    with requests.open("rb") as stdin:
        done = subprocess.run(
            command,
            input=None if stdin_kind == "file" else requests.read_bytes(),
            stdin=stdin if stdin_kind == "file" else None,
            capture_output=True,
            env={**os.environ, **probe_install},
            timeout=60,
        )
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    answers = _answers(done.stdout.decode())
    assert "result" not in answers.get(2, {})
    assert "request(s) still unanswered after 0.05 s are cut" in done.stderr.decode()
    assert elapsed < 30
