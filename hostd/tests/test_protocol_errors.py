"""JSON-RPC protocol errors: answered with the standard codes, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_testing import envelope_of, in_memory_client, write_config
from hostd_testing.raw_stdio import handshake, raw_stdio_server, tools_call

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


@pytest.mark.parametrize("language", ["en", "zh"])
def test_stdio_answers_bad_lines_with_json_rpc_errors_and_keeps_serving(
    tmp_path: Path, probe_install: dict[str, str], language: str
) -> None:
    """JSON-RPC 2.0: -32700 for a line that is not JSON, -32600 for JSON that is no message; id null."""
    config = write_config(tmp_path, ["probe"], config={"language": language})
    bad_lines = [
        "this line is not JSON at all",  # parse error
        '{"jsonrpc": "2.0", "id": 7, "method": ',  # truncated JSON: parse error
        "[1, 2, 3]",  # JSON, not a message
        '{"jsonrpc": "2.0", "id": 8}',  # an object, but neither request, notification nor response
        '"just a string"',
        # valid JSON, nested deeper than the reader goes: a parse error that says so
        '{"jsonrpc": "2.0", "id": 9, "method": "x", "params": {"a": ' + "[" * 5000 + "]" * 5000 + "}}",
    ]
    with raw_stdio_server(config, env=probe_install) as server:
        server.send(*bad_lines, *handshake(), tools_call(2, "echo", {"text": "ok"}))
        answers = server.read_until({1, 2})
        server.finish(timeout=30)  # closes stdin: the server ends
    errors = [answer for answer in answers if answer.get("id") is None]
    assert [answer["error"]["code"] for answer in errors] == [-32700, -32700, -32600, -32600, -32600, -32700]
    too_deep = errors[-1]["error"]["message"]
    assert ("嵌套" if language == "zh" else "nested too deep") in too_deep, too_deep
    assert [too_deep] == [
        e["error"]["message"]
        for e in errors
        if "嵌套" in e["error"]["message"] or "nested" in e["error"]["message"]
    ]
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
