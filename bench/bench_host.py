"""Host benchmarks: cold start and per-call overhead, against a bare SDK ``MCPServer``.

- Cold start: spawn ``hostd serve`` (every installed plugin, no config) and the bare
  one-tool server alternately, 10 runs each, timing until ``initialize`` and until
  ``tools/list`` are answered. Target: ratio of medians <= 1.3.
- Per-call overhead: 1,000 calls of a trivial tool over stdio through hostd and through the
  bare server, alternating batches in one run. Target: ratio of medians <= 1.10.

Run: ``.venv/bin/python bench/bench_host.py``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from pathlib import Path

import anyio
from benchlib import BENCH_DIR, median, p95, table, write_section
from hostd_testing.raw_stdio import INITIALIZED, initialize, raw_stdio_server, request
from mcp import Client
from mcp.client.stdio import StdioServerParameters

ROOT = BENCH_DIR.parent
BASELINE = BENCH_DIR / "baseline_server.py"
ECHO_PLUGIN = '''
from typing import Annotated
from pydantic import Field
from hostd import ToolOutput, hookimpl

class Echoed(ToolOutput):
    text: str

def trivial(text: Annotated[str, Field(description="text to answer")] = "") -> Echoed:
    """Answer the text unchanged."""
    return Echoed(text=text)

@hookimpl
def hostd_register_tools(register):
    register(trivial, access="read")
'''


def isolated_env(scratch: Path) -> dict[str, str]:
    return {**os.environ, "HOSTD_DATA_DIR": str(scratch / "data"), "XDG_CONFIG_HOME": str(scratch / "config")}


def cold_start(command: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from spawn to the initialize answer, and to the tools/list answer."""
    started = time.perf_counter()
    with raw_stdio_server(command=command, env=env, capture_stderr=False) as server:
        server.send(initialize(1, "bench"))
        server.read_message()
        initialized = time.perf_counter() - started
        server.send(INITIALIZED, request(2, "tools/list"))
        answer = server.read_message()
        listed = time.perf_counter() - started
        assert answer["result"]["tools"], answer
        server.finish(timeout=30)
    return initialized, listed


async def call_latencies(
    parameters: StdioServerParameters, batches: int, per_batch: int
) -> list[list[float]]:
    """Per-call round trips in batches (so two servers can be interleaved batch by batch)."""
    async with Client(parameters) as client:
        for _ in range(20):  # warm-up
            await client.call_tool("trivial", {"text": "warm"})
        out = []
        for _ in range(batches):
            batch = []
            for index in range(per_batch):
                started = time.perf_counter()
                await client.call_tool("trivial", {"text": f"call {index}"})
                batch.append(time.perf_counter() - started)
            out.append(batch)
        return out


async def overhead(
    hostd_params: StdioServerParameters, bare_params: StdioServerParameters
) -> tuple[list[float], list[float]]:
    """1,000 calls each, alternating batches of 100 between the two servers (both kept open)."""
    ours: list[float] = []
    theirs: list[float] = []
    async with Client(hostd_params) as hostd_client, Client(bare_params) as bare_client:
        for client in (hostd_client, bare_client):
            for _ in range(50):
                await client.call_tool("trivial", {"text": "warm"})
        for _ in range(10):
            for client, sink in ((hostd_client, ours), (bare_client, theirs)):
                for index in range(100):
                    started = time.perf_counter()
                    await client.call_tool("trivial", {"text": f"call {index}"})
                    sink.append(time.perf_counter() - started)
    return ours, theirs


def compile_bytecode() -> None:
    """Compile every module both servers import, as pip does at install time.

    Without this (uv installs without compiling, and PYTHONDONTWRITEBYTECODE may be set) each
    start pays for compiling sources, which measures the install method, not the server.
    """
    import compileall
    import sysconfig

    folders = [
        Path(sysconfig.get_paths()["purelib"]),
        ROOT / "hostd" / "src",
        *ROOT.glob("packages/*/src"),
        *ROOT.glob("plugins/*/src"),
    ]
    for folder in folders:
        compileall.compile_dir(str(folder), quiet=1, workers=2)


def main() -> None:
    compile_bytecode()
    scratch = Path(tempfile.mkdtemp(prefix="hostd-bench-host-"))
    env = isolated_env(scratch)
    hostd_cmd = [sys.executable, "-m", "hostd", "serve"]
    bare_cmd = [sys.executable, str(BASELINE), "--one-tool"]
    cold_start(hostd_cmd, env)  # warm the file cache once for both
    cold_start(bare_cmd, env)
    ours_init, ours_list, bare_init, bare_list = [], [], [], []
    for _ in range(10):
        init, listed = cold_start(hostd_cmd, env)
        ours_init.append(init)
        ours_list.append(listed)
        init, listed = cold_start(bare_cmd, env)
        bare_init.append(init)
        bare_list.append(listed)

    from hostd_testing import install_plugin_source, write_config

    plugin_dir = install_plugin_source(
        scratch / "site", entry_point="bench", module="bench_trivial_plugin", source=ECHO_PLUGIN
    )
    config = write_config(scratch, ["bench"])
    hostd_params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "hostd", "serve", "--config", str(config)],
        env={**env, "PYTHONPATH": str(plugin_dir)},
    )
    bare_params = StdioServerParameters(command=sys.executable, args=[str(BASELINE)], env=env)
    ours_calls, bare_calls = anyio.run(overhead, hostd_params, bare_params)

    from hostd.core.plugins import installed_plugins

    plugins = ", ".join(sorted(installed_plugins()))
    ms = lambda seconds: f"{seconds * 1000:.2f} ms"  # noqa: E731
    cold_rows = [
        [
            "until initialize",
            ms(median(ours_init)),
            ms(median(bare_init)),
            f"{median(ours_init) / median(bare_init):.2f}",
        ],
        [
            "until tools/list",
            ms(median(ours_list)),
            ms(median(bare_list)),
            f"{median(ours_list) / median(bare_list):.2f}",
        ],
    ]
    call_rows = [
        [
            "median",
            ms(median(ours_calls)),
            ms(median(bare_calls)),
            f"{median(ours_calls) / median(bare_calls):.3f}",
        ],
        ["p95", ms(p95(ours_calls)), ms(p95(bare_calls)), f"{p95(ours_calls) / p95(bare_calls):.3f}"],
    ]
    body = (
        f"Cold start, 10 runs each, alternated; hostd serves every installed plugin ({plugins}), "
        "the baseline is a bare `MCPServer` with one tool. Target: ratio <= 1.3.\n\n"
        + table(["", "hostd", "bare MCPServer", "ratio"], cold_rows)
        + "\n\nPer-call overhead over stdio, 1,000 calls of a trivial tool each, batches of 100 alternated. "
        "Target: ratio of medians <= 1.10.\n\n"
        + table(["", "hostd", "bare MCPServer", "ratio"], call_rows)
        + "\n\nRaw cold-start medians (s): "
        + json.dumps(
            {
                "hostd_init": median(ours_init),
                "hostd_list": median(ours_list),
                "bare_init": median(bare_init),
                "bare_list": median(bare_list),
            }
        )
    )
    write_section("host", "Host: cold start and per-call overhead", body)


if __name__ == "__main__":
    main()
