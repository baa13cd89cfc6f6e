"""Run by the ``wheels`` nox session after it installed a team server as deploy/README.md says:
``python wheels_deploy.py VENV``, VENV standing for ``/opt/hostd/.venv``.

1. ``hostd db migrate`` of that install against a throw-away PostgreSQL (the test kit's
   ``initdb``/``pg_ctl`` server): every plugin of the README's team profile gets its schema, and
   ``db migrate --check`` then finds nothing pending.
2. ``systemd-analyze verify`` of ``deploy/hostd@.service`` as instance ``hostd@8801``, the unit's
   ``/opt/hostd/.venv`` pointed at VENV (nothing else changed); the README installs into the venv
   and creates the user the unit names.

Without PostgreSQL or systemd-analyze a part is skipped with the package to install, unless
``HOSTD_REQUIRE_POSTGRES=1`` / ``HOSTD_REQUIRE_SYSTEMD=1`` (CI) make it a failure.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml
from hostd_testing.postgres import running_postgres

WORKSPACE = Path(__file__).resolve().parents[1]
UNIT = WORKSPACE / "deploy" / "hostd@.service"
README = WORKSPACE / "deploy" / "README.md"
INSTALLED_AT = "/opt/hostd/.venv"
PLUGINS = ["memory", "deep-thinking", "tasks"]
SCHEMAS = {"memory", "deep_thinking", "tasks"}


def run(*command: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env, check=False)


def check_readme_matches_the_unit() -> None:
    """The unit runs what the README installs, as the user the README creates."""
    unit, readme = UNIT.read_text(encoding="utf-8"), README.read_text(encoding="utf-8")
    assert f"ExecStart={INSTALLED_AT}/bin/hostd serve" in unit, "the unit's ExecStart moved"
    user = re.search(r"^User=(\S+)$", unit, re.MULTILINE)
    assert user is not None
    name = user.group(1)
    assert re.search(rf"useradd [^\n]*\b{name}\b", readme), f"the README creates no user {name}"
    assert f"python3 -m venv {INSTALLED_AT}" in readme, "the README installs elsewhere than the unit runs"
    wheelhouse_install = rf"{INSTALLED_AT}/bin/pip install --no-index --find-links"
    assert re.search(wheelhouse_install, readme), "the README does not install from the wheelhouse"


def migrate(venv: Path) -> None:
    hostd = str(venv / "bin" / "hostd")
    try:
        with running_postgres() as server:
            url = server.create_database("deploy")
            folder = Path(tempfile.mkdtemp(prefix="hostd-deploy-"))
            config = folder / "config.yaml"
            config.write_text(
                yaml.safe_dump(
                    {
                        "storage": {"url_env": "HOSTD_DATABASE_URL"},
                        "data_dir": str(folder / "data"),
                        "profiles": {"team": {"plugins": PLUGINS, "transport": {"type": "http"}}},
                    }
                ),
                encoding="utf-8",
            )
            env = {**os.environ, "HOSTD_DATABASE_URL": url, "HOSTD_CACHE_DIR": "off"}
            common = ["--config", str(config), "--profile", "team"]
            migrated = run(hostd, "db", "migrate", *common, env=env)
            assert migrated.returncode == 0, migrated.stdout + migrated.stderr
            checked = run(hostd, "db", "migrate", "--check", *common, env=env)
            assert checked.returncode == 0, checked.stdout + checked.stderr
            schemas = set(server.psql("SELECT nspname FROM pg_namespace", url.rsplit("/", 1)[1]).split())
            assert schemas >= SCHEMAS, f"schemas missing after hostd db migrate: {SCHEMAS - schemas}"
            print(f"hostd db migrate: {', '.join(sorted(SCHEMAS))} created; --check: nothing pending")
            shutil.rmtree(folder, ignore_errors=True)
    except pytest.skip.Exception as skipped:
        print(f"skipped: {skipped}")


def verify_unit(venv: Path) -> None:
    analyze = shutil.which("systemd-analyze")
    if analyze is None:
        message = "systemd-analyze is not installed: apt-get install systemd"
        assert os.environ.get("HOSTD_REQUIRE_SYSTEMD") != "1", f"{message} (HOSTD_REQUIRE_SYSTEMD=1)"
        print(f"skipped: {message}")
        return
    folder = Path(tempfile.mkdtemp(prefix="hostd-unit-"))
    try:
        unit = UNIT.read_text(encoding="utf-8").replace(INSTALLED_AT, str(venv))
        (folder / UNIT.name).write_text(unit, encoding="utf-8")
        verified = run(analyze, "verify", str(folder / "hostd@8801.service"))
        said = (verified.stdout + verified.stderr).strip()
        assert verified.returncode == 0, said
        assert "hostd@" not in said, said
        print("systemd-analyze verify hostd@8801.service: ok")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    venv = Path(sys.argv[1]).resolve()
    assert (venv / "bin" / "hostd").is_file(), f"no hostd installed in {venv}"
    check_readme_matches_the_unit()
    migrate(venv)
    verify_unit(venv)


if __name__ == "__main__":
    main()
