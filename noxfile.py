"""The CI matrix. ``nox`` runs every session; ``nox -s tests`` one of them.

Sessions: lint, typecheck, tests (the host's, the shared packages' and the cross-package suites,
every distribution installed), one session per plugin (a fresh venv with hostd and that plugin
alone, running that plugin's whole suite: it installs and works on its own), external (only the
tests marked ``npm`` or ``browser``, which every other session deselects), lowest (lowest-direct
resolution, smoke subset), wheels (built with --no-sources, installed outside the workspace,
served and called through a real client; then installed as deploy/README.md installs a server:
pip from the wheelhouse with --no-index, ``hostd db migrate`` on PostgreSQL, ``systemd-analyze
verify`` of the unit).

Every test runs once. A plugin's suite runs in its own session only, not again in ``tests``:
there it proves the whole suite passes with hostd and that plugin alone, and nothing in a
plugin's suite needs the other plugins installed (cross-plugin tests live in ``tests/``). The
reverse (every suite in ``tests``, a smoke subset in each plugin session) would also run each
test once, but would stop proving that the whole plugin works on its own, to save only a
plugin session's set-up: a venv synced from uv's cache in about a second, and the workers'
start (a whole ``plugin(summary-writer)`` session collecting its tests took 35 s at load 10).
The old plugin sessions, which ran their suites a second time, took 12.7 of CI's 40 minutes.

The test sessions run pytest-xdist workers (``HOSTD_TEST_WORKERS``, default below): most tests
wait on the servers, clients and databases they start, so more workers than the 2 CI cores pay
off. ``--dist loadfile`` keeps each module's tests together on one worker, in order: a module's
module-scoped fixture (one server, one nginx cluster) starts once, not once per worker.
(``--dist loadgroup`` would allow finer groups, but with pytest 9.2 xdist 3.8 silently ignores
``xdist_group``: pytest-xdist issue 1386.) Each worker is a test session of its own and starts
its own PostgreSQL server when its first PostgreSQL test asks for one.

Arguments after ``--`` go to pytest; a ``-m EXPR`` there is combined with the session's own
(``nox -s tests -- -m "not slow"`` runs ``-m "(not slow) and not npm and not browser"``);
``-n 0`` there runs one process (pdb, ``-x``, reading one failure's output in order).
"""

from __future__ import annotations

import os
import tempfile
import tomllib
from pathlib import Path

import nox

nox.options.default_venv_backend = "uv"
nox.options.error_on_missing_interpreters = True
# Every session's Python processes write and reuse bytecode (.pyc) in its fresh venv, whatever the
# machine's environment says: uv installs none, and under PYTHONDONTWRITEBYTECODE (set in some CI
# images) every one of the suites' many processes (servers, `hostd call`, workers) compiled mcp,
# pydantic and hostd from source again, about 1.5 s of CPU each. hostd/tests/test_team_database.py
# took 84 s that way and 27 s with bytecode, on the 2-core machine at load 5.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

ROOT = Path(__file__).resolve().parent
PYTHON = "3.11"
SHARED = [
    "hostd",
    "packages/hostd-errors",
    "packages/hostd-fs",
    "packages/hostd-db",
    "packages/hostd-testing",
]
#: Plugin name -> its folder: the shipped plugins and the example a new plugin copies (examples/notes).
PLUGIN_FOLDERS = {
    path.parent.name: path.parent.relative_to(ROOT).as_posix()
    for pattern in ("plugins/*/pyproject.toml", "examples/*/pyproject.toml")
    for path in ROOT.glob(pattern)
}
PLUGINS = sorted(PLUGIN_FOLDERS)
#: Suites small enough that one process beats starting the xdist workers (and a PostgreSQL each).
SMALL_SUITES = {"notes"}
#: ``--durations`` names the slowest tests in every CI log, where the run time is spent.
PYTEST = ["pytest", "--strict-markers", "--strict-config", "-p", "no:cacheprovider", "--durations=15"]
#: pytest-xdist workers for the test sessions: one process keeps a core 45% busy, so four fill
#: the 2 CI cores (measurements in CONTRIBUTING.md, "The full run").
WORKERS = os.environ.get("HOSTD_TEST_WORKERS", "4")
#: What a session installs to run pytest outside the workspace's locked dev group.
PYTEST_DEPS = ["pytest>=8.3", "pytest-timeout>=2.3", "pytest-xdist>=3.6", "anyio>=4.12"]
#: What deploy/README.md installs on a team server (the wheels session installs the same).
SERVER_DISTRIBUTIONS = ["hostd", "hostd-db[postgres]", "hostd-memory", "hostd-tasks", "hostd-deep-thinking"]
#: Tests that reach npm or drive a browser run in the ``external`` session only.
NOT_EXTERNAL = "not npm and not browser"


def pytest_args(marks: str, posargs: list[str], *, parallel: bool = True) -> list[str]:
    """``-m marks`` and the session's arguments, a ``-m`` among them and-ed with ``marks``; with
    ``parallel``, the xdist workers unless the arguments choose their own ``-n``."""
    rest = list(posargs)
    for index, arg in enumerate(rest):
        if arg == "-m" and index + 1 < len(rest):
            marks = f"({rest[index + 1]}) and {marks}"
            del rest[index : index + 2]
            break
    chosen = any(arg == "-n" or arg.startswith(("-n", "--numprocesses")) for arg in rest)
    workers = ["-n", WORKERS, "--dist", "loadfile"] if parallel and not chosen else []
    return [*workers, "-m", marks, *rest]


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
    data = tomllib.loads((ROOT / PLUGIN_FOLDERS[plugin] / "pyproject.toml").read_text(encoding="utf-8"))
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
        found += [f"{PLUGIN_FOLDERS[name]}/tests" for name in PLUGINS]
    return [*found, "tests"]


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """The host's, the shared packages' and the cross-package suites with every distribution
    installed (the plugins' suites run in their own sessions).

    One run: importlib import mode keeps same-named test modules of two suites apart, and each
    xdist worker starts the session-scoped fixtures (the PostgreSQL server) once.
    """
    sync_workspace(session)
    session.run(*PYTEST, *suites(plugins=False), *pytest_args(NOT_EXTERNAL, session.posargs))
    # The plugins' tests that need another plugin beside their own (``together``): a plugin's own
    # session has only that plugin installed, so they run here, once. A handful: no workers.
    plugin_suites = [f"{PLUGIN_FOLDERS[name]}/tests" for name in PLUGINS]
    together = pytest_args(f"together and {NOT_EXTERNAL}", session.posargs, parallel=False)
    session.run(*PYTEST, *plugin_suites, *together, success_codes=[0, 5] if session.posargs else [0])


@nox.session(python=PYTHON)
def external(session: nox.Session) -> None:
    """Only the tests that reach npm (official servers, the Inspector, mermaid) or drive Chromium.

    One run on the xdist workers, the npm and the browser tests together: every npm folder is
    installed under a lock of its own (``hostd_testing.npm_installed``), one folder per set of
    packages, so no test runs a program from a folder another worker is installing into; each
    worker has a Chromium of its own. (Two runs, one per kind, each waited on its own slowest
    module at the end with the other workers idle.)
    """
    sync_workspace(session)
    # With a filter after --, the run may select nothing (pytest's exit code 5).
    codes = [0, 5] if session.posargs else [0]
    external_tests = pytest_args("(npm or browser)", session.posargs)
    session.run(*PYTEST, *suites(plugins=True), *external_tests, success_codes=codes)


@nox.session(python=PYTHON)
@nox.parametrize("plugin", PLUGINS, ids=PLUGINS)
def plugin(session: nox.Session, plugin: str) -> None:
    """hostd + this plugin alone in a fresh venv, its whole suite (slow tests too): proves it
    installs, imports only what it declares and works on its own. The only run of its suite."""
    editable = [arg for path in [*SHARED, PLUGIN_FOLDERS[plugin]] for arg in ("-e", path)]
    session.install(*editable, *PYTEST_DEPS, *test_group(plugin))
    alone = f"{NOT_EXTERNAL} and not together"  # ``together`` tests run in ``tests``
    parallel = plugin not in SMALL_SUITES
    session.run(
        *PYTEST, f"{PLUGIN_FOLDERS[plugin]}/tests", *pytest_args(alone, session.posargs, parallel=parallel)
    )


@nox.session(python=PYTHON)
def lowest(session: nox.Session) -> None:
    """Every distribution at the lowest versions its direct requirements allow: the smoke tests
    (a few dozen, in one process: workers would take longer to start than the tests to run)."""
    editable = [arg for path in [*SHARED, *(PLUGIN_FOLDERS[p] for p in PLUGINS)] for arg in ("-e", path)]
    # The oldest Starlette the SDK allows builds its TestClient (the dashboard tests) on httpx,
    # which nothing else installs there: a test-only dependency of this session alone.
    session.install("--resolution", "lowest-direct", *editable, *PYTEST_DEPS, "httpx>=0.27")
    session.run(
        *PYTEST,
        *suites(plugins=True),
        *pytest_args(f"smoke and {NOT_EXTERNAL}", session.posargs, parallel=False),
    )


@nox.session(python=PYTHON)
def wheels(session: nox.Session) -> None:
    """Build every wheel with --no-sources, install them outside the workspace, serve and call;
    install a team server from them as deploy/README.md does, migrate it, verify its unit."""
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
    # deploy/README.md's server install: pip, from the wheelhouse alone (--no-index), into a venv
    # standing for /opt/hostd/.venv. The third-party dependencies, pinned as uv.lock pins them, are
    # put there first by uv from its cache (about a second; the README's `pip download` of them
    # into the wheelhouse takes a minute of downloads and is the one step not repeated here), so
    # pip takes hostd's distributions from the wheelhouse and finds the rest satisfied.
    server = outside / "opt-hostd" / ".venv"
    server_python = str(server / "bin" / "python")
    session.run("uv", "venv", "--seed", "--python", PYTHON, str(server), external=True)
    requirements = outside / "requirements.txt"
    packages = [arg for name in SERVER_DISTRIBUTIONS for arg in ("--package", name.split("[")[0])]
    session.run(
        "uv", "export", "--frozen", "--no-dev", "--no-emit-workspace", "--no-hashes", "--extra", "postgres",
        *packages, "-o", str(requirements), external=True,
    )  # fmt: skip
    session.run("uv", "pip", "install", "--python", server_python, "-r", str(requirements), external=True)
    session.run(
        server_python, "-m", "pip", "install", "--no-index", "--find-links", str(dist),
        "-r", str(requirements), *SERVER_DISTRIBUTIONS, external=True,
    )  # fmt: skip
    # `hostd db migrate` of that install against a throw-away PostgreSQL, and `systemd-analyze
    # verify` of deploy/hostd@.service pointed at it.
    with session.chdir(outside):
        session.run(python, str(ROOT / "tests" / "wheels_deploy.py"), str(server), external=True)
