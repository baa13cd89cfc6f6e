"""An argument echoed in an error answer is bounded: a prefix and the length, never the whole value.

A 3 MB argument echoed whole made a 6 MB answer (the text block and ``structuredContent`` both
carry it). The host bounds what it renders, once for every plugin.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import pytest
from hostd.tools import MAX_ECHO_CHARS
from hostd_testing import envelope_of, in_memory_client
from pydantic import Field

from hostd import ToolError, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio

HUGE = "长" + "x" * 3_000_000


class Never(ToolOutput):
    never: str = ""


def refuse(text: Annotated[str, Field(description="What to refuse, echoed in the details")]) -> Never:
    """Refuse the text, echoing it in the details the way a plugin naming a bad argument does."""
    raise ToolError(
        "INVALID_ARGUMENT",
        "Refused.",
        details={"argument": "text", "value": text, "values": [text, "short"], "nested": {"path": text}},
    )


class EchoingPlugin:
    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        register(refuse, read_only=True)


async def test_long_values_in_details_are_a_prefix_and_their_length(hostd_data_dir: Path) -> None:
    async with in_memory_client(
        ["echoing"], data_dir=hostd_data_dir, extra_plugins={"echoing": EchoingPlugin()}
    ) as client:
        result = await client.call_tool("refuse", {"text": HUGE})
        short = envelope_of(await client.call_tool("refuse", {"text": "fine"}))
    text_block = result.content[0].text  # type: ignore[union-attr]
    assert len(text_block) < 4 * MAX_ECHO_CHARS + 1_000, len(text_block)
    details = envelope_of(result)["error"]["details"]
    assert json.loads(text_block)["error"]["details"] == details
    assert details["argument"] == "text"
    assert details["value"].startswith("长xxx") and details["value"].endswith("…")
    assert len(details["value"]) <= MAX_ECHO_CHARS + 1
    assert details["value_length"] == len(HUGE)
    assert details["nested"]["path"] == details["value"] and details["nested"]["path_length"] == len(HUGE)
    assert details["values"][1] == "short"
    assert details["values"][0].startswith("长xxx") and f"[{len(HUGE)}]" in details["values"][0]
    # Short values are echoed whole, with no length added.
    assert short["error"]["details"] == {
        "argument": "text",
        "value": "fine",
        "values": ["fine", "short"],
        "nested": {"path": "fine"},
    }


async def test_an_unknown_tool_name_is_bounded_in_the_protocol_error(hostd_data_dir: Path) -> None:
    from mcp.shared.exceptions import MCPError

    async with in_memory_client(
        ["echoing"], data_dir=hostd_data_dir, extra_plugins={"echoing": EchoingPlugin()}
    ) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("n" * 1_000_000, {})
    assert len(caught.value.message) < 2 * MAX_ECHO_CHARS, len(caught.value.message)
    assert "refuse" in caught.value.message and "nnn" in caught.value.message
