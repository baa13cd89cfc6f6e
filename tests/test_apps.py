"""Views inside the chat (MCP Apps) over the protocol, without a browser: which tools name a view
(``_meta.ui.resourceUri``) and nothing else changes in the list, ``apps: false``, the documents a
member may read (and how big they are), and answers that stay as they were.

The views in Chromium, under ext-apps' host side: ``test_apps_browser.py``.
"""

from __future__ import annotations

import json
from html import unescape
from pathlib import Path
from typing import Any

import pytest
from hostd.core.config import config_from_mapping
from hostd.core.host import Host
from hostd.protocol.server import build_server
from hostd.web.rendering import STATIC
from hostd_testing import Client
from hostd_testing.calls import ok
from hostd_testing.clients import in_memory_client
from mcp.shared.exceptions import MCPError

pytestmark = pytest.mark.anyio

PLUGINS = ["memory", "tasks", "deep-thinking"]
VIEWS = {
    "list_tasks": "ui://hostd/tasks/board",
    "get_next_task": "ui://hostd/tasks/board",
    "read_memory": "ui://hostd/memory/memory",
    "search_memory": "ui://hostd/memory/memory",
    "get_session": "ui://hostd/deep-thinking/session",
    "sequential_thinking": "ui://hostd/deep-thinking/session",
}
APP_MIME = "text/html;profile=mcp-app"
MERMAID = STATIC / "vendor" / "mermaid" / "mermaid.min.js"


def listed(tools: Any) -> list[dict[str, Any]]:
    dumped: list[dict[str, Any]] = [
        t.model_dump(by_alias=True, exclude_none=True, mode="json") for t in tools.tools
    ]
    return dumped


async def test_tools_name_their_views_and_nothing_else_changes(tmp_path: Path) -> None:
    async with in_memory_client(PLUGINS, data_dir=tmp_path / "on") as client:
        with_views = listed(await client.list_tools())
    off = {"profiles": {"default": {"plugins": PLUGINS, "apps": False}}}
    async with in_memory_client(data_dir=tmp_path / "off", config=off) as client:
        without = listed(await client.list_tools())
        with pytest.raises(MCPError):  # no view to read
            await client.read_resource("ui://hostd/tasks/board")
    metas = {tool["name"]: tool.pop("_meta") for tool in with_views if "_meta" in tool}
    assert metas == {name: {"ui": {"resourceUri": uri}} for name, uri in VIEWS.items()}
    assert with_views == without  # the same tools, word for word, besides the metadata
    grown = sum(len(json.dumps({"_meta": meta}, separators=(",", ":"))) for meta in metas.values())
    assert grown <= 366  # six tools' {"_meta":{"ui":{"resourceUri":"ui://hostd/..."}}}: 61 bytes each


def test_the_server_declares_the_extension(tmp_path: Path) -> None:
    """SEP-2133's ``extensions`` map (sent where the negotiated revision has it); not with apps: false."""
    tasks: dict[str, Any] = {"io.modelcontextprotocol/tasks": {}}  # long calls as tasks: declared either way
    cases: list[tuple[bool, dict[str, Any]]] = [
        (True, {"io.modelcontextprotocol/ui": {}, **tasks}),
        (False, tasks),
    ]
    for apps, expected in cases:
        loaded = config_from_mapping(
            {"profiles": {"default": {"plugins": ["tasks"], "apps": apps}}},
            None,
            data_dir=tmp_path / str(apps),
        )
        host = Host(loaded)
        host.startup()
        try:
            declared = build_server(host).create_initialization_options().capabilities.extensions
        finally:
            host.shutdown()
        assert (declared or {}) == expected


async def documents(client: Client) -> dict[str, str]:
    read: dict[str, str] = {}
    for uri in sorted(set(VIEWS.values())):
        contents = (await client.read_resource(uri)).contents
        assert len(contents) == 1
        assert contents[0].mime_type == APP_MIME
        read[uri] = getattr(contents[0], "text", "")
    return read


async def test_each_view_is_self_contained_and_small(tmp_path: Path) -> None:
    async with in_memory_client(PLUGINS, data_dir=tmp_path) as client:
        read = await documents(client)
    for uri, html in read.items():
        head = unescape(html[: html.index("<style>")])
        assert "connect-src 'none'" in head
        assert "default-src 'none'" in head
        assert "src=" not in head
        assert "<link" not in html
        mermaid = "mermaid.min.js" in html or "securityLevel" in html
        assert mermaid == uri.endswith("/session"), uri  # Mermaid only where a diagram is drawn
        size = len(html.encode())
        if uri.endswith("/session"):
            size -= len(MERMAID.read_bytes())
        assert size < 150_000, (uri, size)


async def test_write_controls_follow_the_members_tools(tmp_path: Path) -> None:
    config = {
        "profiles": {
            "default": {
                "plugins": ["tasks", "memory"],
                "tools": {
                    "tasks": {"include": ["list_tasks", "get_task"], "prefix": "todo_"},
                    "memory": {"include": ["read_memory"]},
                },
            }
        }
    }
    async with in_memory_client(data_dir=tmp_path, config=config) as client:
        listed_tools = await client.list_tools()
        metas = {t.name: t.meta for t in listed_tools.tools if t.meta}
        assert metas == {
            "todo_list_tasks": {"ui": {"resourceUri": "ui://hostd/tasks/board"}},
            "read_memory": {"ui": {"resourceUri": "ui://hostd/memory/memory"}},
        }
        board = getattr((await client.read_resource("ui://hostd/tasks/board")).contents[0], "text", "")
        config_json = board[board.index('id="hostd-config"') :]
        config_json = config_json[config_json.index(">") + 1 : config_json.index("</script>")]
        tools = json.loads(config_json)["tools"]
        assert tools["list_tasks"] == "todo_list_tasks"
        assert tools["get_task"] == "todo_get_task"
        assert tools.get("update_task_status") is None
        assert tools.get("release_claim") is None
        with pytest.raises(MCPError):  # its tool is not served: as if there were no such view
            await client.read_resource("ui://hostd/deep-thinking/session")


async def test_answers_are_unchanged(tmp_path: Path) -> None:
    async with in_memory_client(["tasks"], data_dir=tmp_path) as client:
        await ok(client, "create_task", title="one")
        result = await client.call_tool("list_tasks", {})
        assert result.meta is None
        assert [block.type for block in result.content] == ["text"]


#: How wide a character of the graph's labels is drawn, in px per font px: a Chinese one a whole
#: em, a Latin one about half (0.55 em, DejaVu Sans' letters on average).
def _drawn_width(text: str, font_size: float) -> float:
    import unicodedata

    wide = sum(unicodedata.east_asian_width(char) in ("W", "F") for char in text)
    return (wide + (len(text) - wide) * 0.55) * font_size


async def test_graph_labels_stay_inside_their_boxes_in_chinese() -> None:
    """A memory's neighbourhood with long Chinese URIs and relation names: every URI fits its box
    and every relation the drawing, on the wide drawing and on the phone's (a Chinese character
    takes about two Latin letters' room)."""
    import re

    from hostd_memory.view_graph import NARROW_WIDTH, WIDTH, neighbourhood_svg

    long_uri = "project://客户反馈/按产品线分类的问题清单与影响范围评估摘要"
    relation = "依赖其中列出的全部迁移步骤和回滚方案都已经完成并经过负责人审阅"
    svg = str(
        neighbourhood_svg(
            long_uri,
            outgoing=[(long_uri + "/一", relation), ("project://beta", "depends_on")],
            incoming=[(long_uri + "/二", relation)],
            mentions=[],
            mentioned_by=["project://gamma"],
            url_of=lambda uri: "#" + uri,
            label="链接",
        )
    )
    for drawing, width in (("wide", WIDTH), ("narrow", NARROW_WIDTH)):
        body = svg[svg.index(f'class="graph {drawing}"') :]
        body = body[: body.index("</svg>")]
        boxes = re.findall(
            r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]*/><text x="([\d.]+)"[^>]*>([^<]*)<', body
        )
        assert len(boxes) == 5
        for x, box_width, middle, text in boxes:
            assert float(middle) == float(x) + float(box_width) / 2
            assert _drawn_width(text, 12) <= float(box_width) - 6, (drawing, text)
        relations = re.findall(
            r'<text x="([\d.]+)" y="[\d.]+"(?: text-anchor="(\w+)")? font-size="10"[^>]*>([^<]*)<', body
        )
        assert len(relations) == 4
        for x, anchor, text in relations:
            drawn = _drawn_width(text, 10)
            start = float(x) - (drawn if anchor == "end" else 0)
            assert start >= 0, (drawing, text)
            assert start + drawn <= width, (drawing, text)
        assert any(text.endswith("…") for _, _, text in relations)


async def test_a_view_larger_than_one_event_reads_whole_over_stateless_http(tmp_path: Path) -> None:
    """The session view (Mermaid inside) is over 1 MiB, more than the SDK's client takes in one
    server-sent event: a stateless server answers ``resources/read`` as plain JSON, and every other
    request as before (a tool call still streams)."""
    import httpx2
    from hostd_testing import HttpServer, write_config

    config = write_config(
        tmp_path,
        config={"profiles": {"default": {"plugins": ["deep-thinking"], "transport": {"stateless": True}}}},
    )
    with HttpServer.start(config) as server:
        async with server.client() as client:
            read = await client.read_resource("ui://hostd/deep-thinking/session")
            (content,) = read.contents
            assert content.mime_type == APP_MIME
            assert len(getattr(content, "text", "").encode()) > 1 << 20
            thought = {"thought": "One.", "thoughtNumber": 1, "totalThoughts": 1, "nextThoughtNeeded": False}
            answered = await ok(client, "sequential_thinking", **thought)
            assert answered["thoughtNumber"] == 1
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
        }
        kinds = {}
        for method, params in (
            ("resources/read", {"uri": "ui://hostd/deep-thinking/session"}),
            ("tools/list", {}),
        ):
            body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
            answer = httpx2.post(server.url, content=json.dumps(body), headers=headers, timeout=60)
            assert answer.status_code == 200, answer.text[:300]
            kinds[method] = answer.headers["content-type"].split(";")[0]
    assert kinds == {"resources/read": "application/json", "tools/list": "text/event-stream"}
