"""tasks benchmark: export and import of a 10,000-task list, time and peak memory, as ratios.

Each step runs in its own process (so its peak resident memory, ``ru_maxrss``, is its own) on
an in-process host (``Host.call``, no transport), on each backend: SQLite files, and databases of
a PostgreSQL server this script starts (``hostd_testing.postgres.running_postgres``, as the tests
do; one database for the source list, one for the import):

- baseline *create*: the 10,000 tasks made through the store (``TaskStore.create``, one
  transaction each): one in twelve depends on an earlier task, one in twenty is a subtask, each
  has two labels, one in five a note, and the statuses are a realistic mix (moved through the
  store, so the history has them);
- baseline *list*: every task read through ``list_tasks``, 100 a page (what a client does today
  to carry the list away);
- *export*: ``export_tasks(output_path=...)``, the whole list as one JSON file;
- *import*: ``import_tasks(input_path=...)`` of that file into an empty store (one transaction);
- *import again*: the same file into that store once more (recognised, nothing written).

Reported: seconds and peak memory of each, export against listing, import against creating.
Run: ``.venv/bin/python bench/bench_tasks_transfer.py`` (writes its section of RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from benchlib import WORK, table, write_section

SCRATCH = WORK / "tasks-transfer"
COUNT = 10_000
STEPS = ("create", "list", "export", "import", "import-again")
BACKENDS = ("sqlite", "postgres")
#: The variables naming the PostgreSQL databases of the source list and of the import.
DATABASE_ENV = {"source": "HOSTD_BENCH_TRANSFER_SOURCE_URL", "target": "HOSTD_BENCH_TRANSFER_TARGET_URL"}
EXPORT_ROW = "`export_tasks` to a file, against reading every task through `list_tasks` (100 a page)"
IMPORT_ROW = "`import_tasks` into an empty store, against creating the tasks through the store"
AGAIN_ROW = "`import_tasks` of the same file again (nothing written), against the first import"


def host_for(data_dir: Path, root: Path, backend: str) -> Any:
    from hostd.config import config_from_mapping
    from hostd.host import Host

    config: dict[str, Any] = {
        "language": "en",
        "allowed_roots": [str(root)],
        "profiles": {"default": {"plugins": ["tasks"]}},
    }
    if backend == "postgres":
        config["storage"] = {"url_env": DATABASE_ENV[data_dir.name]}
    host = Host(config_from_mapping(config, data_dir=data_dir))
    host.startup()
    return host


def create(data_dir: Path, backend: str) -> None:
    import os

    from hostd_db import Database, TeamDatabaseSettings, open_database
    from hostd_tasks.store import TaskStore
    from hostd_tasks.store.results import TaskEdit
    from hostd_tasks.store.schema import schema

    database: Database
    if backend == "postgres":
        url = os.environ[DATABASE_ENV[data_dir.name]]
        team = TeamDatabaseSettings(url)
        database = open_database(schema("tasks.db"), "tasks", data_dir=data_dir, team=team)
    else:
        path = data_dir / "tasks" / "tasks.db"
        path.parent.mkdir(parents=True, exist_ok=True)
        database = open_database(schema(path.name), "tasks", data_dir=path.parent, team=None)
    store = TaskStore(database)
    plan = ["completed"] * 5 + ["in_progress", "blocked", "failed", "pending", "pending"]
    moves = {
        "completed": ["in_progress", "completed"],
        "in_progress": ["in_progress"],
        "blocked": ["blocked"],
        "failed": ["failed"],
        "pending": [],
    }
    try:
        ids: list[str] = []
        for n in range(COUNT):
            task = store.create(
                title=f"bench task {n}",
                description="some words " * 5,
                priority=("P0", "P1", "P2")[n % 3],
                task_id=None,
                depends_on=[ids[n - 3]] if n % 12 == 0 and n >= 3 else [],
                parent_id=ids[n - 1] if n % 20 == 1 else None,
                labels=[f"area-{n % 7}", "bench"],
                by="bench",
            )
            ids.append(task.task_id)
            if n % 5 == 0:
                store.update(task.task_id, TaskEdit(append_note=f"note on {n}"), by="bench")
        # statuses last, so a parent or a dependency is not finished before what it waits on exists
        for n, task_id in enumerate(ids):
            for status in moves[plan[(n * 7) % 10]]:
                store.set_status(task_id, status, by="bench", lease_seconds=86_400)  # type: ignore[arg-type]
    finally:
        database.close()


def peak_mb() -> float:
    """This process's peak resident set in MB: Linux's ``VmHWM`` (of this program's memory only:
    ``ru_maxrss`` also counts the parent's peak from before the exec), else ``ru_maxrss``."""
    status = Path("/proc/self/status")
    if status.exists():
        for line in status.read_text(encoding="ascii").splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_step(step: str, folder: Path, backend: str) -> dict[str, Any]:
    """One step, in this process; its time in seconds and what it answered."""
    root = folder / "root"
    root.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    answer: dict[str, Any] = {}
    if step == "create":
        create(folder / "source", backend)
    else:
        data_dir = folder / ("source" if step in ("list", "export") else "target")
        data_dir.mkdir(parents=True, exist_ok=True)
        host = host_for(data_dir, root, backend)

        async def called(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            envelope, failed = await host.call(tool, arguments)
            if failed:
                raise RuntimeError(f"{tool} failed: {envelope}")
            return dict(envelope)

        async def run() -> None:
            await called("list_tasks", {"limit": 1})  # the store opened and migrated before the clock starts
            answer["started"] = time.perf_counter()
            if step == "list":
                cursor = None
                count = 0
                while True:
                    arguments: dict[str, Any] = {"limit": 100}
                    if cursor is not None:
                        arguments["cursor"] = cursor
                    page = await called("list_tasks", arguments)
                    count += len(page["tasks"])
                    cursor = page["next_cursor"]
                    if cursor is None:
                        break
                answer["count"] = count
            elif step == "export":
                done = await called("export_tasks", {"output_path": "tasks.json", "overwrite": True})
                answer.update(count=done["count"], bytes=done["bytes_written"])
            else:
                done = await called("import_tasks", {"input_path": "tasks.json"})
                answer.update(created=done["created"], already_present=done["already_present"])

        try:
            anyio.run(run)
        finally:
            host.shutdown()
    answer["seconds"] = time.perf_counter() - answer.pop("started", started)
    answer["peak_mb"] = peak_mb()
    return answer


def in_child(step: str, folder: Path, backend: str) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, __file__, "--step", step, "--folder", str(folder), "--backend", backend],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    print(backend, step, result, file=sys.stderr, flush=True)
    return result


def run_backend(backend: str) -> dict[str, dict[str, Any]]:
    folder = SCRATCH / backend
    folder.mkdir(parents=True)
    results = {step: in_child(step, folder, backend) for step in STEPS}
    assert results["list"]["count"] == results["export"]["count"] == COUNT, results
    assert results["import"]["created"] == COUNT, results
    assert results["import-again"]["already_present"] == COUNT, results
    return results


def main() -> None:
    import os

    parser = argparse.ArgumentParser(description="tasks export/import benchmark")
    parser.add_argument("--step", choices=STEPS)
    parser.add_argument("--folder", type=Path)
    parser.add_argument("--backend", choices=BACKENDS, default="sqlite")
    arguments = parser.parse_args()
    if arguments.step:
        print(json.dumps(run_step(arguments.step, arguments.folder, arguments.backend)))
        return
    from hostd_testing.postgres import running_postgres

    shutil.rmtree(SCRATCH, ignore_errors=True)
    SCRATCH.mkdir(parents=True)
    results: dict[str, dict[str, dict[str, Any]]] = {"sqlite": run_backend("sqlite")}
    with running_postgres() as server:
        for name, variable in DATABASE_ENV.items():
            os.environ[variable] = server.create_database(f"transfer_{name}")
        results["postgres"] = run_backend("postgres")

    def row(backend: str, name: str, step: str, baseline: str) -> list[object]:
        mine, base = results[backend][step], results[backend][baseline]
        return [
            backend,
            name,
            f"{mine['seconds']:.2f}",
            f"{base['seconds']:.2f}",
            f"{mine['seconds'] / base['seconds']:.2f}x",
            f"{mine['peak_mb']:.0f}",
            f"{base['peak_mb']:.0f}",
            f"{mine['peak_mb'] / base['peak_mb']:.2f}x",
        ]

    intro = (
        f"{COUNT:,} tasks (dependencies, subtasks, labels, notes, a mix of statuses with their history) "
        "on each backend (a SQLite file; databases of a PostgreSQL server on this machine), each step in "
        "its own process on an in-process host (`Host.call`), timed from after the store opened; peak "
        "memory is the process's peak resident set (Python and the host included). The export: "
        f"{results['sqlite']['export']['bytes'] / 1e6:.1f} MB of JSON."
    )
    headers = [
        "backend",
        "step",
        "seconds",
        "baseline seconds",
        "time ratio",
        "peak MB",
        "baseline peak MB",
        "memory ratio",
    ]
    rows = [
        row(backend, name, step, baseline)
        for backend in BACKENDS
        for name, step, baseline in (
            (EXPORT_ROW, "export", "list"),
            (IMPORT_ROW, "import", "create"),
            (AGAIN_ROW, "import-again", "import"),
        )
    ]
    body = intro + "\n\n" + table(headers, rows)
    write_section(
        "tasks-transfer",
        "tasks: export and import of 10,000 tasks",
        body,
        packages=("hostd-tasks", "hostd-db"),
    )


if __name__ == "__main__":
    main()
