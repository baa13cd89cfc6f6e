"""Helpers shared by the summary-writer tests, and the code their child processes run.

Child processes (concurrency and crash tests) import this module by name, so it holds no
pytest fixtures and imports nothing heavy at module level.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hostd_testing import Client

PLUGIN = "summary-writer"
TOOL = "update_summary"
HEADINGS = {"zh": "总结更新", "en": "Summary update"}


async def update(client: Client, **arguments: Any) -> dict[str, Any]:
    """The envelope of one ``update_summary`` call, whatever its status."""
    from hostd_testing import call  # here, not at the top: child processes import this module

    return await call(client, TOOL, **arguments)


def separator_pattern(heading: str) -> re.Pattern[str]:
    """The spec's separator, any timestamp: ``\\n\\n---\\n\\n## <heading> [YYYY-MM-DD HH:MM:SS]\\n\\n``."""
    return re.compile(
        rf"\n\n---\n\n## {re.escape(heading)} \[\d{{4}}-\d{{2}}-\d{{2}} \d{{2}}:\d{{2}}:\d{{2}}\]\n\n"
    )


def host_config(roots: list[Path] | None, language: str = "en", **plugin_settings: Any) -> dict[str, Any]:
    """A whole config mapping: one profile serving this plugin alone."""
    config: dict[str, Any] = {"language": language, "profiles": {"default": {"plugins": [PLUGIN]}}}
    if roots is not None:
        config["allowed_roots"] = [str(root) for root in roots]
    if plugin_settings:
        config["plugins"] = {PLUGIN: plugin_settings}
    return config


# --- real small file systems (need root) ---------------------------------------------------


def mount_problem() -> str | None:
    """Why this process cannot mount a tmpfs, or ``None`` when it can try."""
    if not hasattr(os, "geteuid"):
        return "mounting a tmpfs needs Linux"
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root (CI runs these tests as root)"
    return None


@contextmanager
def mounted_tmpfs(path: Path, size: str) -> Iterator[Path]:
    """A real tmpfs of ``size`` at ``path`` for the block; raises ``OSError`` when mount fails."""
    path.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(path)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise OSError(f"mount tmpfs failed: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


def remount_read_only(path: Path) -> None:
    done = subprocess.run(["mount", "-o", "remount,ro", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        raise OSError(f"remount read-only failed: {done.stderr.strip()}")


# --- child processes -----------------------------------------------------------------------


def _started_host(config: dict[str, Any], data_dir: str) -> Any:
    from hostd_testing import start_host

    return start_host(data_dir=Path(data_dir), config=config)


def section_text(worker: int, index: int) -> str:
    """A section that names its writer and is long enough that a torn write would show."""
    lines = [f"worker {worker} section {index}"]
    lines += [f"- 第 {line} 行 line {line} of worker {worker}, section {index}" for line in range(30)]
    return "\n".join(lines)


def append_sections(
    config: dict[str, Any], data_dir: str, file_path: str, worker: int, count: int, barrier: Any, results: Any
) -> None:
    """Wait on the barrier, then append ``count`` sections through the tool; report the time span."""
    import anyio

    host = _started_host(config, data_dir)

    async def run() -> tuple[float, float, list[str]]:
        barrier.wait()
        started = time.time()
        failures: list[str] = []
        for index in range(count):
            envelope, is_error = await host.call(
                TOOL, {"content": section_text(worker, index), "file_path": file_path}
            )
            if is_error:
                failures.append(str(envelope["error"]))
        return started, time.time(), failures

    try:
        started, finished, failures = anyio.run(run)
    finally:
        host.shutdown()
    results.put((worker, started, finished, failures))


VERSION_BYTES = 1_000_000


def version_text(number: int) -> str:
    """One whole version of the crash test's file: header, uniform body, footer; exactly VERSION_BYTES."""
    head, foot = f"VERSION {number:08d}\n", f"\nEND {number:08d}\n"
    line = f"version {number:08d} body line\n"
    body_size = VERSION_BYTES - len(head) - len(foot)
    body = (line * (body_size // len(line) + 1))[:body_size]
    return head + body + foot


def overwrite_forever(config: dict[str, Any], data_dir: str, file_path: str, first: int, state: Any) -> None:
    """Overwrite the file with successive versions until killed.

    ``state`` is a shared array: [versions finished, version being written or -1].
    """
    import anyio

    host = _started_host(config, data_dir)

    async def run() -> None:
        number = first
        while True:
            state[1] = number
            envelope, is_error = await host.call(
                TOOL, {"content": version_text(number), "file_path": file_path, "mode": "overwrite"}
            )
            if is_error:
                raise RuntimeError(str(envelope["error"]))
            # Finished first, then "not writing": a kill between the two still names this version.
            state[0] = number
            state[1] = -1
            number += 1

    anyio.run(run)
