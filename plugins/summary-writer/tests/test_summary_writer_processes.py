"""update_summary across real processes: concurrent appends, SIGKILL during overwrites, the CLI.

The child processes run the tool in-process through a ``Host`` built from a config mapping,
exactly as ``hostd serve`` would, minus the transport.
"""

from __future__ import annotations

import itertools
import json
import multiprocessing
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import summary_writer_support as support
from summary_writer_support import HEADINGS, PLUGIN, host_config, separator_pattern

WORKERS, SECTIONS_PER_WORKER = 8, 50
KILLS = 60


def process_context() -> Any:
    """forkserver where there is one (cheap children, no fork of a threaded pytest), else spawn."""
    if "forkserver" in multiprocessing.get_all_start_methods():
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["hostd_testing.hosts", "hostd_fs", "anyio", "summary_writer_support"])
        return context
    return multiprocessing.get_context("spawn")


@pytest.mark.slow
def test_eight_processes_appending_at_once_lose_and_interleave_nothing(
    tmp_path: Path, hostd_roots: Path, hostd_data_dir: Path
) -> None:
    context = process_context()
    target = hostd_roots / "shared.md"
    config = host_config([hostd_roots], "en")
    barrier = context.Barrier(WORKERS)
    results = context.Queue()
    processes = [
        context.Process(
            target=support.append_sections,
            args=(config, str(hostd_data_dir), "shared.md", worker, SECTIONS_PER_WORKER, barrier, results),
        )
        for worker in range(WORKERS)
    ]
    for process in processes:
        process.start()
    reports = [results.get(timeout=120) for _ in processes]
    for process in processes:
        process.join(timeout=30)
        assert process.exitcode == 0

    assert all(not failures for *_, failures in reports), [failures for *_, failures in reports]
    # The work overlapped: every worker was still appending when the last one started.
    latest_start = max(started for _, started, _, _ in reports)
    earliest_finish = min(finished for _, _, finished, _ in reports)
    assert latest_start < earliest_finish, "the workers ran one after another, not at once"

    sections = separator_pattern(HEADINGS["en"]).split(target.read_text(encoding="utf-8"))
    expected = {support.section_text(w, i) for w in range(WORKERS) for i in range(SECTIONS_PER_WORKER)}
    assert len(sections) == WORKERS * SECTIONS_PER_WORKER
    assert set(sections) == expected, "a section is torn, merged or missing"
    # ... and interleaved in the file: writers took turns, not one whole batch after another.
    writers = [int(section.split()[1]) for section in sections]
    turns = sum(1 for before, after in itertools.pairwise(writers) if before != after)
    assert turns > WORKERS * 2, f"only {turns} changes of writer in the file"
    assert sorted(os.listdir(hostd_roots)) == ["shared.md"]


@pytest.mark.slow
def test_sigkill_during_overwrites_always_leaves_one_whole_version(
    hostd_roots: Path, hostd_data_dir: Path
) -> None:
    context = process_context()
    target = hostd_roots / "crash.md"
    config = host_config([hostd_roots], "en", max_content_bytes=2 << 20)
    rng = random.Random(20240611)
    mid_call_kills = 0
    torn_temp_files = 0
    for attempt in range(KILLS):
        # No lock: a child killed while holding the array's lock would block every later read.
        state = context.Array("q", [-1, -1], lock=False)
        first = attempt * 1_000_000
        child = context.Process(
            target=support.overwrite_forever, args=(config, str(hostd_data_dir), "crash.md", first, state)
        )
        child.start()
        deadline = time.monotonic() + 60
        while state[0] < first and child.is_alive():  # let one whole version land first
            assert time.monotonic() < deadline, "the child never finished a first write"
            time.sleep(0.002)
        assert child.is_alive(), f"child died on its own with exit code {child.exitcode}"
        time.sleep(rng.uniform(0, 0.03))
        child.kill()  # SIGKILL
        child.join(timeout=30)
        finished, writing = state[0], state[1]
        if writing != -1:
            mid_call_kills += 1

        text = target.read_text(encoding="utf-8")
        candidates = {finished} | ({writing} if writing != -1 else set())
        assert any(text == support.version_text(n) for n in candidates), (
            f"kill {attempt}: the file is not one whole version ({len(text)} bytes, starts {text[:20]!r})"
        )
        # A temporary file left beside the target proves the kill landed between write and rename.
        leftovers = [p for p in hostd_roots.iterdir() if p.name != "crash.md"]
        if leftovers:
            torn_temp_files += 1
            for path in leftovers:
                path.unlink()
    assert mid_call_kills >= KILLS // 3, f"only {mid_call_kills} of {KILLS} kills landed during a write"
    assert torn_temp_files >= 3, f"only {torn_temp_files} kills landed mid-write (left a temporary file)"


def _hostd_call(cwd: Path, tmp_path: Path, *arguments: str) -> tuple[int, dict[str, Any]]:
    """``hostd call update_summary ...`` in ``cwd``, with a config naming no allowed_roots."""
    config = tmp_path / "cli-config.yaml"
    config.write_text(json.dumps({"language": "en", "profiles": {"default": {"plugins": [PLUGIN]}}}))
    env = {**os.environ, "HOSTD_CONFIG": str(config), "HOSTD_DATA_DIR": str(tmp_path / "cli-data")}
    done = subprocess.run(
        [sys.executable, "-m", "hostd", "call", "update_summary", *arguments],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, json.loads(done.stdout)


@pytest.mark.smoke
def test_hostd_call_writes_relative_to_the_working_folder(tmp_path: Path) -> None:
    workdir = tmp_path / "project"
    workdir.mkdir()
    code, envelope = _hostd_call(workdir, tmp_path, "--arg", "content=hello", "--arg", "file_path=notes/a.md")
    assert code == 0, envelope
    assert envelope["file_path"] == str((workdir / "notes" / "a.md").resolve())
    assert (workdir / "notes" / "a.md").read_text() == "hello"
    code, envelope = _hostd_call(workdir, tmp_path, "--arg", "content=again", "--arg", "file_path=notes/a.md")
    assert code == 0
    assert envelope["separator_added"] is True


def test_hostd_call_refuses_the_filesystem_root_as_implicit_root(tmp_path: Path) -> None:
    code, envelope = _hostd_call(
        Path("/"), tmp_path, "--arg", "content=hello", "--arg", "file_path=notes/a.md"
    )
    assert code == 1
    assert envelope["error"]["code"] == "PATH_NOT_ALLOWED"
    assert not Path("/notes/a.md").exists()
