"""tasks benchmarks: get_next_task over stdio with 10,000 tasks, and create cost against list size.

- Next task: a list of 10,000 tasks in a realistic mix (half completed, 10% each in progress,
  blocked and failed, 20% pending; one task in twelve depends on an earlier one, and those
  whose dependency is unfinished wait, so the search steps over them). 200
  ``get_next_task`` calls and 100 ``get_next_task(claim=true)`` calls over stdio to a real
  ``hostd serve``. Target: median round trip < 10 ms. For scale, the same number of calls to
  the bare ``MCPServer``'s ``trivial`` tool (``bench/baseline_server.py``) in the same run.
- Create cost: two lists, one holding 100 tasks and one holding 10,000, each served by its
  own ``hostd serve``; 100 ``create_task`` calls to each, alternating in batches of 10 so both
  see the same machine noise (tasks 101-200 against tasks 10,001-10,100). Target: median at
  10,001 <= 1.5x median at 101. The same comparison through the in-process ``Host.call``
  (no transport) is reported too, since it shows the store's own cost most plainly.
- Worst case, for information: 5,000 pending P0 tasks all waiting on one unfinished task and
  ready P2 tasks behind them; get_next_task must step over every waiting task (in-process).

Run: ``.venv/bin/python bench/bench_tasks.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
from benchlib import BENCH_DIR, WORK, median, p95, table, write_section
from hostd.config import config_from_mapping
from hostd.host import Host
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SCRATCH = WORK / "tasks"
BASELINE = BENCH_DIR / "baseline_server.py"
LARGE = 10_000
SMALL = 100
NEXT_CALLS = 200
CLAIM_CALLS = 100
CREATE_CALLS = 100
BATCH = 10
NEXT_TARGET_MS = 10.0
CREATE_RATIO_TARGET = 1.5


def fill(data_dir: Path, count: int) -> None:
    """Write ``count`` tasks in a realistic mix straight into the plugin's store."""
    from hostd_tasks.store import TaskStore

    store = TaskStore(data_dir / "tasks" / "tasks.db")
    try:
        ids: list[str] = []
        for n in range(count):
            depends = [ids[n - 3]] if n % 12 == 0 and n >= 3 else []
            task = store.create(
                title=f"bench task {n}",
                description="some words " * 5,
                priority=("P0", "P1", "P2")[n % 3],
                task_id=None,
                depends_on=depends,
            )
            ids.append(task.task_id)
        # Statuses set in one transaction, spread evenly over the list: half completed, 10% each
        # in progress, blocked and failed, 20% pending. Pending tasks whose dependency is not
        # completed wait, and the next-task search steps over them.
        plan = ["completed"] * 5 + ["in_progress", "blocked", "failed", "pending", "pending"]
        with store.db.write() as conn:
            conn.executemany(
                "UPDATE tasks SET status = ? WHERE task_id = ?",
                [
                    (plan[(n * 7) % 10], task_id)
                    for n, task_id in enumerate(ids)
                    if plan[(n * 7) % 10] != "pending"
                ],
            )
    finally:
        store.close()


def worst_case(data_dir: Path) -> None:
    """5,000 pending P0 tasks waiting on one unfinished task, then 5,000 ready P2 tasks."""
    from hostd_tasks.store import TaskStore

    store = TaskStore(data_dir / "tasks" / "tasks.db")
    try:
        store.create(title="gate", description="", priority="P2", task_id="gate", depends_on=[])
        store.set_status("gate", "in_progress")
        for n in range(LARGE // 2):
            store.create(title=f"waits {n}", description="", priority="P0", task_id=None, depends_on=["gate"])
        for n in range(LARGE // 2 - 1):
            store.create(title=f"ready {n}", description="", priority="P2", task_id=None, depends_on=[])
    finally:
        store.close()


def config_for(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "hostd.yaml"
    path.write_text(
        json.dumps(
            {
                "language": "en",
                "data_dir": str(folder / "data"),
                "profiles": {"default": {"plugins": ["tasks"]}},
            }
        ),
        encoding="utf-8",
    )
    return path


def served(config: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "hostd", "serve", "--config", str(config)], env=dict(os.environ)
    )


async def timed(call: Callable[[], Awaitable[Any]]) -> float:
    started = time.perf_counter()
    await call()
    return (time.perf_counter() - started) * 1000


async def check(result: Any) -> None:
    if getattr(result, "is_error", False):
        raise RuntimeError(f"a benchmark call failed: {result.structured_content}")


async def stdio_next_task(large_config: Path) -> dict[str, list[float]]:
    bare = StdioServerParameters(command=sys.executable, args=[str(BASELINE)], env=dict(os.environ))
    times: dict[str, list[float]] = {"next": [], "claim": [], "trivial": []}
    async with Client(served(large_config)) as client, Client(bare) as baseline:
        for _ in range(20):  # warm both: imports, the store's first connection, caches
            await check(await client.call_tool("get_next_task", {}))
            await baseline.call_tool("trivial", {"text": "warm"})
        for _ in range(NEXT_CALLS):
            times["next"].append(await timed(lambda: client.call_tool("get_next_task", {})))
            times["trivial"].append(await timed(lambda: baseline.call_tool("trivial", {"text": "x"})))
        for _ in range(CLAIM_CALLS):
            times["claim"].append(await timed(lambda: client.call_tool("get_next_task", {"claim": True})))
    return times


async def stdio_create(small_config: Path, large_config: Path) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"small": [], "large": []}
    async with Client(served(small_config)) as small, Client(served(large_config)) as large:
        await check(await small.call_tool("list_tasks", {"limit": 1}))  # open both stores first
        await check(await large.call_tool("list_tasks", {"limit": 1}))
        for batch in range(CREATE_CALLS // BATCH):
            for key, client in (("small", small), ("large", large)):
                for n in range(BATCH):
                    arguments = {"title": f"timed {batch}-{n}", "priority": "P1"}
                    times[key].append(
                        await timed(lambda c=client, a=arguments: c.call_tool("create_task", a))
                    )
    return times


def in_process_create(small_data: Path, large_data: Path) -> dict[str, list[float]]:
    def host(data_dir: Path) -> Host:
        made = Host(config_from_mapping({"profiles": {"default": {"plugins": ["tasks"]}}}, data_dir=data_dir))
        made.startup()
        return made

    small, large = host(small_data), host(large_data)
    times: dict[str, list[float]] = {"small": [], "large": []}

    async def run() -> None:
        for each in (small, large):
            await each.call("list_tasks", {"limit": 1})
        for batch in range(CREATE_CALLS // BATCH):
            for key, each in (("small", small), ("large", large)):
                for n in range(BATCH):
                    arguments = {"title": f"in-process {batch}-{n}", "priority": "P1"}
                    elapsed = await timed(lambda h=each, a=arguments: h.call("create_task", a))
                    times[key].append(elapsed)

    try:
        anyio.run(run)
    finally:
        small.shutdown()
        large.shutdown()
    return times


def in_process_next(data_dir: Path) -> list[float]:
    host = Host(config_from_mapping({"profiles": {"default": {"plugins": ["tasks"]}}}, data_dir=data_dir))
    host.startup()
    times: list[float] = []

    async def run() -> None:
        for _ in range(10):
            await host.call("get_next_task", {})
        for _ in range(NEXT_CALLS):
            times.append(await timed(lambda: host.call("get_next_task", {})))

    try:
        anyio.run(run)
    finally:
        host.shutdown()
    return times


def ms(value: float) -> str:
    return f"{value:.2f}"


def main() -> None:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    small_config, large_config = config_for(SCRATCH / "small"), config_for(SCRATCH / "large")
    worst_data = SCRATCH / "worst" / "data"
    started = time.perf_counter()
    fill(SCRATCH / "small" / "data", SMALL)
    fill(SCRATCH / "large" / "data", LARGE)
    worst_case(worst_data)
    print(f"filled the lists in {time.perf_counter() - started:.1f} s", file=sys.stderr)

    next_times = anyio.run(stdio_next_task, large_config)
    stdio_creates = anyio.run(stdio_create, small_config, large_config)
    local_creates = in_process_create(SCRATCH / "small" / "data", SCRATCH / "large" / "data")
    worst_times = in_process_next(worst_data)

    next_median, claim_median = median(next_times["next"]), median(next_times["claim"])
    stdio_ratio = median(stdio_creates["large"]) / median(stdio_creates["small"])
    local_ratio = median(local_creates["large"]) / median(local_creates["small"])
    verdict = {True: "met", False: "NOT met"}
    body = "\n\n".join(
        [
            "With 10,000 tasks (realistic mix, see the script's docstring), round trips over stdio "
            "to a real `hostd serve`, milliseconds:",
            table(
                ["call", "calls", "median", "p95", "target", ""],
                [
                    [
                        "get_next_task",
                        NEXT_CALLS,
                        ms(next_median),
                        ms(p95(next_times["next"])),
                        f"< {NEXT_TARGET_MS:.0f}",
                        verdict[next_median < NEXT_TARGET_MS],
                    ],
                    [
                        "get_next_task(claim=true)",
                        CLAIM_CALLS,
                        ms(claim_median),
                        ms(p95(next_times["claim"])),
                        f"< {NEXT_TARGET_MS:.0f}",
                        verdict[claim_median < NEXT_TARGET_MS],
                    ],
                    [
                        "bare MCPServer `trivial` (floor, same run)",
                        NEXT_CALLS,
                        ms(median(next_times["trivial"])),
                        ms(p95(next_times["trivial"])),
                        "",
                        "",
                    ],
                ],
            ),
            f"Creating a task in a list of 10,000 against one of 100 ({CREATE_CALLS} calls each, alternating "
            f"in batches of {BATCH}), milliseconds:",
            table(
                ["path", "task 101-200 median", "task 10,001-10,100 median", "ratio", "target", ""],
                [
                    [
                        "stdio round trip",
                        ms(median(stdio_creates["small"])),
                        ms(median(stdio_creates["large"])),
                        f"{stdio_ratio:.2f}x",
                        f"<= {CREATE_RATIO_TARGET}x",
                        verdict[stdio_ratio <= CREATE_RATIO_TARGET],
                    ],
                    [
                        "in-process `Host.call`",
                        ms(median(local_creates["small"])),
                        ms(median(local_creates["large"])),
                        f"{local_ratio:.2f}x",
                        f"<= {CREATE_RATIO_TARGET}x",
                        verdict[local_ratio <= CREATE_RATIO_TARGET],
                    ],
                ],
            ),
            "Worst case, for information (no target): 5,000 pending P0 tasks all waiting on one unfinished "
            "task, ready P2 tasks behind them; `get_next_task` in-process steps over every waiting task: "
            f"median {ms(median(worst_times))} ms, p95 {ms(p95(worst_times))} ms over {NEXT_CALLS} calls.",
        ]
    )
    write_section(
        "tasks",
        "tasks: next task with 10,000 tasks, create cost against list size",
        body,
        packages=("hostd-tasks", "hostd-fs"),
    )


if __name__ == "__main__":
    main()
