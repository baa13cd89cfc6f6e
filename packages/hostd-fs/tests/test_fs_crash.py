"""Crash safety: a writer SIGKILLed at random moments never leaves a partial file behind."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import fs_test_workers
import pytest
from fs_test_workers import version_payload, whole_version
from hostd_fs import atomic_write

SIZE = 4 * 1024 * 1024
KILLS = 60


def leftover_temp_files(folder: Path) -> list[Path]:
    return sorted(folder.glob(".*.tmp"))


@pytest.mark.slow
@pytest.mark.timeout(120)
@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_writer_killed_at_random_leaves_exactly_one_whole_version(tmp_path: Path) -> None:
    target = tmp_path / "document.bin"
    atomic_write(target, version_payload(0, SIZE))
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    versions_seen: set[int] = set()
    kills_mid_write = 0
    for round_number in range(1, KILLS + 1):
        # Each child numbers its versions from its own block, so every version ever written is distinct.
        writer = subprocess.Popen(
            [sys.executable, fs_test_workers.__file__, str(target), str(round_number * 1_000_000), str(SIZE)],
            stdout=subprocess.PIPE,
        )
        try:
            assert writer.stdout is not None
            assert writer.stdout.readline() == b"writing\n", f"the writer did not start (seed {seed})"
            # A random moment after the writing started, spread over several whole writes.
            time.sleep(rng.uniform(0.02, 0.3))
            assert writer.poll() is None, f"the writer died on its own (seed {seed})"
        finally:
            writer.send_signal(signal.SIGKILL)
            writer.wait()
            if writer.stdout is not None:
                writer.stdout.close()

        versions_seen.add(whole_version(target.read_bytes(), SIZE))
        leftovers = leftover_temp_files(tmp_path)
        if leftovers:
            kills_mid_write += 1
            for leftover in leftovers:
                leftover.unlink()
        assert os.listdir(tmp_path) == [target.name]

    assert kills_mid_write >= 1, f"no kill landed mid-write in {KILLS} rounds (seed {seed})"
    assert len(versions_seen) > KILLS // 2, "the writers barely got to write"
