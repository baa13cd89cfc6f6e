"""Plugin icons: every shipped plugin's icon is inline (a ``data:`` SVG), so no client needs the
network to show it, and sent once per list, on the plugin's first listed tool (not the same data
on each of its tools); seen through the official client from a real ``hostd serve`` in both
protocol eras. A plugin's icon that is not small, self-contained SVG stops the host."""

from __future__ import annotations

import base64
import re
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from hostd.core.config import config_from_mapping
from hostd.core.errors import HostError
from hostd.core.host import Host
from hostd_testing import served_client, write_config

from hostd import ToolOutput, hookimpl

pytestmark = pytest.mark.anyio

DATA_SVG = "data:image/svg+xml;base64,"
ERAS = ["legacy", "2026-07-28"]


def svg_of(src: str) -> ElementTree.Element:
    assert src.startswith(DATA_SVG), src[:40]
    markup = base64.b64decode(src[len(DATA_SVG) :], validate=True).decode()
    assert not re.search(r"(?i)\b(?:https?|ftp):", markup.replace("http://www.w3.org/2000/svg", ""))
    root = ElementTree.fromstring(markup)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"
    return root


@pytest.mark.parametrize("mode", ERAS)
async def test_each_plugins_icon_is_inline_once_on_its_first_tool(
    tmp_path: Path, every_plugin: list[str], mode: str
) -> None:
    async with served_client(write_config(tmp_path, every_plugin), mode=mode) as client:
        tools = (await client.list_tools()).tools
    plugin_of = {
        name: plugin for plugin, names in _tool_names(tmp_path, every_plugin).items() for name in names
    }
    assert {tool.name for tool in tools} == set(plugin_of)
    first: dict[str, str] = {}
    for tool in tools:
        first.setdefault(plugin_of[tool.name], tool.name)
    by_plugin: dict[str, str] = {}
    for tool in tools:
        if tool.name != first[plugin_of[tool.name]]:
            assert tool.icons is None, f"{tool.name} repeats its plugin's icon"
            continue
        assert tool.icons, f"{tool.name} has no icon"
        assert len(tool.icons) == 1, f"{tool.name} has no icon"
        icon = tool.icons[0]
        assert icon.mime_type == "image/svg+xml"
        assert icon.sizes == ["any"]
        svg_of(icon.src)
        by_plugin[plugin_of[tool.name]] = icon.src
    assert set(by_plugin) == set(every_plugin)
    assert len(set(by_plugin.values())) == len(every_plugin), "each its own"


def _tool_names(tmp_path: Path, plugins: list[str]) -> dict[str, list[str]]:
    host = Host(config_from_mapping({"profiles": {"default": {"plugins": plugins}}}, data_dir=tmp_path / "d"))
    found: dict[str, list[str]] = {}
    for spec in host.tools.values():
        found.setdefault(spec.plugin, []).append(spec.name)
    return found


class Pong(ToolOutput):
    pong: bool = True


def ping() -> Pong:
    """Ping."""
    return Pong()


class Painted:
    def __init__(self, svg: object) -> None:
        self.svg = svg

    @hookimpl
    def hostd_register_tools(self, register: Any) -> None:
        register(ping, access="read")

    @hookimpl
    def hostd_icon(self) -> object:
        return self.svg


def host_with(tmp_path: Path, svg: object) -> Host:
    loaded = config_from_mapping({"profiles": {"default": {"plugins": ["painted"]}}}, data_dir=tmp_path)
    return Host(loaded, extra_plugins={"painted": Painted(svg)})


@pytest.mark.parametrize(
    "svg",
    [
        '<svg xmlns="http://www.w3.org/2000/svg"><image href="https://example.com/x.png"/></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><image href="//example.com/x.png"/></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg"><style>@import url(HTTP://example.com/a.css)</style></svg>',
        '<svg xmlns="http://www.w3.org/2000/svg">' + "<g/>" * 2000 + "</svg>",
        "<img src=x>",
        b"<svg/>",
    ],
)
def test_an_icon_that_is_not_small_self_contained_svg_stops_the_host(tmp_path: Path, svg: object) -> None:
    with pytest.raises(HostError, match="hostd_icon"):
        host_with(tmp_path, svg)


def test_a_plugin_without_an_icon_has_tools_without_one(tmp_path: Path) -> None:
    from hostd.protocol.adapters import tool_definitions

    assert [tool.icons for tool in tool_definitions(host_with(tmp_path, None))] == [None]
    painted = '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 2 2"><rect width="2" height="2"/></svg>'
    [tool] = tool_definitions(host_with(tmp_path, painted))
    assert tool.icons is not None
    assert ElementTree.tostring(svg_of(tool.icons[0].src)).startswith(b"<ns0:svg")
