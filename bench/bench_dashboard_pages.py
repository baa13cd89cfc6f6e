"""The dashboard's task and thinking pages at 10,000 tasks and 1,000 sessions, on SQLite (and the
session files) and on PostgreSQL (section ``dashboard-pages``).

An in-process host serving tasks and deep-thinking is seeded through the tools (tasks with
dependencies, claims, completions and failures by several members; sessions of a few thoughts,
every tenth with a branch), then its dashboard is served on a free 127.0.0.1 port and signed in
with the one-time link. Measured as ``bench_dashboard`` measures the memory pages: each page's
server time from the ``Server-Timing`` header (p50, p95), and in headless Chromium the first
contentful paint and the bytes a page loads (the session page draws its Mermaid diagram, the only
one that loads Mermaid).

Targets (issue 22): list pages p50 < 50 ms and p95 < 150 ms; a page without diagrams < 300 KB;
first contentful paint < 500 ms.

    .venv/bin/python bench/bench_dashboard_pages.py [--tasks 10000] [--sessions 1000]
        [--backends sqlite,postgres] [--repeats 30] [--reuse-seed]
"""

from __future__ import annotations

import argparse
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anyio
from bench_dashboard import bare_page, browser_measures, ms, open_seeded, page_times, signed_in
from benchlib import WORK, median, p95, table, write_section

DATABASE_ENV = "HOSTD_BENCH_DASHBOARD_PAGES_DATABASE_URL"
SCRATCH = WORK / "dashboard-pages"
MEMBERS = ("alice", "bob", "carol", "dave")
LABELS = ("backend", "frontend", "数据库", "ops", "docs")


def host_for(directory: Path, backend: str) -> Any:
    from hostd.core.config import config_from_mapping
    from hostd.core.host import Host

    storage = {"storage": {"url_env": DATABASE_ENV}} if backend == "postgres" else {}
    raw = {"language": "en", "profiles": {"default": {"plugins": ["tasks", "deep-thinking"]}}, **storage}
    host = Host(config_from_mapping(raw, "default", data_dir=directory / "data"))
    if storage:
        host.prepare_team_databases(migrate=True)
    return host


def seed(host: Any, tasks: int, sessions: int) -> float:
    """Tasks (every tenth waits on the one before, a quarter claimed, an eighth completed, a few
    failed) and sessions of three thoughts (every tenth with a branch), by four members."""
    from hostd.core.identity import Member, acting_as

    async def call(member: str, tool: str, **arguments: Any) -> None:
        with acting_as(Member(member)):
            envelope, is_error = await host.call(tool, arguments)
        assert not is_error, envelope["error"]

    async def run() -> None:
        for n in range(tasks):
            member = MEMBERS[n % len(MEMBERS)]
            extra: dict[str, Any] = {"depends_on": [f"t{n - 1}"]} if n % 10 == 9 else {}
            await call(
                member,
                "create_task",
                task_id=f"t{n}",
                title=f"Task {n}: 部署 step {n % 97}",
                description=f"Work item {n} about the release; 第 {n} 项。",
                priority=("P0", "P1", "P2")[n % 3],
                labels=[LABELS[n % len(LABELS)]],
                **extra,
            )
            if n % 4 == 0 and n % 10 != 9:
                await call(member, "update_task_status", task_id=f"t{n}", new_status="in_progress")
                if n % 8 == 0:
                    await call(member, "update_task_status", task_id=f"t{n}", new_status="completed")
                elif n % 100 == 4:
                    await call(member, "update_task_status", task_id=f"t{n}", new_status="failed")
        for n in range(sessions):
            member = MEMBERS[n % len(MEMBERS)]
            base = {"session_id": f"s{n}", "totalThoughts": 3, "nextThoughtNeeded": True}
            await call(
                member,
                "sequential_thinking",
                thought=f"Session {n}: 先比较两种方案。",
                thoughtNumber=1,
                **base,
            )
            await call(member, "sequential_thinking", thought="The second step.", thoughtNumber=2, **base)
            if n % 10 == 0:
                await call(
                    member,
                    "sequential_thinking",
                    thought="A branch.",
                    thoughtNumber=3,
                    branchFromThought=1,
                    branchId="alt",
                    **base,
                )
            await call(
                member,
                "sequential_thinking",
                thought="Decided.",
                thoughtNumber=3,
                **{**base, "nextThoughtNeeded": False},
            )

    started = time.perf_counter()
    anyio.run(run)
    return time.perf_counter() - started


def pages(client: Any) -> dict[str, str]:
    column = "/ui/tasks?status=pending"
    url, page = column, 1
    while page < 5:
        found = re.search(r'<a href="([^"]+)" rel="next">', client.get(url).text)
        if found is None:
            break
        url, page = found.group(1).replace("&amp;", "&"), page + 1
    return {
        "task board (5 columns)": "/ui/tasks",
        "board, label + text filter": "/ui/tasks?label=backend&q=%E9%83%A8%E7%BD%B2",
        "board, claimed by a member": "/ui/tasks?member=bob",
        "pending column, page 1": column,
        f"pending column, page {page}": url,
        "a task's page": "/ui/tasks/view?id=t19",
        "sessions list": "/ui/deep-thinking",
        "sessions, by member": "/ui/deep-thinking?member=carol",
        "thought search": "/ui/deep-thinking?q=%E6%96%B9%E6%A1%88",
        "a session's page (diagram)": "/ui/deep-thinking/view?id=s10",
        "overview (tasks + thinking)": "/ui/",
    }


def run_backend(
    backend: str, tasks: int, sessions: int, repeats: int, reuse_seed: bool = False, seed_only: bool = False
) -> dict[str, Any]:
    from hostd.core.config import TransportConfig
    from hostd.protocol.guard import HttpPolicy
    from hostd.web.serve import local_app
    from hostd.web.signing import OneTimeToken
    from hostd_testing.browser import served

    key = f"dashboard-pages-{backend}-{tasks}-{sessions}"
    database_url = os.environ[DATABASE_ENV] if backend == "postgres" else None
    host, result = open_seeded(
        SCRATCH / backend,
        key,
        backend,
        database_url,
        reuse_seed,
        host_for,
        lambda opened: seed(opened, tasks, sessions),
    )
    try:
        if seed_only:
            return result
        with signed_in(host) as client:
            measured = pages(client)
            result["pages"] = {name: page_times(client, url, repeats) for name, url in measured.items()}
            second = OneTimeToken()
        browser_pages = {
            "task board": "/ui/tasks",
            "a task's page": "/ui/tasks/view?id=t19",
            "sessions list": "/ui/deep-thinking",
            "a session's page (Mermaid)": "/ui/deep-thinking/view?id=s10",
        }
        app2 = local_app(host, second, HttpPolicy(TransportConfig(type="http")))
        with served(app2) as origin, served(bare_page()) as bare:
            browser_pages["baseline: bare HTML page"] = f"{bare}/"
            with ThreadPoolExecutor(max_workers=1) as pool:
                result["browser"] = pool.submit(
                    browser_measures, origin, f"/ui/signin?token={second.token}", browser_pages
                ).result()
    finally:
        host.shutdown()
    return result


def write(runs: list[dict[str, Any]], tasks: int, sessions: int, repeats: int) -> None:
    verdict = {True: "met", False: "**missed**"}
    rows = [
        [
            run["backend"],
            name,
            ms(median(times)),
            ms(p95(times)),
            f"{verdict[median(times) < 50]} / {verdict[p95(times) < 150]}",
        ]
        for run in runs
        for name, times in run["pages"].items()
    ]
    browser_rows = [
        [
            run["backend"],
            name,
            ms(paint),
            f"{weight / 1024:.0f} KB",
            f"{verdict[paint < 500]} / "
            + ("(diagram page)" if "Mermaid" in name else verdict[weight < 300 * 1024]),
        ]
        for run in runs
        for name, (paint, weight) in run["browser"].items()
    ]
    seeding = ", ".join(
        f"{run['backend']} {run['seeded_s']:.0f} s" + (" (a saved seed, restored)" if run["restored"] else "")
        for run in runs
    )
    body = "\n\n".join(
        [
            f"An in-process host serving tasks and deep-thinking: {tasks:,} tasks (every tenth waiting on "
            "the one before, a quarter claimed, an eighth completed, some failed, four members) and "
            f"{sessions:,} sessions of three or four thoughts (every tenth with a branch), seeded through "
            f"the tools ({seeding}). Its dashboard served by uvicorn on 127.0.0.1, signed in with the "
            "one-time link. Server time is the dashboard's `Server-Timing` (until the answer starts: the "
            f"tools' calls and the template), {repeats} requests per page. Targets for list pages: p50 < "
            "50 ms and p95 < 150 ms (the board is five list_tasks calls, one per status; the overview "
            "get_task_stats, list_task_activity and, for the thinking feed, list_sessions and the newest "
            "sessions' last thoughts).",
            table(["backend", "page", "p50", "p95", "target (p50 / p95)"], rows),
            "In headless Chromium (Debian's, Playwright), cold cache, median of several loads: first "
            "contentful paint and the bytes the page loaded. Only the session page loads Mermaid "
            "(it draws the session's diagram); the 300 KB target is for pages without diagrams. The "
            "baseline row is a bare HTML page from another server in the same run.",
            table(
                ["backend", "page", "first contentful paint", "page weight", "target (FCP / weight)"],
                browser_rows,
            ),
        ]
    )
    write_section(
        "dashboard-pages",
        f"dashboard: task and thinking pages at {tasks:,} tasks and {sessions:,} sessions",
        body,
        packages=("hostd-tasks", "hostd-deep-thinking"),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--sessions", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=30)
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument(
        "--reuse-seed",
        action="store_true",
        help="restore the seed an earlier run of these sizes kept (bench/.work/seeds), else seed and keep it",
    )
    parser.add_argument(
        "--seed-only", action="store_true", help="with --reuse-seed: save the seed, measure nothing"
    )
    args = parser.parse_args()
    runs = []
    for backend in args.backends.split(","):
        if backend == "postgres":
            from hostd_testing.postgres import running_postgres

            with running_postgres() as server:
                os.environ[DATABASE_ENV] = server.create_database()
                runs.append(
                    run_backend(
                        backend, args.tasks, args.sessions, args.repeats, args.reuse_seed, args.seed_only
                    )
                )
        else:
            runs.append(
                run_backend(backend, args.tasks, args.sessions, args.repeats, args.reuse_seed, args.seed_only)
            )
    if args.seed_only:
        return
    write(runs, args.tasks, args.sessions, args.repeats)
    print(
        (Path(__file__).parent / "RESULTS.md")
        .read_text(encoding="utf-8")
        .split("<!-- bench:dashboard-pages -->")[1][:4000]
    )


if __name__ == "__main__":
    main()
