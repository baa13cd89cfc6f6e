"""The README's "Try one tool without an IDE" block, run as written from a clone.

The block is read from README.md and run by bash in a folder standing for the clone (holding
``.venv/bin/hostd``, the command of this environment), with a home folder of its own. The
Inspector lines need npm (``hostd/tests/test_inspector.py`` runs the Inspector itself): here
every file they name must exist once the lines before them have run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def try_block() -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index("Try one tool without an IDE")
    found = re.search(r"```sh\n(.*?)```", text[start:], re.DOTALL)
    assert found is not None, "no sh block after 'Try one tool without an IDE'"
    return found.group(1)


def commands(block: str) -> list[str]:
    """The block's commands, one per entry, continuation lines joined."""
    return [line.strip() for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def test_the_readme_tool_example_writes_outside_the_clone_and_names_only_files_it_made(
    tmp_path: Path,
) -> None:
    clone, home = tmp_path / "clone", tmp_path / "home"
    (clone / ".venv" / "bin").mkdir(parents=True)
    home.mkdir()
    hostd = shutil.which("hostd", path=str(Path(sys.executable).parent))
    assert hostd is not None, "the hostd command of this environment"
    (clone / ".venv" / "bin" / "hostd").symlink_to(hostd)
    lines = commands(try_block())
    runnable = [line for line in lines if not line.startswith("npx ")]
    inspector = [line for line in lines if line.startswith("npx ")]
    assert any(line.startswith(".venv/bin/hostd call ") for line in runnable), lines
    assert inspector, "the block shows the Inspector"
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith(("HOSTD_", "XDG_")) and name not in ("HOME", "PWD")
    }
    env["HOME"] = str(home)
    script = "set -euo pipefail\n" + "\n".join(runnable) + "\n"
    ran = subprocess.run(
        ["bash", "-c", script], cwd=clone, env=env, capture_output=True, text=True, timeout=120
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    # Nothing written into the clone: it holds only what it held before.
    assert sorted(str(p.relative_to(clone)) for p in clone.rglob("*")) == [
        ".venv",
        ".venv/bin",
        ".venv/bin/hostd",
    ]
    # The note is where the comment says, inside the folder allowed_roots names.
    assert (home / "hostd-try" / "notes" / "a.md").read_text(encoding="utf-8").startswith("# Notes")
    # Every config the Inspector lines hand the server exists now.
    named = [
        re.sub(r"^\$HOME|^~", str(home), path)
        for line in inspector
        for path in re.findall(r"HOSTD_CONFIG=(\S+)", line)
    ]
    assert named, inspector
    assert all(Path(path).is_file() for path in named), named
