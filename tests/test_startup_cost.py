"""Start-up stays cheap: with every plugin installed, nothing heavy is imported until a tool runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Whole libraries (matched by top-level package) and single modules that must wait for a tool call.
HEAVY_PACKAGES = ["bs4", "lxml", "markdownify", "requests", "sqlite3", "playwright", "difflib"]
HEAVY_MODULES = ["hostd_db.sqlite"]

PROBE = """
import json, sys
from pathlib import Path
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.protocol.server import build_server
host = Host(config_from_mapping({}, data_dir=Path(sys.argv[1])))
build_server(host)
host.startup()
print(json.dumps({"plugins": host.plugin_names, "tools": len(host.tools),
                  "heavy": sorted(m for m in sys.modules if m.split(".")[0] in %r or m in %r)}))
host.shutdown()
"""


@pytest.mark.smoke
def test_serving_every_plugin_imports_nothing_heavy(tmp_path: Path) -> None:
    code = PROBE % (HEAVY_PACKAGES, HEAVY_MODULES)
    env = {**os.environ, "HOSTD_CACHE_DIR": str(tmp_path / "cache")}
    for start in ("cold schema cache", "warm schema cache"):
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120, env=env
        )
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["tools"] > 0
        assert report["heavy"] == [], f"{start}: imported {report['heavy']} (plugins: {report['plugins']})"
