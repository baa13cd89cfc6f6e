"""A plugin for the team-serving tests: who is calling, a call that takes a while, and a
shut-down hook that leaves a mark (to see a served process close its plugins on SIGTERM)."""

from __future__ import annotations

from typing import Annotated

import anyio
from pydantic import Field

from hostd import PluginContext, Text, ToolContext, ToolOutput, hookimpl


class WhoResult(ToolOutput):
    member: str


class LingerResult(ToolOutput):
    seconds: float


def whoami(ctx: ToolContext[None]) -> WhoResult:
    """Say which team member this call is made for."""
    return WhoResult(member=ctx.member).with_message(Text(en="Identified.", zh="已识别。"))


async def linger(
    ctx: ToolContext[None],
    seconds: Annotated[float, Field(description="How long to take", ge=0, le=30)],
) -> LingerResult:
    """Report progress once (the call is under way), then take ``seconds`` to answer."""
    await ctx.report_progress(0, 1, "started")
    await anyio.sleep(seconds)
    return LingerResult(seconds=seconds)


@hookimpl
def hostd_register_tools(register) -> None:  # type: ignore[no-untyped-def]
    register(whoami, access="read")
    register(linger, access="read")


@hookimpl
def hostd_startup(context: PluginContext[None]) -> None:
    (context.data_dir / "shutdown-ran").unlink(missing_ok=True)  # the host shuts down what started


@hookimpl
def hostd_shutdown(context: PluginContext[None]) -> None:
    (context.data_dir / "shutdown-ran").write_text("yes", encoding="utf-8")
