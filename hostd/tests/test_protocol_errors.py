"""JSON-RPC protocol errors: answered with the standard codes, and the server keeps serving."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import envelope_of, in_memory_client, write_config

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("language", ["en", "zh"])
async def test_tools_list_with_an_unknown_cursor_is_invalid_params(
    hostd_data_dir: Path, probe: object, language: str
) -> None:
    """hostd lists every tool on one page, so any cursor is one it never handed out."""
    import mcp_types as types
    from mcp.shared.exceptions import MCPError

    config = {"language": language, "profiles": {"default": {"plugins": ["probe"]}}}
    async with in_memory_client(data_dir=hostd_data_dir, config=config, extra_plugins={"probe": probe}) as c:
        first = await c.list_tools()
        assert first.next_cursor is None and first.tools
        with pytest.raises(MCPError) as caught:
            await c.list_tools(cursor="not-a-cursor", cache_mode="bypass")
        assert envelope_of(await c.call_tool("echo", {"text": "ok"}))["text"] == "ok"
    assert caught.value.code == types.INVALID_PARAMS
    if language == "zh":
        assert "游标" in caught.value.message and "cursor" not in caught.value.message.lower()
    else:
        assert "cursor" in caught.value.message


def _initialize(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        },
    }


@pytest.mark.parametrize("language", ["en", "zh"])
def test_stdio_answers_bad_lines_with_json_rpc_errors_and_keeps_serving(
    tmp_path: Path, probe_install: dict[str, str], language: str
) -> None:
    """JSON-RPC 2.0: -32700 for a line that is not JSON, -32600 for JSON that is no message; id null."""
    config = write_config(tmp_path, ["probe"], config={"language": language})
    process = subprocess.Popen(
        [sys.executable, "-m", "hostd", "serve", "--config", str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, **probe_install},
    )
    assert process.stdin is not None and process.stdout is not None
    bad_lines = [
        "this line is not JSON at all",  # parse error
        '{"jsonrpc": "2.0", "id": 7, "method": ',  # truncated JSON: parse error
        "[1, 2, 3]",  # JSON, not a message
        '{"jsonrpc": "2.0", "id": 8}',  # an object, but neither request, notification nor response
        '"just a string"',
    ]
    good = [
        _initialize(1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "echo", "arguments": {"text": "ok"}},
        },
    ]
    try:
        process.stdin.write(("\n".join([*bad_lines, *(json.dumps(item) for item in good)]) + "\n").encode())
        process.stdin.flush()
        answers = []
        while not {1, 2} <= {answer.get("id") for answer in answers}:
            line = process.stdout.readline()
            assert line, "server closed stdout early"
            answers.append(json.loads(line))
    finally:
        process.communicate(timeout=30)  # closes stdin: the server ends
    errors = [answer for answer in answers if answer.get("id") is None]
    assert [answer["error"]["code"] for answer in errors] == [-32700, -32700, -32600, -32600, -32600]
    assert all(answer["jsonrpc"] == "2.0" and "id" in answer for answer in errors)
    by_id = {answer["id"]: answer for answer in answers if answer.get("id") is not None}
    assert by_id[2]["result"]["structuredContent"]["text"] == "ok"
    messages = {answer["error"]["message"] for answer in errors}
    if language == "zh":
        leftover = [message.replace("JSON-RPC", "").replace("JSON", "") for message in messages]
        assert not any(ch.isascii() and ch.isalpha() for text in leftover for ch in text), messages
    else:
        assert any("Parse error" in message for message in messages)
        assert any("Invalid Request" in message for message in messages)
