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
    assert spec is not None and spec.loader is not None, path
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
