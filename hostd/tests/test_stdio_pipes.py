"""stdio served by the event loop when stdin and stdout are pipes (hostd.protocol.stdio_pipes), and the
SDK's transport otherwise: the same answers either way, whatever the size of a line or the
backlog of answers the client has not read yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from hostd_testing import write_config
from hostd_testing.raw_stdio import RawStdioServer, handshake, raw_stdio_server, request, tools_call


def test_a_line_of_several_megabytes_is_read_whole_and_the_server_goes_on(
    tmp_path: Path, probe_install: dict[str, str]
) -> None:
    config = write_config(tmp_path, ["probe"], config={"language": "en"})
    huge = "长" * 3_000_000  # 9 MB of UTF-8 on one line, over the echo tool's limit
    with raw_stdio_server(config, env=probe_install) as server:
        server.send(
            *handshake(), tools_call(2, "echo", {"text": huge}), tools_call(3, "echo", {"text": "ok"})
        )
        by_id = {answer.get("id"): answer for answer in server.read_until({1, 2, 3})}
        server.finish()
    refused = by_id[2]["result"]
    assert refused["isError"] is True
    assert refused["structuredContent"]["error"]["code"] == "INVALID_ARGUMENT"
    assert by_id[3]["result"]["structuredContent"]["text"] == "ok"


def test_answers_the_client_has_not_read_yet_are_all_delivered(
    tmp_path: Path, probe_install: dict[str, str]
) -> None:
    """Hundreds of answers (megabytes) pile up while the client only writes: none is lost.
    Calls run concurrently, so they may finish in any order."""
    config = write_config(tmp_path, ["probe"], config={"language": "en"})
    calls = 400
    text = "x" * 9_000
    with raw_stdio_server(config, env=probe_install) as server:
        server.send(*handshake(), *(tools_call(n, "echo", {"text": text}) for n in range(2, calls + 2)))
        answers = server.read_until(set(range(1, calls + 2)))
        server.finish()
    results = [answer for answer in answers if answer.get("id", 0) >= 2]
    assert sorted(answer["id"] for answer in results) == list(range(2, calls + 2))  # each once
    assert all(answer["result"]["structuredContent"]["text"] == text for answer in results)


def test_stdout_to_a_file_is_served_by_the_sdk_transport(
    tmp_path: Path, probe_install: dict[str, str]
) -> None:
    """``hostd serve > answers.jsonl``: a file cannot be watched by the event loop; answered all the same."""
    config = write_config(tmp_path, ["probe"], config={"language": "en"})
    answers = tmp_path / "answers.jsonl"

    def answered() -> dict[object, dict[str, object]]:
        lines = answers.read_text(encoding="utf-8").splitlines()
        return {message.get("id"): message for message in map(json.loads, lines)}

    with answers.open("wb") as stdout:
        process = subprocess.Popen(
            [sys.executable, "-m", "hostd", "serve", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
            env={**os.environ, **probe_install},
        )
        server = RawStdioServer(process)
        try:
            server.send(*handshake(), tools_call(2, "echo", {"text": "into a file"}), request(3, "ping"))
            server.wait_until(
                lambda: {2, 3} <= set(answered()), timeout=60, message="for answers in the file"
            )
            _, stderr = server.finish()
        finally:
            server.kill()
    assert process.returncode == 0, stderr.decode()
    by_id = answered()
    assert by_id[2]["result"]["structuredContent"]["text"] == "into a file"  # type: ignore[index]
    assert by_id[3]["result"] == {}


def test_output_of_tools_never_reaches_the_wire(tmp_path: Path, probe_install: dict[str, str]) -> None:
    """The noisy tool prints and writes to fd 1; stdout holds JSON-RPC lines only, the strays go to stderr."""
    config = write_config(tmp_path, ["probe"], config={"language": "en"})
    with raw_stdio_server(config, env=probe_install) as server:
        server.send(*handshake(), tools_call(2, "noisy"), tools_call(3, "echo", {"text": "after"}))
        by_id = {answer.get("id"): answer for answer in server.read_until({1, 2, 3})}
        rest, stderr = server.finish()
    assert by_id[2]["result"]["isError"] is False
    assert by_id[3]["result"]["structuredContent"]["text"] == "after"
    assert rest == b""
    assert b"stray print from a tool" in stderr
    assert b"raw bytes on fd 1" in stderr


def test_served_with_stderr_closed(tmp_path: Path, probe_install: dict[str, str]) -> None:
    """A parent that closed fd 2: while serving, fd 1 then points at the null device (not at a
    closed descriptor, nor at whatever took the number 2), and the protocol is unharmed."""
    config = write_config(tmp_path, ["probe"], config={"language": "en"})
    process = subprocess.Popen(
        [sys.executable, "-m", "hostd", "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, **probe_install},
        preexec_fn=lambda: os.close(2),  # in the child alone, before exec
    )
    server = RawStdioServer(process)
    try:
        server.send(*handshake(), request(2, "ping"), tools_call(3, "echo", {"text": "still here"}))
        by_id = {answer.get("id"): answer for answer in server.read_until({1, 2, 3})}
        rest, _ = server.finish()
    finally:
        server.kill()
    assert by_id[2]["result"] == {}
    assert by_id[3]["result"]["structuredContent"]["text"] == "still here"
    assert rest == b""
