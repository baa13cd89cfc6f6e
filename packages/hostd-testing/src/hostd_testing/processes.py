"""Real processes in tests: a free port for a server to take, stopping a server a test started,
and running test work in several processes at once, started together on a barrier.

"spawn" children share nothing with the test process (no inherited locks or connections), as
two server processes would; the target must live in an importable module (not a test file).
"""

from __future__ import annotations

import multiprocessing
import queue
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

__all__ = [
    "SPAWN",
    "assert_overlapped",
    "free_port",
    "run_in_process",
    "run_processes_on_barrier",
    "stop_process",
]

SPAWN = multiprocessing.get_context("spawn")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now (another process may take it first)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def stop_process(process: subprocess.Popen[Any]) -> None:
    """Stop a server the test started: terminate, kill after 10 s, then close the pipes it was
    given (an unclosed pipe is a ``ResourceWarning``, an error in these suites)."""
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            stream.close()


def _collect(results: Any, processes: list[Any], timeout: float = 120) -> list[Any]:
    """One result per process, failing fast (not after the timeout) when a process dies."""
    collected: list[Any] = []
    deadline = time.monotonic() + timeout
    try:
        while len(collected) < len(processes):
            try:
                collected.append(results.get(timeout=0.2))
            except queue.Empty:
                failed = [process.exitcode for process in processes if process.exitcode not in (None, 0)]
                assert not failed, f"a worker process failed with exit codes {failed}"
                assert time.monotonic() < deadline, "the worker processes did not finish in time"
    finally:
        for process in processes:
            process.join(timeout=30)
    assert [process.exitcode for process in processes] == [0] * len(processes)
    return collected


def run_processes_on_barrier(
    target: Callable[..., None], per_process_args: list[tuple[Any, ...]]
) -> list[Any]:
    """Run `target(*args, barrier, results)` in one process per args; returns what they put.

    "spawn" children share nothing with the test process (no inherited locks or connections),
    as two server processes would.
    """
    barrier = SPAWN.Barrier(len(per_process_args))
    results = SPAWN.Queue()
    processes = [SPAWN.Process(target=target, args=(*args, barrier, results)) for args in per_process_args]
    for process in processes:
        process.start()
    return _collect(results, processes)


def run_in_process(target: Callable[..., None], args: tuple[Any, ...]) -> Any:
    """Run `target(*args, results)` in a fresh process; returns what it put."""
    results = SPAWN.Queue()
    process = SPAWN.Process(target=target, args=(*args, results))
    process.start()
    [result] = _collect(results, [process])
    return result


def assert_overlapped(intervals: list[tuple[float, float]]) -> None:
    """Every worker was still working when the last one started."""
    assert max(start for start, _ in intervals) < min(end for _, end in intervals), intervals
