"""The CI matrix. ``nox`` runs every session; ``nox -s tests`` one of them.

Sessions: lint, typecheck, tests (every suite in one pytest run, every distribution installed),
one session per plugin (a fresh venv with hostd and that plugin alone: it installs and runs on
its own), external (only the tests marked ``npm`` or ``browser``, which every other session
deselects, so they run once), lowest (lowest-direct resolution, smoke subset), wheels (built
with --no-sources, installed outside the workspace, served and called through a real client).

Arguments after ``--`` go to pytest; a ``-m EXPR`` there is combined with the session's own
(``nox -s tests -- -m "not slow"`` runs ``-m "(not slow) and not npm and not browser"``).
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).resolve().parent
PYTHON = "3.11"
SHARED = [
    "hostd",
    "packages/hostd-errors",
    "packages/hostd-fs",
    "packages/hostd-db",
    "packages/hostd-testing",
]
PLUGINS = sorted(path.parent.name for path in ROOT.glob("plugins/*/pyproject.toml"))
PYTEST = ["pytest", "--strict-markers", "--strict-config", "-p", "no:cacheprovider"]
#: Tests that reach npm or drive a browser run in the ``external`` session only.
EXTERNAL = "npm or browser"
NOT_EXTERNAL = "not npm and not browser"


def pytest_args(marks: str, posargs: list[str]) -> list[str]:
    """``-m marks`` and the session's arguments, a ``-m`` among them and-ed with ``marks``."""
    rest = list(posargs)
    for index, arg in enumerate(rest):
        if arg == "-m" and index + 1 < len(rest):
            marks = f"({rest[index + 1]}) and {marks}"
            del rest[index : index + 2]
            break
    return ["-m", marks, *rest]


def sync_workspace(session: nox.Session, *extra: str) -> None:
    """Install the locked workspace (every member, dev group) into the session's venv."""
    session.run_install(
        "uv",
        "sync",
        "--all-packages",
        "--locked",
        *extra,
        env={"UV_PROJECT_ENVIRONMENT": session.virtualenv.location},
    )


def test_group(plugin: str) -> list[str]:
    """A plugin's declared test dependencies, less the workspace packages installed from source."""
    data = tomllib.loads((ROOT / "plugins" / plugin / "pyproject.toml").read_text(encoding="utf-8"))
    group = data.get("dependency-groups", {}).get("test", [])
    return [req for req in group if isinstance(req, str) and not req.startswith("hostd")]


def locked_version(package: str) -> str:
    """The version of ``package`` pinned in uv.lock, so a session's tool matches the developers'."""
    lock = tomllib.loads((ROOT / "uv.lock").read_text(encoding="utf-8"))
    for entry in lock.get("package", []):
        if entry.get("name") == package:
            return str(entry["version"])
    raise RuntimeError(f"{package} is not in uv.lock")


@nox.session(python=PYTHON)
def lint(session: nox.Session) -> None:
    session.install(f"ruff=={locked_version('ruff')}")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session(python=PYTHON)
def typecheck(session: nox.Session) -> None:
    """mypy --strict over the sources and the typed test folders, as ``.ci/typecheck`` lists them
    (pre-commit runs the same script)."""
    sync_workspace(session)
    session.run("bash", str(ROOT / ".ci" / "typecheck"), external=True)  # the session's mypy: first on PATH


def suites(*, plugins: bool) -> list[str]:
    found = ["hostd/tests", *(str(p.relative_to(ROOT)) for p in sorted(ROOT.glob("packages/*/tests")))]
    if plugins:
        found += [f"plugins/{name}/tests" for name in PLUGINS]
    return [*found, "tests"]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Every suite in one pytest run with every distribution installed (cross-plugin tests run here).

    One run: importlib import mode keeps same-named test modules of two suites apart, and the
    session-scoped fixtures (the PostgreSQL server) start once.
    """
    sync_workspace(session)
    session.run(*PYTEST, *suites(plugins=True), *pytest_args(NOT_EXTERNAL, session.posargs))


@nox.session(python=PYTHON)
def external(session: nox.Session) -> None:
    """Only the tests that reach npm (official servers, the Inspector, mermaid) or drive Chromium."""
    sync_workspace(session)
    session.run(*PYTEST, *suites(plugins=True), *pytest_args(EXTERNAL, session.posargs))


@nox.session(python=PYTHON)
@nox.parametrize("plugin", PLUGINS, ids=PLUGINS)
def plugin(session: nox.Session, plugin: str) -> None:
    """hostd + this plugin alone in a fresh venv: proves it installs and imports only what it declares."""
    editable = [arg for path in [*SHARED, f"plugins/{plugin}"] for arg in ("-e", path)]
    session.install(*editable, "pytest>=8.3", "pytest-timeout>=2.3", "anyio>=4.12", *test_group(plugin))
    # The slow multi-process tests (kills, crash loops) run once, in `tests`: what they prove does
    # not depend on which other distributions are installed.
    session.run(
        *PYTEST, f"plugins/{plugin}/tests", *pytest_args(f"not slow and {NOT_EXTERNAL}", session.posargs)
    )


@nox.session(python=PYTHON)
def lowest(session: nox.Session) -> None:
    """Every distribution at the lowest versions its direct requirements allow: the smoke tests."""
    editable = [arg for path in [*SHARED, *(f"plugins/{p}" for p in PLUGINS)] for arg in ("-e", path)]
    session.install(
        "--resolution", "lowest-direct", *editable, "pytest>=8.3", "pytest-timeout>=2.3", "anyio>=4.12"
    )
    session.run(*PYTEST, *suites(plugins=True), *pytest_args(f"smoke and {NOT_EXTERNAL}", session.posargs))


@nox.session(python=PYTHON)
def wheels(session: nox.Session) -> None:
    """Build every wheel with --no-sources, install them outside the workspace, serve and call."""
    dist = Path(tempfile.mkdtemp(prefix="hostd-wheels-"))
    session.run("uv", "build", "--all-packages", "--no-sources", "--wheel", "-o", str(dist), external=True)
    outside = Path(tempfile.mkdtemp(prefix="hostd-outside-"))
    venv = outside / "venv"
    session.run("uv", "venv", "--python", PYTHON, str(venv), external=True)
    python = str(venv / ("Scripts" if os.name == "nt" else "bin") / "python")
    wheels_built = sorted(str(path) for path in dist.glob("*.whl"))
    session.log(f"built {len(wheels_built)} wheels: {', '.join(Path(w).name for w in wheels_built)}")
    session.run("uv", "pip", "install", "--python", python, *wheels_built, external=True)
    smoke = ROOT / "tests" / "wheels_smoke.py"
    with session.chdir(outside):
        session.run(python, str(smoke), external=True)
