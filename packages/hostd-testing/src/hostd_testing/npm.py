"""npm packages for the tests that run official Node.js clients and servers: installed into a
folder once, under a lock on that folder, so parallel test workers can share one cache."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from hostd_testing.browser import require_or_skip

__all__ = ["NPM_HOME", "inspector_cli", "npm_installed"]


def _split(spec: str) -> tuple[str, str | None]:
    """``name@version`` (the name may be scoped, ``@scope/name``) -> name, version or None."""
    at = spec.rfind("@")
    return (spec[:at], spec[at + 1 :]) if at > 0 else (spec, None)


def _satisfied(prefix: Path, spec: str) -> bool:
    """Whether ``spec`` is installed under ``prefix``: the exact version, one of its releases
    (``22`` is met by ``22.11.0``), or any version when the spec names none."""
    name, wanted = _split(spec)
    manifest = prefix / "node_modules" / name / "package.json"
    if not manifest.exists():
        return False
    if wanted is None:
        return True
    found = json.loads(manifest.read_text(encoding="utf-8")).get("version")
    return isinstance(found, str) and (found == wanted or found.startswith(wanted + "."))


def npm_installed(prefix: Path, *packages: str) -> Path:
    """``prefix/node_modules`` holding every ``name[@version]`` of ``packages``.

    What is there already is not fetched again; the rest is installed by one ``npm install`` while
    a file lock on ``prefix`` keeps other workers (which would corrupt the folder) waiting. Skips
    the test when npm is missing or the install fails, and fails it instead under
    ``HOSTD_REQUIRE_BROWSER=1`` (CI), so a broken set-up never passes as skipped.
    """
    from filelock import FileLock

    prefix.mkdir(parents=True, exist_ok=True)
    with FileLock(str(prefix / ".install.lock")):
        missing = [spec for spec in packages if not _satisfied(prefix, spec)]
        if missing:
            npm = shutil.which("npm")
            if npm is None:
                require_or_skip(f"npm is not installed, so {', '.join(missing)} cannot be fetched")
            done = subprocess.run(
                [str(npm), "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *missing],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if done.returncode != 0 or not all(_satisfied(prefix, spec) for spec in missing):
                require_or_skip(f"npm install {' '.join(missing)} failed: {done.stderr[-1000:]}")
    return prefix / "node_modules"


#: Where the tests' npm folders live: one per set of packages, kept between runs.
NPM_HOME = Path.home() / ".cache" / "hostd-tests"


def inspector_cli(version: str = "0.15.0") -> list[str]:
    """The command that runs the MCP Inspector's CLI ``version`` (installed once, shared by the
    workers; 0.x runs on the machine's Node.js 20)."""
    modules = npm_installed(
        NPM_HOME / f"npm-inspector-{version}", f"@modelcontextprotocol/inspector@{version}"
    )
    return [str(modules / ".bin" / "mcp-inspector")]
