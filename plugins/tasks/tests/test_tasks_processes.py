"""Several OS processes sharing one task list: no task lost on create, none claimed twice.

Each test runs on both stores (the ``backend`` fixture): one SQLite file, and the team database
on PostgreSQL, where the processes share nothing but the server.
"""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import anyio
import tasks_workers
from hostd_testing import PluginHost, make_host
from tasks_processes_support import WORKERS, list_all, on_host, run_workers

PER_WORKER = 100


def assert_overlapped(results: list[dict[str, Any]]) -> None:
    """Every worker was still calling when the last one started: their calls ran at the same time."""
    latest_start = max(r["start"] for r in results)
    earliest_end = min(r["end"] for r in results)
    assert latest_start < earliest_end, "the workers ran one after another, not together"


def histories(data_dir: Path, backend: dict[str, Any], ids: list[str]) -> dict[str, list[tuple[str, Any]]]:
    """Each task's history as (event, by) pairs."""

    async def read(host: PluginHost) -> dict[str, list[tuple[str, Any]]]:
        found = {}
        for task_id in ids:
            envelope, is_error = await host.call("get_task", {"task_id": task_id})
            assert not is_error, envelope
            found[task_id] = [(entry["event"], entry["by"]) for entry in envelope["history"]]
        return found

    return on_host(data_dir, backend, read)  # type: ignore[no-any-return]


def test_four_processes_creating_100_tasks_each_keep_all_400(
    hostd_data_dir: Path, backend: dict[str, Any]
) -> None:
    results = run_workers(tasks_workers.create_tasks, lambda n: (str(hostd_data_dir), backend, n, PER_WORKER))
    assert [r["errors"] for r in results] == [[]] * WORKERS, tasks_workers.worker_logs(
        hostd_data_dir, WORKERS
    )
    assert_overlapped(results)
    created = [task_id for r in results for task_id in r["ids"]]
    assert len(created) == WORKERS * PER_WORKER
    assert len(set(created)) == len(created), "two processes were given the same id"
    stored = list_all(hostd_data_dir, backend)
    assert sorted(t["task_id"] for t in stored) == sorted(created)
    assert {t["title"] for t in stored} == {
        f"worker {w} task {n}" for w in range(WORKERS) for n in range(PER_WORKER)
    }


def test_four_processes_claiming_until_empty_claim_every_task_exactly_once(
    hostd_data_dir: Path, backend: dict[str, Any]
) -> None:
    with make_host(["tasks"], data_dir=hostd_data_dir, config=backend) as host:

        async def seed() -> list[str]:
            ids = []
            for n in range(WORKERS * PER_WORKER):
                envelope, is_error = await host.call(
                    "create_task", {"title": f"job {n}", "priority": f"P{n % 3}"}
                )
                assert not is_error, envelope
                ids.append(envelope["task"]["task_id"])
            return ids

        seeded = anyio.run(seed)

    results = run_workers(tasks_workers.claim_until_empty, lambda n: (str(hostd_data_dir), backend, n))
    assert [r["errors"] for r in results] == [[]] * WORKERS, tasks_workers.worker_logs(
        hostd_data_dir, WORKERS
    )
    assert_overlapped(results)
    claimed = [c["task_id"] for r in results for c in r["claimed"]]
    assert sorted(claimed) == sorted(seeded), "a task was claimed twice or never"
    assert all(c["status"] == "in_progress" for r in results for c in r["claimed"])
    assert all(r["reasons"] == ["none_pending"] for r in results)
    assert all(r["claimed"] for r in results), "some process never got a task: the claims did not interleave"
    for r in results:
        priorities = [c["priority"] for c in r["claimed"]]
        assert priorities == sorted(priorities), "claims must follow urgency order in every process"
    assert {t["status"] for t in list_all(hostd_data_dir, backend)} == {"in_progress"}
    # Each claim is recorded as its process's member: on the record and in the task's history.
    claimer = {c["task_id"]: tasks_workers.worker_member(r["worker"]) for r in results for c in r["claimed"]}
    assert all(c["claimed_by"] == claimer[c["task_id"]] for r in results for c in r["claimed"])
    assert {t["task_id"]: t["claimed_by"] for t in list_all(hostd_data_dir, backend)} == claimer
    seeder = getpass.getuser()
    assert histories(hostd_data_dir, backend, seeded) == {
        task_id: [("created", seeder), ("claimed", member)] for task_id, member in claimer.items()
    }


EDIT_ROUNDS = 50


def test_four_processes_editing_and_claiming_lose_no_edit_and_claim_nothing_twice(
    hostd_data_dir: Path, backend: dict[str, Any]
) -> None:
    with make_host(["tasks"], data_dir=hostd_data_dir, config=backend) as host:

        async def seed() -> None:
            # Shared and own tasks are blocked, so only the claimable ones are handed out.
            for task_id in [f"shared-{n}" for n in range(10)] + [f"own-{w}" for w in range(WORKERS)]:
                for tool, arguments in (
                    ("create_task", {"title": task_id, "task_id": task_id}),
                    ("update_task_status", {"task_id": task_id, "new_status": "blocked"}),
                ):
                    envelope, is_error = await host.call(tool, arguments)
                    assert not is_error, envelope
            for n in range(WORKERS * EDIT_ROUNDS // 2):  # fewer than the claims asked for: some find none
                envelope, is_error = await host.call(
                    "create_task", {"title": f"job {n}", "priority": f"P{n % 3}"}
                )
                assert not is_error, envelope

        anyio.run(seed)

    results = run_workers(
        tasks_workers.edit_and_claim, lambda n: (str(hostd_data_dir), backend, n, EDIT_ROUNDS)
    )
    assert [r["errors"] for r in results] == [[]] * WORKERS, tasks_workers.worker_logs(
        hostd_data_dir, WORKERS
    )
    assert_overlapped(results)
    by_id = {t["task_id"]: t for t in list_all(hostd_data_dir, backend)}
    shared_notes = sorted(note["text"] for n in range(10) for note in by_id[f"shared-{n}"]["notes"])
    assert shared_notes == sorted(f"w{w} r{n}" for w in range(WORKERS) for n in range(EDIT_ROUNDS)), (
        "an edit was lost"
    )
    for w in range(WORKERS):
        last = EDIT_ROUNDS - 1
        assert (by_id[f"own-{w}"]["title"], by_id[f"own-{w}"]["priority"]) == (
            f"w{w} r{last}",
            f"P{last % 3}",
        )
    claimed = [task_id for r in results for task_id in r["claimed"]]
    jobs = [t for t in by_id.values() if t["title"].startswith("job ")]
    assert sorted(claimed) == sorted(t["task_id"] for t in jobs), "a task was claimed twice or never"
    assert all(r["claimed"] for r in results), "the claims did not interleave"
    for r in results:
        for task_id in r["claimed"]:
            assert [n["text"] for n in by_id[task_id]["notes"]] == [f"claimed by w{r['worker']}"]
            assert by_id[task_id]["status"] == "in_progress"
