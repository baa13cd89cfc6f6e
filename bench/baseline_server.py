"""The baseline every stdio benchmark compares with: a bare SDK ``MCPServer`` with tools that do nothing.

``trivial(text)`` answers its argument; ``noop_thought(...)`` takes the sequential-thinking
arguments and does nothing, so a benchmark can send identical calls to both servers; its
completion handler answers the typed value back (the floor of a ``completion/complete``).
``--hostd-transport`` serves it on hostd's stdio transport and event loop instead of the SDK's.
"""

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp_types import Completion

server = MCPServer("baseline")


@server.tool()
def trivial(text: str = "") -> str:
    """Answer the text unchanged."""
    return text


@server.tool()
def noop_thought(
    thought: str,
    nextThoughtNeeded: bool,
    thoughtNumber: int,
    totalThoughts: int,
    session_id: str | None = None,
) -> dict[str, object]:
    """Accept a thought and do nothing with it."""
    return {
        "thoughtNumber": thoughtNumber,
        "totalThoughts": totalThoughts,
        "nextThoughtNeeded": nextThoughtNeeded,
    }


@server.completion()
async def echo_completion(ref: Any, argument: Any, context: Any) -> Completion:
    """Offer the typed value itself: no lookup at all."""
    return Completion(values=[argument.value] if argument.value else [])


async def run_on_hostd_transport() -> None:
    """The same server with stdin and stdout served by hostd's own stdio transport (pipes watched by
    the event loop, no worker threads): the floor for hostd's work alone, transport aside."""
    from hostd.protocol.stdio_pipes import pipe_stdio
    from mcp.server.stdio import stdio_server

    lowlevel = server._lowlevel_server  # MCPServer's run_stdio_async does the same with the SDK's transport
    async with pipe_stdio() as (stdin, stdout), stdio_server(stdin, stdout) as (read_stream, write_stream):
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())


if __name__ == "__main__":
    import sys

    if "--one-tool" in sys.argv:  # the cold-start baseline: a bare server with one tool
        server.remove_tool("noop_thought")
    if "--hostd-transport" in sys.argv:
        import anyio

        anyio.run(run_on_hostd_transport, backend_options={"use_uvloop": True})
    else:
        server.run("stdio")
