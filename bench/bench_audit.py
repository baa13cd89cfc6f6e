"""What the audit trail adds to a tool call (issue 24: at most 0.2 ms).

Two hosts in one process serve the same trivial tool, one with ``audit`` (the local JSON Lines
file; the writer thread runs as it does when serving) and one without; batches of calls
alternate between them, and the per-call cost is compared as a difference of medians and a
ratio. Calls go through ``Host.call`` (validation, the tool, the envelope: everything but the
transport), so the difference is the audit's own cost, not noise of a socket.

Run: ``.venv/bin/python bench/bench_audit.py [--rounds N] [--calls N]``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import types
from pathlib import Path

import anyio
from benchlib import median, table, write_section
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.team.audit import install_audit

ECHO_PLUGIN = '''
from typing import Annotated
from pydantic import Field
from hostd import ToolOutput, hookimpl

class Echoed(ToolOutput):
    text: str

async def trivial(text: Annotated[str, Field(description="text to answer")] = "") -> Echoed:
    """Answer the text unchanged."""
    return Echoed(text=text)

@hookimpl
def hostd_register_tools(register):
    register(trivial, access="read")
'''

TARGET_MS = 0.2


def echo_plugin() -> types.ModuleType:
    module = types.ModuleType("bench_audit_echo")
    exec(compile(ECHO_PLUGIN, "bench_audit_echo", "exec"), module.__dict__)
    sys.modules[module.__name__] = module
    return module


def make_host(data_dir: Path, audit: bool) -> Host:
    raw = {"profiles": {"default": {"plugins": ["echo"]}}, **({"audit": {}} if audit else {})}
    loaded = config_from_mapping(raw, data_dir=data_dir)
    return Host(loaded, extra_plugins={"echo": echo_plugin()})


async def batch(host: Host, calls: int) -> float:
    """Mean seconds per call over ``calls`` calls."""
    started = time.perf_counter()
    for index in range(calls):
        _, is_error = await host.call("trivial", {"text": f"call {index}"})
        assert not is_error
    return (time.perf_counter() - started) / calls


async def run(rounds: int, calls: int, scratch: Path) -> tuple[list[float], list[float], int]:
    off = make_host(scratch / "off", audit=False)
    on = make_host(scratch / "on", audit=True)
    trail = install_audit(on)
    assert trail is not None
    off.startup()
    on.startup()
    try:
        await batch(off, 200)  # warm-up
        await batch(on, 200)
        without, with_audit = [], []
        for _ in range(rounds):
            without.append(await batch(off, calls))
            with_audit.append(await batch(on, calls))
    finally:
        off.shutdown()
        on.shutdown()
        trail.close()
    written = sum(1 for _ in (scratch / "on" / "audit" / "audit.jsonl").open(encoding="utf-8"))
    return without, with_audit, written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        without, with_audit, written = anyio.run(run, args.rounds, args.calls, Path(folder))
    off_ms, on_ms = median(without) * 1000, median(with_audit) * 1000
    added = on_ms - off_ms
    expected = 200 + args.rounds * args.calls  # the audited host's warm-up and rounds
    body = (
        f"{args.rounds} alternating rounds of {args.calls} calls of a trivial tool through `Host.call`, "
        "one host with `audit` (local JSON Lines file, writer thread running) and one without; "
        f"{written} of {expected} calls were found in the audit file afterwards.\n\n"
        + table(
            ["", "median per call (ms)"],
            [["audit off", f"{off_ms:.4f}"], ["audit on", f"{on_ms:.4f}"]],
        )
        + f"\n\nAdded per call: **{added:.4f} ms** (target <= {TARGET_MS} ms: "
        f"{'met' if added <= TARGET_MS else 'NOT met'}); ratio on/off {on_ms / off_ms:.3f}.\n"
    )
    print(body)
    write_section("audit", "Audit trail: cost per call", body)


if __name__ == "__main__":
    main()
