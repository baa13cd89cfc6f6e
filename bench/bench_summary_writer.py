"""summary-writer benchmarks: append cost against file size, and the stdio round trip.

- Append cost: 1,000 appends to an empty file (the reference), then a file pre-grown to
  100 MB and 10,000 appends to it, all through the in-process tool call (``Host.call``).
  Targets: median of the last 1,000 / median of the first 1,000 <= 1.2, and median of the
  first 1,000 / the empty-file median <= 1.2 (an append never reads the file).
- Round trip: 1,000 ``update_summary`` appends over stdio to a real ``hostd serve`` (a client
  that declares no roots; the server's working folder and ``allowed_roots`` are a temp
  folder), alternating call by call with the bare ``MCPServer``'s ``trivial`` tool in
  ``bench/baseline_server.py``, both servers open at once. Target: ratio of medians <= 1.5.

Run: ``.venv/bin/python bench/bench_summary_writer.py``.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from benchlib import BENCH_DIR, WORK, median, p95, table, write_section
from hostd.config import config_from_mapping
from hostd.host import Host
from mcp import Client
from mcp.client.stdio import StdioServerParameters

SCRATCH = WORK / "summary-writer"
BASELINE = BENCH_DIR / "baseline_server.py"
GROWN_BYTES = 100 * 1024 * 1024
APPENDS_ON_GROWN = 10_000
WINDOW = 1_000
ROUND_TRIPS = 1_000
SUMMARY = (
    "## 要点\n\n- The benchmark appends a short summary of about two hundred bytes.\n- 第二点：中文内容。\n"
)


def host_config(root: Path) -> dict[str, Any]:
    return {
        "language": "zh",
        "allowed_roots": [str(root)],
        "profiles": {"default": {"plugins": ["summary-writer"]}},
    }


def grow(path: Path, size: int) -> None:
    """A real (not sparse) Markdown file of ``size`` bytes."""
    block = ("# 旧的总结\n\n" + "old summary line, kept as it is.\n" * 30000).encode()[: 1024 * 1024]
    with path.open("wb") as handle:
        written = 0
        while written < size:
            chunk = block[: size - written]
            handle.write(chunk)
            written += len(chunk)
        handle.flush()
        os.fsync(handle.fileno())


async def timed_appends(host: Host, file_path: str, count: int) -> list[float]:
    seconds = []
    for index in range(count):
        started = time.perf_counter()
        envelope, is_error = await host.call(
            "update_summary", {"content": f"{SUMMARY}{index}", "file_path": file_path}
        )
        seconds.append(time.perf_counter() - started)
        if is_error:
            raise RuntimeError(envelope)
    return seconds


def append_cost(root: Path) -> tuple[str, dict[str, float]]:
    host = Host(config_from_mapping(host_config(root), data_dir=SCRATCH / "data"))
    host.startup()
    try:
        grow(root / "grown.md", GROWN_BYTES)
        anyio.run(timed_appends, host, "warm-up.md", 200)  # first calls pay for imports and caches
        empty = anyio.run(timed_appends, host, "empty.md", WINDOW)
        grown = anyio.run(timed_appends, host, "grown.md", APPENDS_ON_GROWN)
    finally:
        host.shutdown()
    final_size = (root / "grown.md").stat().st_size
    empty_median, first, last = median(empty), median(grown[:WINDOW]), median(grown[-WINDOW:])
    figures = {
        "last_over_first": last / first,
        "first_over_empty": first / empty_median,
        "in_process_median_ms": last * 1000,
    }
    rows = [
        ["empty file: 1,000 appends", f"{empty_median * 1000:.3f}", f"{p95(empty) * 1000:.3f}", "1.00"],
        [
            "100 MB file: first 1,000",
            f"{first * 1000:.3f}",
            f"{p95(grown[:WINDOW]) * 1000:.3f}",
            f"{first / empty_median:.2f}",
        ],
        [
            "100 MB file: last 1,000",
            f"{last * 1000:.3f}",
            f"{p95(grown[-WINDOW:]) * 1000:.3f}",
            f"{last / empty_median:.2f}",
        ],
    ]
    body = (
        f"In-process `update_summary` appends (~{len(SUMMARY.encode())} B each, fsync'd), file grown "
        f"to {GROWN_BYTES // 2**20} MiB first; {final_size / 2**20:.1f} MiB after {APPENDS_ON_GROWN:,} "
        "appends.\n\n"
        + table(["appends", "median ms", "p95 ms", "x empty-file median"], rows)
        + f"\n\nlast 1,000 / first 1,000 = **{figures['last_over_first']:.2f}** (target <= 1.2); "
        f"first 1,000 / empty file = **{figures['first_over_empty']:.2f}** (target <= 1.2)."
    )
    return body, figures


async def round_trips(root: Path, config_path: Path) -> tuple[list[float], list[float]]:
    env = {**os.environ, "HOSTD_DATA_DIR": str(SCRATCH / "data")}
    ours = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hostd", "serve", "--config", str(config_path)],
        env=env,
        cwd=str(root),
    )
    bare = StdioServerParameters(command=sys.executable, args=[str(BASELINE)], env=env, cwd=str(root))
    summary_seconds: list[float] = []
    trivial_seconds: list[float] = []
    # No list_roots_callback: the client declares no roots, so no roots/list round trip.
    async with Client(ours) as hostd_client, Client(bare) as bare_client:
        for index in range(50):
            await hostd_client.call_tool(
                "update_summary", {"content": f"warm {index}", "file_path": "warm.md"}
            )
            await bare_client.call_tool("trivial", {"text": f"warm {index}"})
        for index in range(ROUND_TRIPS):
            started = time.perf_counter()
            result = await hostd_client.call_tool(
                "update_summary", {"content": f"{SUMMARY}{index}", "file_path": "notes/round-trip.md"}
            )
            summary_seconds.append(time.perf_counter() - started)
            if result.is_error:
                raise RuntimeError(result.structured_content)
            started = time.perf_counter()
            await bare_client.call_tool("trivial", {"text": f"{SUMMARY}{index}"})
            trivial_seconds.append(time.perf_counter() - started)
    return summary_seconds, trivial_seconds


def round_trip(root: Path, in_process_ms: float) -> tuple[str, dict[str, float]]:
    config_path = SCRATCH / "hostd.yaml"
    config_path.write_text(json.dumps(host_config(root)), encoding="utf-8")
    ours, theirs = anyio.run(round_trips, root, config_path)
    figures = {"median_ratio": median(ours) / median(theirs), "p95_ratio": p95(ours) / p95(theirs)}
    rows = [
        [
            "`update_summary` append (hostd serve)",
            f"{median(ours) * 1000:.3f}",
            f"{p95(ours) * 1000:.3f}",
            f"{figures['median_ratio']:.2f}",
            f"{figures['p95_ratio']:.2f}",
        ],
        [
            "`trivial` (bare MCPServer baseline)",
            f"{median(theirs) * 1000:.3f}",
            f"{p95(theirs) * 1000:.3f}",
            "1.00",
            "1.00",
        ],
    ]
    body = (
        f"{ROUND_TRIPS:,} calls each over stdio, alternating call by call, both servers open; the client "
        "declares no roots.\n\n"
        + table(["tool", "median ms", "p95 ms", "median ratio", "p95 ratio"], rows)
        + f"\n\nmedian ratio = **{figures['median_ratio']:.2f}** (target <= 1.5; the spec asks < 2 s). "
        f"The same append measured in-process above takes {in_process_ms:.3f} ms (cross-process lock, "
        "write, fsync), work the trivial tool does not do."
    )
    return body, figures


def main() -> None:
    shutil.rmtree(SCRATCH, ignore_errors=True)
    roots = SCRATCH / "append-root", SCRATCH / "round-trip-root"
    for root in roots:
        root.mkdir(parents=True)
    started = time.monotonic()
    append_body, append_figures = append_cost(roots[0])
    trip_body, trip_figures = round_trip(roots[1], append_figures["in_process_median_ms"])
    body = (
        "### Append cost against file size\n\n"
        + append_body
        + "\n\n### Round trip over stdio\n\n"
        + trip_body
        + f"\n\n_Total run {time.monotonic() - started:.0f} s._"
    )
    write_section(
        "summary-writer", "summary-writer: update_summary", body, packages=("hostd-summary-writer",)
    )
    shutil.rmtree(SCRATCH, ignore_errors=True)
    print(json.dumps({**append_figures, **trip_figures}, indent=2))


if __name__ == "__main__":
    main()
