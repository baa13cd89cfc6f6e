"""export_tasks and import_tasks: round trips between two stores (SQLite files, PostgreSQL databases),
renumbering, idempotent re-import, filters, files and Markdown, and hostile documents refused whole."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, cast

import pytest
from dirty_equals import IsPartialDict, IsStr
from hostd_testing import Client, envelope_error, envelope_ok, fails, in_memory_client, ok
from tasks_support import STAMP, create, walk_to

pytestmark = pytest.mark.anyio

Stores = Callable[..., AbstractAsyncContextManager[Client]]


@pytest.fixture
def stores(
    backend: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest
) -> Stores:
    """Clients on two separate stores, ``"a"`` and ``"b"``: two SQLite files, or two PostgreSQL databases."""
    root = tmp_path / "root"
    root.mkdir()
    urls: dict[str, str] = {}
    if "storage" in backend:
        server = request.getfixturevalue("postgres_server")
        for name in ("a", "b"):
            urls[name] = server.create_database()
            monkeypatch.setenv(f"TASKS_STORE_{name.upper()}", urls[name])

    @asynccontextmanager
    async def open_store(name: str, language: str = "en") -> AsyncIterator[Client]:
        data_dir = tmp_path / f"data-{name}"
        data_dir.mkdir(exist_ok=True)
        config: dict[str, Any] = {"language": language, "allowed_roots": [str(root)]}
        if urls:
            config["storage"] = {"url_env": f"TASKS_STORE_{name.upper()}"}
        async with in_memory_client(["tasks"], data_dir=data_dir, config=config) as client:
            yield client

    return open_store


async def _fill(client: Client) -> None:
    """A small list with every kind of thing a task holds: dependencies, subtasks, labels, notes,
    a claim with its lease, a failed and a completed task, a session link, history of each."""
    await create(
        client, "design", task_id="design", priority="P0", labels=["Backend", "中文"], acceptance="ok"
    )
    await create(client, "build", task_id="build", depends_on=["design"], description="long\ntext")
    await ok(client, "split_task", task_id="build", subtasks=[{"title": "part one"}, {"title": "part two"}])
    await ok(client, "update_task", task_id="design", append_note="first note 😀")
    await walk_to(client, "design", "completed")
    await create(client, "ship", task_id="ship", depends_on=["build"], priority="P1")
    await ok(client, "link_task_session", task_id="ship", session_id="plan-1")
    await create(client, "claimed", task_id="claimed")
    await ok(client, "update_task_status", task_id="claimed", new_status="in_progress", lease_seconds=3600)
    await create(client, "broken", task_id="broken")
    await walk_to(client, "broken", "failed")


async def _everything(client: Client) -> list[dict[str, Any]]:
    """Every task as get_task answers it (record and whole history), in list order."""
    listed = (await ok(client, "list_tasks", limit=100))["tasks"]
    found = []
    for task in listed:
        details = await ok(client, "get_task", task_id=task["task_id"])
        found.append({"task": details["task"], "history": details["history"]})
    return found


def _without_import_entries(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**t, "history": [h for h in t["history"] if h["event"] != "imported"]} for t in tasks]


async def test_a_round_trip_into_an_empty_store_keeps_everything(stores: Stores) -> None:
    async with stores("a") as a:
        await _fill(a)
        exported = await ok(a, "export_tasks")
        before = await _everything(a)
    document = exported["document"]
    assert exported == envelope_ok(
        "Exported 7 tasks. Pass the document to import_tasks as data.",
        format="json",
        count=7,
        brought_along=0,
        document=document,
        markdown=None,
        output_path=None,
        bytes_written=None,
    )
    assert document["format"] == "hostd-tasks-export"
    assert document["version"] == 1
    async with stores("b") as b:
        imported = await ok(b, "import_tasks", data=document)
        after = await _everything(b)
    ids = {t["task"]["task_id"]: t["task"]["task_id"] for t in before}
    assert imported == envelope_ok(
        "Imported 7 tasks: 7 created (0 under a new id, see renumbered), "
        "0 already here and left as they are.",
        format_version=1,
        total=7,
        created=7,
        already_present=0,
        renumbered={},
        ids=ids,
        input_path=None,
    )
    # Everything comes back as it was: records (claims, leases, notes, labels, subtasks, session
    # links, members, times) and history; the new store adds one 'imported' entry per task.
    assert _without_import_entries(after) == before
    imports = [h for t in after for h in t["history"] if h["event"] == "imported"]
    assert len(imports) == 7
    assert all(set(h["details"]) == {"origin"} for h in imports)


async def test_importing_the_same_document_twice_changes_nothing(stores: Stores) -> None:
    async with stores("a") as a:
        await _fill(a)
        document = (await ok(a, "export_tasks"))["document"]
        again_here = await ok(a, "import_tasks", data=document)  # into the store it came from
        assert again_here["created"] == 0
        assert again_here["already_present"] == 7
    async with stores("b") as b:
        await ok(b, "import_tasks", data=document)
        first = await _everything(b)
        second = await ok(b, "import_tasks", data=document)
        assert await _everything(b) == first
        # and what b exports, imported into a, is recognised there too (the origins travel)
        from_b = (await ok(b, "export_tasks"))["document"]
    assert second["created"] == 0
    assert second["already_present"] == 7
    assert second["renumbered"] == {}
    async with stores("a") as a:
        back = await ok(a, "import_tasks", data=from_b)
    assert (back["created"], back["already_present"]) == (0, 7)


def _old_spelling(document: dict[str, Any]) -> dict[str, Any]:
    """``document`` as a store wrote it before times were spelled ``Z``: times and native origins
    end ``+00:00``."""
    text = re.sub(r'(\d\d:\d\d:\d\d\.\d{6})Z"', r'\1+00:00"', json.dumps(document, ensure_ascii=False))
    return cast(dict[str, Any], json.loads(text))


async def test_a_document_with_times_spelled_the_old_way_imports_as_the_same_tasks(stores: Stores) -> None:
    """Files exported before version 8 spell times and origins ``+00:00``: they import, and they and
    today's export of the same list name the same tasks (each finds what the other imported)."""
    async with stores("a") as a:
        await _fill(a)
        document = (await ok(a, "export_tasks"))["document"]
        old = _old_spelling(document)
        again_here = await ok(a, "import_tasks", data=old)
    assert "+00:00" in json.dumps(old)
    assert "+00:00" not in json.dumps(document)
    assert (again_here["created"], again_here["already_present"]) == (0, 7)
    async with stores("b") as b:
        imported = await ok(b, "import_tasks", data=old)
        first = await _everything(b)
        today = await ok(b, "import_tasks", data=document)
        assert await _everything(b) == first
        exported = (await ok(b, "export_tasks"))["document"]
    assert (imported["created"], today["created"], today["already_present"]) == (7, 0, 7)
    origins = [h["details"]["origin"] for t in first for h in t["history"] if h["event"] == "imported"]
    assert sorted(origins) == sorted(task["origin"] for task in document["tasks"])
    assert "+00:00" not in json.dumps(exported)


async def test_clashing_ids_are_renumbered_and_every_reference_follows(stores: Stores) -> None:
    async with stores("a") as a:
        await _fill(a)
        await ok(a, "delete_task", task_id="broken")
        document = (await ok(a, "export_tasks"))["document"]
    async with stores("b") as b:
        await create(b, "someone else's design", task_id="design")
        await create(b, "gone", task_id="ship")
        await ok(b, "delete_task", task_id="ship")  # a deleted task's id is taken too
        imported = await ok(b, "import_tasks", data=document)
        renumbered = imported["renumbered"]
        assert set(renumbered) == {"design", "ship"}
        new_design, new_ship = renumbered["design"], renumbered["ship"]
        assert new_design.startswith("t-")
        assert new_ship.startswith("t-")
        assert new_design != new_ship
        build = await ok(b, "get_task", task_id="build")
        ship = await ok(b, "get_task", task_id=new_ship)
        design = await ok(b, "get_task", task_id=new_design)
        theirs = await ok(b, "get_task", task_id="design")
    assert build["task"]["depends_on"] == [new_design]
    assert ship["task"]["depends_on"] == ["build"]
    assert ship["task"]["linked_session_id"] == "plan-1"
    parts = [t["task_id"] for t in document["tasks"] if t["parent_id"] == "build"]
    assert len(parts) == 2
    assert [s["task_id"] for s in build["subtasks"]] == [imported["ids"][t] for t in parts]
    assert design["task"]["title"] == "design"
    assert theirs["task"]["title"] == "someone else's design"
    assert [d["task_id"] for d in design["dependents"]] == ["build"]
    # history names the new ids: build's creation said it depends on design
    created = next(h for h in build["history"] if h["event"] == "created")
    assert created["details"]["depends_on"] == [new_design]
    ship_imported = next(h for h in ship["history"] if h["event"] == "imported")
    assert ship_imported["details"]["renumbered_from"] == "ship"
    assert imported["ids"]["design"] == new_design
    assert imported["ids"]["build"] == "build"


async def test_a_renumbered_parent_takes_its_subtasks_and_dependents_along(stores: Stores) -> None:
    async with stores("a") as a:
        await _fill(a)
        document = (await ok(a, "export_tasks"))["document"]
    parts = [t["task_id"] for t in document["tasks"] if t["parent_id"] == "build"]
    async with stores("b") as b:
        await create(b, "their build", task_id="build")
        await create(b, "their first part", task_id=parts[0])
        imported = await ok(b, "import_tasks", data=document)
        new_build, new_part = imported["renumbered"]["build"], imported["renumbered"][parts[0]]
        build = await ok(b, "get_task", task_id=new_build)
        ship = await ok(b, "get_task", task_id="ship")
        part = await ok(b, "get_task", task_id=new_part)
        theirs = await ok(b, "get_task", task_id="build")
    assert set(imported["renumbered"]) == {"build", parts[0]}
    assert [s["task_id"] for s in build["subtasks"]] == [new_part, parts[1]]
    assert part["task"]["parent_id"] == new_build
    assert ship["task"]["depends_on"] == [new_build]
    split = next(h for h in build["history"] if h["event"] == "split")
    assert split["details"] == {"subtasks": [new_part, parts[1]]}
    assert theirs["task"]["title"] == "their build"
    assert theirs["subtasks"] == []


async def test_a_filtered_export_brings_what_it_waits_on(stores: Stores) -> None:
    async with stores("a") as a:
        await _fill(a)
        exported = await ok(a, "export_tasks", task_ids=["ship"])
    tasks = exported["document"]["tasks"]
    # ship waits on build, build on design and on its two subtasks' parent link (the subtasks name build)
    assert sorted(t["task_id"] for t in tasks) == ["build", "design", "ship"]
    assert exported["count"] == 3
    assert exported["brought_along"] == 2
    async with stores("b") as b:
        imported = await ok(b, "import_tasks", data=exported["document"])
    assert imported["created"] == 3


async def test_export_to_a_file_and_import_from_it(stores: Stores, tmp_path: Path) -> None:
    async with stores("a") as a:
        await _fill(a)
        written = await ok(a, "export_tasks", output_path="tasks.json")
        refused = await fails(a, "export_tasks", "ALREADY_EXISTS", output_path="tasks.json")
        markdown = await ok(a, "export_tasks", format="markdown", output_path="tasks.md")
        inline = await ok(a, "export_tasks", format="markdown", label="backend")
    path = tmp_path / "root" / "tasks.json"
    assert written == envelope_ok(
        f"Exported 7 tasks to {path}.",
        format="json",
        count=7,
        brought_along=0,
        document=None,
        markdown=None,
        output_path=str(path),
        bytes_written=path.stat().st_size,
    )
    assert refused["error"]["details"] == {"argument": "output_path", "path": str(path)}
    text = (tmp_path / "root" / "tasks.md").read_text(encoding="utf-8")
    assert markdown["bytes_written"] == len(text.encode("utf-8"))
    assert "## build: build" in text
    assert "- depends on: design" in text
    assert "first note 😀" in text
    assert inline["markdown"].startswith("# Tasks\n")
    assert "## design: design" in inline["markdown"]
    assert inline["count"] == 1
    async with stores("b") as b:
        imported = await ok(b, "import_tasks", input_path="tasks.json")
        md = await fails(b, "import_tasks", "INVALID_ARGUMENT", input_path="tasks.md")
    assert imported["created"] == 7
    assert imported["input_path"] == str(path)
    assert md["error"]["details"] == {"argument": "input_path", "problem": "not_json"}


# --- hostile documents ---------------------------------------------------------------------------


def _document() -> dict[str, Any]:
    stamp = "2026-01-01T00:00:00.000000+00:00"
    return {
        "format": "hostd-tasks-export",
        "version": 1,
        "tasks": [
            {"task_id": "a", "title": "a", "created_at": stamp},
            {"task_id": "b", "title": "b", "created_at": stamp, "depends_on": ["a"]},
            {"task_id": "c", "title": "c", "created_at": stamp, "parent_id": "b"},
        ],
    }


def _spoiled(change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    document = _document()
    change(document)
    return document


HOSTILE: dict[str, tuple[Callable[[dict[str, Any]], None], str, str]] = {
    "cycle": (
        lambda d: d["tasks"][0].update(depends_on=["b"]),
        "dependency_cycle",
        "tasks wait on each other in a cycle: a -> b -> a",
    ),
    "cycle through a parent": (
        lambda d: d["tasks"][2].update(depends_on=["b"]),
        "dependency_cycle",
        "tasks wait on each other in a cycle: b -> c -> b",
    ),
    "dangling dependency": (
        lambda d: d["tasks"][1].update(depends_on=["nowhere"]),
        "dangling_reference",
        "tasks.1.depends_on.0 names a task the document does not hold",
    ),
    "dangling parent": (
        lambda d: d["tasks"][2].update(parent_id="nowhere"),
        "dangling_reference",
        "tasks.2.parent_id names a task the document does not hold",
    ),
    "wrong type": (lambda d: d["tasks"][1].update(title=42), "string_type", "tasks.1.title must be text"),
    "wrong status": (
        lambda d: d["tasks"][1].update(status="done"),
        "literal_error",
        "tasks.1.status is not one of the allowed values",
    ),
    "tasks not a list": (lambda d: d.update(tasks={"a": 1}), "list_type", "tasks must be a list"),
    "bad id": (
        lambda d: d["tasks"][0].update(task_id="../x"),
        "string_pattern_mismatch",
        "tasks.0.task_id does not have the form of an id or label",
    ),
    "duplicate id": (
        lambda d: d["tasks"][2].update(task_id="a", parent_id=None),
        "duplicate_task_id",
        "tasks.2.task_id names a task id the document already used",
    ),
    "lease without a claim": (
        lambda d: d["tasks"][0].update(lease_expires_at="2030-01-01T00:00:00Z"),
        "lease_without_claim",
        "tasks.0: a lease (lease_expires_at) is held exactly while a task is in_progress",
    ),
    "bad time": (
        lambda d: d["tasks"][0].update(created_at="yesterday"),
        "invalid_time",
        "tasks.0.created_at is not an ISO 8601 time",
    ),
    "unknown field": (
        lambda d: d["tasks"][0].update(secret=1),
        "extra_forbidden",
        "tasks.0.secret is not a field of a task",
    ),
    "other format": (
        lambda d: d.update(format="hostd-memory-export"),
        "unknown_format",
        "'format' is not 'hostd-tasks-export'",
    ),
    "later version": (
        lambda d: d.update(version=2),
        "unknown_version",
        "'version' is not a format version this server reads",
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE))
async def test_a_hostile_document_is_refused_whole(stores: Stores, case: str) -> None:
    change, problem, sentence = HOSTILE[case]
    async with stores("a") as a:
        await create(a, "already here", task_id="x")
        good = await ok(a, "import_tasks", data=_document())  # the unspoiled document imports
        assert good["created"] == 3
    async with stores("b") as b:
        await create(b, "already here", task_id="x")
        before = await _everything(b)
        refused = await fails(b, "import_tasks", "INVALID_ARGUMENT", data=_spoiled(change))
        assert await _everything(b) == before  # nothing half-written
    assert refused == envelope_error(
        "INVALID_ARGUMENT",
        f"data cannot be imported: {sentence}. Nothing was imported.",
        hint=IsStr(regex=r"Pass a document export_tasks wrote.*", regex_flags=re.DOTALL),
        details=IsPartialDict(problem=problem, argument="data"),
    )


async def test_a_cycle_with_the_stores_own_tasks_rolls_everything_back(stores: Stores) -> None:
    """The document holds no cycle, but with what the store holds now it would close one: a new subtask
    of p that depends on q, where q (since the export) depends on p."""
    async with stores("a") as a:
        await create(a, "p", task_id="p")
        await create(a, "q", task_id="q")
        document = (await ok(a, "export_tasks"))["document"]
        await ok(a, "update_task", task_id="q", depends_on=["p"])
        stamp = "2026-01-01T00:00:00.000000+00:00"
        document["tasks"] += [
            {"task_id": "other", "title": "o", "created_at": stamp},
            {"task_id": "child", "title": "c", "created_at": stamp, "parent_id": "p", "depends_on": ["q"]},
        ]
        before = await _everything(a)
        refused = await fails(a, "import_tasks", "INVALID_ARGUMENT", data=document)
        assert await _everything(a) == before  # 'other' was not kept either
    assert refused["error"]["details"] == {"argument": "document", "cycle": ["p", "child", "q", "p"]}


async def test_a_50_mb_document_is_refused_unread(stores: Stores, tmp_path: Path) -> None:
    document = _document()
    filler = "x" * 1000
    document["tasks"] += [
        {"task_id": f"f{n}", "title": "f", "description": filler, "created_at": "2026-01-01T00:00:00Z"}
        for n in range(50_000)
    ]
    (tmp_path / "root").mkdir(exist_ok=True)
    (tmp_path / "root" / "big.json").write_text(json.dumps(document), encoding="utf-8")
    async with stores("b") as b:
        as_file = await fails(b, "import_tasks", "TOO_LONG", input_path="big.json")
        inline = await fails(b, "import_tasks", "TOO_LONG", data=document)
        assert (await ok(b, "list_tasks"))["total"] == 0
    assert as_file["error"]["details"]["problem"] == inline["error"]["details"]["problem"] == "too_large"
    assert as_file["error"]["details"]["limit"] == 32 * 1024 * 1024
    assert as_file["error"]["message"].endswith("Nothing was imported.")


async def test_exactly_one_of_data_and_input_path(stores: Stores) -> None:
    async with stores("a") as a:
        neither = await fails(a, "import_tasks", "INVALID_ARGUMENT")
        both = await fails(a, "import_tasks", "INVALID_ARGUMENT", data=_document(), input_path="x.json")
    assert neither["error"]["details"] == {"argument": "data"}
    assert both["error"]["details"] == {"argument": "input_path"}


async def test_messages_in_chinese(stores: Stores) -> None:
    async with stores("a", language="zh") as a:
        await _fill(a)
        exported = await ok(a, "export_tasks")
        again = await ok(a, "import_tasks", data=exported["document"])
        spoiled = copy.deepcopy(exported["document"])
        spoiled["tasks"][1]["depends_on"] = ["nowhere"]
        dangling = await fails(a, "import_tasks", "INVALID_ARGUMENT", data=spoiled)
        path = await ok(a, "get_critical_path")
    assert exported["message"] == "已导出 7 个任务。可将 document 作为 data 传给 import_tasks。"
    assert (
        again["message"]
        == "已导入 7 个任务：新建 0 个（其中 0 个使用了新 ID，见 renumbered），7 个已存在，保持不变。"
    )
    assert (
        dangling["error"]["message"]
        == "data 无法导入：tasks.1.depends_on.0 指向文档中不存在的任务。未导入任何内容。"
    )
    assert dangling["error"]["hint"].startswith("请传入 export_tasks 写出的文档")
    assert path["message"].startswith("整个清单还需依次完成")


async def test_a_dangling_reference_whole_envelope(stores: Stores) -> None:
    spoiled = _spoiled(lambda d: d["tasks"][1].update(depends_on=["a", "nowhere"], parent_id="gone"))
    async with stores("a") as a:
        refused = await fails(a, "import_tasks", "INVALID_ARGUMENT", data={"document": spoiled})
    problems = [
        {"problem": "dangling_reference", "where": "tasks.1.depends_on.1", "task_id": "b"},
        {"problem": "dangling_reference", "where": "tasks.1.parent_id", "task_id": "b"},
    ]
    assert refused == envelope_error(
        "INVALID_ARGUMENT",
        "data cannot be imported: tasks.1.depends_on.1 names a task the document does not hold "
        "(and 1 other problem). Nothing was imported.",
        hint="Pass a document export_tasks wrote (format 'hostd-tasks-export', version 1): every task's "
        "dependencies and parent inside the document, no task waiting on itself; details.problems lists "
        "each problem with its place (where) and task.",
        details={
            "argument": "data",
            "problem": "dangling_reference",
            "where": "tasks.1.depends_on.1",
            "problems": problems,
        },
    )


async def test_an_export_too_large_for_an_answer_says_to_use_a_file(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir()
    settings = {"tasks": {"max_export_chars": 10_000}}
    async with in_memory_client(
        ["tasks"], data_dir=data_dir, config={"language": "en"}, settings=settings
    ) as client:
        for n in range(20):
            await create(client, f"task {n}", description="words " * 100)
        small = await ok(client, "export_tasks", task_ids=["t-1"])
        refused = await fails(client, "export_tasks", "TOO_LONG")
    assert small["count"] == 1
    assert refused == envelope_error(
        "TOO_LONG",
        "The export of 20 tasks is larger than an answer may be (10000 characters).",
        hint="Pass output_path to write it to a file (then import_tasks input_path=...), or export fewer "
        "tasks (status, priority, label, task_ids).",
        details={"argument": "output_path", "tasks": 20, "limit": 10_000},
    )


async def test_deeply_nested_documents_are_refused_not_crashed_on(stores: Stores, tmp_path: Path) -> None:
    (tmp_path / "root").mkdir(exist_ok=True)
    (tmp_path / "root" / "deep.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(50):
        inner["x"] = {}
        inner = inner["x"]
    spoiled = _spoiled(
        lambda d: d["tasks"][0].update(
            history=[{"event": "created", "at": "2026-01-01T00:00:00Z", "details": deep}]
        )
    )
    async with stores("a") as a:
        from_file = await fails(a, "import_tasks", "INVALID_ARGUMENT", input_path="deep.json")
        inline = await fails(a, "import_tasks", "INVALID_ARGUMENT", data=spoiled)
    assert from_file["error"]["details"] == {"argument": "input_path", "problem": "not_json"}
    assert inline["error"]["details"]["problem"] == "too_deep"
    assert inline["error"]["details"]["where"] == "tasks.0.history.0.details"


async def test_exporting_an_unknown_or_deleted_task_is_not_found(stores: Stores) -> None:
    async with stores("a") as a:
        await create(a, "gone", task_id="gone")
        await ok(a, "delete_task", task_id="gone")
        unknown = await fails(a, "export_tasks", "NOT_FOUND", task_ids=["nope"])
        deleted = await fails(a, "export_tasks", "NOT_FOUND", task_ids=["gone"])
    assert unknown == envelope_error(
        "NOT_FOUND",
        "Task 'nope' does not exist.",
        hint="list_tasks shows the existing task ids.",
        details={"task_id": "nope", "argument": "task_ids"},
    )
    assert deleted == envelope_error(
        "NOT_FOUND",
        "Task 'gone' was deleted.",
        hint="get_task shows its last record and history; list_tasks shows the existing tasks.",
        details={"task_id": "gone", "argument": "task_ids", "deleted_at": STAMP},
    )
