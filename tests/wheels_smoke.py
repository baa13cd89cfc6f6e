"""Run by the ``wheels`` nox session inside a venv holding only the built wheels.

Proves the distributions work installed from wheels, away from the workspace: every plugin
loads, ``hostd serve`` answers the official client over stdio, and a tool really runs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import tempfile
import tomllib
from pathlib import Path

import anyio
import mcp_types as types
from hostd.core.plugins import installed_plugins
from mcp import Client
from mcp.client.stdio import StdioServerParameters

import hostd

WORKSPACE = Path(__file__).resolve().parents[1]
EXPECTED_PLUGINS = {
    p.parent.name for folder in ("plugins", "examples") for p in WORKSPACE.glob(f"{folder}/*/pyproject.toml")
}


def check_typed_packages() -> None:
    """Every distribution's wheel carries its ``py.typed``: type checkers read the plugin API, the
    shared libraries and each plugin's own types from the installed packages."""
    for pyproject in [WORKSPACE / "hostd" / "pyproject.toml", *WORKSPACE.glob("*/*/pyproject.toml")]:
        build = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("tool", {}).get("hatch", {})
        for package in build.get("build", {}).get("targets", {}).get("wheel", {}).get("packages", []):
            spec = importlib.util.find_spec(Path(package).name)
            assert spec is not None, f"{package} is not installed"
            assert spec.origin is not None, f"{package} is not installed"
            folder = Path(spec.origin).resolve().parent
            assert not folder.is_relative_to(WORKSPACE), f"{package} imported from the workspace"
            assert (folder / "py.typed").is_file(), f"the wheel of {pyproject.parent.name} has no py.typed"


async def main() -> None:
    assert not Path(hostd.__file__).resolve().is_relative_to(WORKSPACE), "hostd imported from the workspace"
    check_typed_packages()
    found = set(installed_plugins())
    assert found >= EXPECTED_PLUGINS, f"plugins missing from the wheels: {EXPECTED_PLUGINS - found}"
    scratch = Path(tempfile.mkdtemp(prefix="hostd-wheel-smoke-"))
    env = {**os.environ, "HOSTD_DATA_DIR": str(scratch / "data"), "XDG_CONFIG_HOME": str(scratch / "config")}
    server = StdioServerParameters(
        command=str(Path(sys.executable).with_name("hostd")), args=["serve"], env=env, cwd=str(scratch)
    )
    async with Client(server) as client:
        names = {tool.name for tool in (await client.list_tools()).tools}
        assert names, "no tools served"
        if "update_summary" in names:
            result = await client.call_tool(
                "update_summary", {"content": "# From a wheel", "file_path": "w.md"}
            )
            block = result.content[0]
            assert isinstance(block, types.TextContent), block
            envelope = json.loads(block.text)
            assert not result.is_error, envelope
            assert (scratch / "w.md").read_text(encoding="utf-8").startswith("# From a wheel")
        else:
            print("update_summary not installed; listed tools only", file=sys.stderr)
    print(f"wheels smoke ok: {len(found)} plugins, {len(names)} tools")


if __name__ == "__main__":
    anyio.run(main)
