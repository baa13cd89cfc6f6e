"""A team through the load balancer: 50 members at once for a bounded time, behind the real
nginx running deploy/nginx.conf, with 1 replica and with 3 (stateless, sharing one PostgreSQL
database through ``storage``), mixing search_memory, create_memory, get_next_task(claim=true) and
sequential_thinking. The PostgreSQL server is the test suite's throw-away one
(hostd_testing.postgres: Debian's initdb/pg_ctl, loopback, a fresh database per row).

Reports requests per second, p50 / p99 latency, errors (none expected: nothing is injected
here), and each replica's memory after start-up and after the run (must stay within 1.5x).
Checks create_memory's p50 with 3 replicas is no higher than with 1 (memory writes of different
URIs do not wait for each other).

The database's side, measured in the same run: the statements PostgreSQL ran per tool call
(pg_stat_statements, loaded at the throw-away server's start; each statement is one round trip),
the connections the replicas' pools lent per call (their ``hostd_db_pool_lends_total``), and the
cost of a lend as the pool of before commit 9930484 made it (every connection checked with an
empty query first) against today's, interleaved on the same database. Each lend the old pool
made cost one more round trip, so lends per call is the round trips per call saved.
Loopback only. Writes its section of bench/RESULTS.md.

    .venv/bin/python bench/bench_team.py [--seconds 60] [--clients 50] [--seed-tasks 3000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import benchlib
import yaml
from hostd_db import PostgresDatabase
from hostd_testing.postgres import INSTALL_HINT, PostgresServer, find_bindir, running_postgres

BENCH = Path(__file__).resolve().parent

if TYPE_CHECKING:  # checked with MYPYPATH=tests
    from psycopg import Connection
    from psycopg_pool import ConnectionPool
    from team_cluster import MODERN, Balancer, NoAnswer, Replica, TeamClient, find_nginx, free_port
else:
    # The team deployment test's harness (replicas behind deploy/nginx.conf), loaded from its file.
    _cluster = benchlib.load_module(BENCH.parent / "tests" / "team_cluster.py")
    MODERN, Balancer, NoAnswer, Replica = (
        _cluster.MODERN,
        _cluster.Balancer,
        _cluster.NoAnswer,
        _cluster.Replica,
    )
    TeamClient, find_nginx, free_port = _cluster.TeamClient, _cluster.find_nginx, _cluster.free_port

SEED_TASKS = 3000
MEMORY_GROWTH_LIMIT = 1.5


DATABASE_ENV = "HOSTD_DATABASE_URL"
#: The throw-away server counts every statement it runs (BEGIN and COMMIT included), per database.
PG_SETTINGS = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track_utility": "on"}
#: The lend-cost comparison: rounds of blocks of lends, each variant once per round.
LEND_ROUNDS, LEND_BLOCK = 50, 20


def write_config(folder: Path, members: dict[str, str]) -> Path:
    tokens = folder / "tokens.yaml"
    tokens.write_text(yaml.safe_dump(members), encoding="utf-8")
    transport = {
        "type": "http",
        "stateless": True,
        "tokens_file": str(tokens),
        "max_connections": 400,
        # Read for the pools' lends (hostd_db_pool_lends_total), by the first member (the scraper).
        "metrics": {"enabled": True, "operators": list(members)[:1]},
    }
    config = folder / "hostd.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(folder / "data"),  # nothing is kept there: every store is in PostgreSQL
                "storage": {"url_env": DATABASE_ENV},
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


async def run_load(
    clients: list[TeamClient], seconds: float
) -> tuple[dict[str, list[float]], int, dict[str, int]]:
    latencies: dict[str, list[float]] = {}
    errors: dict[str, int] = {}
    deadline = time.monotonic() + seconds

    async def member(index: int, client: TeamClient) -> None:
        step = 0
        while time.monotonic() < deadline:
            step += 1
            kind = step % 4
            arguments: dict[str, Any]
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
            latencies.setdefault(name, []).append(time.perf_counter() - started)
            if envelope["status"] != "success":
                key = f"{name}: {envelope['error']['code']}"
                errors[key] = errors.get(key, 0) + 1

    started = time.monotonic()
    await asyncio.gather(*(member(i, c) for i, c in enumerate(clients)))
    return latencies, round(time.monotonic() - started), errors


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of one process so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _with_children(pid: int) -> list[int]:
    """``pid`` and its direct children (nginx's workers, PostgreSQL's backends)."""
    found = [pid]
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return found


def _machine_busy_seconds() -> float:
    """CPU time spent on anything (all cores) since boot: /proc/stat less idle and iowait."""
    ticks = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:9]]
    return (sum(ticks) - ticks[3] - ticks[4]) / os.sysconf("SC_CLK_TCK")


def cpu_snapshot(replicas: list[Replica], balancer: Balancer, pg: PostgresServer) -> dict[str, float]:
    """CPU seconds used so far by each part of the set-up, and by the whole machine."""
    postmaster = int((pg.data / "postmaster.pid").read_text().split()[0])
    assert balancer.process is not None
    own = os.times()
    return {
        "replicas": sum(_cpu_seconds(r.process.pid) for r in replicas if r.process is not None),
        "postgres": sum(_cpu_seconds(pid) for pid in _with_children(postmaster)),
        "nginx": sum(_cpu_seconds(pid) for pid in _with_children(balancer.process.pid)),
        "load generator": own.user + own.system,
        "machine": _machine_busy_seconds(),
    }


def _database_name(url: str) -> str:
    return url.rsplit("/", 1)[1]


def reset_statement_counts(pg: PostgresServer) -> None:
    pg.psql("SELECT pg_stat_statements_reset()")


def statement_counts(pg: PostgresServer, database: str) -> dict[str, float]:
    """What PostgreSQL counted for ``database`` since the last reset: statements (each one round
    trip; BEGIN, COMMIT and ROLLBACK included) and milliseconds spent running them, in all and for
    memory writes' lock statement and word-index insert."""
    import psycopg

    lock = "query LIKE '%%pg_advisory_xact_lock_shared%%'"  # memory's store lock and URI locks, one statement
    lexemes = "query LIKE 'INSERT INTO memory_lexemes%%'"
    with psycopg.connect(pg.url(), autocommit=True) as conn:
        row = conn.execute(
            "SELECT coalesce(sum(calls), 0), coalesce(sum(total_exec_time), 0),"
            " coalesce(sum(calls) FILTER (WHERE query ~* '^(BEGIN|COMMIT|ROLLBACK)'), 0),"
            " coalesce(sum(calls) FILTER (WHERE query ~* '^BEGIN'), 0),"
            f" coalesce(sum(calls) FILTER (WHERE {lock}), 0),"
            f" coalesce(sum(total_exec_time) FILTER (WHERE {lock}), 0),"
            f" coalesce(sum(calls) FILTER (WHERE {lexemes}), 0),"
            f" coalesce(sum(total_exec_time) FILTER (WHERE {lexemes}), 0)"
            " FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = %s)",
            (database,),
        ).fetchone()
    assert row is not None
    names = [
        "statements",
        "exec_ms",
        "transaction_control",
        "begins",
        "locks",
        "lock_ms",
        "lexemes",
        "lexeme_ms",
    ]
    return dict(zip(names, (float(value) for value in row), strict=True))


def pool_counters(replicas: list[Replica], token: str) -> dict[str, float]:
    """The replicas' pools, summed over replicas: connections lent, requests that waited for one,
    and seconds waited (each replica's ``/metrics``), for all plugins (``lends``) and for each
    (``lends memory``)."""
    import httpx2
    from prometheus_client.parser import text_string_to_metric_families

    wanted = {
        "hostd_db_pool_lends_total": "lends",
        "hostd_db_pool_waits_total": "waits",
        "hostd_db_pool_wait_seconds_total": "wait_s",
    }
    found = dict.fromkeys(wanted.values(), 0.0)
    for replica in replicas:
        answer = httpx2.get(
            f"http://127.0.0.1:{replica.port}/metrics",
            headers={"Authorization": f"Bearer {token}"},
            timeout=60,
        )
        answer.raise_for_status()
        for family in text_string_to_metric_families(answer.text):
            for sample in family.samples:
                if sample.name in wanted:
                    name = wanted[sample.name]
                    found[name] += sample.value
                    key = f"{name} {sample.labels['plugin']}"
                    found[key] = found.get(key, 0.0) + sample.value
    return found


class CheckedBeforeLending(PostgresDatabase):
    """Today's database with the pool as it was before commit 9930484: every connection checked
    (psycopg_pool's ``check_connection``: an empty query, one round trip) before it is lent.
    ``checks`` counts the checks made, so the comparison shows one per lend rather than assuming it."""

    checks = 0

    def _open_pool(self) -> ConnectionPool[Any]:
        from psycopg_pool import ConnectionPool

        def counted_check(connection: Connection[Any]) -> None:
            self.checks += 1
            ConnectionPool.check_connection(connection)

        pool: ConnectionPool[Any] = ConnectionPool(
            self.url,
            min_size=1,
            max_size=self._max_connections,
            kwargs=self._connection_kwargs(),
            timeout=self._connect_timeout_s,
            check=counted_check,
            open=False,
            name="hostd-bench-checked",
        )
        pool.open(wait=True, timeout=self._connect_timeout_s)
        return pool


LEND_KINDS = {
    "transaction": "a read in a transaction (BEGIN READ ONLY, one SELECT, COMMIT)",
    "autocommit": "an autocommit read (one SELECT)",
}


def lend_costs(url: str) -> dict[str, Any]:
    """Seconds per lend of one memory read by URI, through today's pool and through the checking
    pool of before, on the same database: ``LEND_ROUNDS`` rounds, each running a block of
    ``LEND_BLOCK`` lends of every (kind, pool) pair, the pools' order swapped every round."""
    sql = "SELECT id, version FROM memory.memories WHERE uri = %s"
    uri = "team://seed/0"
    today = PostgresDatabase(url, "bench", [])
    before = CheckedBeforeLending(url, "bench", [])

    def one(database: PostgresDatabase, kind: str) -> None:
        lend = database.read() if kind == "transaction" else database.autocommit()
        with lend as connection:
            assert connection.execute(sql, (uri,)).fetchone() is not None

    times: dict[tuple[str, str], list[float]] = {}
    try:
        for database in (today, before):  # open both pools (and warm their connections) first
            for kind in LEND_KINDS:
                one(database, kind)
        checks_before, lends_before = before.checks, (before.pool_stats() or {}).get("requests_num", 0)
        for round_number in range(LEND_ROUNDS):
            pools = [("today", today), ("before", before)]
            for kind in LEND_KINDS:
                for name, database in pools if round_number % 2 == 0 else pools[::-1]:
                    for _ in range(LEND_BLOCK):
                        started = time.perf_counter()
                        one(database, kind)
                        times.setdefault((kind, name), []).append(time.perf_counter() - started)
        lends = (before.pool_stats() or {}).get("requests_num", 0) - lends_before
        checks = before.checks - checks_before
    finally:
        today.close()
        before.close()
    return {"times": times, "checks_per_lend": checks / max(lends, 1)}


def measure(
    replica_count: int, seconds: float, client_count: int, seed_tasks: int, nginx: str, pg: PostgresServer
) -> dict[str, Any]:
    folder = benchlib.WORK / f"team-{replica_count}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    members = {f"member{i}": f"bench-member-{i}-token-0123456789" for i in range(client_count)}
    config = write_config(folder, members)
    url = pg.create_database(f"team{replica_count}")
    env = {"HOSTD_CACHE_DIR": str(folder / "cache"), DATABASE_ENV: url}
    replicas = [Replica(config, free_port(), env, folder / f"replica-{i}.log") for i in range(replica_count)]
    balancer = Balancer(nginx, folder / "nginx", free_port())
    try:
        for replica in replicas:
            replica.start()
        ports = [replica.port for replica in replicas]
        balancer.start((ports * 3)[:3])  # one replica: the template's three upstream lines name it thrice
        rss_start = [replica.rss_kib() for replica in replicas]

        cpu: list[dict[str, float]] = []
        pools: list[dict[str, float]] = []
        scraper = next(iter(members.values()))

        async def session() -> tuple[dict[str, list[float]], int, dict[str, int]]:
            clients = [TeamClient(balancer.url, token, MODERN) for token in members.values()]
            try:
                await seed(clients, seed_tasks)
                pools.append(pool_counters(replicas, scraper))
                reset_statement_counts(pg)
                cpu.append(cpu_snapshot(replicas, balancer, pg))
                loaded = await run_load(clients, seconds)
                cpu.append(cpu_snapshot(replicas, balancer, pg))
                pools.append(pool_counters(replicas, scraper))
                return loaded
            finally:
                for client in clients:
                    await client.aclose()

        by_tool, elapsed, errors = asyncio.run(session())
        statements = statement_counts(pg, _database_name(url))
        latencies = [seconds for values in by_tool.values() for seconds in values]
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
        "tools": {
            name: (len(v), percentile(v, 0.5) * 1000, percentile(v, 0.99) * 1000)
            for name, v in by_tool.items()
        },
        "errors": errors,
        "elapsed": elapsed,
        "cpu": {part: cpu[1][part] - cpu[0][part] for part in cpu[0]},
        "rss_start": rss_start,
        "rss_end": rss_end,
        "url": url,
        "statements": statements,
        "pools": {name: pools[1][name] - pools[0].get(name, 0.0) for name in pools[1]},
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
    if find_bindir() is None:
        raise SystemExit(f"PostgreSQL is not installed: {INSTALL_HINT}")
    pg_bindir = find_bindir()
    with running_postgres(settings=PG_SETTINGS) as pg:
        pg.psql("CREATE EXTENSION pg_stat_statements")
        runs = [measure(count, args.seconds, args.clients, args.seed_tasks, nginx, pg) for count in (1, 3)]
        lending = lend_costs(runs[-1]["url"])  # after the load, on the 3-replica row's database
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
    cores = _cores()
    parts = ["replicas", "postgres", "nginx", "load generator"]
    used = [
        {part: run["cpu"][part] / max(run["elapsed"], 1e-9) for part in [*parts, "machine"]} for run in runs
    ]
    for share in used:
        share["other"] = max(0.0, share["machine"] - sum(share[part] for part in parts))
    body += (
        f"\n\n{args.clients} members (one token each) for {args.seconds:g} s per row, through nginx "
        "(deploy/nginx.conf) to stateless replicas sharing one PostgreSQL database (`storage`; "
        f"Debian's PostgreSQL {_pg_version(pg_bindir)}, the test suite's throw-away server, a fresh "
        "database per row), on the 2026-07-28 protocol; each member cycles search_memory, "
        f"create_memory, get_next_task(claim=true) ({args.seed_tasks} seeded tasks) and "
        f"sequential_thinking. 3 replicas / 1 replica = **{ratio:.2f}x** requests per second.\n\n"
        f"CPU over the load, in cores used on average (this machine has {cores}; read from /proc):\n\n"
    )
    body += benchlib.table(
        ["replicas", "hostd replicas", "PostgreSQL", "nginx", "load generator", "other processes", "machine"],
        [
            [run["replicas"], *(f"{share[k]:.2f}" for k in [*parts, "other", "machine"])]
            for run, share in zip(runs, used, strict=True)
        ],
    )
    body += (
        f"\n\nWhat limits scaling here is the {cores} cores everything shares. One replica is one Python "
        "process: HTTP, JSON-RPC, validation and serialisation run on its event loop, one core at a "
        f"time (the GIL), so 1 replica can use at most about one core ({used[0]['replicas']:.2f} here). "
        f"3 replicas can use both cores, but the machine was then "
        f"{used[1]['machine']:.2f} of {cores} cores busy: the replicas share them with PostgreSQL's "
        "backends, nginx, and the load generator (one Python process driving every client), so "
        "what 3 replicas can gain over 1 is at most the second core, less what those others take. "
        "The replicas share nothing but the database, so the ratio measures this machine more than "
        "hostd: with a core per replica, and the database and clients elsewhere, they scale as far as "
        "the database allows. "
        f"Memory: each replica's RSS after the run within {MEMORY_GROWTH_LIMIT}x of its "
        "RSS after start-up is the bound checked.\n"
    )
    busy_elsewhere = max(share["other"] for share in used)
    if busy_elsewhere > 0.25:
        body += (
            f"\n**Not a quiet machine:** processes outside this set-up used up to {busy_elsewhere:.2f} of "
            f"the {cores} cores during these runs, so the figures are lower than the set-up can do and "
            "the ratio mostly measures what was left over.\n"
        )
    tools = sorted({name for run in runs for name in run["tools"]})
    body += "\n\nPer tool (p50 / p99 ms, calls):\n\n" + benchlib.table(
        ["tool", *(f"{run['replicas']} replica(s)" for run in runs)],
        [
            [
                name,
                *(
                    "{1:.1f} / {2:.1f} ({0})".format(*run["tools"][name]) if name in run["tools"] else "-"
                    for run in runs
                ),
            ]
            for name in tools
        ],
    )
    body += "\n"
    errors = {key: n for run in runs for key, n in run["errors"].items()}
    if errors:
        body += "\nErrors: " + "; ".join(f"{key} x{n}" for key, n in sorted(errors.items())) + "\n"
    body += "\n" + memory_writes_text(runs) + "\n\n" + round_trips_text(runs, lending)
    worst = max(
        end / start for run in runs for start, end in zip(run["rss_start"], run["rss_end"], strict=True)
    )
    create = [run["tools"]["create_memory"][1] for run in runs]
    checks = [
        ["errors", sum(errors.values()), "0", not errors],
        [
            "replica RSS after the run / after start-up",
            f"{worst:.2f}x",
            f"<= {MEMORY_GROWTH_LIMIT}x",
            worst <= MEMORY_GROWTH_LIMIT,
        ],
        [
            "create_memory p50, 3 replicas against 1",
            f"{create[1]:.1f} ms against {create[0]:.1f} ms",
            "3 replicas <= 1 replica",
            create[1] <= create[0],
        ],
    ]
    for check in checks:
        check[3] = "pass" if check[3] else "**FAIL**"
        print(f"check: {check[0]}: {check[1]} (target {check[2]}): {check[3]}")
    body += "\n\nChecks:\n\n" + benchlib.table(["check", "measured", "target", "result"], checks) + "\n"
    benchlib.write_section("team", f"Team: {args.clients} members through nginx, 1 vs 3 replicas", body)
    failed = [check[0] for check in checks if check[3] != "pass"]
    if failed:
        raise SystemExit(f"failed: {'; '.join(failed)} (errors: {errors})")


def memory_writes_text(runs: list[dict[str, Any]]) -> str:
    """How memory writes lock (as the store does today), with the time their locks took here."""
    stats = [run["statements"] for run in runs]
    ratios = {
        name: runs[1]["tools"][name][1] / runs[0]["tools"][name][1]
        for name in runs[0]["tools"]
        if name in runs[1]["tools"]
    }
    others = statistics.median(ratio for name, ratio in ratios.items() if name != "create_memory")

    def mean_ms(stat: dict[str, float], total: str, calls: str) -> str:
        return f"{stat[total] / stat[calls]:.2f}" if stat[calls] else "-"

    if ratios["create_memory"] <= others * 1.1:
        verdict = (
            "like the other calls: beyond its statements a create waits for what every call waits for "
            "(the replica's event loop, a connection, a core), not for other members' writes."
        )
    else:
        verdict = (
            "more than the other calls: creates waited for something the others did not (see the lock "
            "and word-index times above for the database's part)."
        )
    return (
        "Memory writes of different memories do not wait for each other: create_memory takes, in one "
        "statement, the memory store's lock shared (only an import takes it alone) and an advisory "
        "lock on its own URI; two writes of one URI wait in turn, and so do two writers adding the "
        "same new word to the word index, until the first commits. PostgreSQL's own timing of those "
        "statements (pg_stat_statements, mean per call; a write waiting for another's lock would show "
        f"there): the lock statement {mean_ms(stats[0], 'lock_ms', 'locks')} ms with 1 replica and "
        f"{mean_ms(stats[1], 'lock_ms', 'locks')} ms with 3, the word-index insert "
        f"{mean_ms(stats[0], 'lexeme_ms', 'lexemes')} and {mean_ms(stats[1], 'lexeme_ms', 'lexemes')} ms. "
        f"create_memory's p50 went {ratios['create_memory']:.2f}x from 1 replica to 3, the other "
        f"tools' {others:.2f}x (the median of their ratios), {verdict}"
    )


def round_trips_text(runs: list[dict[str, Any]], lending: dict[str, Any]) -> str:
    """Round trips per call as PostgreSQL counted them, and what checking every lend would add."""
    rows = []
    for run in runs:
        stat, pools, calls = run["statements"], run["pools"], max(run["requests"], 1)
        rows.append(
            [
                run["replicas"],
                run["requests"],
                f"{stat['statements'] / calls:.2f}",
                f"{stat['transaction_control'] / calls:.2f}",
                f"{pools['lends'] / calls:.2f}",
                f"{100 * pools['waits'] / max(pools['lends'], 1):.1f}%",
                f"{1000 * pools['wait_s'] / pools['waits']:.1f}" if pools["waits"] else "-",
                f"{stat['exec_ms'] / calls:.2f}",
            ]
        )
    text = (
        "Database round trips per tool call during the load, as PostgreSQL counted them "
        "(pg_stat_statements, loaded at the throw-away server's start and reset when the load "
        "starts; psycopg waits for each statement's answer before sending the next, so each "
        "statement, BEGIN and COMMIT included, is one round trip), and the connections the "
        "replicas' pools lent (their `hostd_db_pool_lends_total`, read from `/metrics` before and after):\n\n"
    )
    text += benchlib.table(
        [
            "replicas",
            "tool calls",
            "statements / call",
            "of which BEGIN, COMMIT",
            "lends / call",
            "lends that waited for a connection",
            "their mean wait, ms",
            "database time / call ms",
        ],
        rows,
    )
    plugins = sorted({key.split(" ", 1)[1] for run in runs for key in run["pools"] if " " in key})

    def waited(pools: dict[str, float], plugin: str) -> str:
        lends, waits = pools.get(f"lends {plugin}", 0.0), pools.get(f"waits {plugin}", 0.0)
        return f"{100 * waits / lends:.0f}%" if lends else "-"

    text += (
        "\n\nLends that waited for a connection, by plugin (1 replica / 3 replicas; each plugin's pool "
        "holds at most `storage.pool_size`, 8 here, per replica): "
        + ", ".join(
            f"{plugin} {' / '.join(waited(run['pools'], plugin) for run in runs)}" for plugin in plugins
        )
        + ". A connection is held for the whole unit of work, its Python part included, so on a "
        "replica short of CPU the pool fills while its holders wait for the GIL."
    )
    times: dict[tuple[str, str], list[float]] = lending["times"]
    medians = {key: statistics.median(values) * 1000 for key, values in times.items()}
    text += (
        "\n\nBefore commit 9930484 the pool checked every connection before lending it (psycopg_pool's "
        "`check_connection`: an empty query, one round trip); now it checks only after a connection "
        "fails at BEGIN (the work then runs once more on a fresh one). What a lend costs each way, "
        "measured after the load on the 3-replica row's database, one memory read by URI per lend, "
        f"{LEND_ROUNDS} rounds each running a block of {LEND_BLOCK} lends of every kind through both "
        "pools (their order swapped every round), so both saw the same machine:\n\n"
    )
    text += benchlib.table(
        ["lend", "today, median ms", "checked first, median ms", "checked / today"],
        [
            [
                label,
                f"{medians[(kind, 'today')]:.3f}",
                f"{medians[(kind, 'before')]:.3f}",
                f"{medians[(kind, 'before')] / medians[(kind, 'today')]:.2f}x",
            ]
            for kind, label in LEND_KINDS.items()
        ],
    )
    last = runs[-1]
    calls = max(last["requests"], 1)
    lends, statements = last["pools"]["lends"] / calls, last["statements"]["statements"] / calls
    in_transaction = min(1.0, last["statements"]["begins"] / max(last["pools"]["lends"], 1))
    extra_ms = in_transaction * (medians[("transaction", "before")] - medians[("transaction", "today")]) + (
        1 - in_transaction
    ) * (medians[("autocommit", "before")] - medians[("autocommit", "today")])
    text += (
        f"\n\nThe checking pool made {lending['checks_per_lend']:.2f} checks per lend (counted), today's "
        f"none. So each tool call saves {lends:.2f} round trips (one per lend) of the "
        f"{statements + lends:.2f} it would make with the check, {100 * lends / (statements + lends):.0f}% "
        f"(3 replicas; {100 * in_transaction:.0f}% of the lends began a transaction), about "
        f"{lends * extra_ms:.2f} ms of database waiting per call at this run's lend costs (loopback: "
        "across a network each round trip saved is one network round trip)."
    )
    return text


def _pg_version(bindir: Path | None) -> str:
    import subprocess

    if bindir is None:
        return "?"
    out = subprocess.run([str(bindir / "postgres"), "--version"], capture_output=True, text=True).stdout
    import re

    found = re.search(r"\d+\.\d+", out)
    return found.group(0) if found else "?"


def _cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


if __name__ == "__main__":
    main()
