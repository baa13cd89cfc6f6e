"""Child processes for the concurrency tests: each runs its own in-process host on a shared data folder.

They are separate OS processes (spawned, so nothing is inherited but the arguments), start
their calls on a shared barrier, and report what they did with wall-clock start and end
times so the test can prove the calls overlapped.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostd_testing import PluginHost

BARRIER_TIMEOUT = 60.0
#: A real agent works on a claimed task before asking again. Without any pause one process can
#: re-take SQLite's write lock the instant it lets go, and the others (sleeping in their busy
#: handlers) would never get a turn: correct, but it would not show claims interleaving.
WORK_AFTER_CLAIM_S = 0.002


def act_as(member: str) -> None:
    """Make this process's in-process calls those of ``member``: the host takes the local login
    name for them, and ``getpass`` reads it from ``LOGNAME`` first."""
    os.environ["LOGNAME"] = member


def worker_member(worker: int) -> str:
    return f"agent-{worker}"


def log_path(data_dir: str | Path, worker: int) -> Path:
    """Where worker ``worker`` keeps its stderr and the host's log (``keep_log``)."""
    return Path(data_dir) / f"worker-{worker}.log"


def keep_log(data_dir: str, worker: int) -> None:
    """Send this process's stderr, and the host's log from INFO up, to ``log_path``: a failing
    test shows each worker's log (``worker_logs``) instead of losing it with the process."""
    import logging

    stream = log_path(data_dir, worker).open("a", encoding="utf-8", buffering=1)
    os.dup2(stream.fileno(), 2)
    sys.stderr = stream
    logging.basicConfig(
        stream=stream, level=logging.INFO, format="%(asctime)s %(name)s %(levelname)s %(message)s"
    )


def worker_logs(data_dir: str | Path, workers: int) -> str:
    """Every worker's log, for a failing assertion's message."""
    parts = []
    for worker in range(workers):
        path = log_path(data_dir, worker)
        text = path.read_text(encoding="utf-8", errors="replace") if path.exists() else "(no log)"
        parts.append(f"--- worker {worker} log ---\n{text[-20_000:]}")
    return "\n".join(parts)


def _host(data_dir: str, backend: dict[str, Any] | None = None) -> PluginHost:
    """A started host on ``data_dir``; ``backend`` is the conftest's store config ({} for SQLite)."""
    from hostd_testing import start_host

    return start_host(["tasks"], data_dir=Path(data_dir), config={"language": "en", **(backend or {})})


def create_tasks(
    data_dir: str, backend: dict[str, Any], worker: int, count: int, barrier: Any, results: Any
) -> None:
    """Create ``count`` tasks as fast as possible once every worker is ready."""
    import anyio

    keep_log(data_dir, worker)
    host = _host(data_dir, backend)
    created: list[str] = []
    errors: list[str] = []

    async def run() -> None:
        for n in range(count):
            envelope, is_error = await host.call(
                "create_task", {"title": f"worker {worker} task {n}", "priority": f"P{n % 3}"}
            )
            if is_error:
                errors.append(str(envelope["error"]))
            else:
                created.append(envelope["task"]["task_id"])

    try:
        barrier.wait(BARRIER_TIMEOUT)
        started = time.time()
        anyio.run(run)
        finished = time.time()
    finally:
        host.shutdown()
    results.put({"worker": worker, "ids": created, "errors": errors, "start": started, "end": finished})


def claim_until_empty(
    data_dir: str, backend: dict[str, Any], worker: int, barrier: Any, results: Any
) -> None:
    """Claim the next task again and again until nothing is pending, as the member ``agent-<worker>``."""
    import anyio

    keep_log(data_dir, worker)
    act_as(worker_member(worker))
    host = _host(data_dir, backend)
    claimed: list[dict[str, str | None]] = []
    errors: list[str] = []
    reasons: list[str] = []

    async def run() -> None:
        while True:
            envelope, is_error = await host.call("get_next_task", {"claim": True})
            if is_error:
                errors.append(str(envelope["error"]))
                return
            task = envelope["task"]
            if task is None:
                reasons.append(str(envelope["reason"]))
                return
            claimed.append(
                {
                    "task_id": task["task_id"],
                    "priority": task["priority"],
                    "status": task["status"],
                    "claimed_by": task["claimed_by"],
                }
            )
            await anyio.sleep(WORK_AFTER_CLAIM_S)

    try:
        barrier.wait(BARRIER_TIMEOUT)
        started = time.time()
        anyio.run(run)
        finished = time.time()
    finally:
        host.shutdown()
    results.put(
        {
            "worker": worker,
            "claimed": claimed,
            "errors": errors,
            "reasons": reasons,
            "start": started,
            "end": finished,
        }
    )


def edit_and_claim(
    data_dir: str, backend: dict[str, Any], worker: int, rounds: int, barrier: Any, results: Any
) -> None:
    """Each round: append a note to a shared task, rename this worker's own task, claim a task and note it.

    The notes and titles are what a lost edit would lose; the claims what a double claim would repeat.
    """
    import anyio

    keep_log(data_dir, worker)
    host = _host(data_dir, backend)
    claimed: list[str] = []
    errors: list[str] = []

    async def run() -> None:
        for n in range(rounds):
            calls = [
                ("update_task", {"task_id": f"shared-{n % 10}", "append_note": f"w{worker} r{n}"}),
                (
                    "update_task",
                    {"task_id": f"own-{worker}", "title": f"w{worker} r{n}", "priority": f"P{n % 3}"},
                ),
            ]
            for tool, arguments in calls:
                envelope, is_error = await host.call(tool, arguments)
                if is_error:
                    errors.append(str(envelope["error"]))
            envelope, is_error = await host.call("get_next_task", {"claim": True})
            if is_error:
                errors.append(str(envelope["error"]))
            elif envelope["task"] is not None:
                task_id = envelope["task"]["task_id"]
                claimed.append(task_id)
                await host.call("update_task", {"task_id": task_id, "append_note": f"claimed by w{worker}"})
            await anyio.sleep(WORK_AFTER_CLAIM_S)

    try:
        barrier.wait(BARRIER_TIMEOUT)
        started = time.time()
        anyio.run(run)
        finished = time.time()
    finally:
        host.shutdown()
    results.put({"worker": worker, "claimed": claimed, "errors": errors, "start": started, "end": finished})


def write_until_killed(data_dir: str, name: str, backend: dict[str, Any]) -> None:
    """Create a task and claim the next one, round after round, printing each finished round.

    Run as a script by the killed-process test, which SIGKILLs it at a random moment.
    """
    import anyio

    host = _host(data_dir, backend)

    async def run() -> None:
        for n in range(1_000_000):
            created, is_error = await host.call(
                "create_task", {"title": f"{name} {n}", "priority": f"P{n % 3}"}
            )
            assert not is_error, created
            claimed, is_error = await host.call("get_next_task", {"claim": True})
            assert not is_error, claimed
            print(json.dumps({"round": n, "claimed": claimed["task"]["task_id"]}), flush=True)

    anyio.run(run)


def fork_writers(data_dir: str, backend: dict[str, Any]) -> None:
    """For each name read on stdin, fork a child that runs ``write_until_killed`` under that name;
    print "ready PID" before the child starts its host (afresh, as a new process would) and
    "exit STATUS" once it is dead. The killed-process test starts dozens of writers, and
    importing the host costs a new process about a second on a busy machine: here it is paid once.
    """
    import anyio  # noqa: F401  (imported once here, not in every child)
    import hostd_tasks  # noqa: F401
    import hostd_testing  # noqa: F401

    for command in sys.stdin:
        name = command.strip()
        sys.stdout.flush()
        pid = os.fork()  # this process runs no thread and holds no store open: safe to fork
        if pid == 0:
            try:
                print("ready", os.getpid(), flush=True)
                write_until_killed(data_dir, name, backend)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        print("exit", status, flush=True)


def claim_and_hang(data_dir: str, member: str, backend: dict[str, Any], lease_seconds: int) -> None:
    """Claim the next task as ``member`` with a short lease, print it, then hang until killed.

    Run as a script by the lease test, which SIGKILLs it: an agent that died holding a claim.
    """
    import anyio

    act_as(member)
    host = _host(data_dir, backend)

    async def run() -> None:
        claimed, is_error = await host.call("get_next_task", {"claim": True, "lease_seconds": lease_seconds})
        assert not is_error, claimed
        assert claimed["task"] is not None, claimed
        print(json.dumps({"task_id": claimed["task"]["task_id"]}), flush=True)
        await anyio.sleep(3600)

    anyio.run(run)


def claim_when_free(
    data_dir: str,
    backend: dict[str, Any],
    worker: int,
    deadline_s: float,
    taken: Any,
    settle_s: float,
    barrier: Any,
    results: Any,
) -> None:
    """Ask for a task again and again (every 50 ms) until one is claimed or ``deadline_s`` passes.

    The worker that claims sets ``taken`` (a multiprocessing Event); the others go on asking for
    ``settle_s`` after they see it, then stop (instead of waiting out ``deadline_s``)."""
    import anyio

    keep_log(data_dir, worker)
    act_as(worker_member(worker))
    host = _host(data_dir, backend)
    claimed: list[dict[str, Any]] = []
    errors: list[str] = []

    async def run() -> None:
        give_up = time.monotonic() + deadline_s
        while time.monotonic() < give_up:
            if taken.is_set():
                give_up = min(give_up, time.monotonic() + settle_s)
            envelope, is_error = await host.call("get_next_task", {"claim": True, "lease_seconds": 60})
            if is_error:
                errors.append(str(envelope["error"]))
                return
            if envelope["task"] is not None:
                claimed.append({"task_id": envelope["task"]["task_id"], "at": time.time()})
                taken.set()
                return
            await anyio.sleep(0.05)

    try:
        barrier.wait(BARRIER_TIMEOUT)
        started = time.time()
        anyio.run(run)
        finished = time.time()
    finally:
        host.shutdown()
    results.put({"worker": worker, "claimed": claimed, "errors": errors, "start": started, "end": finished})


if __name__ == "__main__":
    if sys.argv[1] == "claim-and-hang":
        claim_and_hang(sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), int(sys.argv[5]))
    elif sys.argv[1] == "zygote":
        fork_writers(sys.argv[2], json.loads(sys.argv[3]))
    else:
        write_until_killed(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]))
