"""A team through the load balancer: 50 members at once for a bounded time, behind the real
nginx running deploy/nginx.conf, with 1 replica and with 3 (stateless, one shared SQLite data
dir), mixing search_memory, create_memory, get_next_task(claim=true) and sequential_thinking.

Reports requests per second, p50 / p99 latency, errors (none expected: nothing is injected
here), and each replica's memory after start-up and after the run (must stay within 1.5x).
Loopback only. Writes its section of bench/RESULTS.md.

    .venv/bin/python bench/bench_team.py [--seconds 60] [--clients 50]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

import benchlib
import yaml

BENCH = Path(__file__).resolve().parent
# The team deployment test's harness (replicas behind deploy/nginx.conf), loaded from its file.
_cluster = benchlib.load_module(BENCH.parent / "tests" / "team_cluster.py")
MODERN, Balancer, NoAnswer, Replica = _cluster.MODERN, _cluster.Balancer, _cluster.NoAnswer, _cluster.Replica
TeamClient, find_nginx, free_port = _cluster.TeamClient, _cluster.find_nginx, _cluster.free_port

SEED_TASKS = 3000
MEMORY_GROWTH_LIMIT = 1.5


def write_config(folder: Path, members: dict[str, str]) -> Path:
    tokens = folder / "tokens.yaml"
    tokens.write_text(yaml.safe_dump(members), encoding="utf-8")
    transport = {"type": "http", "stateless": True, "tokens_file": str(tokens), "max_connections": 400}
    config = folder / "hostd.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(folder / "data"),
                "language": "en",
                "profiles": {
                    "team": {"plugins": ["memory", "deep-thinking", "tasks"], "transport": transport}
                },
            }
        ),
        encoding="utf-8",
    )
    return config


async def seed(clients: list[TeamClient], tasks: int) -> None:
    """Tasks to claim and memories to search, created before the clock starts."""

    async def one(index: int, client: TeamClient) -> None:
        for k in range(index, tasks, len(clients)):
            await client.call("create_task", {"title": f"seeded task {k}", "task_id": f"seed-{k}"})
        await client.call(
            "create_memory",
            {"uri": f"team://seed/{index}", "content": f"seed memory {index} about release planning"},
        )

    await asyncio.gather(*(one(i, c) for i, c in enumerate(clients)))


async def run_load(clients: list[TeamClient], seconds: float) -> tuple[list[float], int, dict[str, int]]:
    latencies: list[float] = []
    errors: dict[str, int] = {}
    deadline = time.monotonic() + seconds

    async def member(index: int, client: TeamClient) -> None:
        step = 0
        while time.monotonic() < deadline:
            step += 1
            kind = step % 4
            if kind == 0:
                name, arguments = "search_memory", {"query": "release planning"}
            elif kind == 1:
                name, arguments = (
                    "create_memory",
                    {"uri": f"team://m{index}/{step}", "content": f"note {step}"},
                )
            elif kind == 2:
                name, arguments = "get_next_task", {"claim": True}
            else:
                name = "sequential_thinking"
                arguments = {
                    "thought": f"step {step}",
                    "nextThoughtNeeded": True,
                    "thoughtNumber": step,
                    "totalThoughts": step + 1,
                    "session_id": f"bench-{index}",
                }
            started = time.perf_counter()
            try:
                envelope = await client.call(name, arguments)
            except NoAnswer as exc:
                errors[f"{name}: {exc}"] = errors.get(f"{name}: {exc}", 0) + 1
                continue
            latencies.append(time.perf_counter() - started)
            if envelope["status"] != "success":
                key = f"{name}: {envelope['error']['code']}"
                errors[key] = errors.get(key, 0) + 1

    started = time.monotonic()
    await asyncio.gather(*(member(i, c) for i, c in enumerate(clients)))
    return latencies, round(time.monotonic() - started), errors


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def measure(
    replica_count: int, seconds: float, client_count: int, seed_tasks: int, nginx: str
) -> dict[str, Any]:
    folder = benchlib.WORK / f"team-{replica_count}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    members = {f"member{i}": f"bench-member-{i}-token-0123456789" for i in range(client_count)}
    config = write_config(folder, members)
    replicas = [
        Replica(config, free_port(), {"HOSTD_CACHE_DIR": str(folder / "cache")}, folder / f"replica-{i}.log")
        for i in range(replica_count)
    ]
    balancer = Balancer(nginx, folder / "nginx", free_port())
    try:
        for replica in replicas:
            replica.start()
        ports = [replica.port for replica in replicas]
        balancer.start((ports * 3)[:3])  # one replica: the template's three upstream lines name it thrice
        rss_start = [replica.rss_kib() for replica in replicas]

        async def session() -> tuple[list[float], int, dict[str, int]]:
            clients = [TeamClient(balancer.url, token, MODERN) for token in members.values()]
            try:
                await seed(clients, seed_tasks)
                return await run_load(clients, seconds)
            finally:
                for client in clients:
                    await client.aclose()

        latencies, elapsed, errors = asyncio.run(session())
        rss_end = [replica.rss_kib() for replica in replicas]
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()
    return {
        "replicas": replica_count,
        "requests": len(latencies),
        "rps": len(latencies) / max(elapsed, 1e-9),
        "p50": percentile(latencies, 0.5) * 1000,
        "p99": percentile(latencies, 0.99) * 1000,
        "mean": statistics.fmean(latencies) * 1000,
        "errors": errors,
        "rss_start": rss_start,
        "rss_end": rss_end,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0, help="load duration per replica count")
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument(
        "--seed-tasks", type=int, default=SEED_TASKS, help="tasks created before the clock starts"
    )
    args = parser.parse_args()
    nginx = find_nginx()
    if nginx is None:
        raise SystemExit("nginx is not installed: apt-get install -y nginx")
    runs = [measure(count, args.seconds, args.clients, args.seed_tasks, nginx) for count in (1, 3)]
    rows = []
    for run in runs:
        growth = max(end / start for start, end in zip(run["rss_start"], run["rss_end"], strict=True))
        rows.append(
            [
                run["replicas"],
                run["requests"],
                f"{run['rps']:.0f}",
                f"{run['p50']:.1f}",
                f"{run['p99']:.1f}",
                sum(run["errors"].values()),
                ", ".join(
                    f"{s / 1024:.0f} → {e / 1024:.0f}"
                    for s, e in zip(run["rss_start"], run["rss_end"], strict=True)
                ),
                f"{growth:.2f}x",
            ]
        )
    ratio = runs[1]["rps"] / runs[0]["rps"]
    body = benchlib.table(
        [
            "replicas",
            "requests",
            "req/s",
            "p50 ms",
            "p99 ms",
            "errors",
            "replica RSS MB (start → end)",
            "max growth",
        ],
        rows,
    )
    errors = {key: n for run in runs for key, n in run["errors"].items()}
    body += (
        f"\n\n{args.clients} members (one token each) for {args.seconds:g} s per row, through nginx "
        f"(deploy/nginx.conf) to stateless replicas sharing one SQLite data dir, on the 2026-07-28 "
        f"protocol; each member cycles search_memory, create_memory, get_next_task(claim=true) "
        f"({args.seed_tasks} seeded tasks) and sequential_thinking. "
        f"3 replicas / 1 replica = **{ratio:.2f}x** "
        f"requests per second. The machine has {_cores()} cores shared by the load generator (one "
        "Python process), nginx and the replicas, and every write goes through one SQLite file "
        "per store (one writer at a time): on 2 cores a third replica mostly competes for the same "
        "CPU and the same write lock, so the ratio says more about the machine than about hostd. "
        f"Memory: each replica's RSS after the run within {MEMORY_GROWTH_LIMIT}x of its RSS after "
        "start-up is the bound checked.\n"
    )
    if errors:
        body += "\nErrors: " + "; ".join(f"{key} x{n}" for key, n in sorted(errors.items())) + "\n"
    benchlib.write_section("team", f"Team: {args.clients} members through nginx, 1 vs 3 replicas", body)
    worst = max(
        end / start for run in runs for start, end in zip(run["rss_start"], run["rss_end"], strict=True)
    )
    if errors or worst > MEMORY_GROWTH_LIMIT:
        raise SystemExit(f"errors: {errors}; worst memory growth {worst:.2f}x")


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    main()
