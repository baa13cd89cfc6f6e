"""Helpers the tasks tests share: creating a task, and walking it to a given status.

Calling a tool is ``hostd_testing`` (``call``, ``ok``, ``fails``); ``refused`` is ``fails``
answering the envelope's ``error``, which is what the tasks tests check.

Named uniquely (not ``support.py``) because pytest imports every test folder's modules by
their base name; child processes of the concurrency tests import it by name too.
"""

from __future__ import annotations

from typing import Any

from dirty_equals import IsStr
from hostd_testing import TEAM_DATABASE_ENV as BACKEND_DATABASE_ENV
from hostd_testing import Client, fails, ok

from hostd import hookimpl

#: The environment variable the PostgreSQL test configs name in ``storage.url_env`` (the
#: ``backend`` fixture's).
TEAM_DATABASE_ENV = BACKEND_DATABASE_ENV

#: A time as every answer spells it (``hostd_db.utc_stamp``: UTC, microseconds, ``Z``).
STAMP = IsStr(regex=r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z")


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
    "created_by",
    "claimed_by",
    "lease_expires_at",
    "claim_count",
    "expired_claims",
}


async def refused(client: Client, tool: str, code: str, **arguments: Any) -> dict[str, Any]:
    """Call a tool that must answer the error ``code``; return the envelope's ``error``."""
    error: dict[str, Any] = (await fails(client, tool, code, **arguments))["error"]
    return error


async def create(client: Client, title: str = "a task", **arguments: Any) -> dict[str, Any]:
    """Create a task; return its record."""
    envelope = await ok(client, "create_task", title=title, **arguments)
    task: dict[str, Any] = envelope["task"]
    return task


async def walk_to(client: Client, task_id: str, status: str) -> None:
    """Bring a pending task to ``status`` through allowed moves only."""
    for step in PATH_TO[status]:
        await ok(client, "update_task_status", task_id=task_id, new_status=step)


# --- deep-thinking sessions, real or stood in for ----------------------------------------------


class FakeSessions:
    """Stands in for deep-thinking's ``deep-thinking.sessions`` service (the agreed contract)."""

    def __init__(self, sessions: dict[str, dict[str, Any]]) -> None:
        self.sessions = sessions
        self.asked: list[str] = []

    def session_exists(self, session_id: str) -> bool:
        self.asked.append(session_id)
        return session_id in self.sessions

    def session_summary(self, session_id: str) -> dict[str, Any] | None:
        return self.sessions.get(session_id)


class SessionsPlugin:
    """An in-line plugin offering the fake service, loaded beside tasks."""

    def __init__(self, service: FakeSessions) -> None:
        self.service = service

    @hookimpl
    def hostd_register_services(self, register: Any) -> None:
        register("deep-thinking.sessions", self.service)


SUMMARY = {"session_id": "plan-1", "name": "Plan the release", "status": "active", "thought_count": 3}


async def new_session(client: Any) -> str:
    """Create a session through deep-thinking's own tool and return its id."""
    answer = await ok(client, "create_session", name="linked from tasks")
    session = answer.get("session") or {}
    session_id = session.get("session_id") or answer.get("session_id")
    assert isinstance(session_id, str), answer
    return session_id
