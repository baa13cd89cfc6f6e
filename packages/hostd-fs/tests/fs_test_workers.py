"""Code the hostd-fs tests run in child processes, plus the formats they check.

Kept in a plain module (not a test file) so `multiprocessing` children started with "spawn"
can import it, and runnable as a script for the crash test's writer.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
import signal
import sys
import threading
import time
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

from hostd_fs import FsError, atomic_write, kept_lock, locked_append, path_lock

# -- sections appended concurrently ----------------------------------------------------------------

_SECTION = re.compile(
    rb"=== BEGIN (?P<id>\S+) at (?P<offset>\d+) ===\n(?P<body>.*?)"
    rb"sha256 (?P<digest>[0-9a-f]{64})\n=== END (?P=id) ===\n",
    re.DOTALL,
)


def random_body(rng: random.Random) -> bytes:
    """1 to 20 KB of text lines."""
    size = rng.randint(1_000, 20_000)
    line_count = max(1, size // 65)
    return b"".join(rng.randbytes(32).hex().encode() + b"\n" for _ in range(line_count))


def section(section_id: str, body: bytes, offset: int) -> bytes:
    """One block: its id, where it claims to start, its body and the body's checksum."""
    digest = hashlib.sha256(body).hexdigest().encode()
    return (
        b"=== BEGIN %s at %d ===\n" % (section_id.encode(), offset)
        + body
        + b"sha256 %s\n=== END %s ===\n" % (digest, section_id.encode())
    )


def parse_sections(data: bytes) -> list[str]:
    """The ids of the sections that make up `data`; AssertionError on any torn or stray byte."""
    ids: list[str] = []
    position = 0
    for match in _SECTION.finditer(data):
        assert match.start() == position, f"stray bytes at {position}"
        assert int(match["offset"]) == position, f"section {match['id']!r} claims the wrong offset"
        assert hashlib.sha256(match["body"]).hexdigest().encode() == match["digest"], match["id"]
        ids.append(match["id"].decode())
        position = match.end()
    assert position == len(data), f"stray bytes at {position} of {len(data)}"
    return ids


def append_sections(path: Path, lock_dir: Path, writer: str, count: int, seed: int) -> tuple[float, float]:
    """Append `count` sections; returns when the work started and ended."""
    rng = random.Random(seed)
    started = time.monotonic()
    for index in range(count):
        make_chunk = functools.partial(section, f"{writer}-{index}", random_body(rng))
        locked_append(path, make_chunk, lock_dir=lock_dir)
    return started, time.monotonic()


def append_sections_after_barrier(
    path: Path, lock_dir: Path, writer: str, count: int, seed: int, barrier: Barrier, results: Any
) -> None:
    barrier.wait()
    results.put(append_sections(path, lock_dir, writer, count, seed))


def hold_path_lock(path: Path, lock_dir: Path, held: Event, release: Event) -> None:
    with path_lock(path, lock_dir=lock_dir):
        held.set()
        release.wait(30)


def hold_kept_lock(lock_file: Path, held: Event, release: Event) -> None:
    with kept_lock(lock_file).held():
        held.set()
        release.wait(30)


def count_under_kept_lock(lock_file: Path, counter: Path, times: int) -> None:
    """Add 1 to the number in `counter` `times` times, each a read then a write under the lock:
    two holders at once would both read the same number and lose an increment."""
    lock = kept_lock(lock_file)
    for _ in range(times):
        with lock.held(60):
            counter.write_text(str(int(counter.read_text()) + 1))


def count_in_threads_after_barrier(
    lock_file: Path, counter: Path, threads: int, times: int, barrier: Barrier, results: Any
) -> None:
    """`count_under_kept_lock` in `threads` threads of this process; puts when it started and ended."""
    workers = [
        threading.Thread(target=count_under_kept_lock, args=(lock_file, counter, times))
        for _ in range(threads)
    ]
    barrier.wait()
    started = time.monotonic()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    results.put((started, time.monotonic()))


def append_past_file_size_limit(
    path: Path, lock_dir: Path, limit: int, chunk_size: int, results: Any
) -> None:
    """Append with RLIMIT_FSIZE set, so the kernel stops the write midway (EFBIG)."""
    import resource  # POSIX only

    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # report EFBIG instead of killing the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    try:
        locked_append(path, lambda size: b"z" * chunk_size, lock_dir=lock_dir)
    except FsError as error:
        results.put((error.code, error.reason, error.details.get("errno")))
    else:
        results.put(None)


# -- whole versions written by a process that gets killed ------------------------------------------

_VERSION_HEADER = re.compile(rb"VERSION (\d{12})\n")


def version_payload(version: int, size: int) -> bytes:
    """`size` bytes: a header naming the version, then one byte value derived from it."""
    header = b"VERSION %012d\n" % version
    return header + bytes([version % 256]) * (size - len(header))


def whole_version(data: bytes, size: int) -> int:
    """The version `data` holds; AssertionError unless it is one complete version."""
    match = _VERSION_HEADER.match(data)
    assert match is not None, f"no header in {data[:30]!r}"
    version = int(match[1])
    assert len(data) == size, f"version {version} has {len(data)} bytes, not {size}"
    assert data == version_payload(version, size), f"version {version} holds bytes of another"
    return version


def write_versions_forever(target: Path, first_version: int, size: int) -> None:
    version = first_version
    # Say when the writing starts: the killer times its kill from here, not from the process start,
    # which takes anything from 0.1 s to over a second on a loaded machine.
    sys.stdout.write("writing\n")
    sys.stdout.flush()
    while True:
        atomic_write(target, version_payload(version, size))
        version += 1


if __name__ == "__main__":
    write_versions_forever(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))
