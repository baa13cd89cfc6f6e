"""JSON-RPC protocol errors: answered with the standard codes, and the server keeps serving."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_testing import envelope_of, in_memory_client

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
