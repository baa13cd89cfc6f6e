"""SIGKILL at random points while a child process adds thoughts: the session always loads and
every thought the child saw answered is there."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hostd_deep_thinking.store import SessionStore

# One process imports the store once (importing it costs a child about a second on a busy
# machine, 50 times over) and forks a writer for each kill; each writer loads the session afresh,
# as a new process would. The zygote itself runs no thread, so forking it is safe.
ZYGOTE = textwrap.dedent(
    """
    import os
    import sys
    from pathlib import Path
    from hostd_deep_thinking.store import SessionStore, new_document

    def write_until_killed(root, session_id, tag):
        store = SessionStore(root, compact_every=7)
        state = store.load(session_id)
        number = len(state.thoughts) if state else 0
        print("ready", os.getpid(), flush=True)
        filler = "思" * 3000
        while True:
            number += 1
            content = f"{tag}-{number} {filler}"
            print("begin", number, flush=True)
            store.append(
                session_id,
                lambda state: ({"thought_number": number, "content": content, "type": "regular",
                                "total_thoughts": number, "next_thought_needed": True,
                                "timestamp": "2026-01-01T00:00:00Z"}, None),
                create=lambda: new_document(session_id, name=session_id),
            )
            print("ok", f"{tag}-{number}", flush=True)

    root = Path(sys.argv[1])
    for command in sys.stdin:
        session_id, tag = command.split()
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            try:
                write_until_killed(root, session_id, tag)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        print("exit", status, flush=True)
    """
)

KILLS = 50


@pytest.mark.slow
def test_sigkill_at_random_points_never_loses_an_answered_thought(tmp_path: Path) -> None:
    if not hasattr(signal, "SIGKILL") or not hasattr(os, "fork"):
        pytest.skip("no SIGKILL or fork on this platform")
    rng = random.Random(20260101)
    root = tmp_path / "data"
    answered: dict[str, set[str]] = {}
    killed_inside_a_write = 0

    def check(kill: int, session_id: str, lines: list[str]) -> None:
        """What the killed writer printed after "ready" is ``lines``; the session must load."""
        nonlocal killed_inside_a_write
        answered.setdefault(session_id, set()).update(
            line.split()[1] for line in lines if line.startswith("ok ")
        )
        if lines and lines[-1].startswith("begin"):
            killed_inside_a_write += 1
        state = SessionStore(root).load(session_id)  # must load, whatever the kill interrupted
        if state is None:  # killed while creating the session: then nothing was answered either
            assert not answered[session_id], f"kill {kill}: session {session_id} vanished"
            return
        stored = [t["content"].split()[0] for t in state.thoughts]
        assert len(stored) == len(set(stored)), "a thought was stored twice"
        missing = answered[session_id] - set(stored)
        assert not missing, f"kill {kill}: answered thoughts lost: {sorted(missing)[:5]}"
        assert [t["seq"] for t in state.thoughts] == list(range(1, len(state.thoughts) + 1))

    zygote = subprocess.Popen(
        [sys.executable, "-c", ZYGOTE, str(root)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert zygote.stdin is not None
    assert zygote.stdout is not None
    try:
        for kill in range(KILLS):
            session_id = f"crash-{kill // 10}"  # a fresh session every 10 kills keeps each under the cap
            zygote.stdin.write(f"{session_id} k{kill}\n")
            zygote.stdin.flush()
            ready, pid = zygote.stdout.readline().split()
            assert ready == "ready"
            time.sleep(rng.uniform(0.0, 0.08))
            os.kill(int(pid), signal.SIGKILL)
            lines = []  # what the writer printed, up to the zygote's word that it is dead
            while not (line := zygote.stdout.readline()).startswith("exit"):
                assert line, "the zygote ended"
                lines.append(line.rstrip("\n"))
            assert line.split() == ["exit", str(signal.SIGKILL)], line  # waitpid's status: killed
            check(kill, session_id, lines)
    finally:
        zygote.stdin.close()
        zygote.wait(30)
        zygote.stdout.close()
    print("kills inside a write:", killed_inside_a_write)
    assert killed_inside_a_write >= 5, killed_inside_a_write
