"""Views inside the chat (MCP Apps) in Debian's Chromium: a test host built on ext-apps' host side
shows each view, read from a real ``hostd serve`` (stdio through the test's client, and stateless
HTTP with a member's token), in a sandboxed frame; the view's ``tools/call`` requests go through
that same client, so through the host's call pipeline as the connection's member.

Screenshots (1280 and 390 px, en and zh, one dark) go to ``$HOSTD_SCREENSHOTS`` or a tmp dir.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import pytest
from anyio.from_thread import BlockingPortal, start_blocking_portal
from apps_support import SPEC_VERSION, bridge_bundle, host_page, result_json
from hostd.web.rendering import STATIC
from hostd_testing import Client
from hostd_testing.browser import DESKTOP, PHONE, Escapes, chromium, screenshot_dir
from hostd_testing.clients import HttpServer, served_client, write_config
from mcp_types import TextResourceContents

pytestmark = [pytest.mark.browser, pytest.mark.npm]

BOARD = "ui://hostd/tasks/board"
XSS_TITLE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
#: Long Chinese text, as people write it: a sentence repeated to the longest a field takes.
ZH_SENTENCE = "整理客户反馈并按产品线分类，标出最常见的十个问题和各自的影响范围，写成一页摘要交给负责人审阅。"
LONG_ZH_TITLE = (ZH_SENTENCE * 5)[:200]  # a task's title holds 200 characters at most
LONG_ZH_TEXT = (ZH_SENTENCE * 7)[:300]
LONG_ZH_LABELS = ["客户反馈整理与分类的长期跟踪工作项目标签名称", "产品线问题影响范围评估"]
LONG_ZH_TAGS = [
    "客户反馈整理与分类的长期跟踪工作项目标签名称、一直写到六十四个字符为止才算结束的很长的标签",
    "影响范围评估",
]
LONG_ZH_RELATION = "依赖其中列出的全部迁移步骤和回滚方案都已经完成并经过负责人审阅"
TOKENS = {
    "alice": "alice-apps-token-0123456789abcdef",
    "bob": "bob-apps-token-0123456789abcdef0",
    "reader": "reader-apps-token-0123456789abcdef",
}


@pytest.fixture(scope="module")
def bundle() -> str:
    return bridge_bundle()


def call(portal: BlockingPortal, client: Client, tool: str, **arguments: Any) -> dict[str, Any]:
    result = portal.call(client.call_tool, tool, arguments)
    assert not result.is_error, result
    envelope: dict[str, Any] = result.structured_content
    return envelope


def seed(portal: BlockingPortal, client: Client) -> dict[str, str]:
    """Tasks in every column: a claimed one, a failed one another waits on, an XSS title, Chinese."""
    ids: dict[str, str] = {}
    for key, title, priority in (
        ("todo", "Write the release notes", "P1"),
        ("urgent", "Fix the login timeout", "P0"),
        ("xss", XSS_TITLE, "P2"),
        ("zh", "整理客户反馈并分类，写成一页摘要", "P1"),
        ("doing", "Migrate the queue to PostgreSQL", "P0"),
        ("broken", "Nightly backup job", "P1"),
        ("done", "Set up the staging server", "P2"),
    ):
        ids[key] = call(portal, client, "create_task", title=title, priority=priority, labels=["ops"])[
            "task"
        ]["task_id"]
    ids["long"] = call(
        portal, client, "create_task", title=LONG_ZH_TITLE, priority="P1", labels=LONG_ZH_LABELS
    )["task"]["task_id"]
    call(portal, client, "update_task", task_id=ids["todo"], depends_on=[ids["broken"]])
    call(portal, client, "update_task_status", task_id=ids["doing"], new_status="in_progress")
    call(portal, client, "update_task_status", task_id=ids["broken"], new_status="failed")
    call(portal, client, "update_task_status", task_id=ids["done"], new_status="in_progress")
    call(portal, client, "update_task_status", task_id=ids["done"], new_status="completed")
    return ids


@contextmanager
def shown(
    portal: BlockingPortal,
    client: Client,
    bundle: str,
    html: str,
    tool: str,
    arguments: dict[str, Any],
    *,
    width: int,
    locale: str,
    theme: str = "light",
    resources: dict[str, str] | None = None,
) -> Iterator[tuple[Any, Any, Escapes]]:
    """The page, the view's frame and what escaped, with ``tool``'s answer handed to the view
    (``resources``: texts the host answers the view's reads of those URIs with, as a hostile
    server might, instead of asking the server)."""
    result = result_json(portal.call(client.call_tool, tool, arguments))

    def host_call_tool(params: str) -> str:
        asked = json.loads(params)
        answer = portal.call(client.call_tool, asked["name"], asked.get("arguments") or {})
        return json.dumps(result_json(answer))

    def host_read_resource(params: str) -> str:
        asked = json.loads(params)
        if resources and asked["uri"] in resources:
            return json.dumps({"contents": [{"uri": asked["uri"], "text": resources[asked["uri"]]}]})
        return json.dumps(result_json(portal.call(client.read_resource, asked["uri"])))

    with chromium() as browser:
        page = browser.new_page(viewport={"width": width, "height": DESKTOP["height"]})
        escapes = Escapes(page, "http://127.0.0.1:1")  # the view may reach nothing at all
        page.expose_function("hostCallTool", host_call_tool)
        page.expose_function("hostReadResource", host_read_resource)
        page.set_content(host_page(bundle))
        context = {
            "theme": theme,
            "locale": locale,
            "displayMode": "inline",
            "platform": "web",
            "containerDimensions": {"maxHeight": 4000},
        }
        page.evaluate("([h, i, r, c]) => window.showView(h, i, r, c)", [html, arguments, result, context])
        page.wait_for_function("window.viewReady")
        page.evaluate("window.viewReady")
        frame = page.frame_locator("iframe")
        yield page, frame, escapes


def frame_of(page: Any) -> Any:
    return next(f for f in page.frames if f is not page.main_frame)


def read_view(portal: BlockingPortal, client: Client, uri: str) -> str:
    read = portal.call(client.read_resource, uri)
    content = read.contents[0]
    assert isinstance(content, TextResourceContents)
    assert content.mime_type == "text/html;profile=mcp-app"
    return content.text


def check_board(page: Any, frame: Any, escapes: Escapes, ids: dict[str, str]) -> None:
    frame.locator(".task-card").first.wait_for()
    cards = frame.locator(".task-card")
    assert cards.count() == 8
    assert (
        frame.locator(f'.task-card[data-task="{ids["long"]}"] .task-title')
        .inner_text()
        .endswith(LONG_ZH_TITLE)
    )
    fits_the_width(page)
    assert frame.locator(f'.task-card[data-task="{ids["xss"]}"] .task-title').inner_text().endswith(XSS_TITLE)
    failed = frame.locator(f'.task-card[data-task="{ids["todo"]}"] .failed-blocker').inner_text()
    assert ids["broken"] in failed
    assert frame_of(page).evaluate("window.__pwned") is None
    assert frame.locator("img, iframe, object, embed").count() == 0


def fits_the_width(page: Any) -> None:
    """Nothing of the view reaches past the frame's right edge: long words wrap, drawings shrink."""
    frame = frame_of(page)
    width = frame.evaluate("document.documentElement.clientWidth")
    wider = frame.evaluate(
        """(width) => Array.from(document.querySelectorAll('body *'))
            .filter((e) => e.getBoundingClientRect().right > width + 1 && e.getClientRects().length)
            .map((e) => e.tagName + '.' + e.className + ':' + (e.textContent || '').slice(0, 30))""",
        width,
    )
    assert wider == [], wider
    assert frame.evaluate("document.documentElement.scrollWidth") <= width


def shoot(page: Any, shots: Path, name: str, *, ends: bool = False) -> None:
    """The whole view: the host's window as tall as the frame (which grows to its content); with
    ``ends``, its first and last 1,600 px only (a long view, in pictures one can look at)."""
    height = page.evaluate("document.documentElement.scrollHeight")
    width = page.viewport_size["width"]
    if not ends:
        page.set_viewport_size({"width": width, "height": max(300, height)})
        page.wait_for_timeout(300)
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)
        return
    # a window 1,600 px tall scrolled to each end (Chromium paints a frame tens of thousands of
    # pixels tall only near what is on screen)
    page.set_viewport_size({"width": width, "height": 1600})
    for part, top in (("top", 0), ("end", height)):
        page.evaluate("(top) => window.scrollTo(0, top)", top)
        page.wait_for_timeout(500)
        page.screenshot(path=str(shots / f"{name}-{part}.png"))


@contextmanager
def stdio_client(portal: BlockingPortal, config: Path, profile: str | None = None) -> Iterator[Client]:
    env = {"HOSTD_PROFILE": profile} if profile else None
    manager: AbstractContextManager[Client] = portal.wrap_async_context_manager(
        served_client(config, env=env)
    )
    with manager as client:
        yield client


def test_board_over_stdio(bundle: str, tmp_path: Path) -> None:
    shots = screenshot_dir(tmp_path / "shots")
    config = write_config(tmp_path, ["tasks"])
    with start_blocking_portal() as portal, stdio_client(portal, config) as client:
        listed = portal.call(client.list_tools)
        metas = {tool.name: tool.meta for tool in listed.tools if tool.meta}
        assert metas == {
            "list_tasks": {"ui": {"resourceUri": BOARD}},
            "get_next_task": {"ui": {"resourceUri": BOARD}},
        }
        ids = seed(portal, client)
        html = read_view(portal, client, BOARD)
        me = call(portal, client, "get_task", task_id=ids["todo"])["task"]["created_by"]
        for width, locale in (
            (DESKTOP["width"], "en-US"),
            (PHONE["width"], "en-US"),
            (DESKTOP["width"], "zh-CN"),
            (PHONE["width"], "zh-CN"),
        ):
            with shown(portal, client, bundle, html, "list_tasks", {}, width=width, locale=locale) as (
                page,
                frame,
                escapes,
            ):
                check_board(page, frame, escapes, ids)
                if locale == "zh-CN":
                    assert frame.locator("#col-pending").inner_text().startswith("待执行")
                shoot(page, shots, f"board-stdio-{locale[:2]}-{width}")
                escapes.assert_none()
        with shown(
            portal, client, bundle, html, "list_tasks", {}, width=PHONE["width"], locale="zh-CN", theme="dark"
        ) as (page, frame, escapes):
            check_board(page, frame, escapes, ids)
            shoot(page, shots, f"board-stdio-zh-{PHONE['width']}-dark")
            # a move on the board: claim the pending task, then see it with get_task
            frame.locator(f'.task-card[data-task="{ids["urgent"]}"] [data-action="claim"]').click()
            frame.locator(".notice").wait_for()
            assert page.evaluate("window.viewCalls") == ["update_task_status"]
            escapes.assert_none()
        task = call(portal, client, "get_task", task_id=ids["urgent"])["task"]
        assert (task["status"], task["claimed_by"]) == ("in_progress", me)


def test_board_over_stateless_http(bundle: str, tmp_path: Path) -> None:
    shots = screenshot_dir(tmp_path / "shots")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"alice: {TOKENS['alice']}\nbob: {TOKENS['bob']}\n"
        f"reader: {{token: {TOKENS['reader']}, profile: reader}}\n",
        encoding="utf-8",
    )
    config = write_config(
        tmp_path,
        config={
            "audit": {},
            "profiles": {
                "default": {
                    "plugins": ["tasks"],
                    "transport": {"type": "http", "tokens_file": str(tokens), "stateless": True},
                },
                "reader": {"plugins": ["tasks"], "tools": {"tasks": {"include": ["list_tasks", "get_task"]}}},
            },
        },
    )
    with HttpServer.start(config) as server, start_blocking_portal() as portal:

        def connect(member: str) -> AbstractContextManager[Client]:
            headers = {"Authorization": f"Bearer {TOKENS[member]}"}
            return portal.wrap_async_context_manager(server.client(headers=headers))

        with connect("alice") as alice:
            html = read_view(portal, alice, BOARD)
            show_empty_board(portal, alice, bundle, html, shots)
            ids = seed(portal, alice)
            show_paged_board(portal, alice, bundle, html, shots)
            with shown(
                portal, alice, bundle, html, "list_tasks", {}, width=DESKTOP["width"], locale="en"
            ) as (page, frame, escapes):
                check_board(page, frame, escapes, ids)
                frame.locator(f"#move-{ids['todo']}").select_option("blocked")
                frame.locator(f'.task-card[data-task="{ids["todo"]}"] [data-action="move"]').click()
                frame.locator(".notice").wait_for()
                # bob takes the task over while alice's view still shows it as hers: releasing it is
                # the tool's refusal, shown as the dashboard shows one
                with connect("bob") as bob:
                    call(portal, bob, "update_task_status", task_id=ids["doing"], new_status="pending")
                    call(portal, bob, "update_task_status", task_id=ids["doing"], new_status="in_progress")
                frame.locator(f'.task-card[data-task="{ids["doing"]}"] [data-action="release"]').click()
                refusal = frame.locator('.error[role="alert"]')
                refusal.wait_for()
                assert "bob" in refusal.inner_text()
                escapes.assert_none()
            task = call(portal, alice, "get_task", task_id=ids["todo"])["task"]
            assert task["status"] == "blocked"
            newest = call(portal, alice, "list_task_activity", limit=5)["entries"]
            moved = next(e for e in newest if e["task_id"] == ids["todo"] and e["event"] == "status")
            assert (moved["by"], moved["details"].get("to")) == ("alice", "blocked"), moved
            doing = call(portal, alice, "get_task", task_id=ids["doing"])["task"]
            assert (doing["status"], doing["claimed_by"]) == ("in_progress", "bob")
        with connect("reader") as reader:
            html = read_view(portal, reader, BOARD)
            with shown(
                portal, reader, bundle, html, "list_tasks", {}, width=PHONE["width"], locale="zh-CN"
            ) as (page, frame, escapes):
                check_board(page, frame, escapes, ids)
                assert frame.locator("button, select, textarea, input").count() == 0
                shoot(page, shots, "board-http-reader-zh-390")
                escapes.assert_none()
    print(f"screenshots in {shots} (ext-apps {SPEC_VERSION})")


MEMORY = "ui://hostd/memory/memory"
LONG_ZH_URI = "project://客户反馈/按产品线分类的问题清单与影响范围评估摘要"
XSS_CONTENT = (
    "# Release plan\n\nShip **v2** on Friday, see [the notes](https://example.invalid/notes).\n\n"
    "- check the `queue`\n- mention project://beta\n\n"
    '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\n\n'
    "[click](javascript:window.__pwned=3)\n"
)


def seed_memories(portal: BlockingPortal, client: Client) -> None:
    call(portal, client, "create_memory", uri="project://beta", content="Beta notes", tags=["team"])
    call(portal, client, "create_memory", uri="project://alpha", content="First draft", tags=["plan", "发布"])
    call(portal, client, "update_memory", uri="project://alpha", content=XSS_CONTENT)
    call(portal, client, "create_memory", uri="project://gamma", content="Depends on project://alpha")
    call(portal, client, "create_memory", uri=LONG_ZH_URI, content=LONG_ZH_TEXT, tags=LONG_ZH_TAGS)
    call(portal, client, "create_memory", uri="project://alone", content="Nothing links here, nor is linked.")
    call(
        portal,
        client,
        "link_memories",
        from_uri="project://alpha",
        to_uri=LONG_ZH_URI,
        relation=LONG_ZH_RELATION,
    )
    call(
        portal,
        client,
        "link_memories",
        from_uri="project://alpha",
        to_uri="project://beta",
        relation="depends_on",
    )


def test_memory_over_stdio_and_http(bundle: str, tmp_path: Path) -> None:
    shots = screenshot_dir(tmp_path / "shots")
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        f"alice: {TOKENS['alice']}\nreader: {{token: {TOKENS['reader']}, profile: reader}}\n",
        encoding="utf-8",
    )
    config = write_config(
        tmp_path,
        config={
            "profiles": {
                "default": {
                    "plugins": ["memory", "deep-thinking"],
                    "transport": {"type": "http", "tokens_file": str(tokens), "stateless": True},
                },
                "local": {"plugins": ["memory"]},
                "reader": {
                    "plugins": ["memory"],
                    "tools": {
                        "memory": {
                            "include": [
                                "read_memory",
                                "search_memory",
                                "get_memory_versions",
                                "diff_versions",
                            ]
                        }
                    },
                },
            },
        },
    )
    with start_blocking_portal() as portal:
        with stdio_client(portal, config, "local") as client:
            seed_memories(portal, client)
            html = read_view(portal, client, MEMORY)
            for width, locale in (
                (DESKTOP["width"], "en-US"),
                (PHONE["width"], "en-US"),
                (DESKTOP["width"], "zh-CN"),
                (PHONE["width"], "zh-CN"),
            ):
                with shown(
                    portal,
                    client,
                    bundle,
                    html,
                    "read_memory",
                    {"uri": "project://alpha"},
                    width=width,
                    locale=locale,
                ) as (page, frame, escapes):
                    frame.locator(".versions").wait_for()
                    content = frame.locator(".markdown")
                    assert content.locator("h3").inner_text() == "Release plan"
                    assert content.locator("li").count() == 2
                    assert "<script>window.__pwned=2</script>" in content.inner_text()
                    assert content.locator("a").count() == 1  # the https link; javascript: stays text
                    assert frame.locator(".link-lists").inner_text().count("project://") >= 3
                    assert frame_of(page).evaluate("window.__pwned") is None
                    assert frame.locator("img, iframe, object, embed, script[src]").count() == 0
                    frame.locator('[data-action="diff"]').first.click()
                    frame.locator("pre.diff .add").first.wait_for()
                    fits_the_width(page)
                    shoot(page, shots, f"memory-stdio-{locale[:2]}-{width}")
                    escapes.assert_none()
            show_more_memories(portal, client, bundle, html, shots)
            with shown(
                portal,
                client,
                bundle,
                html,
                "search_memory",
                {"query": "notes"},
                width=PHONE["width"],
                locale="zh-CN",
                theme="dark",
            ) as (page, frame, escapes):
                frame.locator(".hits li").first.wait_for()
                shoot(page, shots, "memory-stdio-search-zh-390-dark")
                frame.locator(".hits a", has_text="project://alpha").click()
                frame.locator(".versions").wait_for()
                escapes.assert_none()
        with HttpServer.start(config) as server:

            def connect(member: str) -> AbstractContextManager[Client]:
                headers = {"Authorization": f"Bearer {TOKENS[member]}"}
                return portal.wrap_async_context_manager(server.client(headers=headers))

            with connect("alice") as alice:
                html = read_view(portal, alice, MEMORY)
                before = call(portal, alice, "read_memory", uri="project://alpha")["memory"]["version"]
                with shown(
                    portal,
                    alice,
                    bundle,
                    html,
                    "read_memory",
                    {"uri": "project://alpha"},
                    width=DESKTOP["width"],
                    locale="en",
                ) as (page, frame, escapes):
                    frame.locator('[data-action="edit"]').click()
                    frame.locator("#edit-content").fill("Edited in the chat: **done**.")
                    frame.locator('[data-action="save"]').click()
                    frame.locator(".markdown strong", has_text="done").wait_for()
                    escapes.assert_none()
                versions = call(portal, alice, "get_memory_versions", uri="project://alpha")["versions"]
                assert versions[0]["version"] == before + 1
                assert versions[0]["author"] == "alice"
                # Over 1 MiB (Mermaid inside): a stateless server answers a read as plain JSON,
                # which the SDK's client takes whole (one server-sent event that size it refuses).
                session_view = read_view(portal, alice, SESSION)
                assert len(session_view.encode()) > 1 << 20
                show_sessions_over_http(portal, alice, bundle, shots, session_view)
            with connect("reader") as reader:
                html = read_view(portal, reader, MEMORY)
                with shown(
                    portal,
                    reader,
                    bundle,
                    html,
                    "read_memory",
                    {"uri": "project://alpha"},
                    width=PHONE["width"],
                    locale="zh-CN",
                ) as (page, frame, escapes):
                    frame.locator(".versions").wait_for()
                    assert frame.locator('[data-action="edit"], [data-action="save"], textarea').count() == 0
                    shoot(page, shots, "memory-http-reader-zh-390")
                    escapes.assert_none()


SESSION = "ui://hostd/deep-thinking/session"
XSS_THOUGHT = '<img src=x onerror="window.__pwned=1"> and "]--> X["<b>boom</b>"] click X call alert()'


def seed_session(portal: BlockingPortal, client: Client) -> str:
    def think(number: int, text: str, **extra: Any) -> dict[str, Any]:
        return call(
            portal,
            client,
            "sequential_thinking",
            thought=text,
            thoughtNumber=number,
            totalThoughts=4,
            nextThoughtNeeded=number < 4,
            **extra,
        )

    first = think(1, "Frame the problem: the **queue** stalls under load.")
    sid = first["session_id"]
    think(2, "Measure: p99 latency doubles at 200 rps.", session_id=sid, stage="analysis", tags=["perf"])
    think(3, XSS_THOUGHT, session_id=sid)
    think(2, "Revised: it doubles at 150 rps, not 200.", session_id=sid, isRevision=True, revisesThought=2)
    think(
        3,
        "分支：换用 PostgreSQL 的 SKIP LOCKED 队列。",
        session_id=sid,
        branchFromThought=2,
        branchId="pg-queue",
    )
    think(4, "Decide: batch the writes.", session_id=sid)
    return str(sid)


def test_session_over_stdio(bundle: str, tmp_path: Path) -> None:
    shots = screenshot_dir(tmp_path / "shots")
    config = write_config(tmp_path, ["deep-thinking"])
    with start_blocking_portal() as portal, stdio_client(portal, config) as client:
        sid = seed_session(portal, client)
        session = call(portal, client, "get_session", session_id=sid)["session"]
        # the default session, named in the server's language (en) when it was started
        stamp = session["created_at"][:16].replace("T", " ") + " UTC"
        assert (session["is_default"], session["name"]) == (True, f"Thinking session {stamp}")
        html = read_view(portal, client, SESSION)
        mermaid = (STATIC / "vendor" / "mermaid" / "mermaid.min.js").read_text(encoding="utf-8")
        assert mermaid in html
        assert len(html.replace(mermaid, "").encode()) < 150_000
        for width, locale in (
            (DESKTOP["width"], "en-US"),
            (PHONE["width"], "en-US"),
            (DESKTOP["width"], "zh-CN"),
            (PHONE["width"], "zh-CN"),
        ):
            with shown(
                portal, client, bundle, html, "get_session", {"session_id": sid}, width=width, locale=locale
            ) as (page, frame, escapes):
                frame.locator(".diagram svg").wait_for()
                assert frame.locator(".thought").count() == 6
                assert frame.locator(".thought.revision").count() == 1
                assert frame.locator("#branch-pg-queue .thought").count() == 1
                assert XSS_THOUGHT in frame.locator(".main-line").inner_text()
                assert frame_of(page).evaluate("window.__pwned") is None
                assert frame.locator(".timeline img, .timeline b").count() == 0
                check_diagram_words(frame, locale)
                named = "思考会话" if locale.startswith("zh") else "Thinking session"
                assert frame.locator("#session h1").inner_text() == f"{named} {stamp}"
                fits_the_width(page)
                shoot(page, shots, f"session-stdio-{locale[:2]}-{width}")
                escapes.assert_none()
        with shown(
            portal,
            client,
            bundle,
            html,
            "sequential_thinking",
            {
                "thought": "One more.",
                "thoughtNumber": 5,
                "totalThoughts": 5,
                "nextThoughtNeeded": False,
                "session_id": sid,
            },
            width=PHONE["width"],
            locale="zh-CN",
            theme="dark",
        ) as (page, frame, escapes):
            frame.locator(".diagram svg").wait_for()
            assert frame.locator(".thought").count() == 7
            shoot(page, shots, "session-stdio-zh-390-dark")
            escapes.assert_none()


# --- empty and long data, paging, the session over stateless HTTP ------------------------------


def show_empty_board(portal: BlockingPortal, client: Client, bundle: str, html: str, shots: Path) -> None:
    """A store with no task: the board says so, in the page's language, and offers nothing to do."""
    for width, locale, words in (
        (PHONE["width"], "zh-CN", "这个回答中没有任务。"),
        (DESKTOP["width"], "en", "No tasks"),
    ):
        with shown(portal, client, bundle, html, "list_tasks", {}, width=width, locale=locale) as (
            page,
            frame,
            escapes,
        ):
            frame.locator(".board .empty").wait_for()
            assert frame.locator(".board .empty").inner_text().startswith(words)
            assert frame.locator(".task-card, button, select").count() == 0
            fits_the_width(page)
            shoot(page, shots, f"board-empty-{locale[:2]}-{width}")
            escapes.assert_none()


def show_paged_board(portal: BlockingPortal, client: Client, bundle: str, html: str, shots: Path) -> None:
    """An answer of one page out of more (total > shown): the board says how many more the list has."""
    answer = call(portal, client, "list_tasks", limit=3)
    assert (len(answer["tasks"]), answer["total"]) == (3, 8)
    for width, locale, words in (
        (PHONE["width"], "zh-CN", "列表中还有 5 个"),
        (DESKTOP["width"], "en", "5 more in the list"),
    ):
        with shown(portal, client, bundle, html, "list_tasks", {"limit": 3}, width=width, locale=locale) as (
            page,
            frame,
            escapes,
        ):
            frame.locator(".task-card").first.wait_for()
            assert frame.locator(".task-card").count() == 3
            assert frame.locator(".board > .help").inner_text() == words
            fits_the_width(page)
            shoot(page, shots, f"board-paged-{locale[:2]}-{width}")
            escapes.assert_none()


def show_more_memories(portal: BlockingPortal, client: Client, bundle: str, html: str, shots: Path) -> None:
    """Long Chinese content, tags and a long Chinese relation; a memory with no link; one not found."""
    for width in (PHONE["width"], DESKTOP["width"]):
        with shown(
            portal, client, bundle, html, "read_memory", {"uri": LONG_ZH_URI}, width=width, locale="zh-CN"
        ) as (
            page,
            frame,
            escapes,
        ):
            frame.locator(".versions").wait_for()
            assert frame.locator(".markdown").inner_text().strip() == LONG_ZH_TEXT
            assert frame.locator(".meta .tags").inner_text().split() == sorted(LONG_ZH_TAGS)
            assert LONG_ZH_RELATION in frame.locator(".link-lists").inner_text()
            fits_the_width(page)
            shoot(page, shots, f"memory-long-zh-{width}")
            escapes.assert_none()
    for width, locale in ((DESKTOP["width"], "en"), (PHONE["width"], "zh-CN")):
        with shown(
            portal,
            client,
            bundle,
            html,
            "read_memory",
            {"uri": "project://alone"},
            width=width,
            locale=locale,
        ) as (page, frame, escapes):
            frame.locator(".versions").wait_for()
            assert frame.locator("svg").count() == 0  # nothing to draw
            none = "None" if locale == "en" else "无"
            assert frame.locator(".link-lists .empty").all_inner_texts() == [none] * 4
            fits_the_width(page)
            shoot(page, shots, f"memory-nolinks-{locale[:2]}-{width}")
            escapes.assert_none()
    with shown(
        portal,
        client,
        bundle,
        html,
        "read_memory",
        {"uri": "project://missing"},
        width=PHONE["width"],
        locale="zh-CN",
    ) as (page, frame, escapes):
        # the tool's refusal, shown as the dashboard shows one: message, hint, code
        refused = portal.call(client.call_tool, "read_memory", {"uri": "project://missing"})
        assert refused.is_error
        error = refused.structured_content["error"]
        alert = frame.locator('#memory-status .error[role="alert"]')
        alert.wait_for()
        assert alert.locator("p").all_inner_texts() == [error["message"], error["hint"], error["code"]]
        assert error["code"] == "NOT_FOUND"
        assert "project://missing" in error["message"]
        assert frame.locator("#memory").inner_text() == ""
        fits_the_width(page)
        shoot(page, shots, "memory-notfound-zh-390")
        escapes.assert_none()


def check_diagram_words(frame: Any, locale: str) -> None:
    """The diagram's own words (revises, revision, branch) are the page's, whatever the server's."""
    drawn = frame.locator(".diagram-box").inner_text()
    zh = locale.startswith("zh")
    wanted = ("修订", "分支 pg-queue") if zh else ("revises", "revision", "branch pg-queue")
    unwanted = ("revises", "revision", "branch") if zh else ("修订", "分支 pg-queue")  # a thought says 分支
    assert [word for word in wanted if word not in drawn] == [], drawn
    assert [word for word in unwanted if word in drawn] == [], drawn


def show_sessions_over_http(
    portal: BlockingPortal, client: Client, bundle: str, shots: Path, html: str
) -> None:
    """The session view over stateless HTTP with a member's token: a session of one long Chinese
    thought (started by that member), then one of more thoughts than the view asks for at once."""
    sid = call(
        portal,
        client,
        "sequential_thinking",
        thought=LONG_ZH_TEXT,
        thoughtNumber=1,
        totalThoughts=1,
        nextThoughtNeeded=False,
        session_id="long-zh",
        tags=LONG_ZH_LABELS,
    )["session_id"]
    for width, locale in ((PHONE["width"], "zh-CN"), (DESKTOP["width"], "en")):
        with shown(
            portal, client, bundle, html, "get_session", {"session_id": sid}, width=width, locale=locale
        ) as (page, frame, escapes):
            frame.locator(".diagram svg").wait_for()
            assert frame.locator(".thought").count() == 1
            assert frame.locator(".thought .markdown").inner_text().strip() == LONG_ZH_TEXT
            assert "alice" in frame.locator(".meta").inner_text()
            assert sorted(page.evaluate("window.viewCalls")) == ["get_session", "visualize_session"]
            fits_the_width(page)
            shoot(page, shots, f"session-http-one-{locale[:2]}-{width}")
            escapes.assert_none()
    many = 105
    for number in range(1, many + 1):
        call(
            portal,
            client,
            "sequential_thinking",
            thought=f"第 {number} 步：{ZH_SENTENCE}",
            thoughtNumber=number,
            totalThoughts=many,
            nextThoughtNeeded=number < many,
            session_id="many",
        )
    with shown(
        portal,
        client,
        bundle,
        html,
        "get_session",
        {"session_id": "many"},
        width=PHONE["width"],
        locale="zh-CN",
    ) as (page, frame, escapes):
        frame.locator(".diagram svg").wait_for()
        assert frame.locator(".thought").count() == 100  # the view's one page of thoughts
        assert frame.locator("#session h2 .count").inner_text() == f"({many})"
        assert frame.locator("section > .help").inner_text() == "这里只显示前 100 条思考。"
        diagram = frame.locator(".diagram-box")  # scrolls in its own box, the timeline right below
        assert diagram.evaluate("(e) => e.scrollHeight > e.clientHeight && e.clientHeight < 1400")
        fits_the_width(page)
        shoot(page, shots, "session-http-many-zh-390", ends=True)
        escapes.assert_none()


def graph_problems(frame: Any) -> list[str]:
    """What makes the memory view's link graph hard to read: a URI outside its box, a relation
    under a box or over another label, anything outside the drawing (the drawing on screen: the
    wide one, or the narrow one on a phone)."""
    problems: list[str] = frame.locator("svg.graph:visible").evaluate(
        """(svg) => {
            const edge = svg.getBoundingClientRect();
            const box = (e) => e.getBoundingClientRect();
            const meets = (a, b) => a.left < b.right - 1 && b.left < a.right - 1
                && a.top < b.bottom - 1 && b.top < a.bottom - 1;
            const inside = (a, b) => a.left >= b.left - 1 && a.right <= b.right + 1
                && a.top >= b.top - 1 && a.bottom <= b.bottom + 1;
            const rects = Array.from(svg.querySelectorAll('rect'));
            const texts = Array.from(svg.querySelectorAll('text'));
            const relations = texts.filter((t) => t.getAttribute('font-size') === '10');
            const problems = [];
            const say = (what, t) => problems.push(what + ': ' + t.textContent);
            for (const t of texts) if (!inside(box(t), edge)) say('outside the drawing', t);
            for (const t of texts.filter((t) => !relations.includes(t))) {
                if (!rects.some((r) => inside(box(t), box(r)))) say('outside its box', t);
            }
            for (const t of relations) {
                if (rects.some((r) => meets(box(t), box(r)))) say('under a box', t);
                if (texts.some((o) => o !== t && meets(box(t), box(o)))) say('over a label', t);
            }
            return problems;
        }"""
    )
    return problems


def drawn_texts(markup: str) -> dict[str, list[str]]:
    """The words of each drawing (``wide``, ``narrow``) in ``memory-graph://``'s answer."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(f'<svg xmlns="http://www.w3.org/2000/svg">{markup}</svg>')
    svg = "{http://www.w3.org/2000/svg}"
    return {
        drawing.get("class", "").split()[-1]: [text.text or "" for text in drawing.iter(f"{svg}text")]
        for drawing in root.findall(f"{svg}svg")
    }


def test_memory_graph_is_the_dashboards_drawing_and_legible(bundle: str, tmp_path: Path) -> None:
    """The memory view draws the neighbourhood the dashboard's page draws (view_graph.py's, read
    as the memory's memory-graph:// resource through the client), so long Chinese URIs and
    relations stay inside their boxes, relations beside the lines and nothing past the frame."""
    shots = Path(os.environ.get("HOSTD_GRAPH_SHOTS") or screenshot_dir(tmp_path / "shots"))
    shots.mkdir(parents=True, exist_ok=True)
    config = write_config(tmp_path, ["memory"])
    with start_blocking_portal() as portal, stdio_client(portal, config) as client:
        seed_memories(portal, client)
        html = read_view(portal, client, MEMORY)
        problems = {}
        for width, locale in (
            (PHONE["width"], "zh-CN"),
            (DESKTOP["width"], "zh-CN"),
            (PHONE["width"], "en"),
            (DESKTOP["width"], "en"),
        ):
            language = locale[:2]
            read = portal.call(client.read_resource, f"memory-graph://project/alpha?lang={language}")
            content = read.contents[0]
            assert isinstance(content, TextResourceContents)
            assert (content.uri, content.mime_type) == (
                f"memory-graph://project/alpha?lang={language}",
                "text/html",
            )
            expected = drawn_texts(content.text)
            assert sorted(expected) == ["narrow", "wide"]
            mentioned_by = "被提及" if language == "zh" else "mentioned by"
            assert mentioned_by in expected["wide"]
            with shown(
                portal,
                client,
                bundle,
                html,
                "read_memory",
                {"uri": "project://alpha"},
                width=width,
                locale=locale,
            ) as (page, frame, escapes):
                frame.locator("svg.graph:visible").wait_for()
                visible = frame.locator("svg.graph:visible")
                layout = "narrow" if width == PHONE["width"] else "wide"
                assert visible.get_attribute("class") == f"graph {layout}"
                for drawing in ("wide", "narrow"):  # the dashboard's two drawings, word for word
                    drawn = frame.locator(f"svg.graph.{drawing} text").all_text_contents()
                    assert drawn == expected[drawing]
                assert page.evaluate("window.viewReads") == [f"memory-graph://project/alpha?lang={language}"]
                assert frame.locator(".graph-box script, .graph-box foreignObject").count() == 0
                problems[(width, language)] = graph_problems(frame)
                fits_the_width(page)
                frame.locator(".versions").wait_for()
                shoot(page, shots, f"memory-graph-{language}-{width}")
                # a neighbour in the drawing opens in the view, through read_memory
                frame.locator('svg.graph:visible a:has(title:text-is("project://beta"))').click()
                frame.locator("#memory h1", has_text="project://beta").wait_for()
                escapes.assert_none()
        assert problems == {key: [] for key in problems}


#: A drawing no server of ours answers: what the view must keep inert if one did.
HOSTILE_GRAPH = (
    '<svg class="graph wide" viewBox="0 0 300 100" xmlns="http://www.w3.org/2000/svg"'
    ' xmlns:xlink="http://www.w3.org/1999/xlink" onload="window.__pwned=1">'
    "<script>window.__pwned=2</script>"
    '<foreignObject width="100" height="50"><img xmlns="http://www.w3.org/1999/xhtml" src="x"'
    ' onerror="window.__pwned=3"/></foreignObject>'
    '<a href="javascript:window.__pwned=4"><rect x="0" y="0" width="50" height="20"/><text>js</text></a>'
    '<a xlink:href="https://198.51.100.1/away"><text y="40">away</text></a>'
    '<a href="memory://project/beta"><title>project://beta</title><rect x="100" y="0" width="90"'
    ' height="20" onclick="window.__pwned=5"/><text x="110" y="15">beta</text></a>'
    '<image href="https://198.51.100.1/pixel.png" width="10" height="10"/>'
    '<use href="data:image/svg+xml,%3Csvg%3E%3C/svg%3E"/>'
    '<set attributeName="href" to="javascript:window.__pwned=6"/>'
    "<style>@import url(https://198.51.100.1/style.css);</style>"
    '<rect x="200" y="0" width="10" height="10" fill="url(https://198.51.100.1/p)" style="fill:red"/>'
    "</svg>"
)


def test_memory_graph_from_a_hostile_answer_stays_inert(bundle: str, tmp_path: Path) -> None:
    """The view takes a drawing's shapes, text and links to memories only: no script, event
    handler, foreign content, image, style or link elsewhere survives, and a memory link still
    opens that memory in the view through read_memory."""
    config = write_config(tmp_path, ["memory"])
    with start_blocking_portal() as portal, stdio_client(portal, config) as client:
        seed_memories(portal, client)
        html = read_view(portal, client, MEMORY)
        uri = "memory-graph://project/alpha?lang=en"
        with shown(
            portal,
            client,
            bundle,
            html,
            "read_memory",
            {"uri": "project://alpha"},
            width=DESKTOP["width"],
            locale="en",
            resources={uri: HOSTILE_GRAPH},
        ) as (page, frame, escapes):
            box = frame.locator(".graph-box")
            box.locator("svg.graph").wait_for()
            assert box.locator("text").all_text_contents() == ["js", "away", "beta"]
            kept = box.evaluate(
                """(box) => Array.from(box.querySelectorAll('*')).map((e) => e.localName + ':' +
                    Array.from(e.attributes).map((a) => a.name + '=' + a.value).sort().join(','))"""
            )
            assert kept == [
                "svg:class=graph wide,viewBox=0 0 300 100,xmlns:xlink=http://www.w3.org/1999/xlink,"
                "xmlns=http://www.w3.org/2000/svg",
                "a:",
                "rect:height=20,width=50,x=0,y=0",
                "text:",
                "a:",
                "text:y=40",
                "a:href=#",
                "title:",
                "rect:height=20,width=90,x=100,y=0",
                "text:x=110,y=15",
                "rect:height=10,width=10,x=200,y=0",
            ], kept
            for text in ("js", "away"):
                box.locator("a", has_text=text).click(force=True)
            box.locator("a", has_text="beta").click()
            frame.locator("#memory h1", has_text="project://beta").wait_for()
            assert frame_of(page).evaluate("window.__pwned") is None
            calls = page.evaluate("window.viewCalls")
            assert [name for name in calls if name != "get_memory_versions"] == ["read_memory"], calls
            escapes.assert_none()
