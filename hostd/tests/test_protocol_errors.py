"""JSON-RPC protocol errors: answered with the standard codes, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path
from typing import Any

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
        assert first.next_cursor is None
        assert first.tools
        with pytest.raises(MCPError) as caught:
            await c.list_tools(cursor="not-a-cursor", cache_mode="bypass")
        assert envelope_of(await c.call_tool("echo", {"text": "ok"}))["text"] == "ok"
    assert caught.value.code == types.INVALID_PARAMS
    if language == "zh":
        assert "游标" in caught.value.message
        assert "cursor" not in caught.value.message.lower()
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


# --- the protocol as each revision states it (issue 34) ------------------------------------------


@pytest.mark.parametrize(("mode", "code"), [("legacy", -32002), ("2026-07-28", -32602)])
async def test_reading_a_resource_that_does_not_exist_answers_each_eras_code(
    hostd_data_dir: Path, mode: str, code: int
) -> None:
    """2025-11-25 answers a missing resource -32002; 2026-07-28 requires -32602 (Resources, Error
    Handling). ``subscriptions/listen`` of one follows the modern code too."""
    from mcp.shared.exceptions import MCPError

    async with in_memory_client(["memory"], data_dir=hostd_data_dir, mode=mode) as client:
        with pytest.raises(MCPError) as caught:
            await client.read_resource("memory://nobody/here")
        assert caught.value.code == code
        assert caught.value.error.data["code"] == "NOT_FOUND"
        if mode == "2026-07-28":
            with pytest.raises(MCPError) as listened:
                async with client.listen(resource_subscriptions=["memory://nobody/here"]):
                    pass
            assert listened.value.code == -32602


def discover(url: str) -> dict[str, Any]:
    """``server/discover`` as plain JSON-RPC over HTTP: the capabilities the server states."""
    import json

    import httpx2

    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = {"jsonrpc": "2.0", "id": 1, "method": "server/discover", "params": {"_meta": meta}}
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "server/discover",
    }
    answer = httpx2.post(url, content=json.dumps(body), headers=headers, timeout=30).json()
    capabilities: dict[str, Any] = answer["result"]["capabilities"]
    return capabilities


async def test_modern_discover_advertises_and_listen_acknowledges_only_what_is_sent(tmp_path: Path) -> None:
    """hostd sends no list-changed notification, so 2026-07-28's discover says ``listChanged`` for
    no list and a listen acknowledges only the resource updates it asked for (the handshake era
    already said false). Over a real server: the SDK's in-memory pairing discovers nothing."""
    from hostd_testing import HttpServer

    with HttpServer.start(write_config(tmp_path, ["memory", "tasks"])) as server:
        discovered = discover(server.url)
        assert discovered["tools"] == {}
        assert discovered["resources"] == {"subscribe": True}
        assert "prompts" not in discovered or "listChanged" not in discovered["prompts"]
        async with server.client(mode="2026-07-28") as client:
            created = await client.call_tool("create_memory", {"uri": "door://a", "content": "a"})
            assert not created.is_error
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=["memory://door/a"],
            ) as subscription:
                honored = subscription.honored
        assert not honored.tools_list_changed
        assert not honored.prompts_list_changed
        assert not honored.resources_list_changed
        assert honored.resource_subscriptions == ["memory://door/a"]
        async with server.client(mode="legacy") as client:
            legacy = client.server_capabilities
            assert legacy.tools is not None
            assert not legacy.tools.list_changed


async def test_a_resources_list_cursor_with_a_forged_inner_part_is_invalid_params(
    hostd_data_dir: Path,
) -> None:
    """A cursor of hostd's shape whose inner part points into a kind that lists nothing (memory's
    tags, made on demand) was answered with a page: it is one hostd never handed out."""
    from hostd.core.resources import encode_list_cursor
    from mcp.shared.exceptions import MCPError

    async with in_memory_client(["memory", "tasks"], data_dir=hostd_data_dir) as client:
        assert (await client.list_resources()).next_cursor is None
        for forged in (
            encode_list_cursor(1, "junk"),
            encode_list_cursor(0, "junk"),
            encode_list_cursor(9, None),
        ):
            with pytest.raises(MCPError) as caught:
                await client.list_resources(cursor=forged)
            assert caught.value.code == -32602, forged
