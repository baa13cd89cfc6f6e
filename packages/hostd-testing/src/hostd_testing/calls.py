"""Calling tools from tests and asserting whole envelopes.

Every plugin's tests called a tool and checked its status the same way, each with a private copy
in its ``conftest.py``. They live here once; with the matchers a test asserts the whole envelope
(``assert envelope == envelope_ok(message=..., count=2)``) instead of picking fields one by one,
so a field that appears, disappears or changes is noticed.
"""

from __future__ import annotations

from typing import Any

from mcp import Client

from hostd_testing.clients import envelope_of

Envelope = dict[str, Any]


async def call(client: Client, tool: str, **arguments: Any) -> Envelope:
    """The envelope of one call, whatever its status (checked against the text block)."""
    return envelope_of(await client.call_tool(tool, arguments))


async def ok(client: Client, tool: str, **arguments: Any) -> Envelope:
    """Call a tool that must succeed; return its envelope."""
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "success", envelope
    return envelope


async def fails(client: Client, tool: str, code: str, **arguments: Any) -> Envelope:
    """Call a tool that must fail with ``code``; return its envelope."""
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "error", envelope
    assert envelope["error"]["code"] == code, envelope
    return envelope


async def error_code(client: Client, tool: str, **arguments: Any) -> str:
    """Call a tool that must fail; return its error code."""
    envelope = await call(client, tool, **arguments)
    assert envelope["status"] == "error", envelope
    return str(envelope["error"]["code"])


class _AnyMilliseconds:
    """Equal to any duration the host can report: a non-negative int or float (not a bool)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, int | float) and not isinstance(other, bool) and other >= 0

    def __ne__(self, other: object) -> bool:
        return not self == other

    def __hash__(self) -> int:  # pragma: no cover - matchers are not dictionary keys
        return id(self)

    def __repr__(self) -> str:
        return "ANY_MS"


class _Anything:
    """Equal to any value: for a field whose presence matters but whose value does not."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:  # pragma: no cover
        return id(self)

    def __repr__(self) -> str:
        return "ANY"


#: Matches the ``metadata.execution_time_ms`` of any envelope.
ANY_MS: Any = _AnyMilliseconds()
#: Matches any value (``unittest.mock.ANY`` with a shorter repr).
ANY: Any = _Anything()


def envelope_ok(message: Any = ANY, **fields: Any) -> Envelope:
    """The whole success envelope of a tool whose output is ``fields``.

    ``message`` defaults to any message; pass the expected text to check it too.
    """
    return {"status": "success", "message": message, **fields, "metadata": {"execution_time_ms": ANY_MS}}


def envelope_error(
    code: str,
    message: Any = ANY,
    *,
    hint: Any = None,
    details: Any = ANY,
) -> Envelope:
    """The whole error envelope for ``code``; ``hint=None`` means the envelope carries no hint."""
    error: Envelope = {"code": code, "message": message, "details": details}
    if hint is not None:
        error["hint"] = hint
    return {"status": "error", "message": message, "error": error, "metadata": {"execution_time_ms": ANY_MS}}


__all__ = [
    "ANY",
    "ANY_MS",
    "Envelope",
    "call",
    "envelope_error",
    "envelope_ok",
    "error_code",
    "fails",
    "ok",
]
