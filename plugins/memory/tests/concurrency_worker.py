"""A separate process writing to a shared memory store (run by test_concurrency.py).

Usage: python concurrency_worker.py DB_PATH BARRIER_DIR NAME create|update COUNT
(DB_PATH may be a postgresql:// URL: the team database's store.)
Waits for BARRIER_DIR/go before writing, then prints its start and end times as JSON.

`forever` (COUNT ignored, no barrier) creates a memory and appends a line to shared://target
in turn until it is killed, printing each finished round's number: the killed-process test.

`zygote` (BARRIER_DIR, NAME and COUNT ignored) does what `forever` does once per name it reads on
stdin, in a child it forks: the killed-process tests start a dozen writers, and importing the
store costs a new process about a second on a busy machine. It prints "ready PID" before a child
opens the store (afresh, as a new process would) and "exit STATUS" once the child is dead.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from hostd_memory.store import Change, MemoryStore
from hostd_memory.uris import MemoryUri


def open_store(target: str) -> MemoryStore:
    """The SQLite file at ``target``, or the team database's store when it is a PostgreSQL URL."""
    from memory_support import sqlite_store, team_store

    if not target.startswith("postgresql://"):
        return sqlite_store(Path(target))
    return team_store(target, pool_size=2)


def main() -> None:
    db_path, barrier, name, action, count = sys.argv[1:6]
    if action == "zygote":
        fork_writers(db_path)
        return
    store = open_store(db_path)
    if action == "forever":
        write_until_killed(store, name)
        return
    store.existing_uris(["warm://up"])  # opens the file (and migrates) before the barrier
    (Path(barrier) / f"ready-{name}").touch()
    go = Path(barrier) / "go"
    deadline = time.monotonic() + 60
    while not go.exists():
        if time.monotonic() > deadline:
            raise SystemExit("barrier never opened")
        time.sleep(0.001)
    started = time.time()
    for i in range(int(count)):
        if action == "create":
            store.create(MemoryUri("load", f"{name}/{i}"), f"memory {i} from {name}", 5, "", author=name)
        else:
            line = f"{name} edit {i}"
            store.update(
                "shared://target",
                edit=lambda current, line=line: (current + "\n" + line, "append"),
                change=Change(),
                author=name,
            )
    print(json.dumps({"name": name, "started": started, "ended": time.time()}))
    store.close()


def write_until_killed(store: MemoryStore, name: str) -> None:
    for i in range(1_000_000):
        store.create(MemoryUri("load", f"{name}/{i}"), f"memory {i} from {name}", 5, "", author=name)
        line = f"{name} edit {i}"
        store.update(
            "shared://target",
            edit=lambda current, line=line: (current + "\n" + line, "append"),
            change=Change(),
            author=name,
        )
        print(i, flush=True)


def fork_writers(target: str) -> None:
    import memory_support  # noqa: F401  (imported here once, not in every child)

    for command in sys.stdin:
        name = command.strip()
        sys.stdout.flush()
        pid = os.fork()  # this process runs no thread and holds no connection: safe to fork
        if pid == 0:
            try:
                print("ready", os.getpid(), flush=True)
                write_until_killed(open_store(target), name)
            finally:
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        print("exit", status, flush=True)


if __name__ == "__main__":
    main()
