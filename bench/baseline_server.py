"""The baseline every stdio benchmark compares with: a bare SDK ``MCPServer`` with tools that do nothing.

``trivial(text)`` answers its argument; ``noop_thought(...)`` takes the sequential-thinking
arguments and does nothing, so a benchmark can send identical calls to both servers; its
completion handler answers the typed value back (the floor of a ``completion/complete``).
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


if __name__ == "__main__":
    import sys

    if "--one-tool" in sys.argv:  # the cold-start baseline: a bare server with one tool
        server.remove_tool("noop_thought")
    server.run("stdio")
