"""Shared pieces of the benchmarks: timing statistics and writing ``bench/RESULTS.md``.

Each benchmark owns one section of RESULTS.md (between ``<!-- bench:NAME -->`` markers) and
rewrites only that section, stamped with the commit, versions and date of the run.
"""

from __future__ import annotations

import datetime
import importlib.util
import platform
import statistics
import subprocess
import sys
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from types import ModuleType

BENCH_DIR = Path(__file__).resolve().parent
RESULTS = BENCH_DIR / "RESULTS.md"
WORK = BENCH_DIR / ".work"  # scratch space (npm installs, data); ignored by git

HEADER = "# Benchmark results\n\nWritten by the scripts in `bench/`; do not edit by hand.\n"


def load_module(path: Path) -> ModuleType:
    """Import a helper that lives beside a test suite, not in a package, from its file (no sys.path edits)."""
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None, path
    assert spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = module  # dataclasses and pickling look the module up by name
    spec.loader.exec_module(module)
    return module


def median(values: list[float]) -> float:
    return statistics.median(values)


def p95(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]


def commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=BENCH_DIR, capture_output=True, text=True
        )
        # The results file itself is rewritten by every script: a change there is not a code change.
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--", ":/", ":(top,exclude)bench/RESULTS.md"],
            cwd=BENCH_DIR,
            capture_output=True,
            text=True,
        )
        return out.stdout.strip() + ("+dirty" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def versions(*packages: str) -> str:
    found = []
    for name in ("hostd", "mcp", *packages):
        try:
            found.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            continue
    return ", ".join([f"Python {platform.python_version()}", *found])


def write_section(name: str, title: str, body: str, *, packages: tuple[str, ...] = ()) -> None:
    """Replace (or add) this benchmark's section of RESULTS.md."""
    stamp = (
        f"_Run {datetime.datetime.now().astimezone().isoformat(timespec='seconds')} on commit {commit()}; "
        f"{versions(*packages)}; {platform.machine()}, {platform.system()}._"
    )
    section = f"<!-- bench:{name} -->\n## {title}\n\n{stamp}\n\n{body.strip()}\n<!-- /bench:{name} -->\n"
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if start in text and end in text:
        before, rest = text.split(start, 1)
        after = rest.split(end, 1)[1].lstrip("\n")
        text = before + section + ("\n" + after if after else "")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text, encoding="utf-8")
    print(section, file=sys.stderr)


def table(headers: list[str], rows: list[list[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


# --- saved seeds ---------------------------------------------------------------------------
#
# The dashboard benchmarks seed for minutes (100,000 memories, 10,000 tasks through the tools).
# With ``--reuse-seed`` a run keeps what it seeded under ``.work/seeds/<key>`` (the data folder,
# and a ``pg_dump`` of the team database) and a later run with the same key restores it instead
# of seeding again. The host then opens it as any upgraded install would: migrations added since
# the seed was made run on first open, so a saved seed stays valid across schema changes.

SEEDS = WORK / "seeds"


def saved_seed_seconds(key: str) -> float | None:
    """How long the saved seed ``key`` took to make, or None when there is none."""
    marker = SEEDS / key / "seeded_s"
    return float(marker.read_text(encoding="utf-8")) if marker.exists() else None


def _pg_tool(name: str) -> str:
    from hostd_testing.postgres import find_bindir

    bindir = find_bindir()
    assert bindir is not None, "PostgreSQL's binaries were not found"
    return str(bindir / name)


def save_seed(key: str, data_dir: Path, database_url: str | None, seconds: float) -> None:
    """Keep ``data_dir`` (and the database at ``database_url``) as the seed ``key``."""
    import shutil

    folder = SEEDS / key
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    if data_dir.exists():
        shutil.copytree(data_dir, folder / "data")
    if database_url is not None:
        subprocess.run(
            [_pg_tool("pg_dump"), "-Fc", "-f", str(folder / "database.dump"), database_url], check=True
        )
    (folder / "seeded_s").write_text(f"{seconds:.1f}", encoding="utf-8")  # last: marks it complete


def restore_seed(key: str, data_dir: Path, database_url: str | None) -> None:
    """Put the saved seed ``key`` back: its data folder at ``data_dir``, its database at ``database_url``."""
    import shutil

    folder = SEEDS / key
    if (folder / "data").exists():
        shutil.copytree(folder / "data", data_dir)
    if database_url is not None:
        subprocess.run(
            [_pg_tool("pg_restore"), "--no-owner", "-d", database_url, str(folder / "database.dump")],
            check=True,
        )
