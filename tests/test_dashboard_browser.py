"""The tasks, thinking and members pages in Debian's Chromium, on SQLite and on PostgreSQL.

A host serving memory, deep-thinking and tasks is seeded through the tools (``dashboard_support``:
tasks with dependencies and a failed blocker, a session with a branch and a revision, hostile
text in titles, notes, thoughts and Mermaid labels) and serves the team dashboard on a real port.
Members sign in with their tokens in the page. What the pages write is checked with the plugin's
own ``get_task``. Screenshots of every page at 1280x800 and 390x844, in English and Chinese, go
to ``$HOSTD_SCREENSHOTS`` (else the test's tmp folder).
"""

from __future__ import annotations

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from dashboard_support import (
    LONG_URI_IN,
    LONG_URI_OUT,
    TOKENS,
    call_as,
    dashboard_app,
    dashboard_host,
    seed,
    write_tokens,
)
from hostd.core.host import Host
from hostd_testing.browser import (
    DESKTOP,
    PHONE,
    Escapes,
    focus_is_visible,
    focus_walk,
    screenshot_dir,
    served,
    signed_in,
)

pytestmark = pytest.mark.browser

DATABASE_ENV = "HOSTD_DASHBOARD_BROWSER_DATABASE_URL"


@dataclass
class Site:
    backend: str
    host: Host
    origin: str
    shots: Path

    def call(self, tool: str, member: str = "alice", **arguments: Any) -> dict[str, Any]:
        """A tool's answer, in a thread of its own (Playwright's sync API runs a loop in this one)."""
        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(anyio.run, lambda: call_as(self.host, member, tool, **arguments)).result()


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp(f"views-{request.param}")
    storage: dict[str, Any] = {}
    patch = pytest.MonkeyPatch()
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
        patch.setenv(DATABASE_ENV, request.getfixturevalue("postgres_server").create_database())
        storage = {"storage": {"url_env": DATABASE_ENV}}
    host = dashboard_host(folder / "data", storage)
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:
            pool.submit(anyio.run, seed, host).result()
        with served(dashboard_app(host, write_tokens(folder))) as origin:
            yield Site(request.param, host, origin, screenshot_dir(folder / "screenshots"))
    finally:
        host.shutdown()
        patch.undo()


PAGES = {
    "board": "/ui/tasks",
    "board-filtered": "/ui/tasks?label=backend&member=bob",
    "column": "/ui/tasks?status=pending",
    "task": "/ui/tasks/view?id=t-deploy",
    "task-details": "/ui/tasks/view?id=t-api",
    "task-hostile": "/ui/tasks/view?id=t-xss",
    "task-long": "/ui/tasks/view?id=t-long",
    "task-edit": "/ui/tasks/edit?id=t-api",
    "task-split": "/ui/tasks/split?id=t-api",
    "task-delete": "/ui/tasks/delete?id=t-db",
    "graph": "/ui/tasks/graph",
    "graph-task": "/ui/tasks/graph?id=t-deploy&completed=1",
    "sessions": "/ui/deep-thinking",
    "sessions-search": "/ui/deep-thinking?q=数据库",
    "session": "/ui/deep-thinking/view?id=plan",
    "session-hostile": "/ui/deep-thinking/view?id=other",
    "session-delete": "/ui/deep-thinking/delete?id=plan",
    "restore": "/ui/deep-thinking/restore",
    "column-empty": "/ui/tasks?status=blocked",
    "session-template": "/ui/deep-thinking/view?id=rca",
    "memories": "/ui/memory",
    "memory": "/ui/memory/view?uri=project%3A%2F%2Fdashboard",
    "memory-diff": "/ui/memory/diff?uri=project%3A%2F%2Fdashboard&v1=1&v2=2",
    "memory-edit": "/ui/memory/edit?uri=project%3A%2F%2Fdashboard",
    "members": "/ui/members",
    "overview": "/ui/",
}


# Drawing a page does not depend on the store: the page tests without a browser cover PostgreSQL.
@pytest.mark.parametrize("site", ["sqlite"], indirect=True)
def test_every_page_renders_in_both_languages_and_sizes(browser: Any, site: Site) -> None:
    for viewport in (DESKTOP, PHONE):
        with signed_in(browser, site.origin, TOKENS["alice"], viewport) as page:
            escapes = Escapes(page, site.origin)
            for language in ("en", "zh"):
                page.goto(f"{site.origin}/ui/?lang={language}")
                for name, path in PAGES.items():
                    answer = page.goto(site.origin + path)
                    assert answer is not None, (name, answer and answer.status)
                    assert answer.status == 200, (name, answer and answer.status)
                    assert page.locator("h1").is_visible()
                    if name in ("session", "session-hostile", "graph", "graph-task"):
                        page.wait_for_selector("pre.mermaid svg", timeout=15_000)
                    sideways = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
                    assert sideways[0] <= sideways[1], f"{name} scrolls sideways at {viewport['width']} px"
                    page.screenshot(
                        path=str(site.shots / f"{site.backend}-{language}-{name}-{viewport['width']}.png"),
                        full_page=name in ("board", "task", "session", "memory") and viewport is DESKTOP,
                    )
                assert page.locator("html").get_attribute("lang") == ("zh-CN" if language == "zh" else "en")
            escapes.assert_none()


def test_a_memorys_graph_shows_every_neighbour_whole_on_a_phone(browser: Any, site: Site) -> None:
    """Each neighbour of the graph is a link inside the screen, at phone and desktop width."""
    for viewport in (PHONE, DESKTOP):
        with signed_in(browser, site.origin, TOKENS["alice"], viewport) as page:
            page.goto(site.origin + PAGES["memory"])
            boxes = page.evaluate(
                """() => [...document.querySelectorAll('svg.graph a')]
                    .filter(a => a.getBoundingClientRect().width > 0)
                    .map(a => { const r = a.getBoundingClientRect();
                                return [a.textContent, r.left, r.right]; })"""
            )
            # One drawing is shown (the other is hidden), with both neighbours in it.
            assert len(boxes) == 2, boxes
            assert [any(uri in text for text, _, _ in boxes) for uri in (LONG_URI_OUT, LONG_URI_IN)] == [
                True,
                True,
            ]
            width = page.evaluate("window.innerWidth")
            for text, left, right in boxes:
                assert left >= 0, (viewport["width"], text, left, right)
                assert right <= width, (viewport["width"], text, left, right)


def test_every_page_answers_its_icon(browser: Any, site: Site) -> None:
    """No page asks for a file the server does not have (``/favicon.ico`` among them)."""
    with signed_in(browser, site.origin, TOKENS["alice"]) as page:
        missing: list[str] = []
        page.on("response", lambda answer: missing.append(answer.url) if answer.status >= 400 else None)
        for path in ("/ui/", "/ui/tasks", PAGES["memory"]):
            page.goto(site.origin + path)
            page.wait_for_load_state("networkidle")
        icon = page.evaluate("document.querySelector('link[rel=icon]').href")
        assert page.request.get(icon).status == 200
        assert page.request.get(f"{site.origin}/favicon.ico").status == 200
        assert missing == []


def test_moving_a_task_in_the_page_is_a_history_entry_by_the_member(browser: Any, site: Site) -> None:
    task_id = "t-deploy" if site.backend == "sqlite" else "t-long"
    with signed_in(browser, site.origin, TOKENS["bob"]) as page:
        page.goto(f"{site.origin}/ui/tasks")
        page.locator(f'li[data-task="{task_id}"] a.task-title').click()
        page.get_by_label("Move to").select_option("blocked")
        page.get_by_role("button", name="Change status").click()
        assert "Status changed to Blocked." in page.locator(".notice").inner_text()
        assert page.locator("tr.event-status td.who").first.inner_text() == "bob"
    got = site.call("get_task", task_id=task_id)
    assert got["task"]["status"] == "blocked"
    last = got["history"][-1]
    assert (last["event"], last["by"], last["details"]["to"]) == ("status", "bob", "blocked")
    site.call("update_task_status", task_id=task_id, new_status="pending")  # as it was


def test_a_refusal_is_the_tools_error_on_the_page(browser: Any, site: Site) -> None:
    with signed_in(browser, site.origin, TOKENS["alice"]) as page:
        page.goto(f"{site.origin}/ui/tasks/delete?id=t-db")
        page.get_by_role("button", name="Delete", exact=True).click()
        alert = page.locator("[role=alert]").inner_text()
        assert "t-deploy" in alert
        assert "CONFLICT" in alert
        page.goto(f"{site.origin}/ui/tasks/edit?id=t-api")
        page.get_by_label("Waits on (task ids, comma separated)").fill("t-ui")
        page.get_by_role("button", name="Save").click()
        assert "cycle" in page.locator("[role=alert]").inner_text().lower()
    assert site.call("get_task", task_id="t-db")["deleted_at"] is None
    assert site.call("get_task", task_id="t-api")["task"]["depends_on"] == []


def test_a_read_only_member_sees_no_write_action_and_a_forged_post_is_refused(
    browser: Any, site: Site
) -> None:
    with signed_in(browser, site.origin, TOKENS["reader"]) as page:
        for path in ("/ui/tasks/view?id=t-api", "/ui/deep-thinking/view?id=plan", "/ui/tasks", "/ui/members"):
            page.goto(site.origin + path)
            assert page.locator("main form[method=post]").count() == 0, path
            assert (
                page.locator(
                    "main a[href*='/edit?'], main a[href*='/delete?'], main a[href*='/export?']"
                ).count()
                == 0
            )
        csrf = page.locator("input[name=csrf]").first.get_attribute("value")
        assert csrf
        for action, fields in (
            ("tasks/status", {"task_id": "t-api", "status": "completed"}),
            ("tasks/release", {"task_id": "t-api"}),
            ("tasks/delete", {"task_id": "t-done"}),
            ("deep-thinking/delete", {"session_id": "plan"}),
        ):
            answer = page.request.post(f"{site.origin}/ui/{action}", form={**fields, "csrf": csrf})
            assert answer.status == 403, action
    assert site.call("get_task", task_id="t-api")["task"]["status"] == "in_progress"
    assert site.call("get_task", task_id="t-done")["deleted_at"] is None


def test_stored_payloads_stay_inert(browser: Any, site: Site) -> None:
    with signed_in(browser, site.origin, TOKENS["alice"]) as page:
        escapes = Escapes(page, site.origin)
        for path in (
            "/ui/tasks",
            "/ui/tasks/view?id=t-xss",
            "/ui/tasks/edit?id=t-xss",
            "/ui/tasks/graph",
            "/ui/tasks/graph?id=t-xss&completed=1",
            "/ui/deep-thinking/view?id=plan",
            "/ui/deep-thinking/view?id=other",
            "/ui/deep-thinking?q=onerror",
            "/ui/",
            "/ui/members",
        ):
            page.goto(site.origin + path)
            if "view?id=plan" in path or "view?id=other" in path or "/graph" in path:
                page.wait_for_selector("pre.mermaid svg", timeout=15_000)
            page.wait_for_load_state("networkidle")
            assert page.evaluate("typeof window.__pwned") == "undefined", path
            assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
            assert page.evaluate("document.querySelectorAll('a[href^=\"javascript:\" i]').length") == 0
            assert page.evaluate("document.querySelectorAll('main img, main iframe').length") == 0, path
        page.goto(f"{site.origin}/ui/tasks/view?id=t-xss")
        assert "<script>window.__pwned=1</script> 标题" in page.locator("h1").inner_text()
        assert "onerror" in page.locator(".notes").inner_text()  # shown as text
        page.goto(f"{site.origin}/ui/deep-thinking/view?id=other")
        page.wait_for_selector("pre.mermaid svg")
        assert page.locator("pre.mermaid svg").count() == 1
        page.goto(f"{site.origin}/ui/tasks/graph?id=t-xss&completed=1")
        page.wait_for_selector("pre.mermaid svg")
        assert "<script>window.__pwned=1</script>" in (
            page.locator("pre.mermaid svg").text_content() or ""
        )  # as text
        page.goto(f"{site.origin}/ui/tasks/graph")
        page.wait_for_selector("pre.mermaid svg")
        assert "t-deploy: Deploy to staging" in (page.locator("pre.mermaid svg").text_content() or "")
        escapes.assert_none()


def test_the_keyboard_reaches_every_action(browser: Any, site: Site) -> None:
    with signed_in(browser, site.origin, TOKENS["alice"]) as page:
        for path, expected in (
            (
                "/ui/tasks/view?id=t-api",
                ("Change status", "Release claim", "Set priority", "Edit", "Split…", "Delete…"),
            ),
            (
                "/ui/deep-thinking/view?id=plan",
                ("Download Markdown", "Download HTML", "Download JSON", "Delete…"),
            ),
            ("/ui/tasks", ("Apply", "Clear", "t-deploy")),
        ):
            page.goto(site.origin + path)
            reached = focus_walk(page, presses=300)
            actions = page.evaluate(
                """() => [...document.querySelectorAll(
                        'a[href], button, input:not([type=hidden]), textarea, select')]
                    .filter(e => e.offsetParent !== null).length"""
            )
            assert len(reached) == actions, (path, reached)
            assert reached[0].startswith("a:#main")  # the skip link first
            for name in expected:
                assert any(name in item for item in reached), (path, name)
            page.keyboard.press("Shift+Tab")
            assert focus_is_visible(page)
        # Move a task with the keyboard alone: the status select, then its button.
        page.goto(f"{site.origin}/ui/tasks/view?id=t-long")
        page.get_by_label("Move to").focus()
        page.keyboard.press("Tab")
        page.keyboard.press("Enter")
        assert "Status changed to" in page.locator(".notice").inner_text()
    assert site.call("get_task", task_id="t-long")["history"][-1]["by"] == "alice"
    site.call("update_task_status", task_id="t-long", new_status="pending")


def test_an_empty_store(browser: Any, tmp_path: Path) -> None:
    host = dashboard_host(tmp_path / "data", language="zh")
    shots = screenshot_dir(tmp_path / "screenshots")
    try:
        with served(dashboard_app(host, write_tokens(tmp_path))) as origin:
            for viewport in (DESKTOP, PHONE):
                with signed_in(browser, origin, TOKENS["alice"], viewport) as page:
                    for name, path, says in (
                        ("board", "/ui/tasks", "还没有任务"),
                        ("sessions", "/ui/deep-thinking", "还没有思考会话"),
                        ("members", "/ui/members", "暂无"),
                    ):
                        page.goto(origin + path)
                        assert says in page.content()
                        width = page.evaluate("document.documentElement.scrollWidth")
                        assert width <= viewport["width"] + 1, name
                        page.screenshot(path=str(shots / f"empty-zh-{name}-{viewport['width']}.png"))
    finally:
        host.shutdown()
