"""What the multi-process tasks tests share (test_tasks_processes, test_tasks_kills): spawned
workers on one barrier, and a host of the test's own over the shared list."""

from __future__ import annotations

import multiprocessing
import queue
from pathlib import Path
from typing import Any

import anyio
import pytest
import tasks_workers
from hostd_testing import PluginHost, make_host

WORKERS = 4
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
