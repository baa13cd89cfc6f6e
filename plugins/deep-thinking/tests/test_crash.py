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

CHILD = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from hostd_deep_thinking.store import SessionStore, new_document

    root, session_id, tag = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
    store = SessionStore(root, compact_every=7)
    state = store.load(session_id)
    number = len(state.thoughts) if state else 0
    print("ready", flush=True)
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
    """
)

KILLS = 50


@pytest.mark.slow
def test_sigkill_at_random_points_never_loses_an_answered_thought(tmp_path: Path) -> None:
    if not hasattr(signal, "SIGKILL"):
        pytest.skip("no SIGKILL on this platform")
    rng = random.Random(20260101)
    root = tmp_path / "data"
    answered: dict[str, set[str]] = {}
    killed_inside_a_write = 0
    for kill in range(KILLS):
        session_id = f"crash-{kill // 10}"  # a fresh session every 10 kills keeps each under the cap
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(root), session_id, f"k{kill}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "ready"
        time.sleep(rng.uniform(0.0, 0.08))
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        lines = child.stdout.read().splitlines()
        child.stdout.close()
        answered.setdefault(session_id, set()).update(
            line.split()[1] for line in lines if line.startswith("ok ")
        )
        if lines and lines[-1].startswith("begin"):
            killed_inside_a_write += 1
        state = SessionStore(root).load(session_id)  # must load, whatever the kill interrupted
        if state is None:  # killed while creating the session: then nothing was answered either
            assert not answered[session_id], f"kill {kill}: session {session_id} vanished"
            continue
        stored = [t["content"].split()[0] for t in state.thoughts]
        assert len(stored) == len(set(stored)), "a thought was stored twice"
        missing = answered[session_id] - set(stored)
        assert not missing, f"kill {kill}: answered thoughts lost: {sorted(missing)[:5]}"
        assert [t["seq"] for t in state.thoughts] == list(range(1, len(state.thoughts) + 1))
    print("kills inside a write:", killed_inside_a_write)
    assert killed_inside_a_write >= 5, killed_inside_a_write
