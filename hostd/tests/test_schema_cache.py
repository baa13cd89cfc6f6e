"""Tool schemas are cached per plugin, keyed on its code, and rebuilt when the code changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from hostd.core.tools import listed_input_schema, listed_output_schema
from hostd_testing import install_plugin_source, pythonpath_with, write_config

HERE = Path(__file__).resolve().parent


def tools_json(config: Path, env: dict[str, str]) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-m", "hostd", "tools", "--json", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    tools: list[dict[str, Any]] = json.loads(done.stdout)
    return tools


def cached_schemas(path: Path) -> dict[str, tuple[Any, Any]]:
    """The input and output schema of each tool a cache file holds, by tool name."""
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == 1
    # The cache holds the whole input and output schemas (the ones arguments and answers are
    # checked against); the listing shows their lighter forms.
    return {
        key.rsplit(":", 1)[1]: (listed_input_schema(entry["input"]), listed_output_schema(entry["output"]))
        for key, entry in data["tools"].items()
    }


def listed_schemas(tools: list[dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    """The same, from a ``hostd tools --json`` listing."""
    return {tool["name"]: (tool["inputSchema"], tool.get("outputSchema")) for tool in tools}


def test_schemas_come_from_the_cache_and_follow_code_changes(tmp_path: Path) -> None:
    source = (HERE / "probe_plugin.py").read_text(encoding="utf-8")
    folder = install_plugin_source(
        tmp_path / "site", entry_point="probe", module="cached_probe", source=source
    )
    cache = tmp_path / "cache"
    env = {**pythonpath_with(folder), "HOSTD_CACHE_DIR": str(cache)}
    config = write_config(tmp_path, ["probe"])

    first = tools_json(config, env)
    written = sorted(cache.glob("probe-*.json"))
    assert len(written) == 1
    cached = json.loads(written[0].read_text(encoding="utf-8"))["tools"]
    assert len(cached) == len(first) == 6
    assert tools_json(config, env) == first  # a warm start lists exactly what a cold one did

    changed = source.replace('description="How many times to repeat it"', 'description="Repeat count"')
    (folder / "cached_probe.py").write_text(changed, encoding="utf-8")
    os.utime(folder / "cached_probe.py", ns=(1, 1))  # a new stamp even within one mtime tick
    after = {tool["name"]: tool for tool in tools_json(config, env)}
    assert after["echo"]["inputSchema"]["properties"]["times"]["description"] == "Repeat count"
    assert len(list(cache.glob("probe-*.json"))) == 1  # the stale entry was replaced


def test_cache_off_and_broken_cache_files_are_harmless(tmp_path: Path) -> None:
    source = (HERE / "probe_plugin.py").read_text(encoding="utf-8")
    folder = install_plugin_source(
        tmp_path / "site", entry_point="probe", module="cached_probe", source=source
    )
    config = write_config(tmp_path, ["probe"])
    # "off" writes no cache, neither the named folder nor the user cache folder.
    user_cache = tmp_path / "xdg-cache"
    off = tools_json(
        config, {**pythonpath_with(folder), "HOSTD_CACHE_DIR": "off", "XDG_CACHE_HOME": str(user_cache)}
    )
    assert len(off) == 6
    assert not user_cache.exists()

    cache = tmp_path / "cache"
    env = {**pythonpath_with(folder), "HOSTD_CACHE_DIR": str(cache)}
    assert tools_json(config, env) == off
    written = sorted(cache.glob("*.json"))
    assert [path.name.startswith("probe-") for path in written] == [True]  # one file, this plugin's
    assert cached_schemas(written[0]) == listed_schemas(off)  # what it holds is what a cache-less start lists

    written[0].write_text("{not json", encoding="utf-8")
    assert tools_json(config, env) == off  # a broken file is ignored...
    assert sorted(cache.glob("*.json")) == written
    assert cached_schemas(written[0]) == listed_schemas(off)  # ...and written again whole


def test_contract_checks_still_run_on_a_cold_cache(tmp_path: Path) -> None:
    source = (
        (HERE / "probe_plugin.py")
        .read_text(encoding="utf-8")
        .replace(
            'Field(description="Text to send back", min_length=1, max_length=10_000)', "Field(min_length=1)"
        )
    )
    folder = install_plugin_source(
        tmp_path / "site", entry_point="probe", module="cached_probe", source=source
    )
    config = write_config(tmp_path, ["probe"])
    done = subprocess.run(
        [sys.executable, "-m", "hostd", "tools", "--config", str(config)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **pythonpath_with(folder), "HOSTD_CACHE_DIR": str(tmp_path / "c")},
    )
    assert done.returncode == 2
    assert "parameter 'text' has no description" in done.stderr
