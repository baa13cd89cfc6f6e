"""What a call's arguments may cost: an argument echoed in an error answer is bounded (a prefix and
the length, never the whole value), and nothing of a call is kept once it is answered.

A 3 MB argument echoed whole made a 6 MB answer (the text block and ``structuredContent`` both
carry it). The host bounds what it renders, once for every plugin.
"""

from __future__ import annotations

import gc
import json
import weakref
from pathlib import Path
from typing import Annotated, Any

import pytest
from hostd.core.tools import MAX_ECHO_CHARS
from hostd_testing import envelope_of, in_memory_client, write_config
from pydantic import BaseModel, Field

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
        register(refuse, access="read")


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
    assert details["value"].startswith("长xxx")
    assert details["value"].endswith("…")
    assert len(details["value"]) <= MAX_ECHO_CHARS + 1
    assert details["value_length"] == len(HUGE)
    assert details["nested"]["path"] == details["value"]
    assert details["nested"]["path_length"] == len(HUGE)
    assert details["values"][1] == "short"
    assert details["values"][0].startswith("长xxx")
    assert f"[{len(HUGE)}]" in details["values"][0]
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
    assert "refuse" in caught.value.message
    assert "nnn" in caught.value.message


class Payload(BaseModel):
    text: str


class Held(ToolOutput):
    size: int


SEEN: list[weakref.ref[Payload]] = []


def hold(payload: Annotated[Payload, Field(description="Kept only for the call")]) -> Held:
    """Answer with the payload's size; the call's arguments must not outlive it."""
    SEEN.append(weakref.ref(payload))
    return Held(size=len(payload.text))


def fail_holding(payload: Annotated[Payload, Field(description="In the frame that raises")]) -> Held:
    """Fail while the payload is a local of the raising frame."""
    SEEN.append(weakref.ref(payload))
    raise ToolError("CONFLICT", "Refused.")


class HoldingPlugin:
    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        register(hold, access="read")
        register(fail_holding, access="read")


@pytest.mark.parametrize("tool", ["hold", "fail_holding"])
async def test_a_sync_call_leaves_nothing_of_its_arguments_behind(tmp_path: Path, tool: str) -> None:
    """anyio's worker thread keeps its last job and exception (frames, locals) until its next job:
    over HTTP a run of 30 MB calls kept one or two copies per call resident."""
    from hostd.core.config import load_config
    from hostd.core.host import Host

    config = write_config(tmp_path, ["holding"])
    host = Host(load_config(str(config), None), extra_plugins={"holding": HoldingPlugin()}, cwd=tmp_path)
    SEEN.clear()
    envelope, is_error = await host.call(tool, {"payload": {"text": "x" * 1000}})
    assert is_error == (tool != "hold"), envelope
    gc.collect()
    [seen] = SEEN
    assert seen() is None, "the call's arguments are still referenced after its answer"


async def test_an_answered_call_lets_go_of_its_arguments_and_body() -> None:
    """The SDK's message loop keeps the last request until the connection's next message: its
    params (the arguments) and the HTTP request with its cached body. Once a call is answered the
    host's outermost middleware empties both, so 30 MB arguments are not resident between calls."""
    from types import SimpleNamespace

    from hostd.protocol.server import release_call_arguments

    arguments = {"content": "x" * 1000}
    http_request = SimpleNamespace(_body=b"{...30 MB...}")
    ctx = SimpleNamespace(
        method="tools/call", params={"name": "t", "arguments": arguments}, request=http_request
    )
    seen: list[dict[str, Any]] = []

    async def handler(inner: Any) -> str:
        seen.append(dict(inner.params["arguments"]))  # the handler sees them whole
        return "answer"

    assert await release_call_arguments(ctx, handler) == "answer"  # type: ignore[arg-type]
    assert seen == [{"content": "x" * 1000}]
    assert arguments == {}
    assert http_request._body == b""
    listing = SimpleNamespace(method="tools/list", params={"arguments": {"k": "v"}}, request=None)
    await release_call_arguments(listing, handler)  # type: ignore[arg-type]
    assert listing.params == {"arguments": {"k": "v"}}  # only tools/call is released
