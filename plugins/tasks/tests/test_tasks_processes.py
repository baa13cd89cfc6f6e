"""Several OS processes sharing one task list: no task lost on create, none claimed twice.

Each test runs on both stores (the ``backend`` fixture): one SQLite file, and the team database
on PostgreSQL, where the processes share nothing but the server.
"""

from __future__ import annotations

import getpass
import json
import multiprocessing
import queue
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
import tasks_workers
from hostd_testing import PluginHost, make_host

WORKERS = 4
PER_WORKER = 100
RESULT_TIMEOUT = 120.0


def run_workers(target: Any, args_for: Any) -> list[dict[str, Any]]:
    """Start WORKERS spawned processes on one barrier and collect one result from each."""
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(WORKERS)
    results = context.Queue()
    processes = [
        context.Process(target=target, args=(*args_for(n), barrier, results)) for n in range(WORKERS)
    ]
    for process in processes:
        process.start()
    collected: list[dict[str, Any]] = []
    try:
        for _ in processes:
            collected.append(results.get(timeout=RESULT_TIMEOUT))
    except queue.Empty:
        logs = tasks_workers.worker_logs(args_for(0)[0], WORKERS)
        pytest.fail(f"only {len(collected)} of {WORKERS} workers reported\n{logs}")
    finally:
        for process in processes:
            process.join(timeout=30)
            if process.is_alive():
                process.kill()
                process.join()
    assert all(process.exitcode == 0 for process in processes), [p.exitcode for p in processes]
    return collected


def assert_overlapped(results: list[dict[str, Any]]) -> None:
    """Every worker was still calling when the last one started: their calls ran at the same time."""
    latest_start = max(r["start"] for r in results)
    earliest_end = min(r["end"] for r in results)
    assert latest_start < earliest_end, "the workers ran one after another, not together"


def on_host(data_dir: Path, backend: dict[str, Any], work: Any) -> Any:
    """Run ``work(host)`` (a coroutine function) on a host of its own over the shared list."""
    with make_host(["tasks"], data_dir=data_dir, config=backend) as host:
        return anyio.run(work, host)


def list_all(data_dir: Path, backend: dict[str, Any]) -> list[dict[str, Any]]:
    async def walk(host: PluginHost) -> list[dict[str, Any]]:
        tasks: list[dict[str, Any]] = []
        cursor = None
        while True:
            arguments: dict[str, Any] = {"limit": 100}
            if cursor:
                arguments["cursor"] = cursor
            envelope, is_error = await host.call("list_tasks", arguments)
            assert not is_error, envelope
            tasks.extend(envelope["tasks"])
            cursor = envelope["next_cursor"]
            if cursor is None:
                return tasks

    return on_host(data_dir, backend, walk)  # type: ignore[no-any-return]


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


@pytest.mark.slow
def test_a_process_killed_at_random_points_leaves_a_whole_task_list(
    hostd_data_dir: Path, backend: dict[str, Any]
) -> None:
    """SIGKILL a process creating and claiming tasks at least ten times: no half round, no lost claim.

    Where a kill lands is chance; the test goes on killing (up to 40 runs) until at least one kill
    has landed between a round's write and its print, so it always proves that case too.
    """
    worker = Path(tasks_workers.__file__)
    chance = random.Random(20261123)
    claimed_by_round: dict[str, str] = {}
    titles_written: list[str] = []
    unprinted_writes = 0  # rounds whose task was stored when the kill came before their print
    for run in range(40):
        if run >= 10 and unprinted_writes >= 1:
            break
        name = f"run{run}"
        process = subprocess.Popen(
            [sys.executable, str(worker), str(hostd_data_dir), name, json.dumps(backend)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        printed = []
        seen_at = []
        for _ in range(chance.randint(2, 15)):  # let it finish a random number of rounds
            printed.append(process.stdout.readline())
            seen_at.append(time.monotonic())
            assert printed[-1], process.stderr.read()
        # Land the kill anywhere inside the next round: a round's length is what the last ones took
        # (a PostgreSQL round is several times a SQLite one).
        round_seconds = (seen_at[-1] - seen_at[0]) / (len(seen_at) - 1)
        time.sleep(chance.uniform(0, max(0.004, round_seconds)))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        # What it printed before the kill landed, the reader's buffer included.
        rounds = [json.loads(line) for line in ("".join(printed) + process.stdout.read()).splitlines()]
        process.stdout.close()
        process.stderr.close()
        for finished in rounds:
            claimed_by_round[f"{name} {finished['round']}"] = finished["claimed"]

        for database in hostd_data_dir.rglob("*.db"):
            with sqlite3.connect(database) as conn:
                assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        tasks = list_all(hostd_data_dir, backend)
        mine = sorted(int(t["title"].split()[1]) for t in tasks if t["title"].startswith(f"{name} "))
        # Every printed round is stored; the round it was in is stored whole or not at all.
        assert mine == list(range(len(mine)))
        assert len(mine) in (len(rounds), len(rounds) + 1)
        titles_written += [f"{name} {n}" for n in mine]
        unprinted_writes += len(mine) - len(rounds)
        by_id = {t["task_id"]: t for t in tasks}
        assert all(by_id[task_id]["status"] == "in_progress" for task_id in claimed_by_round.values())
        # Each committed claim took one task: never more claimed than created, never a task twice.
        in_progress = [t for t in tasks if t["status"] == "in_progress"]
        assert len(set(claimed_by_round.values())) == len(claimed_by_round)
        assert len(claimed_by_round) <= len(in_progress) <= len(claimed_by_round) + run + 1
        assert {t["status"] for t in tasks} <= {"pending", "in_progress"}
    assert sorted(t["title"] for t in list_all(hostd_data_dir, backend)) == sorted(titles_written)
    # Proof the kills landed inside the work, not only between finished rounds.
    assert unprinted_writes >= 1


@pytest.mark.slow
def test_a_claim_of_a_killed_agent_lapses_and_goes_to_exactly_one_other_agent(
    hostd_data_dir: Path, backend: dict[str, Any]
) -> None:
    """An agent process claims with a 2 s lease and is SIGKILLed; four agent processes asking every
    50 ms get its task once the lease has lapsed, and only one of them gets it (the others go on
    asking for 3 s after it has)."""

    async def seed(host: PluginHost) -> None:
        envelope, is_error = await host.call("create_task", {"title": "the only task", "task_id": "job"})
        assert not is_error, envelope

    on_host(hostd_data_dir, backend, seed)
    crashed = subprocess.Popen(
        [
            sys.executable,
            str(Path(tasks_workers.__file__)),
            "claim-and-hang",
            str(hostd_data_dir),
            "crashed-agent",
            json.dumps(backend),
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert crashed.stdout is not None
    assert crashed.stderr is not None
    line = crashed.stdout.readline()
    crashed.send_signal(signal.SIGKILL)
    crashed.wait(timeout=30)
    stderr = crashed.stderr.read()
    crashed.stdout.close()
    crashed.stderr.close()
    assert json.loads(line or "null") == {"task_id": "job"}, stderr

    # Once one agent has the task, the others ask for 3 s more (60 asks each), longer than the
    # lapsed claim's 2 s lease: a winner's claim given that lease would lapse while they ask.
    taken = multiprocessing.get_context("spawn").Event()
    results = run_workers(
        tasks_workers.claim_when_free, lambda n: (str(hostd_data_dir), backend, n, 20.0, taken, 3.0)
    )
    assert all(not r["errors"] for r in results), [r["errors"] for r in results]
    claims = [(r["worker"], c["task_id"]) for r in results for c in r["claimed"]]
    assert len(claims) == 1, claims
    assert claims[0][1] == "job", claims

    async def read(host: PluginHost) -> Any:
        envelope, is_error = await host.call("get_task", {"task_id": "job"})
        assert not is_error, envelope
        return envelope

    details = on_host(hostd_data_dir, backend, read)
    winner = tasks_workers.worker_member(claims[0][0])
    task = details["task"]
    assert (task["status"], task["claimed_by"]) == ("in_progress", winner)
    assert (task["claim_count"], task["expired_claims"]) == (2, 1)
    events = [(h["event"], h["by"], h["details"].get("holder")) for h in details["history"]]
    assert events == [
        ("created", getpass.getuser(), None),
        ("claimed", "crashed-agent", None),
        ("lease_expired", None, "crashed-agent"),
        ("claimed", winner, None),
    ]
    expired_at, reclaimed_at = (h["at"] for h in details["history"][2:])
    assert reclaimed_at >= expired_at
