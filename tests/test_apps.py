"""Views inside the chat (MCP Apps) over the protocol, without a browser: which tools name a view
(``_meta.ui.resourceUri``) and nothing else changes in the list, ``apps: false``, the documents a
member may read (and how big they are), and answers that stay as they were.

The views in Chromium, under ext-apps' host side: ``test_apps_browser.py``.
"""

from __future__ import annotations

import json
import re
from html import escape, unescape
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


# --- one source: a view's pieces are the dashboard's macros ------------------------------------

PIECE_TAG = re.compile(r'<template data-(piece|if|each)="([^"]*)"(?: data-lang="(\w+)")?>|</template>')
MARK = re.compile(r"⟦([^⟧]*)⟧")


def _closing(text: str, start: re.Match[str]) -> re.Match[str]:
    """The ``</template>`` that closes the one ``start`` opens."""
    depth, at = 1, start.end()
    while True:
        found = PIECE_TAG.search(text, at)
        assert found is not None, text[start.start() : start.start() + 200]
        depth += 1 if found.group(1) else -1
        at = found.end()
        if depth == 0:
            return found


def piece_of(document: str, name: str, language: str = "en") -> str:
    for found in PIECE_TAG.finditer(document):
        if found.group(1) == "piece" and found.group(2) == name and found.group(3) == language:
            return document[found.end() : _closing(document, found).start()]
    raise AssertionError(f"no <template data-piece={name!r}> in {language}")


def _present(value: Any) -> bool:
    return value not in (None, "", False, 0, [], {})


def _lookup(scope: dict[str, Any], path: str) -> Any:
    cut = path.rfind("[]")
    value = scope[""] if cut < 0 else scope[path[: cut + 2]]
    rest = path if cut < 0 else path[cut + 3 :]
    for key in rest.split(".") if rest else []:
        value = None if value is None else (value[int(key)] if isinstance(value, list) else value.get(key))
    return value


def _shown(scope: dict[str, Any], spec: str) -> str:
    from hostd.web.rendering import markdown, when

    path, *pipes = spec.split("|")
    value = _lookup(scope, path)
    for pipe in pipes:
        name, _, argument = pipe.partition(":")
        if name == "markdown":
            return str(markdown(value))
        if name == "when":
            value = when(value)
        elif name == "length":
            value = len(value or [])
        elif name == "join":
            value = argument.join(value or [])
        elif name == "default":
            value = value if _present(value) else argument
        else:
            assert name == "flag", name
            value = argument if _present(value) else ""
    if isinstance(value, list):
        value = ", ".join(value)
    return "" if value is None else escape(str(value))


def fill(text: str, scope: dict[str, Any], tests: dict[str, Any]) -> str:
    """What ``view.js``'s ``view.piece`` makes of a piece for a record, as HTML text: parts kept
    where their field (or named test) holds, repeated parts once per item, each mark its value."""
    drawn: list[str] = []
    at = 0
    while (found := PIECE_TAG.search(text, at)) is not None:
        drawn.append(MARK.sub(lambda m: _shown(scope, m.group(1)), text[at : found.start()]))
        end = _closing(text, found)
        inner, kind, name = text[found.end() : end.start()], found.group(1), found.group(2)
        if kind == "if":
            negated, name = name.startswith("!"), name.lstrip("!")
            holds = tests[name](scope[""]) if name in tests else _present(_lookup(scope, name))
            if holds != negated:
                drawn.append(fill(inner, scope, tests))
        else:
            for item in _lookup(scope, name) or []:
                drawn.append(fill(inner, {**scope, name + "[]": item}, tests))
        at = end.end()
    drawn.append(MARK.sub(lambda m: _shown(scope, m.group(1)), text[at:]))
    return "".join(drawn)


def same_markup(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r">\s+<", "><", html)).strip()


def dashboard_macros(plugin: str, module: str, template: str) -> Any:
    """The dashboard's macros of a plugin, as its pages call them, for a member who opens no page
    (a view links to none) reading English."""
    import importlib

    from hostd.web.rendering import environment
    from hostd_errors import Text

    folder = Path(importlib.import_module(module).__file__ or "").parent / "templates"
    env = environment({plugin: folder})
    return env.get_template(f"{plugin}/{template}").make_module(
        {
            "t": lambda en, zh: Text(en=en, zh=zh).render("en"),
            "opens": lambda path="", other=None: False,
            "url": lambda path="", **query: "#",
            "can": lambda tool: True,
        }
    )


async def test_a_views_pieces_are_the_dashboards_macros(tmp_path: Path) -> None:
    """One source: the board's card, the session's timeline and the memory's links in the view
    document are the dashboard's macros (drawn with slots); filled with a record, each is the
    markup the dashboard's macro draws for that record."""
    async with in_memory_client(PLUGINS, data_dir=tmp_path) as client:
        read = await documents(client)
        broken = (await ok(client, "create_task", title="Nightly <b>backup</b>", priority="P1"))["task"]
        blocked = await ok(
            client,
            "create_task",
            title="Ship",
            priority="P0",
            labels=["ops", "发布"],
            depends_on=[broken["task_id"]],
        )
        await ok(client, "create_task", title="Waits", depends_on=[blocked["task"]["task_id"]])
        await ok(client, "create_task", title="Part", parent_id=blocked["task"]["task_id"])
        await ok(client, "update_task_status", task_id=broken["task_id"], new_status="in_progress")
        await ok(client, "update_task_status", task_id=broken["task_id"], new_status="failed")
        tasks = (await ok(client, "list_tasks", limit=50))["tasks"]
        first = await ok(
            client,
            "sequential_thinking",
            thought="Frame **it**",
            thoughtNumber=1,
            totalThoughts=2,
            nextThoughtNeeded=True,
        )
        sid = first["session_id"]
        await ok(
            client,
            "sequential_thinking",
            thought="<i>x</i>",
            thoughtNumber=2,
            totalThoughts=2,
            nextThoughtNeeded=True,
            session_id=sid,
            stage="analysis",
            tags=["perf"],
        )
        await ok(
            client,
            "sequential_thinking",
            thought="Again",
            thoughtNumber=1,
            totalThoughts=2,
            nextThoughtNeeded=False,
            session_id=sid,
            isRevision=True,
            revisesThought=1,
        )
        await ok(
            client,
            "sequential_thinking",
            thought="分支：另一条路",
            thoughtNumber=2,
            totalThoughts=2,
            nextThoughtNeeded=False,
            session_id=sid,
            branchFromThought=1,
            branchId="other-way",
        )
        thoughts = (await ok(client, "get_session", session_id=sid))["thoughts"]
        await ok(client, "create_memory", uri="project://beta", content="Beta")
        await ok(
            client, "create_memory", uri="project://alpha", content="See project://beta and project://nowhere"
        )
        await ok(
            client,
            "link_memories",
            from_uri="project://alpha",
            to_uri="project://beta",
            relation="depends_on",
        )
        relations = [
            (await ok(client, "read_memory", uri=uri))["relations"]
            for uri in ("project://alpha", "project://beta")
        ]
    assert len(tasks) == 4
    assert len(thoughts) == 4
    failed = {task["task_id"] for task in tasks if task["status"] == "failed"}
    tasks_macros = dashboard_macros("tasks", "hostd_tasks", "_macros.html")
    card = piece_of(read["ui://hostd/tasks/board"], "card")
    waits_on = {
        "waits_on": lambda c: (
            not c["waits_on_failed"] and bool(c["task"]["depends_on"]) and c["task"]["status"] == "pending"
        )
    }
    for task in tasks:
        record = {"task": task, "waits_on_failed": [d for d in task["depends_on"] if d in failed]}
        expected = same_markup(str(tasks_macros.task_card(record, lease=True)))
        assert same_markup(fill(card, {"": record}, waits_on)) == expected, task["title"]
    assert "failed-blocker" in card  # every part is in the piece, drawn or not

    thought_macros = dashboard_macros("deep-thinking", "hostd_deep_thinking", "_macros.html")
    timeline = piece_of(read["ui://hostd/deep-thinking/session"], "timeline")
    main = [t for t in thoughts if not t["branch_id"]]
    branches: dict[str, dict[str, Any]] = {}
    for t in thoughts:
        if t["branch_id"]:
            branch = branches.setdefault(
                t["branch_id"],
                {"id": t["branch_id"], "from_sequence": t["branch_from_sequence"], "thoughts": []},
            )
            branch["thoughts"].append(t)
    expected = same_markup(
        str(thought_macros.timeline_section(len(thoughts), main, list(branches.values()), caller=lambda: ""))
    )
    record = {"matching_thoughts": len(thoughts), "main": main, "branches": list(branches.values())}
    no_thoughts = {"no_thoughts": lambda r: not r["main"] and not r["branches"]}
    assert same_markup(fill(timeline, {"": record}, no_thoughts)) == expected
    assert 'class="thought card revision"' in expected  # a revision, a stage, tags and a branch are drawn
    assert "branch-other-way" in expected

    memory_macros = dashboard_macros("memory", "hostd_memory", "_macros.html")
    links = piece_of(read["ui://hostd/memory/memory"], "links")
    for found in relations:
        expected = same_markup(str(memory_macros.memory_links(found, None)))
        assert same_markup(fill(links, {"": {"relations": found, "graph": None}}, {})) == expected
    # and the pieces are in both languages
    assert "领取人" in piece_of(read["ui://hostd/tasks/board"], "card", "zh")


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
