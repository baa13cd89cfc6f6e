"""summary-writer benchmarks: append cost against file size, and the stdio round trip.

- Append cost: a file pre-grown to 100 MB and 10,000 appends to it through the in-process
  tool call (``Host.call``), each paired with an append to a control file restarted empty
  every 1,000 calls (the empty-file reference, measured under the same machine load).
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
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
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


async def timed_append(host: Host, file_path: str, index: int) -> float:
    started = time.perf_counter()
    envelope, is_error = await host.call(
        "update_summary", {"content": f"{SUMMARY}{index}", "file_path": file_path}
    )
    elapsed = time.perf_counter() - started
    if is_error:
        raise RuntimeError(envelope)
    return elapsed


async def paired_appends(host: Host, root: Path, count: int) -> tuple[list[float], list[float]]:
    """Appends to the grown file, each paired with one to a control file restarted empty every window.

    The machine is shared, so the pairs see the same disk and CPU load: the control is the
    "appending to an empty file" reference measured at the same moments.
    """
    grown, control = [], []
    for index in range(count):
        if index % WINDOW == 0:
            (root / "control.md").unlink(missing_ok=True)
        grown.append(await timed_append(host, "grown.md", index))
        control.append(await timed_append(host, "control.md", index))
    return grown, control


def append_cost(root: Path) -> tuple[str, dict[str, float]]:
    host = Host(config_from_mapping(host_config(root), data_dir=SCRATCH / "data"))
    host.startup()
    try:
        grow(root / "grown.md", GROWN_BYTES)
        os.sync()
        for index in range(200):  # first calls pay for imports and caches
            anyio.run(timed_append, host, "warm-up.md", index)
        grown, control = anyio.run(paired_appends, host, root, APPENDS_ON_GROWN)
    finally:
        host.shutdown()
    final_size = (root / "grown.md").stat().st_size
    first, last = median(grown[:WINDOW]), median(grown[-WINDOW:])
    control_first, control_last = median(control[:WINDOW]), median(control[-WINDOW:])
    figures = {
        "last_over_first": last / first,
        "first_over_empty": first / control_first,
        "last_over_empty_same_window": last / control_last,
        "in_process_median_ms": median(grown) * 1000,
    }

    def row(label: str, values: list[float], reference: float) -> list[str]:
        return [
            label,
            f"{median(values) * 1000:.3f}",
            f"{p95(values) * 1000:.3f}",
            f"{median(values) / reference:.2f}",
        ]

    rows = [
        row("empty file, during the first window", control[:WINDOW], control_first),
        row("100 MB file: first 1,000", grown[:WINDOW], control_first),
        row("empty file, during the last window", control[-WINDOW:], control_first),
        row("100 MB file: last 1,000", grown[-WINDOW:], control_first),
    ]
    body = (
        f"In-process `update_summary` appends (~{len(SUMMARY.encode())} B each, fsync'd) to a file grown "
        f"to {GROWN_BYTES // 2**20} MiB first ({final_size / 2**20:.1f} MiB after "
        f"{APPENDS_ON_GROWN:,} appends), "
        "each paired with an append to a control file restarted empty every 1,000 calls.\n\n"
        + table(["appends", "median ms", "p95 ms", "x first-window empty-file median"], rows)
        + f"\n\nlast 1,000 / first 1,000 = **{figures['last_over_first']:.2f}** (target <= 1.2); "
        f"first 1,000 / empty file = **{figures['first_over_empty']:.2f}** (target <= 1.2); "
        f"last 1,000 / empty file in the same window = {figures['last_over_empty_same_window']:.2f}."
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
    # The 100 MB file is done with: drop it and flush the disk, so the round trip's fsyncs do not
    # queue behind the append benchmark's write-back.
    shutil.rmtree(roots[0], ignore_errors=True)
    os.sync()
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
