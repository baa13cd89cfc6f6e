"""link_task_session with and without deep-thinking, and the ``tasks.links`` service."""

from __future__ import annotations

from pathlib import Path

import pytest
from hostd_testing import Connect, make_host, ok
from tasks_support import SUMMARY, FakeSessions, SessionsPlugin, create, new_session, refused

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
@pytest.mark.served
async def test_without_deep_thinking_the_link_is_stored_unchecked(connect: Connect) -> None:
    async with connect() as client:
        task = await create(client)
        answer = await ok(client, "link_task_session", task_id=task["task_id"], session_id="anything-1")
        listed = await ok(client, "list_tasks")
    assert answer["session_checked"] is False
    assert answer["session"] is None
    assert "could not be checked" in answer["message"]
    assert answer["task"]["linked_session_id"] == "anything-1"
    assert listed["tasks"][0]["linked_session_id"] == "anything-1"


async def test_relinking_reports_the_previous_session(connect_in_memory: Connect) -> None:
    async with connect_in_memory() as client:
        task = await create(client)
        await ok(client, "link_task_session", task_id=task["task_id"], session_id="s-1")
        answer = await ok(client, "link_task_session", task_id=task["task_id"], session_id="s-2")
    assert answer["previous_session_id"] == "s-1"
    assert answer["task"]["linked_session_id"] == "s-2"


async def test_linking_an_unknown_task_is_not_found(connect: Connect) -> None:
    async with connect() as client:
        error = await refused(client, "link_task_session", "NOT_FOUND", task_id="nope", session_id="s-1")
    assert error["details"]["task_id"] == "nope"


async def test_with_sessions_service_an_unknown_session_is_not_found(connect_in_memory: Connect) -> None:
    sessions = FakeSessions({"plan-1": SUMMARY})
    async with connect_in_memory(
        ["tasks", "fake-deep-thinking"], extra_plugins={"fake-deep-thinking": SessionsPlugin(sessions)}
    ) as client:
        task = await create(client)
        error = await refused(
            client, "link_task_session", "NOT_FOUND", task_id=task["task_id"], session_id="missing"
        )
        listed = await ok(client, "list_tasks")
    assert error["details"]["session_id"] == "missing"
    assert sessions.asked == ["missing"]
    assert listed["tasks"][0]["linked_session_id"] is None


async def test_with_sessions_service_a_known_session_is_checked(connect_in_memory: Connect) -> None:
    sessions = FakeSessions({"plan-1": SUMMARY})
    async with connect_in_memory(
        ["tasks", "fake-deep-thinking"], extra_plugins={"fake-deep-thinking": SessionsPlugin(sessions)}
    ) as client:
        task = await create(client)
        answer = await ok(client, "link_task_session", task_id=task["task_id"], session_id="plan-1")
    assert answer["session_checked"] is True
    assert answer["session"] == SUMMARY
    assert "could not be checked" not in answer["message"]
    assert answer["task"]["linked_session_id"] == "plan-1"


class BrokenSessions(FakeSessions):
    def session_exists(self, session_id: str) -> bool:
        raise OSError("disk went away")


async def test_a_failing_sessions_service_stores_the_link_unchecked(connect_in_memory: Connect) -> None:
    sessions = BrokenSessions({})
    async with connect_in_memory(
        ["tasks", "fake-deep-thinking"], extra_plugins={"fake-deep-thinking": SessionsPlugin(sessions)}
    ) as client:
        task = await create(client)
        answer = await ok(client, "link_task_session", task_id=task["task_id"], session_id="s-1")
    assert answer["session_checked"] is False
    assert "could not be checked" in answer["message"]
    assert "failed" in answer["message"]
    assert answer["task"]["linked_session_id"] == "s-1"


def test_tasks_links_service_lists_linked_tasks(hostd_data_dir: Path) -> None:
    import anyio

    with make_host(["tasks"], data_dir=hostd_data_dir) as host:
        links = host.service("tasks.links")
        assert links is not None
        assert links.tasks_for_session("s-1") == []

        async def scenario() -> None:
            for title, priority, session in [
                ("low", "P2", "s-1"),
                ("top", "P0", "s-1"),
                ("other", "P1", "s-2"),
            ]:
                envelope, is_error = await host.call("create_task", {"title": title, "priority": priority})
                assert not is_error, envelope
                linked, is_error = await host.call(
                    "link_task_session", {"task_id": envelope["task"]["task_id"], "session_id": session}
                )
                assert not is_error, linked

        anyio.run(scenario)
        found = links.tasks_for_session("s-1")
    assert [(t["title"], t["priority"], t["status"]) for t in found] == [
        ("top", "P0", "pending"),
        ("low", "P2", "pending"),
    ]
    assert set(found[0]) == {"task_id", "title", "status", "priority"}


# --- with the real deep-thinking plugin in the same profile ----------------------------------


@pytest.mark.together
async def test_with_deep_thinking_loaded_links_are_checked(connect: Connect) -> None:
    pytest.importorskip("hostd_deep_thinking")
    async with connect(["deep-thinking", "tasks"]) as client:
        session_id = await new_session(client)
        task = await create(client)
        await refused(
            client,
            "link_task_session",
            "NOT_FOUND",
            task_id=task["task_id"],
            session_id="no-such-session",
        )
        answer = await ok(client, "link_task_session", task_id=task["task_id"], session_id=session_id)
    assert answer["session_checked"] is True
    assert answer["session"]["session_id"] == session_id
    assert answer["task"]["linked_session_id"] == session_id


@pytest.mark.together
async def test_with_deep_thinking_loaded_the_session_shows_its_linked_tasks(connect: Connect) -> None:
    pytest.importorskip("hostd_deep_thinking")
    async with connect(["deep-thinking", "tasks"]) as client:
        session_id = await new_session(client)
        task = await create(client, "ship it", priority="P0")
        await ok(client, "link_task_session", task_id=task["task_id"], session_id=session_id)
        await ok(client, "update_task_status", task_id=task["task_id"], new_status="in_progress")
        session = await ok(client, "get_session", session_id=session_id)
    assert session["linked_tasks"] == [
        {"task_id": task["task_id"], "title": "ship it", "status": "in_progress", "priority": "P0"}
    ]
