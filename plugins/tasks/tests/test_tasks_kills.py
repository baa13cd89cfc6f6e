"""Processes killed while they work on the task list: SIGKILLed mid-round (no half round, no lost
claim), and an agent killed holding a claim (its lease lapses, exactly one other agent takes it).

Each test runs on both stores (the ``backend`` fixture). Apart from test_tasks_processes.py so
that the two slow modules can run on two test workers at once.
"""

from __future__ import annotations

import getpass
import json
import multiprocessing
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tasks_workers
from hostd_testing import PluginHost
from tasks_processes_support import list_all, on_host, run_workers


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
    # The writers are forked one after another from one process that imported the host once.
    zygote = subprocess.Popen(
        [sys.executable, str(worker), "zygote", str(hostd_data_dir), json.dumps(backend)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    for run in range(40):
        if run >= 10 and unprinted_writes >= 1:
            break
        name = f"run{run}"
        zygote.stdin.write(f"{name}\n")
        zygote.stdin.flush()
        ready, pid = zygote.stdout.readline().split()
        assert ready == "ready"
        printed = []
        seen_at = []
        for _ in range(chance.randint(2, 15)):  # let it finish a random number of rounds
            printed.append(zygote.stdout.readline())
            seen_at.append(time.monotonic())
            assert printed[-1], "the writers' zygote ended"
            assert not printed[-1].startswith("exit"), f"the writer died by itself: {printed[-1]}"
        # Land the kill anywhere inside the next round: a round's length is what the last ones took
        # (a PostgreSQL round is several times a SQLite one).
        round_seconds = (seen_at[-1] - seen_at[0]) / (len(seen_at) - 1)
        time.sleep(chance.uniform(0, max(0.004, round_seconds)))
        os.kill(int(pid), signal.SIGKILL)
        # What it printed before the kill landed, its output buffer included.
        while not (line := zygote.stdout.readline()).startswith("exit"):
            assert line, "the writers' zygote ended"
            printed.append(line)
        assert line.split() == ["exit", str(signal.SIGKILL)], line  # waitpid's status: killed
        rounds = [json.loads(line) for line in printed]
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
    zygote.stdin.close()
    zygote.wait(30)
    zygote.stdout.close()
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
