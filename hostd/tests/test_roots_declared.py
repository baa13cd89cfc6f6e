"""A tool that reads the client's roots must say so when it registers (``uses_roots=True``).

Forgetting the flag used to be silent: the host did not ask the client, and the tool fell back
to the configured roots alone. Now the first call of such a tool fails loudly (INTERNAL, with
the reason in the log), so the mistake cannot survive the tool's first test.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from hostd_testing import in_memory_client
from hostd_testing.calls import ANY, call, envelope_error, envelope_ok

from hostd import RegisterTool, ToolContext, ToolOutput, hookimpl

pytestmark = pytest.mark.anyio


class RootsOutput(ToolOutput):
    roots: list[str]


def declared(ctx: ToolContext[None]) -> RootsOutput:
    """List the effective roots (registered with uses_roots)."""
    return RootsOutput(roots=[str(root) for root in ctx.roots()])


def undeclared(ctx: ToolContext[None]) -> RootsOutput:
    """List the effective roots (registered without uses_roots: a plugin bug)."""
    return RootsOutput(roots=[str(root) for root in ctx.roots()])


class RootsPlugin:
    @hookimpl
    def hostd_register_tools(self, register: RegisterTool) -> None:
        register(declared, read_only=True, uses_roots=True)
        register(undeclared, read_only=True)


async def test_roots_need_the_registration_flag(
    hostd_data_dir: Path, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    async with in_memory_client(
        ["roots"],
        data_dir=hostd_data_dir,
        extra_plugins={"roots": RootsPlugin()},
        config={"allowed_roots": [str(root)]},
    ) as client:
        assert await call(client, "declared") == envelope_ok(roots=[str(root.resolve())], message=ANY)
        with caplog.at_level(logging.ERROR):
            answer = await call(client, "undeclared")
    assert answer == envelope_error("INTERNAL", message=ANY, hint=ANY, details={})
    assert "uses_roots=True" in caplog.text
