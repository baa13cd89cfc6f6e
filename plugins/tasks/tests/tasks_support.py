"""Helpers the tasks tests share: calling tools, and walking a task to a given status.

Named uniquely (not ``support.py``) because pytest imports every test folder's modules by
their base name; child processes of the concurrency tests import it by name too.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from hostd_testing import envelope_of
from mcp import Client

#: The ``connect`` fixture: ``connect(plugins=None, *, language="en", extra_plugins=None)`` opens a client.
Connect = Callable[..., AbstractAsyncContextManager[Client]]

STATUSES = ("pending", "in_progress", "completed", "failed", "blocked")

#: The issue's table, written out independently of the plugin's own copy.
ALLOWED = {
    ("pending", "in_progress"),
    ("pending", "blocked"),
    ("pending", "failed"),
    ("in_progress", "completed"),
    ("in_progress", "failed"),
    ("in_progress", "blocked"),
    ("in_progress", "pending"),
    ("blocked", "pending"),
    ("blocked", "in_progress"),
    ("failed", "pending"),
    ("completed", "pending"),
}

#: Allowed moves that bring a fresh (pending) task to each status.
PATH_TO = {
    "pending": [],
    "in_progress": ["in_progress"],
    "completed": ["in_progress", "completed"],
    "failed": ["failed"],
    "blocked": ["blocked"],
}

RECORD_KEYS = {
    "task_id",
    "title",
    "description",
    "status",
    "priority",
    "depends_on",
    "linked_session_id",
    "created_at",
    "updated_at",
    "parent_id",
    "labels",
    "acceptance",
    "notes",
    "subtasks",
}


async def call(
    client: Client, tool: str, arguments: dict[str, Any] | None = None
) -> tuple[dict[str, Any], bool]:
    """The envelope of one call and whether it is an error."""
    result = await client.call_tool(tool, arguments or {})
    return envelope_of(result), bool(result.is_error)


async def ok(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """Call a tool that must succeed; return its envelope."""
    envelope, is_error = await call(client, tool, arguments)
    assert not is_error, envelope
    assert envelope["status"] == "success"
    return envelope


async def refused(client: Client, tool: str, arguments: dict[str, Any], code: str) -> dict[str, Any]:
    """Call a tool that must answer the error ``code``; return the envelope's ``error``."""
    envelope, is_error = await call(client, tool, arguments)
    assert is_error, envelope
    assert envelope["error"]["code"] == code, envelope
    return envelope["error"]  # type: ignore[no-any-return]


async def create(client: Client, title: str = "a task", **arguments: Any) -> dict[str, Any]:
    """Create a task; return its record."""
    envelope = await ok(client, "create_task", {"title": title, **arguments})
    return envelope["task"]  # type: ignore[no-any-return]


async def walk_to(client: Client, task_id: str, status: str) -> None:
    """Bring a pending task to ``status`` through allowed moves only."""
    for step in PATH_TO[status]:
        await ok(client, "update_task_status", {"task_id": task_id, "new_status": step})
