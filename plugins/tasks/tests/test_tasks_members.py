"""Team members on the task list: who created a task, who claimed it, and who made each change.

In-process and over stdio the member is the local login name (``getpass``, which reads
``LOGNAME`` first: the tests that need several members in one process set it); over HTTP it is
the owner of the bearer token in the tokens file.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import pytest
import yaml
from hostd_testing import Connect, HttpServer, ok, write_config
from tasks_support import create

pytestmark = pytest.mark.anyio

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789ab"


def _events(details: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(entry["event"], entry["by"]) for entry in details["history"]]


@pytest.mark.served
async def test_every_change_records_the_calling_member(connect: Connect) -> None:
    """In-process and over stdio the member is the local login name, on every kind of change."""
    me = getpass.getuser()
    async with connect() as client:
        dep = await create(client, "dep", task_id="dep")
        await create(client, "work", task_id="w", priority="P0")
        claimed = await ok(client, "get_next_task", claim=True)
        await ok(client, "update_task", task_id="w", title="work, renamed", depends_on=["dep"])
        await ok(client, "update_task_status", task_id="w", new_status="blocked")
        await ok(client, "link_task_session", task_id="w", session_id="s-1")
        split = await ok(client, "split_task", task_id="w", subtasks=[{"title": "part", "task_id": "p"}])
        await ok(client, "delete_task", task_id="p")
        await ok(client, "delete_task", task_id="dep", drop_dependencies=True)
        work = await ok(client, "get_task", task_id="w")
        part = await ok(client, "get_task", task_id="p")
        gone = await ok(client, "get_task", task_id="dep")
    assert (dep["created_by"], dep["claimed_by"]) == (me, None)
    assert claimed["task"]["task_id"] == "w"
    assert claimed["task"]["claimed_by"] == me
    assert split["subtasks"][0]["created_by"] == me
    assert (work["task"]["created_by"], work["task"]["claimed_by"]) == (me, me)  # blocked keeps its claimer
    assert _events(work) == [
        ("created", me),
        ("claimed", me),
        ("edited", me),
        ("status", me),
        ("linked", me),
        ("split", me),
        ("dependency_dropped", me),
    ]
    assert _events(part) == [("created", me), ("deleted", me)]
    assert _events(gone) == [("created", me), ("deleted", me)]
    assert gone["task"]["created_by"] == me  # the last record keeps its members


async def test_claimed_by_is_set_on_in_progress_kept_after_and_cleared_back_to_pending(
    connect_in_memory: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whoever moves a task to in_progress holds it; it stays theirs when completed, failed or
    blocked, and is nobody's again once it is pending (released, retried or reopened)."""

    def act_as(member: str) -> None:
        monkeypatch.setenv("LOGNAME", member)

    async def move(client: Any, status: str) -> dict[str, Any]:
        envelope = await ok(client, "update_task_status", task_id="a", new_status=status)
        task: dict[str, Any] = envelope["task"]
        return task

    async with connect_in_memory() as client:
        act_as("alice")
        created = await create(client, "a", task_id="a", priority="P0")
        act_as("bob")
        claimed = (await ok(client, "get_next_task", claim=True))["task"]
        completed = await move(client, "completed")
        act_as("carol")
        reopened = await move(client, "pending")
        taken = await move(client, "in_progress")
        act_as("dave")
        blocked = await move(client, "blocked")
        resumed = await move(client, "in_progress")
        failed = await move(client, "failed")
        retried = await move(client, "pending")
        details = await ok(client, "get_task", task_id="a")
    assert (created["created_by"], created["claimed_by"]) == ("alice", None)
    assert [
        t["claimed_by"] for t in (claimed, completed, reopened, taken, blocked, resumed, failed, retried)
    ] == [
        "bob",
        "bob",
        None,
        "carol",
        "carol",
        "dave",
        "dave",
        None,
    ]
    assert {t["created_by"] for t in (claimed, completed, reopened, taken, blocked, resumed, retried)} == {
        "alice"
    }
    assert _events(details) == [
        ("created", "alice"),
        ("claimed", "bob"),
        ("status", "bob"),
        ("status", "carol"),
        ("status", "carol"),
        ("status", "dave"),
        ("status", "dave"),
        ("status", "dave"),
        ("status", "dave"),
    ]


async def test_list_tasks_filters_by_creator_and_claimer(
    connect_in_memory: Connect, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with connect_in_memory() as client:
        monkeypatch.setenv("LOGNAME", "alice")
        await create(client, "a1", task_id="a1", priority="P0")
        await create(client, "a2", task_id="a2")
        monkeypatch.setenv("LOGNAME", "bob")
        await create(client, "b1", task_id="b1", priority="P1")
        await ok(client, "get_next_task", claim=True)  # a1, the most urgent
        monkeypatch.setenv("LOGNAME", "alice")
        await ok(client, "get_next_task", claim=True)  # b1

        async def ids(**filters: Any) -> tuple[list[str], int]:
            page = await ok(client, "list_tasks", **filters)
            return [t["task_id"] for t in page["tasks"]], page["total"]

        by_alice = await ids(created_by="alice")
        by_bob = await ids(created_by="bob")
        bobs_claims = await ids(claimed_by="bob")
        alice_both = await ids(created_by="alice", claimed_by="alice")
        alice_pending = await ids(created_by="alice", status="pending")
        paged = await ok(client, "list_tasks", created_by="alice", limit=1)
        nobody = await ids(claimed_by="nobody")
        case_differs = await ids(created_by="Alice")
    assert by_alice == (["a1", "a2"], 2)
    assert by_bob == (["b1"], 1)
    assert bobs_claims == (["a1"], 1)
    assert alice_both == ([], 0)
    assert alice_pending == (["a2"], 1)
    assert [t["task_id"] for t in paged["tasks"]] == ["a1"]
    assert paged["total"] == 2
    assert paged["next_cursor"]
    assert nobody == ([], 0)
    assert case_differs == ([], 0)  # exact member names


# --- over HTTP, one member per token -------------------------------------------------------


@pytest.fixture
def team_server(tmp_path: Path, hostd_data_dir: Path, backend: dict[str, object]) -> Any:
    """A real ``hostd serve --transport http`` whose tokens file names alice and bob."""
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({"alice": ALICE, "bob": BOB}), encoding="utf-8")
    config = write_config(
        tmp_path,
        config={
            "language": "en",
            "data_dir": str(hostd_data_dir),
            **backend,
            "profiles": {"default": {"plugins": ["tasks"], "transport": {"tokens_file": str(tokens)}}},
        },
    )
    with HttpServer.start(config) as server:
        yield server


async def test_over_http_each_token_records_its_member(team_server: HttpServer) -> None:
    alice = team_server.client(headers={"Authorization": f"Bearer {ALICE}"})
    bob = team_server.client(headers={"Authorization": f"Bearer {BOB}"})
    async with alice as as_alice, bob as as_bob:
        await create(as_alice, "alice's", task_id="a", priority="P1")
        await create(as_bob, "bob's", task_id="b", priority="P0")
        alice_took = (await ok(as_alice, "get_next_task", claim=True))["task"]  # b, the P0
        bob_took = (await ok(as_bob, "get_next_task", claim=True))["task"]
        await ok(as_bob, "update_task_status", task_id="a", new_status="completed")
        await ok(as_alice, "update_task", task_id="b", append_note="half done")
        a = await ok(as_bob, "get_task", task_id="a")
        b = await ok(as_bob, "get_task", task_id="b")
        alices_claims = await ok(as_bob, "list_tasks", claimed_by="alice")
        bobs_tasks = await ok(as_alice, "list_tasks", created_by="bob")
    assert (alice_took["task_id"], alice_took["claimed_by"]) == ("b", "alice")
    assert (bob_took["task_id"], bob_took["claimed_by"]) == ("a", "bob")
    assert (a["task"]["created_by"], a["task"]["claimed_by"]) == ("alice", "bob")
    assert (b["task"]["created_by"], b["task"]["claimed_by"]) == ("bob", "alice")
    assert _events(a) == [("created", "alice"), ("claimed", "bob"), ("status", "bob")]
    assert _events(b) == [("created", "bob"), ("claimed", "alice"), ("edited", "alice")]
    assert [t["task_id"] for t in alices_claims["tasks"]] == ["b"]
    assert [t["task_id"] for t in bobs_tasks["tasks"]] == ["b"]
