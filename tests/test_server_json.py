"""``server.json``, hostd's entry for the MCP registry: valid against the registry's schema (the
2025-12-11 release, kept in ``tests/data`` so no test needs the network), of the package's own
version, named as the READMEs' ``mcp-name`` line says, and runnable the ways it says."""

from __future__ import annotations

import json
import re
import tomllib
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jsonschema
from hostd.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((Path(__file__).parent / "data" / "server.schema.json").read_text(encoding="utf-8"))
PLUGINS = {"hostd-summary-writer", "hostd-wechat", "hostd-memory", "hostd-deep-thinking", "hostd-tasks"}


def server() -> dict[str, Any]:
    found: dict[str, Any] = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    return found


def test_server_json_is_valid_against_the_registry_schema_it_names() -> None:
    document = server()
    assert document["$schema"] == SCHEMA["$id"]
    jsonschema.Draft7Validator.check_schema(SCHEMA)
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    assert [error.message for error in validator.iter_errors(document)] == []
    assert 1 <= len(document["description"]) <= 100


def test_the_schema_refuses_what_the_registry_refuses() -> None:
    """The kept schema is the real one: a long description, a bad name or ``latest`` fail it."""
    validator = jsonschema.Draft7Validator(SCHEMA)
    document = server()
    for change in (
        {"description": "x" * 101},
        {"name": "hostd"},
        {"packages": [{**document["packages"][0], "version": "latest"}]},
    ):
        assert not validator.is_valid({**document, **change}), change


def test_the_version_is_the_package_version() -> None:
    project = tomllib.loads((ROOT / "hostd" / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    document = server()
    assert document["version"] == project["version"] == version("hostd")
    assert {package["version"] for package in document["packages"]} == {project["version"]}
    assert {package["identifier"] for package in document["packages"]} == {project["name"]}


def test_both_readmes_carry_the_mcp_name_line_of_server_json() -> None:
    name = server()["name"]
    for readme in (ROOT / "README.md", ROOT / "hostd" / "README.md"):
        assert re.findall(r"mcp-name: (\S+)", readme.read_text(encoding="utf-8")) == [name], readme
    assert re.fullmatch(r"io\.github\.[A-Za-z0-9-]+/hostd", name)


def test_it_runs_hostd_over_stdio_and_streamable_http_as_the_cli_takes_them() -> None:
    packages = {package["transport"]["type"]: package for package in server()["packages"]}
    assert set(packages) == {"stdio", "streamable-http"}
    parser = build_parser()
    for kind, package in packages.items():
        assert package["registryType"] == "pypi"
        assert package["runtimeHint"] == "uvx"
        withs = {arg["value"] for arg in package["runtimeArguments"] if arg["name"] == "--with"}
        assert withs == PLUGINS
        assert len(package["runtimeArguments"]) == len(PLUGINS)
        argv = [
            part
            for arg in package["packageArguments"]
            for part in ([arg["name"], arg["value"]] if arg["type"] == "named" else [arg["value"]])
        ]
        args = parser.parse_args(argv)
        assert args.command == "serve"
        if kind == "stdio":
            assert args.transport in (None, "stdio")
        else:
            assert args.transport == "http"
            assert package["transport"]["url"] == f"http://127.0.0.1:{args.port}/mcp"
    for plugin in PLUGINS:
        assert (ROOT / "plugins" / plugin.removeprefix("hostd-") / "pyproject.toml").is_file(), plugin
