"""Calling tools from tests and asserting whole envelopes.

Every plugin's tests called a tool and checked its status the same way, each with a private copy
in its ``conftest.py``. They live here once; with the matchers a test asserts the whole envelope
(``assert envelope == envelope_ok(message=..., count=2)``) instead of picking fields one by one,
so a field that appears, disappears or changes is noticed.
"""

from __future__ import annotations

from typing import Any

from dirty_equals import IsFloat, IsInstance, IsStr
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


def _metadata() -> Envelope:
    """The metadata of any answer: ``execution_time_ms`` is a rounded float, never negative.
    Tests that spell an answer's metadata by hand (a confirmation's) write ``IsFloat(ge=0)`` too."""
    return {"execution_time_ms": IsFloat(ge=0)}


def envelope_ok(message: Any = IsStr, **fields: Any) -> Envelope:
    """The whole success envelope of a tool whose output is ``fields``.

    ``message`` defaults to any text; pass the expected text (or a ``dirty_equals`` matcher) to
    check it too. A field whose value varies takes a ``dirty_equals`` matcher (``IsStr``,
    ``IsDatetime(iso_string=True)``, ``IsList(length=20)``...), never a bare "anything".
    """
    return {"status": "success", "message": message, **fields, "metadata": _metadata()}


def envelope_error(
    code: str,
    message: Any = IsStr,
    *,
    hint: Any = None,
    details: Any = IsInstance(dict),
) -> Envelope:
    """The whole error envelope for ``code``; ``hint=None`` means the envelope carries no hint.

    ``message`` defaults to any text and ``details`` to any mapping; ``hint=IsStr`` asks for a hint
    whatever its words.
    """
    error: Envelope = {"code": code, "message": message, "details": details}
    if hint is not None:
        error["hint"] = hint
    return {"status": "error", "message": message, "error": error, "metadata": _metadata()}


__all__ = [
    "Envelope",
    "call",
    "envelope_error",
    "envelope_ok",
    "error_code",
    "fails",
    "ok",
]
