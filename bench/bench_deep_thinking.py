"""Benchmark of the deep-thinking plugin over stdio, driven by the official Python MCP client.

In one run, with calls interleaved so machine noise hits every server alike:
- 1,000 ``sequential_thinking`` calls into one session on ``hostd serve``, beside the same
  arguments sent to the bare SDK ``MCPServer`` tool ``noop_thought`` (bench/baseline_server.py,
  the SDK's own floor), to that server on hostd's stdio transport (``--hostd-transport``: hostd's
  own work, transport aside) and to the official npm server (installed here into bench/.work/npm);
- flat cost: our median over thoughts 901-1,000 against thoughts 1-100;
- ``list_sessions`` with 1,000 sessions on disk, round trip.

Search (``--only search`` runs just this case, into its own section of RESULTS.md): 1,000
sessions of 50 thoughts each (English and Chinese text from a fixed vocabulary), then
``search_thoughts`` round trips over stdio for a rotating set of one-word, two-word and
Chinese queries, after the first search has built the index (timed on its own).

Run: ``.venv/bin/python bench/bench_deep_thinking.py [--calls N] [--only all|thinking|search]``;
writes its section(s) of RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import yaml
from benchlib import BENCH_DIR, WORK, median, p95, table, write_section
from mcp import Client
from mcp.client.stdio import StdioServerParameters

OFFICIAL_PACKAGE = "@modelcontextprotocol/server-sequential-thinking"
NPM_DIR = WORK / "npm"
DATA = WORK / "deep-thinking"


def official_entry() -> Path | None:
    """Install the official server with npm (once) and return its script, or None without npm."""
    package_dir = NPM_DIR / "node_modules" / OFFICIAL_PACKAGE
    if not (package_dir / "package.json").exists():
        npm = shutil.which("npm")
        if npm is None or shutil.which("node") is None:
            return None
        NPM_DIR.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(NPM_DIR), OFFICIAL_PACKAGE],
            check=True,
            capture_output=True,
            timeout=600,
        )
    manifest = json.loads((package_dir / "package.json").read_text(encoding="utf-8"))
    binary = manifest.get("bin")
    relative = binary if isinstance(binary, str) else next(iter(binary.values()))
    return package_dir / relative


def hostd_config(data_dir: Path) -> Path:
    folder = data_dir.parent
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{data_dir.name}.yaml"
    config = {
        "data_dir": str(data_dir),
        "language": "en",
        "allowed_roots": [str(folder)],
        "profiles": {"default": {"plugins": ["deep-thinking"]}},
    }
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


def hostd_server(config: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable, args=["-m", "hostd", "serve", "--config", str(config)], env=dict(os.environ)
    )


async def timed(client: Client, tool: str, arguments: dict[str, Any]) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, arguments)
    elapsed = (time.perf_counter() - started) * 1000
    if result.is_error:
        raise RuntimeError(f"{tool} failed: {result.content[0].text[:300]}")  # type: ignore[union-attr]
    return elapsed


def thought_arguments(number: int, calls: int) -> dict[str, Any]:
    return {
        "thought": f"Step {number}: weigh the evidence gathered so far and decide what to check next. " * 3,
        "nextThoughtNeeded": number < calls,
        "thoughtNumber": number,
        "totalThoughts": calls,
    }


async def thinking_run(calls: int) -> dict[str, list[float]]:
    """The same calls to the three servers, interleaved call by call."""
    shutil.rmtree(DATA / "thinking", ignore_errors=True)
    config = hostd_config(DATA / "thinking")
    baseline = StdioServerParameters(command=sys.executable, args=[str(BENCH_DIR / "baseline_server.py")])
    entry = official_entry()
    same_transport = StdioServerParameters(
        command=sys.executable, args=[str(BENCH_DIR / "baseline_server.py"), "--hostd-transport"]
    )
    times: dict[str, list[float]] = {"hostd": [], "baseline": [], "official": [], "same_transport": []}
    async with AsyncExitStack() as stack:
        ours = await stack.enter_async_context(Client(hostd_server(config)))
        floor = await stack.enter_async_context(Client(baseline))
        floor_on_ours = await stack.enter_async_context(Client(same_transport))
        official = None
        if entry is not None:
            parameters = StdioServerParameters(
                command="node", args=[str(entry)], env={**os.environ, "DISABLE_THOUGHT_LOGGING": "true"}
            )
            official = await stack.enter_async_context(Client(parameters))
        # Warm-up in other sessions, so the measured session starts at thought 1.
        for number in range(1, 21):
            arguments = thought_arguments(number, 20)
            await timed(ours, "sequential_thinking", {**arguments, "session_id": "warm-up"})
            await timed(floor, "noop_thought", {**arguments, "session_id": "warm-up"})
            await timed(floor_on_ours, "noop_thought", {**arguments, "session_id": "warm-up"})
            if official is not None:
                await timed(official, "sequentialthinking", arguments)
        for number in range(1, calls + 1):
            arguments = thought_arguments(number, calls)
            times["baseline"].append(await timed(floor, "noop_thought", {**arguments, "session_id": "bench"}))
            times["same_transport"].append(
                await timed(floor_on_ours, "noop_thought", {**arguments, "session_id": "bench"})
            )
            times["hostd"].append(
                await timed(ours, "sequential_thinking", {**arguments, "session_id": "bench"})
            )
            if official is not None:
                times["official"].append(await timed(official, "sequentialthinking", arguments))
    return times


async def list_sessions_run(sessions: int, calls: int) -> tuple[list[float], list[float]]:
    """Round trips of list_sessions over 1,000 stored sessions, beside the baseline's trivial tool."""
    from hostd_deep_thinking.store import SessionStore, new_document

    data = DATA / "many"
    marker = data / f"made-{sessions}"
    if not marker.exists():
        shutil.rmtree(data, ignore_errors=True)
        store = SessionStore(data / "deep-thinking")
        for index in range(sessions):
            store.create(new_document(f"s{index:05d}", name=f"Session {index}", description="benchmark"))
        store.close()
        marker.write_text("ok", encoding="utf-8")
    config = hostd_config(data)
    baseline = StdioServerParameters(command=sys.executable, args=[str(BENCH_DIR / "baseline_server.py")])
    ours_times, floor_times = [], []
    async with Client(hostd_server(config)) as ours, Client(baseline) as floor:
        first = await ours.call_tool("list_sessions", {})
        page = first.structured_content
        assert page
        assert page["total"] == sessions
        assert len(page["sessions"]) == min(sessions, 20)
        if sessions > 20:  # the next page follows the opaque cursor, without overlap
            second = await ours.call_tool("list_sessions", {"cursor": page["next_cursor"]})
            more = second.structured_content
            assert more
            assert more["total"] == sessions
            seen = {item["session_id"] for item in page["sessions"]}
            assert not seen & {item["session_id"] for item in more["sessions"]}
        for _ in range(calls):
            ours_times.append(await timed(ours, "list_sessions", {}))
            floor_times.append(await timed(floor, "trivial", {"text": "x"}))
    return ours_times, floor_times


SYLLABLES = ["ka", "lo", "mi", "ra", "te", "su", "no", "vi", "de", "po", "ba", "ze", "ri", "gu", "fa", "ne"]
HANZI = "数据库缓存延迟预算部署回滚迁移索引查询重试超时队列内存泄漏指标告警风险方案成本用户接口日志配置"
#: Real words a thinker would search for, mixed into the generated vocabulary at moderate frequency.
TOPICS = ["latency", "rollback", "schema", "vendor", "contract", "deadline", "migration", "budget"]
SEARCH_QUERIES = ["latency", "rollback plan", "数据库", "内存泄漏", "vendor contract", "告警", "schema", "库"]


def vocabulary(rng: random.Random) -> tuple[list[str], list[float], list[str]]:
    """2,000 made-up words with Zipf weights (topics at ranks 40-75, as a real text's nouns), and
    Chinese words from common characters."""
    words = list(dict.fromkeys("".join(rng.choices(SYLLABLES, k=rng.randint(2, 4))) for _ in range(2600)))
    words = words[:2000]
    for rank, topic in zip(range(40, 80, 5), [*TOPICS, "plan"], strict=False):
        words.insert(rank, topic)
    weights = [1 / (rank + 1) for rank in range(len(words))]
    chinese = ["".join(rng.sample(HANZI, rng.randint(1, 3))) for _ in range(400)]
    chinese += ["数据库", "内存泄漏", "告警"]
    return words, weights, chinese


def search_thought_text(
    rng: random.Random, words: list[str], weights: list[float], chinese: list[str]
) -> str:
    text = rng.choices(words, weights, k=rng.randint(12, 30)) + rng.sample(chinese, rng.randint(0, 4))
    rng.shuffle(text)
    return " ".join(text) + "."


async def search_run(sessions: int, thoughts: int, calls: int) -> tuple[list[float], list[float], float]:
    """search_thoughts round trips over ``sessions`` x ``thoughts`` stored thoughts, beside the baseline."""
    from hostd_deep_thinking.importing import parse_import
    from hostd_deep_thinking.store import SessionStore

    data = DATA / "search"
    marker = data / f"made-{sessions}x{thoughts}"
    if not marker.exists():
        shutil.rmtree(data, ignore_errors=True)
        store = SessionStore(data / "deep-thinking")
        rng = random.Random(15)
        words, weights, chinese = vocabulary(rng)
        for index in range(sessions):
            raw = {
                "session_id": f"s{index:05d}",
                "name": f"Session {index}",
                "thoughts": [
                    {
                        "thought_number": n,
                        "content": search_thought_text(rng, words, weights, chinese),
                        "total_thoughts": thoughts,
                    }
                    for n in range(1, thoughts + 1)
                ],
            }
            store.create(parse_import(raw, None))
            # As a server leaves it: compaction at shut-down empties (never removes) the journal.
            store.journal_path(raw["session_id"]).touch()
        store.close()
        marker.write_text("ok", encoding="utf-8")
    (data / "deep-thinking" / "search.db").unlink(missing_ok=True)  # the first search builds it
    config = hostd_config(data)
    baseline = StdioServerParameters(command=sys.executable, args=[str(BENCH_DIR / "baseline_server.py")])
    ours_times, floor_times = [], []
    async with Client(hostd_server(config)) as ours, Client(baseline) as floor:
        await ours.list_tools()
        build = await timed(ours, "search_thoughts", {"query": "warm"})
        for _ in range(20):  # warm-up
            await timed(ours, "search_thoughts", {"query": SEARCH_QUERIES[0]})
        for number in range(calls):
            query = SEARCH_QUERIES[number % len(SEARCH_QUERIES)]
            ours_times.append(await timed(ours, "search_thoughts", {"query": query}))
            floor_times.append(await timed(floor, "trivial", {"text": "x"}))
    return ours_times, floor_times, build


async def search_main(calls: int) -> None:
    sessions, thoughts = 1000, 50
    ours, floor, build = await search_run(sessions, thoughts, calls)
    body = [
        f"`search_thoughts` over {sessions:,} sessions of {thoughts} thoughts each ({sessions * thoughts:,} "
        "thoughts, English and Chinese) over stdio (official Python MCP client), "
        f"{calls} calls rotating through {len(SEARCH_QUERIES)} queries "
        f"({', '.join(f'`{q}`' for q in SEARCH_QUERIES)}), each interleaved with the baseline's trivial "
        "tool. Each search first checks every session's files for changes (none here) and answers the "
        "top 20 hits by BM25.",
        "",
        table(
            ["check", "measured", "target", "result"],
            [
                [
                    "`search_thoughts` (median round trip)",
                    f"{ms(median(ours))} (p95 {ms(p95(ours))}; SDK floor {ms(median(floor))})",
                    "< 15 ms",
                    "pass" if median(ours) < 15 else "FAIL",
                ],
                ["first search: builds the index from the sessions", ms(build), "report", "-"],
            ],
        ),
    ]
    write_section(
        "deep-thinking-search",
        "deep-thinking: search_thoughts",
        "\n".join(body),
        packages=("hostd-deep-thinking",),
    )


def ms(value: float) -> str:
    return f"{value:.2f} ms"


async def main(calls: int) -> None:
    times = await thinking_run(calls)
    ours, floor, official = times["hostd"], times["baseline"], times["official"]
    floor_on_ours = times["same_transport"]
    list_times, list_floor = await list_sessions_run(1000, 200)
    head = max(1, calls // 10)
    first, last = ours[:head], ours[-head:]
    rows = [
        ["bare MCPServer `noop_thought` (SDK floor)", ms(median(floor)), ms(p95(floor)), "1.00x"],
        [
            "hostd `sequential_thinking` (durable)",
            ms(median(ours)),
            ms(p95(ours)),
            f"{median(ours) / median(floor):.2f}x",
        ],
        [
            "bare MCPServer `noop_thought` on hostd's stdio transport and event loop",
            ms(median(floor_on_ours)),
            ms(p95(floor_on_ours)),
            f"{median(floor_on_ours) / median(floor):.2f}x",
        ],
    ]
    if official:
        rows.append(
            [
                "official npm server `sequentialthinking`",
                ms(median(official)),
                ms(p95(official)),
                f"{median(official) / median(floor):.2f}x",
            ]
        )
    body = [
        f"{calls} `sequential_thinking` calls into one session over stdio (official Python MCP client), "
        "interleaved call by call with the same arguments to the bare SDK `MCPServer` tool "
        "`noop_thought` (the SDK floor), the same bare server on hostd's stdio transport (stdin and stdout "
        "watched by the event loop instead of worker threads: what is left is hostd's own work) and the "
        "official npm server (thought logging disabled). Each thought is in the journal (written, so it "
        "survives a SIGKILL) before it is answered; fsync within a second.",
        "",
        table(["server", "median", "p95", "ratio to SDK floor"], rows),
        "",
        table(
            ["check", "measured", "target", "result"],
            [
                [
                    "ours / SDK floor (median)",
                    f"{median(ours) / median(floor):.2f}x",
                    "<= 1.2x",
                    "pass" if median(ours) <= 1.2 * median(floor) else "FAIL",
                ],
                [
                    "ours / the bare server on the same transport (median): hostd's own work",
                    f"{median(ours) / median(floor_on_ours):.2f}x",
                    "report",
                    "-",
                ],
                [
                    "ours / official npm server (median)",
                    f"{median(ours) / median(official):.2f}x" if official else "n/a (npm missing)",
                    "report",
                    "-",
                ],
                [
                    f"flat cost: thoughts {calls - head + 1}-{calls} vs 1-{head} (median)",
                    f"{median(last):.2f} / {median(first):.2f} ms = {median(last) / median(first):.2f}x",
                    "<= 1.3x",
                    "pass" if median(last) <= 1.3 * median(first) else "FAIL",
                ],
                [
                    "same windows as ratios to the SDK floor's median in each window (noise check)",
                    f"{median(last) / median(floor[-head:]):.2f}x vs "
                    f"{median(first) / median(floor[:head]):.2f}x",
                    "report",
                    "-",
                ],
                [
                    "`list_sessions`, 1,000 sessions on disk (median round trip)",
                    f"{ms(median(list_times))} (p95 {ms(p95(list_times))}; "
                    f"SDK floor {ms(median(list_floor))})",
                    "< 20 ms",
                    "pass" if median(list_times) < 20 else "FAIL",
                ],
            ],
        ),
    ]
    write_section(
        "deep-thinking",
        "deep-thinking: sequential_thinking and list_sessions",
        "\n".join(body),
        packages=("hostd-deep-thinking",),
    )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument(
        "--only", choices=["all", "thinking", "search"], default="all", help="run only this case"
    )
    arguments = parser.parse_args()
    if arguments.only in ("all", "thinking"):
        anyio.run(main, arguments.calls)
    if arguments.only in ("all", "search"):
        anyio.run(search_main, 200)
