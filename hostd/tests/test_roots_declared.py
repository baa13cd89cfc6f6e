"""A tool's need for the client's roots is read from its signature: a parameter typed ``hostd.Roots``.

A tool declaring one gets the effective roots (the client asked first, in both protocol eras); a
tool without one has no way to reach roots, and the host never asks the client on its behalf.
Before, the need was a registration flag (``uses_roots=True``), and a tool that forgot it failed
on its first call.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from hostd_testing import in_memory_client
from hostd_testing.calls import call, envelope_ok
from hostd_testing.clients import root_for

from hostd import RegisterTool, Roots, ToolContext, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio


class RootsOutput(ToolOutput):
    roots: list[str]


def declared(ctx: ToolContext[None], roots: Roots) -> RootsOutput:
    """List the effective roots."""
    return RootsOutput(roots=[str(root) for root in roots()])


def undeclared(ctx: ToolContext[None]) -> RootsOutput:
    """Answer without touching the user's files."""
    return RootsOutput(roots=[])


class RootsPlugin:
    @hookimpl
    def hostd_register_tools(self, register: RegisterTool) -> None:
        register(declared, access="read")
        register(undeclared, access="read")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_only_a_tool_with_a_roots_parameter_asks_the_client(
    hostd_data_dir: Path, tmp_path: Path, mode: str
) -> None:
    configured, project = tmp_path / "notes", tmp_path / "notes" / "project"
    project.mkdir(parents=True)
    asked: list[str] = []

    async def list_roots(context: Any) -> types.ListRootsResult:
        asked.append("roots/list")
        return types.ListRootsResult(roots=[root_for(project)])

    async with in_memory_client(
        ["roots"],
        data_dir=hostd_data_dir,
        extra_plugins={"roots": RootsPlugin()},
        config={"allowed_roots": [str(configured)]},
        mode=mode,
        list_roots_callback=list_roots,
    ) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert await call(client, "undeclared") == envelope_ok(roots=[])
        assert asked == []  # never asked for a tool that cannot use them
        assert await call(client, "declared") == envelope_ok(roots=[str(project.resolve())])
        assert asked == ["roots/list"]  # the client's roots narrowed the configured ones
    # The parameter is the host's to fill, like the context: it is no argument of the tool.
    assert set(tools["declared"].input_schema.get("properties", {})) == set()
