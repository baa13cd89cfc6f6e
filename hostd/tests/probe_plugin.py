"""A small plugin that exercises every part of the host contract, for the host's own tests.

Used in-process (imported) and in real ``hostd serve`` processes (installed by entry point
into a temporary folder with ``hostd_testing.install_plugin_source``).
"""

from __future__ import annotations

from typing import Annotated, Literal

import anyio
from pydantic import BaseModel, ConfigDict, Field

from hostd import PluginContext, Roots, Text, ToolContext, ToolError, ToolOutput, hookimpl


class ProbeSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    greeting: str = "hello"
    repeat_limit: int = Field(default=5, ge=1, le=100)


class EchoResult(ToolOutput):
    text: str
    times: int
    greeting: str


class RootsResult(ToolOutput):
    roots: list[str]


class SampleResult(ToolOutput):
    available: bool
    text: str | None
    reason: str | None


class ProgressResult(ToolOutput):
    steps: int


class FailResult(ToolOutput):
    never: str = ""


def echo(
    ctx: ToolContext[ProbeSettings],
    text: Annotated[str, Field(description="Text to send back", min_length=1, max_length=10_000)],
    times: Annotated[int, Field(description="How many times to repeat it", ge=1, le=5)] = 1,
    style: Annotated[Literal["plain", "upper"], Field(description="How to render the text")] = "plain",
) -> EchoResult:
    """Send the text back, repeated; a read-only probe of validation and the envelope."""
    rendered = (text.upper() if style == "upper" else text) * times
    return EchoResult(text=rendered, times=times, greeting=ctx.settings.greeting).with_message(
        Text(en=f"Echoed {times} time(s).", zh=f"已回显 {times} 次。")
    )


def fail(
    kind: Annotated[
        Literal["tool_error", "crash", "fs_error", "wrong_output"], Field(description="Failure to raise")
    ],
) -> FailResult:
    """Fail in the chosen way, to check how the host reports each kind of failure."""
    if kind == "tool_error":
        raise ToolError(
            "CONFLICT", "The probe conflicts on purpose.", hint="Pick another kind.", details={"k": 1}
        )
    if kind == "fs_error":
        from hostd_fs import resolve_in_roots

        resolve_in_roots("../outside.md", [__import__("pathlib").Path("/tmp")])
    if kind == "wrong_output":
        return "not a model"  # type: ignore[return-value]
    raise RuntimeError("secret internal detail that must not reach the client")


def where(roots: Roots) -> RootsResult:
    """List the effective roots this call may write under."""
    return RootsResult(roots=[str(root) for root in roots()])


async def ask(
    ctx: ToolContext[ProbeSettings],
    prompt: Annotated[str, Field(description="What to ask the client's model")],
) -> SampleResult:
    """Ask the client's model through MCP sampling, if the client offers it."""
    answer = await ctx.sample(prompt, max_tokens=50)
    reason = ctx.render(answer.reason) if answer.reason else None
    return SampleResult(available=answer.available, text=answer.text, reason=reason)


async def count_slowly(
    ctx: ToolContext[ProbeSettings],
    steps: Annotated[int, Field(description="How many progress steps to report", ge=1, le=50)],
) -> ProgressResult:
    """Report progress ``steps`` times, pausing a little between steps."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step}")
        await anyio.sleep(0.01)
    return ProgressResult(steps=steps)


def noisy(ctx: ToolContext[ProbeSettings]) -> ProgressResult:
    """Print to stdout and write to file descriptor 1, which must not corrupt the protocol; log at
    four levels (from the worker thread a plain tool runs in)."""
    import os

    print("stray print from a tool")
    os.write(1, b"raw bytes on fd 1\n")
    for level, word in ((10, "debug"), (20, "info"), (30, "warning"), (40, "error")):
        ctx.logger.log(level, "noisy says %s", word)
    return ProgressResult(steps=0)


EVENTS: list[str] = []


@hookimpl
def hostd_settings_model() -> type[BaseModel]:
    return ProbeSettings


@hookimpl
def hostd_register_tools(register) -> None:  # type: ignore[no-untyped-def]
    register(echo, access="read")
    register(fail, destructive=False)
    register(where, access="read")
    register(ask, access="read")
    register(count_slowly, access="read")
    register(noisy, access="read")


@hookimpl
def hostd_register_services(register, context: PluginContext[ProbeSettings]) -> None:  # type: ignore[no-untyped-def]
    register("probe.greeter", lambda name: f"{context.settings.greeting}, {name}")


@hookimpl
def hostd_startup(context: PluginContext[ProbeSettings]) -> None:
    EVENTS.append(f"startup:{context.name}")


@hookimpl
def hostd_shutdown(context: PluginContext[ProbeSettings]) -> None:
    EVENTS.append(f"shutdown:{context.name}")
