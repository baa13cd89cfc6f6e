"""Long calls as tasks (issue 34), the parts below the wire: the task stores on each backend (memory,
SQLite, PostgreSQL) keep a task for its member only, end it once, carry a cancellation between
processes and forget it after its time; and a task's call is the pipeline's call (a quota applies
to it as to a plain call).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from call_tasks_support import TasksClient, start_task, wait_for_end
from hostd.team import call_tasks
from hostd.team.call_tasks import DatabaseTaskStore, MemoryTaskStore, TaskStore
from hostd_testing import HttpServer, envelope_of, write_config
from mcp.shared.exceptions import MCPError

STORES = ["memory", "sqlite", "postgres"]


@pytest.fixture(params=STORES)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[TaskStore]:
    kind: str = request.param
    opened: TaskStore
    if kind == "memory":
        opened = MemoryTaskStore()
    elif kind == "sqlite":
        opened = DatabaseTaskStore.open(tmp_path, None)
    else:
        pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
        from hostd_db import TeamDatabaseSettings

        opened = DatabaseTaskStore.open(
            tmp_path, TeamDatabaseSettings(url=request.getfixturevalue("postgres_url"))
        )
    try:
        yield opened
    finally:
        opened.close()


def test_a_task_is_its_members_and_ends_once(store: TaskStore) -> None:
    task = store.create("alice", "import_memories")
    assert (task.status, task.member, task.tool, task.cancel_requested) == (
        "working",
        "alice",
        "import_memories",
        False,
    )
    assert store.get(task.task_id, "alice") == task
    assert store.get(task.task_id, "bob") is None
    assert store.get(task.task_id, "") is None
    assert store.get("no-such-task", "alice") is None

    store.progress(task.task_id, "1/3 ok: First")
    seen = store.get(task.task_id, "alice")
    assert seen is not None
    assert seen.status_message == "1/3 ok: First"
    assert seen.updated_at >= task.updated_at

    assert store.request_cancel(task.task_id, "bob") is None  # not his
    assert not store.cancel_requested(task.task_id)
    asked = store.request_cancel(task.task_id, "alice")
    assert asked is not None
    assert asked.cancel_requested
    assert store.cancel_requested(task.task_id)

    result = {"content": [{"type": "text", "text": "done"}], "isError": False}
    ended = store.finish(task.task_id, "completed", result=result)
    assert ended is not None
    assert (ended.status, ended.result, ended.error) == ("completed", result, None)
    # Ended once: a late cancellation or progress line changes nothing.
    assert store.finish(task.task_id, "cancelled", message="late") is None
    store.progress(task.task_id, "2/3 late")
    final = store.get(task.task_id, "alice")
    assert final is not None
    assert final.status == "completed"
    assert final.status_message is None
    assert store.request_cancel(task.task_id, "alice") == final  # acknowledged, nothing to stop


def test_a_question_makes_the_task_wait_until_its_member_answers_it(store: TaskStore) -> None:
    task = store.create("alice", "import_memories")
    question = {"method": "elicitation/create", "params": {"message": "Replace?"}}
    store.ask(task.task_id, "confirm-1", question)
    waiting = store.get(task.task_id, "alice")
    assert waiting is not None
    assert (waiting.status, waiting.outstanding) == ("input_required", {"confirm-1": question})
    assert store.response(task.task_id, "confirm-1") is None
    assert store.respond(task.task_id, "bob", {"confirm-1": {"action": "accept"}}) is None  # not bob's
    # An answer to a question never asked is left out; the task still waits.
    unasked = store.respond(task.task_id, "alice", {"other": {"action": "accept"}})
    assert unasked is not None
    assert (unasked.status, unasked.input_responses) == ("input_required", {})
    answered = store.respond(task.task_id, "alice", {"confirm-1": {"action": "accept"}})
    assert answered is not None
    assert (answered.status, answered.outstanding) == ("working", {})
    assert store.response(task.task_id, "confirm-1") == {"action": "accept"}
    assert store.finish(task.task_id, "completed", result={"content": []}) is not None


def test_a_failed_task_keeps_its_json_rpc_error(store: TaskStore) -> None:
    task = store.create("", "export_memories")
    message = "Unknown tool: export_memories."
    error: dict[str, Any] = {"code": -32602, "message": message}
    ended = store.finish(task.task_id, "failed", message=message, error=error)
    assert ended is not None
    assert (ended.status, ended.error, ended.status_message) == (
        "failed",
        error,
        message,
    )


def test_a_task_is_forgotten_after_its_time(store: TaskStore, monkeypatch: pytest.MonkeyPatch) -> None:
    task = store.create("alice", "read_wechat_articles")
    monkeypatch.setattr(call_tasks, "TASK_TTL_MS", 0)
    assert store.get(task.task_id, "alice") is None
    assert store.request_cancel(task.task_id, "alice") is None
    store.create("alice", "read_wechat_articles")  # a creation drops what has expired
    monkeypatch.setattr(call_tasks, "TASK_TTL_MS", 3_600_000)
    assert store.get(task.task_id, "alice") is None


TOKENS = {"alice": "alice-token-0123456789", "carol": "carol-token-0123456789"}


@pytest.mark.anyio
async def test_a_tasks_call_is_the_pipelines_quota_and_policy_included(tmp_path: Path) -> None:
    """A quota applies to a task as to a plain call; a member whose profile does not serve the tool
    gets the plain call's unknown-tool error, and no task."""
    notes = tmp_path / "notes"
    notes.mkdir()
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"alice: {TOKENS['alice']}\ncarol: {{token: {TOKENS['carol']}, profile: writer}}\n", encoding="utf-8"
    )
    config = write_config(
        tmp_path,
        config={
            "profiles": {
                "default": {"plugins": ["memory"], "transport": {"tokens_file": str(tokens)}},
                "writer": {"plugins": ["summary-writer"]},
            },
            "allowed_roots": [str(notes)],
            "language": "en",
            "limits": {"tools": {"export_memories": {"calls_per_minute": 1, "burst": 1}}},
        },
    )
    with HttpServer.start(config) as server:  # one process: one quota bucket for both clients
        alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
        async with server.client(mode="2026-07-28", headers=alice, extensions=[TasksClient()]) as client:
            first = await start_task(client, "export_memories", {})
            done = await wait_for_end(client.session, first.task_id)
            assert done.status == "completed"
            assert envelope_of(types.CallToolResult.model_validate(done.result))["status"] == "success"

            second = await start_task(client, "export_memories", {})  # the quota is the pipeline's
            limited = await wait_for_end(client.session, second.task_id)
            assert limited.status == "completed"
            assert limited.result is not None
            assert limited.result["isError"] is True
            as_task = envelope_of(types.CallToolResult.model_validate(limited.result))
        async with server.client(mode="2026-07-28", headers=alice) as plain_client:
            plain = await plain_client.call_tool("export_memories", {})
        carol = {"Authorization": f"Bearer {TOKENS['carol']}"}
        refusals = []
        for extensions in ([TasksClient()], []):
            async with server.client(mode="2026-07-28", headers=carol, extensions=extensions) as other:
                with pytest.raises(MCPError) as refused:
                    await other.session.call_tool("export_memories", {}, allow_claimed=True)
                refusals.append((refused.value.error.code, refused.value.error.message))
        assert refusals[0] == refusals[1]
        assert refusals[0][0] == types.INVALID_PARAMS
        assert refusals[0][1].startswith("Unknown tool: export_memories."), refusals
    assert plain.is_error
    as_plain = envelope_of(plain)
    assert as_task["error"]["code"] == as_plain["error"]["code"] == "RATE_LIMITED"
    assert as_task["error"]["details"]["tool"] == as_plain["error"]["details"]["tool"] == "export_memories"
