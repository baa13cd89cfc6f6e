"""Session management, templates and the link to the tasks plugin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from deep_thinking_support import PLUGIN, config_for, sample_session, thought
from hostd_deep_thinking.links import SessionService
from hostd_testing import Client, fails, in_memory_client, ok

from hostd import PluginContext, RegisterService, RegisterTool, hookimpl

pytestmark = pytest.mark.anyio


@pytest.mark.smoke
async def test_create_then_get_session(client: Client) -> None:
    created = await ok(client, "create_session", name="Plan", description="why", metadata={"k": [1, "二"]})
    session = created["session"]
    assert session["name"] == "Plan"
    assert session["status"] == "active"
    assert session["metadata"] == {"k": [1, "二"]}
    session_id = session["session_id"]
    await ok(client, "sequential_thinking", **thought(1, 2, session_id=session_id))
    page = await ok(client, "get_session", session_id=session_id)
    assert page["session"]["thought_count"] == 1
    assert page["thoughts"][0]["content"] == "Thought number 1"
    assert page["next_cursor"] is None


async def test_create_session_refuses_duplicate_id_and_large_metadata(client: Client) -> None:
    await ok(client, "create_session", name="a", session_id="dup")
    await fails(client, "create_session", "ALREADY_EXISTS", name="b", session_id="dup")
    await fails(client, "create_session", "TOO_LONG", name="c", metadata={"x": "y" * 70_000})
    await fails(client, "create_session", "INVALID_ARGUMENT", name="c", template_id="nope")


async def test_get_session_pages_thoughts(client: Client) -> None:
    for n in range(1, 251):
        await ok(client, "sequential_thinking", **thought(n, 250, session_id="long"))
    seen, cursor = [], None
    while True:
        arguments = {"session_id": "long"} | ({"cursor": cursor} if cursor else {})
        page = await ok(client, "get_session", **arguments)
        seen += [t["sequence"] for t in page["thoughts"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == list(range(1, 251))
    await fails(client, "get_session", "INVALID_ARGUMENT", session_id="long", cursor="abc")


async def test_list_sessions_filters_by_status_and_limits(client: Client) -> None:
    for index in range(5):
        await ok(client, "create_session", name=f"s{index}", session_id=f"s{index}")
    await ok(client, "update_session_status", session_id="s1", status="completed")
    await ok(client, "update_session_status", session_id="s2", status="archived")
    everything = await ok(client, "list_sessions")
    assert everything["total"] == 5
    completed = await ok(client, "list_sessions", status="completed")
    assert [s["session_id"] for s in completed["sessions"]] == ["s1"]
    limited = await ok(client, "list_sessions", limit=2)
    assert len(limited["sessions"]) == 2
    assert limited["total"] == 5


async def test_list_sessions_counts_thoughts_not_yet_compacted(client: Client) -> None:
    for n in range(1, 4):
        await ok(client, "sequential_thinking", **thought(n, 3, session_id="fresh"))
    listed = await ok(client, "list_sessions")
    assert listed["sessions"][0]["thought_count"] == 3


async def list_reflects_the_journal(client: Client) -> None:
    """Shared by the in-memory and the served test: listing shows thoughts not yet compacted."""
    await ok(client, "create_session", name="older", session_id="older")
    await ok(client, "create_session", name="newer", session_id="newer")
    await ok(client, "sequential_thinking", **thought(1, 5, session_id="older"))
    await ok(
        client,
        "sequential_thinking",
        **thought(2, 5, session_id="older", branchFromThought=1, branchId="alt"),
    )
    await ok(client, "sequential_thinking", **thought(3, 6, session_id="older"))
    listed = await ok(client, "list_sessions")
    assert [s["session_id"] for s in listed["sessions"]] == ["older", "newer"]
    older = listed["sessions"][0]
    assert (older["thought_count"], older["total_thoughts"], older["branches"]) == (3, 6, ["alt"])
    shown = await ok(client, "get_session", session_id="older")
    assert older == shown["session"]
    assert older["updated_at"] == shown["thoughts"][-1]["timestamp"]
    newest = await ok(client, "list_sessions", limit=1)
    assert [s["session_id"] for s in newest["sessions"]] == ["older"]
    assert newest["total"] == 2
    default = await ok(client, "sequential_thinking", **thought(1, 4))
    listed = await ok(client, "list_sessions")
    first = listed["sessions"][0]
    assert first["session_id"] == default["session_id"]
    assert (first["thought_count"], first["total_thoughts"]) == (1, 4)


async def test_list_sessions_reflects_the_journal(client: Client) -> None:
    await list_reflects_the_journal(client)


@pytest.mark.files_only
async def test_delete_session_keeps_a_backup(client: Client, hostd_data_dir: Path) -> None:
    await sample_session(client, "gone")
    deleted = await ok(client, "delete_session", session_id="gone")
    assert deleted["deleted"] is True
    backup = Path(deleted["backup"])
    assert backup.exists()
    assert '"Decide: Lyon by car-share on Sunday"' in backup.read_text(encoding="utf-8")
    await fails(client, "get_session", "NOT_FOUND", session_id="gone")
    await fails(client, "delete_session", "NOT_FOUND", session_id="gone")
    assert (await ok(client, "list_sessions"))["total"] == 0


async def test_a_deleted_session_is_restored_from_its_backup(client: Client) -> None:
    await sample_session(client, "gone")
    deleted = await ok(client, "delete_session", session_id="gone")
    assert deleted["restore_call"] == {"session_id": "gone", "backup": deleted["backup_id"]}
    assert deleted["backup"].endswith(deleted["backup_id"])
    assert "restore_session" in deleted["message"]
    restored = await ok(client, "restore_session", session_id="gone")
    assert restored["restored_from"] == deleted["backup_id"]
    assert restored["replaced"] is False
    assert restored["session"]["thought_count"] == 8
    assert restored["session"]["branches"] == ["stay-home", "bus"]
    page = await ok(client, "get_session", session_id="gone")
    assert page["thoughts"][-1]["content"] == "Decide: Lyon by car-share on Sunday"
    assert [s["session_id"] for s in (await ok(client, "list_sessions"))["sessions"]] == ["gone"]
    answer = await ok(client, "sequential_thinking", **thought(6, 6, session_id="gone"))
    assert answer["thoughtHistoryLength"] == 9
    assert answer["sequence"] == 9


@pytest.mark.files_only
async def test_restore_refuses_a_live_session_unless_told_to_overwrite(
    client: Client, hostd_data_dir: Path
) -> None:
    await ok(client, "sequential_thinking", **thought(1, 2, "old", session_id="twice"))
    await ok(client, "delete_session", session_id="twice")
    await ok(client, "sequential_thinking", **thought(1, 2, "new", session_id="twice"))
    envelope = await fails(client, "restore_session", "ALREADY_EXISTS", session_id="twice")
    assert "overwrite" in envelope["error"]["hint"]
    page = await ok(client, "get_session", session_id="twice")
    assert [t["content"] for t in page["thoughts"]] == ["new"]
    restored = await ok(client, "restore_session", session_id="twice", overwrite=True)
    assert restored["replaced"] is True
    assert restored["restored_from"].endswith("-deleted.json")
    assert [t["content"] for t in (await ok(client, "get_session", session_id="twice"))["thoughts"]] == [
        "old"
    ]
    backups = hostd_data_dir / "deep-thinking" / "backups" / "twice"
    assert any('"new"' in path.read_text(encoding="utf-8") for path in backups.glob("*.json"))


async def test_restore_a_chosen_backup(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 3, "first", session_id="pick"))
    await ok(
        client, "update_session_status", session_id="pick", status="completed"
    )  # a backup with 1 thought
    await ok(client, "sequential_thinking", **thought(2, 3, "second", session_id="pick"))
    deleted = await ok(client, "delete_session", session_id="pick")
    restored = await ok(client, "restore_session", session_id="pick")
    older = [
        name for name in restored["backups"] if name != deleted["backup_id"] and name.endswith("-s0001.json")
    ]
    assert older, restored["backups"]
    again = await ok(client, "restore_session", session_id="pick", backup=older[0], overwrite=True)
    assert again["restored_from"] == older[0]
    assert again["session"]["thought_count"] == 1


async def test_restore_errors_are_clear(client: Client) -> None:
    envelope = await fails(client, "restore_session", "NOT_FOUND", session_id="never")
    assert envelope["error"]["details"]["backups"] == []
    await ok(client, "sequential_thinking", **thought(1, 1, session_id="b"))
    await ok(client, "delete_session", session_id="b")
    missing = await fails(
        client, "restore_session", "NOT_FOUND", session_id="b", backup="20200101T000000000000Z-s0001.json"
    )
    assert missing["error"]["details"]["backups"]
    bad = await fails(
        client, "restore_session", "INVALID_ARGUMENT", session_id="b", backup="../../index.jsonl"
    )
    assert bad["error"]["details"]["argument"] == "backup"


async def test_restore_session_annotations_say_it_can_replace(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    hints = tools["restore_session"].annotations
    assert hints is not None
    assert hints.read_only_hint is False
    assert hints.destructive_hint is True


async def test_restore_in_chinese(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as zh:
        await ok(zh, "sequential_thinking", **thought(1, 1, session_id="z"))
        deleted = await ok(zh, "delete_session", session_id="z")
        assert "restore_session" in deleted["message"]
        assert "已删除" in deleted["message"]
        restored = await ok(zh, "restore_session", session_id="z")
        assert "恢复会话" in restored["message"]
        envelope = await fails(zh, "restore_session", "ALREADY_EXISTS", session_id="z")
        assert "已存在" in envelope["message"]
        assert "overwrite" in envelope["error"]["hint"]


async def test_update_status_reports_previous(client: Client) -> None:
    await ok(client, "create_session", name="x", session_id="x")
    changed = await ok(client, "update_session_status", session_id="x", status="completed")
    assert changed["previous_status"] == "active"
    assert changed["session"]["status"] == "completed"
    await fails(client, "update_session_status", "INVALID_ARGUMENT", session_id="x", status="paused")
    await fails(client, "update_session_status", "NOT_FOUND", session_id="nope", status="active")


async def test_thought_into_completed_session_warns(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 2, session_id="c"))
    await ok(client, "update_session_status", session_id="c", status="completed")
    answer = await ok(client, "sequential_thinking", **thought(2, 2, session_id="c"))
    assert "SESSION_COMPLETED" in [w["code"] for w in answer["warnings"]]


async def test_resume_session_gives_the_exact_next_call(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 3, session_id="res"))
    await ok(client, "sequential_thinking", **thought(4, 3, session_id="res"))
    await ok(client, "update_session_status", session_id="res", status="completed")
    resumed = await ok(client, "resume_session", session_id="res")
    assert resumed["reactivated"] is True
    assert resumed["session"]["status"] == "active"
    assert resumed["last_thought"]["thought_number"] == 4
    assert resumed["progress"] == {
        "thought_count": 2,
        "current_thought_number": 4,
        "total_thoughts": 4,
        "percent": 100.0,
    }
    assert [a["to_total"] for a in resumed["adjustments"]] == [4]
    next_call = resumed["next_call"]
    assert {
        k: next_call[k] for k in ("session_id", "thoughtNumber", "totalThoughts", "nextThoughtNeeded")
    } == {
        "session_id": "res",
        "thoughtNumber": 5,
        "totalThoughts": 5,
        "nextThoughtNeeded": True,
    }
    answer = await ok(client, "sequential_thinking", **next_call)
    assert answer["thoughtNumber"] == 5
    assert answer["session_id"] == "res"


async def test_resume_inside_a_branch_continues_the_branch(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 3, session_id="rb"))
    await ok(
        client, "sequential_thinking", **thought(2, 3, session_id="rb", branchFromThought=1, branchId="alt")
    )
    resumed = await ok(client, "resume_session", session_id="rb")
    assert resumed["next_call"]["branchId"] == "alt"
    assert resumed["next_call"]["branchFromThought"] == 1
    await ok(client, "sequential_thinking", **resumed["next_call"])


async def test_missing_sessions_are_not_found(client: Client) -> None:
    for tool in ("get_session", "resume_session", "delete_session"):
        await fails(client, tool, "NOT_FOUND", session_id="absent")
    await fails(client, "export_session", "NOT_FOUND", session_id="absent", format="json")
    await fails(client, "visualize_session", "NOT_FOUND", session_id="absent", format="ascii")


# --- templates -----------------------------------------------------------------------


async def test_templates_have_named_steps_with_guidance(client: Client) -> None:
    listed = await ok(client, "list_templates")
    ids = {t["template_id"] for t in listed["templates"]}
    assert {"problem_solving", "root_cause_analysis", "decision_making"} <= ids
    for template in listed["templates"]:
        assert len(template["steps"]) >= 4
        assert all(step["title"] and len(step["guidance"]) > 20 for step in template["steps"])


async def test_template_session_walked_end_to_end(client: Client) -> None:
    template = next(
        t
        for t in (await ok(client, "list_templates"))["templates"]
        if t["template_id"] == "root_cause_analysis"
    )
    steps = template["steps"]
    created = await ok(client, "create_session", name="Outage", template_id="root_cause_analysis")
    session_id = created["session"]["session_id"]
    assert created["session"]["total_thoughts"] == len(steps)
    assert steps[0]["title"] in created["message"]
    for index, step in enumerate(steps, start=1):
        answer = await ok(
            client,
            "sequential_thinking",
            **thought(
                index, len(steps), f"{step['title']}: done", more=index < len(steps), session_id=session_id
            ),
        )
        if index < len(steps):
            assert answer["next_step"] == steps[index]
            assert steps[index]["title"] in answer["message"]
        else:
            assert answer["next_step"] is None
    # A revision in between does not move the plan.
    answer = await ok(
        client,
        "sequential_thinking",
        **thought(
            len(steps) + 1,
            len(steps) + 1,
            "recheck",
            isRevision=True,
            revisesThought=2,
            session_id=session_id,
        ),
    )
    assert answer["next_step"] is None
    resumed = await ok(client, "resume_session", session_id=session_id)
    assert resumed["session"]["template_id"] == "root_cause_analysis"


async def test_template_step_after_a_revision_mid_way(client: Client) -> None:
    created = await ok(client, "create_session", name="Choice", template_id="decision_making")
    session_id = created["session"]["session_id"]
    await ok(client, "sequential_thinking", **thought(1, 5, session_id=session_id))
    await ok(client, "sequential_thinking", **thought(2, 5, session_id=session_id))
    answer = await ok(
        client,
        "sequential_thinking",
        **thought(3, 5, isRevision=True, revisesThought=1, session_id=session_id),
    )
    assert answer["next_step"]["index"] == 3


async def test_templates_in_chinese(hostd_data_dir: Path, hostd_roots: Path) -> None:
    async with in_memory_client(
        [PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots, "zh")
    ) as zh:
        listed = await ok(zh, "list_templates")
        names = {t["template_id"]: t["name"] for t in listed["templates"]}
        assert names["root_cause_analysis"] == "根因分析"


# --- the tasks plugin's service ------------------------------------------------------


class FakeTasksPlugin:
    """Offers ``tasks.links`` the way the tasks plugin does, without importing it."""

    @hookimpl
    def hostd_register_services(self, register: RegisterService, context: PluginContext[Any]) -> None:
        class Links:
            def tasks_for_session(self, session_id: str) -> list[dict[str, str]]:
                if session_id != "linked":
                    return []
                return [{"task_id": "t-1", "title": "Write it down", "status": "pending", "priority": "P1"}]

        register("tasks.links", Links())


async def test_get_session_lists_linked_tasks_through_the_service(
    hostd_data_dir: Path, hostd_roots: Path
) -> None:
    async with in_memory_client(
        [PLUGIN, "fake-tasks"],
        data_dir=hostd_data_dir,
        config=config_for(hostd_roots),
        extra_plugins={"fake-tasks": FakeTasksPlugin()},
    ) as both:
        await ok(both, "sequential_thinking", **thought(1, 1, session_id="linked"))
        page = await ok(both, "get_session", session_id="linked")
        assert page["linked_tasks"] == [
            {"task_id": "t-1", "title": "Write it down", "status": "pending", "priority": "P1"}
        ]
        assert page["warnings"] == []


async def test_without_tasks_plugin_get_session_says_so(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 1, session_id="alone"))
    page = await ok(client, "get_session", session_id="alone")
    assert page["linked_tasks"] is None
    assert [w["code"] for w in page["warnings"]] == ["TASKS_UNAVAILABLE"]


@pytest.mark.together
async def test_with_the_real_tasks_plugin(hostd_data_dir: Path, hostd_roots: Path) -> None:
    pytest.importorskip("hostd_tasks")
    async with in_memory_client(
        ["tasks", PLUGIN], data_dir=hostd_data_dir, config=config_for(hostd_roots)
    ) as both:
        await ok(both, "sequential_thinking", **thought(1, 1, session_id="real-link"))
        created = await ok(both, "create_task", title="Follow up", priority="P0")
        task_id = (created.get("task") or created)["task_id"]
        await ok(both, "link_task_session", task_id=task_id, session_id="real-link")
        page = await ok(both, "get_session", session_id="real-link")
        assert [t["task_id"] for t in page["linked_tasks"]] == [task_id]


async def test_sessions_service_answers_other_plugins(hostd_data_dir: Path, hostd_roots: Path) -> None:
    captured: dict[str, PluginContext[Any]] = {}

    class Probe:
        @hookimpl
        def hostd_register_tools(self, register: RegisterTool, context: PluginContext[Any]) -> None:
            captured["context"] = context

    async with in_memory_client(
        [PLUGIN, "probe"],
        data_dir=hostd_data_dir,
        config=config_for(hostd_roots),
        extra_plugins={"probe": Probe()},
    ) as both:
        await ok(both, "sequential_thinking", **thought(1, 1, session_id="svc"))
        service = captured["context"].services.get("deep-thinking.sessions", SessionService)
        assert service is not None
        assert service.session_exists("svc") is True
        assert service.session_exists("nope") is False
        assert service.session_summary("svc") == {
            "session_id": "svc",
            "name": "svc",
            "status": "active",
            "thought_count": 1,
        }
        assert service.session_summary("nope") is None


async def test_restore_names_the_backup_it_cannot_find(client: Client) -> None:
    await ok(client, "sequential_thinking", **thought(1, 1, session_id="gone"))
    deleted = await ok(client, "delete_session", session_id="gone")
    missing = await fails(client, "restore_session", "NOT_FOUND", session_id="gone", backup="nope.json")
    assert "'nope.json'" in missing["message"]
    assert "'gone'" in missing["message"]
    assert missing["error"]["details"]["backups"][0] == deleted["backup_id"]  # newest first


async def test_looking_up_missing_sessions_leaves_no_lock_files_behind(
    client: Client, hostd_data_dir: Path, backend: dict[str, Any]
) -> None:
    """Issue 32: each lookup of a session that does not exist left a lock file for good (200
    reads, 200 files). A lookup that finds nothing takes no lock and writes nothing."""
    if "storage" in backend:
        pytest.skip("the team database keeps no lock files")
    await sample_session(client, "kept")
    locks = hostd_data_dir / PLUGIN / ".locks"
    before = sorted(path.name for path in locks.iterdir())
    for n in range(200):
        await fails(client, "get_session", "NOT_FOUND", session_id=f"missing-{n}")
        await fails(client, "export_session", "NOT_FOUND", session_id=f"gone-{n}", format="json")
    await fails(client, "update_session_status", "NOT_FOUND", session_id="nobody", status="completed")
    await fails(client, "delete_session", "NOT_FOUND", session_id="nobody")
    assert sorted(path.name for path in locks.iterdir()) == before


async def test_list_sessions_deleted_lists_what_restore_brings_back(client: Client) -> None:
    for index in range(3):
        await ok(client, "create_session", name=f"gone {index}", session_id=f"gone-{index}")
        await ok(client, "sequential_thinking", **thought(1, 1, session_id=f"gone-{index}"))
    await ok(client, "create_session", name="kept", session_id="kept")
    for index in range(3):
        await ok(client, "delete_session", session_id=f"gone-{index}")
    live = await ok(client, "list_sessions")
    assert [s["session_id"] for s in live["sessions"]] == ["kept"]
    first = await ok(client, "list_sessions", deleted=True, limit=2)
    assert [s["session_id"] for s in first["sessions"]] == ["gone-2", "gone-1"]  # newest delete first
    assert first["total"] == 3
    assert first["sessions"][0]["thought_count"] == 1
    rest = await ok(client, "list_sessions", deleted=True, limit=2, cursor=first["next_cursor"])
    assert [s["session_id"] for s in rest["sessions"]] == ["gone-0"]
    assert rest["next_cursor"] is None
    # A cursor of one listing is refused by the other.
    await fails(client, "list_sessions", "INVALID_ARGUMENT", cursor=first["next_cursor"])
    await ok(client, "restore_session", session_id="gone-1")
    after = await ok(client, "list_sessions", deleted=True)
    assert [s["session_id"] for s in after["sessions"]] == ["gone-2", "gone-0"]
    mine = await ok(client, "list_sessions", deleted=True, created_by="nobody")
    assert mine["sessions"] == []
    assert mine["total"] == 0
