"""Benchmark of the deep-thinking plugin over stdio, driven by the official Python MCP client.

In one run, with calls interleaved so machine noise hits every server alike:
- 1,000 ``sequential_thinking`` calls into one session on ``hostd serve``, beside the same
  arguments sent to the bare SDK ``MCPServer`` tool ``noop_thought`` (bench/baseline_server.py,
  the SDK's own floor) and to the official npm server (installed here into bench/.work/npm);
- flat cost: our median over thoughts 901-1,000 against thoughts 1-100;
- ``list_sessions`` with 1,000 sessions on disk, round trip.

Run: ``.venv/bin/python bench/bench_deep_thinking.py [--calls N]``; writes its section of RESULTS.md.
"""

from __future__ import annotations

import argparse
import json
import os
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
    times: dict[str, list[float]] = {"hostd": [], "baseline": [], "official": []}
    async with AsyncExitStack() as stack:
        ours = await stack.enter_async_context(Client(hostd_server(config)))
        floor = await stack.enter_async_context(Client(baseline))
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
            if official is not None:
                await timed(official, "sequentialthinking", arguments)
        for number in range(1, calls + 1):
            arguments = thought_arguments(number, calls)
            times["baseline"].append(await timed(floor, "noop_thought", {**arguments, "session_id": "bench"}))
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
        assert first.structured_content and first.structured_content["total"] == sessions
        for _ in range(calls):
            ours_times.append(await timed(ours, "list_sessions", {}))
            floor_times.append(await timed(floor, "trivial", {"text": "x"}))
    return ours_times, floor_times


def ms(value: float) -> str:
    return f"{value:.2f} ms"


async def main(calls: int) -> None:
    times = await thinking_run(calls)
    ours, floor, official = times["hostd"], times["baseline"], times["official"]
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
        "`noop_thought` and the official npm server (thought logging disabled). Each thought is in the "
        "journal (written, so it survives a SIGKILL) before it is answered; fsync within a second.",
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
    anyio.run(main, parser.parse_args().calls)
