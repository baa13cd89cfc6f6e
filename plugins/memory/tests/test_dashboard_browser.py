"""The memory pages of the dashboard in Debian's Chromium, on SQLite and on PostgreSQL.

A host with hundreds of memories (links, versions, authors, a Chinese one, hostile ones) serves
the dashboard on a real port; members sign in with their tokens as on a team server (``alice``
writes, ``reader`` has a read-only profile). What the pages write is checked through the
plugin's own ``read_memory``. Screenshots of every page at 1280x800 and 390x844, in English and
Chinese, go to ``$HOSTD_SCREENSHOTS`` (else the test's tmp folder).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostd_testing import (
    DESKTOP,
    PHONE,
    Escapes,
    PluginHost,
    focus_is_visible,
    focus_walk,
    make_host,
    screenshot_dir,
    served,
    signed_in,
)
from memory_support import TEAM_DATABASE_ENV

pytestmark = pytest.mark.browser

ALICE = "alice-token-0123456789abc"
READER = "reader-token-0123456789abc"
CHINESE_URI = "project://deploy/rollback"
CHINESE = (
    "# 部署流水线的回滚步骤\n\n先冻结发布，再回滚数据库迁移，最后通知值班同事。"
    "\n\n- 检查 `alembic` 版本\n- 确认备份"
)
LONG_URI = "notes://long/chinese"
LONG_CHINESE = "## 长文本\n\n" + "这是一段很长的中文说明，用来检查页面在窄屏上的换行与排版是否正常。" * 60
HOSTILE_URI = "hostile://payloads"
HOSTILE = (
    "<script>alert('script')</script>\n\n"
    "<img src=x onerror=\"alert('img')\">\n\n"
    "[click me](javascript:alert('link'))\n\n"
    "[elsewhere](http://evil.example/steal)\n\n"
    '<a href="javascript:alert(1)">raw link</a> <iframe src="http://evil.example"></iframe>\n\n'
    '```\n"]-->X[<img src=x onerror=alert(9)>]\n```'
)
SEEDED = 300
READONLY_TOOLS = [
    "read_memory",
    "list_memories",
    "search_memory",
    "get_memory_stats",
    "get_memory_versions",
    "diff_versions",
    "list_rollbacks",
]


@dataclass
class Site:
    """A seeded host and its dashboard on a real port."""

    backend: str
    host: PluginHost
    origin: str
    shots: Path

    def answer(self, tool: str, member: str | None = None, **arguments: Any) -> tuple[dict[str, Any], bool]:
        """The tool's envelope, called in-process as ``member``. In a thread of its own: Playwright's
        sync API keeps an event loop running in the test's thread."""

        async def run() -> tuple[dict[str, Any], bool]:
            return await self.host.call(tool, arguments, member=member)

        with ThreadPoolExecutor(max_workers=1) as pool:
            return pool.submit(anyio.run, run).result()

    def call(self, tool: str, member: str | None = None, **arguments: Any) -> dict[str, Any]:
        envelope, is_error = self.answer(tool, member, **arguments)
        assert not is_error, envelope
        return envelope


def seed(site: Site) -> None:
    """Hundreds of memories by two members, every fifth with three versions, links between them."""
    site.call("create_memory", "alice", uri=CHINESE_URI, content=CHINESE, tags=["部署", "运维"], priority=1)
    site.call("create_memory", "bob", uri=LONG_URI, content=LONG_CHINESE, tags=["长文"])
    site.call(
        "create_memory",
        "mallory",
        uri=HOSTILE_URI,
        content=HOSTILE,
        tags=["<b>tag</b>"],
        disclosure='"><script>alert("disclosure")</script>',
    )
    for index in range(SEEDED):
        author = "alice" if index % 2 else "bob"
        uri = f"notes://topic{index % 7}/n{index:03d}"
        body = f"Note {index} about topic {index % 7}: deployment, caches and queues.\n\nSee notes://topic0/n000."
        site.call("create_memory", author, uri=uri, content=body, tags=[f"t{index % 5}"], priority=index % 10)
        if index % 5 == 0:
            site.call("update_memory", "alice", uri=uri, append=True, content="Second thoughts.")
            site.call("update_memory", "bob", uri=uri, content=body + "\n\nRewritten by bob.")
        if index % 3 == 0 and index:
            site.call(
                "link_memories",
                author,
                from_uri=uri,
                to_uri=f"notes://topic{(index - 1) % 7}/n{index - 1:03d}",
                relation="follows",
            )
    site.call(
        "link_memories", "alice", from_uri=CHINESE_URI, to_uri="notes://topic0/n000", relation="depends on"
    )
    site.call(
        "link_memories",
        "mallory",
        from_uri=HOSTILE_URI,
        to_uri=CHINESE_URI,
        relation="<img src=x onerror=alert(5)>",
    )


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def site(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    folder = tmp_path_factory.mktemp(f"dashboard-{request.param}")
    extra: dict[str, Any] = {}
    patch = pytest.MonkeyPatch()
    if request.param == "postgres":
        pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
        server = request.getfixturevalue("postgres_server")
        patch.setenv(TEAM_DATABASE_ENV, server.create_database())
        extra = {"storage": {"url_env": TEAM_DATABASE_ENV}}
    tokens = folder / "tokens.yaml"
    tokens.write_text(f"alice: {ALICE}\nreader: {{token: {READER}, profile: readonly}}\n", encoding="utf-8")
    raw = {
        "language": "en",
        "profiles": {
            "default": {"plugins": ["memory"]},
            "readonly": {"plugins": ["memory"], "tools": {"memory": {"include": READONLY_TOOLS}}},
        },
        **extra,
    }
    try:
        with (
            make_host(data_dir=folder / "data", config=raw, profile="default", migrate=True) as host,
            served(host.dashboard(tokens)) as origin,
        ):
            built = Site(request.param, host, origin, screenshot_dir(folder / "screenshots"))
            seed(built)
            yield built
    finally:
        patch.undo()


def memory_url(site: Site, uri: str, path: str = "/view") -> str:
    from urllib.parse import urlencode

    return f"{site.origin}/ui/memory{path}?{urlencode({'uri': uri})}"


# Drawing a page does not depend on the store: the page tests without a browser cover PostgreSQL.
@pytest.mark.parametrize("site", ["sqlite"], indirect=True)
def test_every_page_renders_in_both_languages_and_sizes(browser: Any, site: Site) -> None:
    pages = {
        "overview": f"{site.origin}/ui/",
        "list": f"{site.origin}/ui/memory",
        "search": f"{site.origin}/ui/memory?q=回滚",
        "filtered": f"{site.origin}/ui/memory?tags=t1&author=alice",
        "memory": memory_url(site, CHINESE_URI),
        "long": memory_url(site, LONG_URI),
        "versions": memory_url(site, "notes://topic0/n000"),
        "diff": f"{site.origin}/ui/memory/diff?uri=notes://topic0/n000&v1=1&v2=3",
        "edit": memory_url(site, CHINESE_URI, "/edit"),
        "delete": memory_url(site, LONG_URI, "/delete"),
    }
    for viewport in (DESKTOP, PHONE):
        with signed_in(browser, site.origin, ALICE, viewport) as page:
            escapes = Escapes(page, site.origin)
            for language in ("en", "zh"):
                page.goto(f"{site.origin}/ui/?lang={language}")
                for name, url in pages.items():
                    answer = page.goto(url)
                    assert answer is not None, (name, answer and answer.status)
                    assert answer.status == 200, (name, answer and answer.status)
                    assert page.locator("h1").is_visible()
                    width = page.evaluate("document.documentElement.scrollWidth")
                    assert width <= viewport["width"] + 1, (
                        f"{name} scrolls sideways at {viewport['width']} px"
                    )
                    page.screenshot(
                        path=str(site.shots / f"{site.backend}-{language}-{name}-{viewport['width']}.png"),
                        full_page=name == "memory" and viewport is DESKTOP,
                    )
                assert page.locator("html").get_attribute("lang") == ("zh-CN" if language == "zh" else "en")
            escapes.assert_none()


def test_overview_counts_and_feed_link_to_items(browser: Any, site: Site) -> None:
    with signed_in(browser, site.origin, ALICE) as page:
        counts = page.locator(".counts li")
        assert counts.count() == 4
        assert (
            counts.filter(has=page.locator(".label", has_text=re.compile(r"^Total$")))
            .locator(".value")
            .inner_text()
            == f"{SEEDED + 3:,}"
        )
        feed = page.locator(".feed li")
        assert feed.count() >= 20
        first = feed.first.locator("a")
        target = first.get_attribute("href")
        assert target is not None
        assert target.startswith("/ui/memory/view?uri=")
        first.click()
        assert page.locator(".meta").is_visible()


def test_a_chinese_search_finds_its_memory(browser: Any, site: Site) -> None:
    with signed_in(browser, site.origin, ALICE) as page:
        page.goto(f"{site.origin}/ui/memory")
        for words in ("回滚步骤", "回滚", "值班"):
            page.get_by_label("Search").fill(words)
            page.get_by_label("Search").press("Enter")
            page.wait_for_url("**/ui/memory?q=*")
            first = page.locator("table.memories tbody tr").first.locator("a.uri")
            assert first.inner_text() == CHINESE_URI, words
        # The same ranking as the tool: the page's first hits are search_memory's.
        hits = site.call("search_memory", query="部署", limit=5)["hits"]
        page.goto(f"{site.origin}/ui/memory?q=部署")
        shown = page.locator("table.memories a.uri").all_inner_texts()[:5]
        assert shown == [hit["uri"] for hit in hits]


def test_paging_and_filters(browser: Any, site: Site) -> None:
    with signed_in(browser, site.origin, ALICE) as page:
        page.goto(f"{site.origin}/ui/memory?author=bob&tags=t0")
        rows = page.locator("table.memories tbody tr")
        assert rows.count() == 25
        first_page = rows.locator("a.uri").all_inner_texts()
        page.get_by_role("link", name="Next page »").click()
        second_page = page.locator("table.memories a.uri").all_inner_texts()
        assert second_page
        assert not set(first_page) & set(second_page)
        listed = site.call("list_memories", author="bob", tags=["t0"], limit=50)["memories"]
        assert [m["memory"]["uri"] for m in listed] == (first_page + second_page)[: len(listed)]
        page.goto(f"{site.origin}/ui/memory?updated_after=not-a-date")
        assert "updated_after is not an ISO 8601 date" in page.locator(".error").inner_text()


def test_editing_in_the_page_makes_a_version_by_the_member(browser: Any, site: Site) -> None:
    uri = "notes://topic3/n010"
    before = site.call("read_memory", uri=uri)["memory"]
    with signed_in(browser, site.origin, ALICE) as page:
        page.goto(memory_url(site, uri))
        page.get_by_role("link", name="Edit").click()
        page.get_by_label("Content (Markdown)").fill("Edited in the dashboard: 已在网页中修改。")
        page.get_by_label("Tags, separated by commas").fill("网页, edited")
        page.get_by_role("button", name="Save").click()
        assert f"Saved as version {before['version'] + 1}." in page.locator(".notice").inner_text()
    after = site.call("read_memory", uri=uri)
    assert after["content"] == "Edited in the dashboard: 已在网页中修改。"
    assert after["memory"]["version"] == before["version"] + 1
    assert after["memory"]["author"] == "alice"
    assert sorted(after["memory"]["tags"]) == ["edited", "网页"]
    assert after["recent_versions"][0]["author"] == "alice"


def test_a_stale_edit_keeps_the_text_instead_of_overwriting(browser: Any, site: Site) -> None:
    uri = "notes://topic4/n011"
    with signed_in(browser, site.origin, ALICE) as page:
        page.goto(memory_url(site, uri, "/edit"))
        site.call("update_memory", "bob", uri=uri, content="bob got there first")
        page.get_by_label("Content (Markdown)").fill("alice's late edit")
        page.get_by_role("button", name="Save").click()
        assert "Someone saved version" in page.locator(".error").inner_text()
        assert page.get_by_label("Content (Markdown)").input_value() == "alice's late edit"
    assert site.call("read_memory", uri=uri)["content"] == "bob got there first"


def test_roll_back_and_delete_from_the_page(browser: Any, site: Site) -> None:
    uri = "notes://topic5/n005"  # index 5: three versions
    with signed_in(browser, site.origin, ALICE) as page:
        page.goto(memory_url(site, uri))
        page.get_by_role("button", name="Roll back to this (1)").click()
        assert "Restored version 1 as version 4." in page.locator(".notice").inner_text()
        restored = site.call("read_memory", uri=uri)["memory"]
        assert (restored["version"], restored["author"]) == (4, "alice")
        page.get_by_role("link", name="Delete…").click()
        assert "/ui/memory/delete?" in page.url  # a confirmation first
        page.get_by_role("button", name="Delete").click()
        assert f"Deleted {uri}." in page.locator(".notice").inner_text()
    assert site.call("list_memories", domain="notes", limit=100)["memories"]  # others untouched
    envelope, is_error = site.answer("read_memory", uri=uri)
    assert is_error
    assert envelope["error"]["code"] == "NOT_FOUND"


def test_a_read_only_member_sees_no_write_action_and_a_forged_post_is_refused(
    browser: Any, site: Site
) -> None:
    uri = "notes://topic6/n013"
    before = site.call("read_memory", uri=uri)["memory"]["version"]
    with signed_in(browser, site.origin, READER) as page:
        page.goto(memory_url(site, uri))
        assert page.locator(".meta").is_visible()
        for name in ("Edit", "Delete…"):
            assert page.get_by_role("link", name=name).count() == 0
        assert page.locator("form[action$='/rollback']").count() == 0
        csrf = page.locator("input[name=csrf]").first.get_attribute("value")
        assert csrf
        for action, fields in (
            ("edit", {"uri": uri, "content": "forged", "tags": "", "version": str(before)}),
            ("rollback", {"uri": uri, "version": "1"}),
            ("delete", {"uri": uri}),
        ):
            answer = page.request.post(f"{site.origin}/ui/memory/{action}", form={**fields, "csrf": csrf})
            assert answer.status == 403, action
        refused = page.goto(memory_url(site, uri, "/edit"))
        assert refused is not None
        assert refused.status == 403
    assert site.call("read_memory", uri=uri)["memory"]["version"] == before


def test_a_post_without_the_csrf_token_is_refused(browser: Any, site: Site) -> None:
    uri = "notes://topic1/n001"
    before = site.call("read_memory", uri=uri)["memory"]["version"]
    with signed_in(browser, site.origin, ALICE) as page:
        for form in (
            {"uri": uri, "content": "x", "tags": "", "version": str(before)},
            {"uri": uri, "csrf": ""},
        ):
            answer = page.request.post(f"{site.origin}/ui/memory/edit", form=form)
            assert answer.status == 403
    assert site.call("read_memory", uri=uri)["memory"]["version"] == before


def test_stored_payloads_stay_inert_everywhere(browser: Any, site: Site) -> None:
    with signed_in(browser, site.origin, ALICE) as page:
        escapes = Escapes(page, site.origin)
        for url in (
            memory_url(site, HOSTILE_URI),
            memory_url(site, HOSTILE_URI, "/edit"),
            memory_url(site, HOSTILE_URI, "/delete"),
            memory_url(site, CHINESE_URI),  # the hostile memory links here: its URI in the graph
            f"{site.origin}/ui/memory?q=alert",
            f"{site.origin}/ui/memory?tags=<b>tag</b>",
            f"{site.origin}/ui/",
        ):
            page.goto(url)
            page.wait_for_load_state("networkidle")
            assert page.evaluate("document.querySelectorAll('script:not([src])').length") == 0
            assert page.evaluate("document.querySelectorAll('a[href^=\"javascript:\" i]').length") == 0
            assert page.evaluate("document.querySelectorAll('main img, main iframe').length") == 0
        page.goto(memory_url(site, HOSTILE_URI))
        text = page.locator(".markdown").inner_text()
        assert "<script>alert('script')</script>" in text
        assert "onerror" in text
        page.get_by_role("link", name="elsewhere").focus()  # a link is no request until followed
        escapes.assert_none()


def test_the_keyboard_reaches_every_action(browser: Any, site: Site) -> None:
    uri = "notes://topic0/n000"
    with signed_in(browser, site.origin, ALICE) as page:
        page.goto(memory_url(site, uri))
        reached = focus_walk(page)
        actions = page.evaluate(
            """() => [...document.querySelectorAll(
                    'a[href], button, input:not([type=hidden]), textarea, select')]
                .filter(e => e.getClientRects().length > 0).length"""
        )  # shown ones: an SVG link has no offsetParent, shown or not; a hidden one has no box
        assert len(reached) == actions, reached
        assert reached[0].startswith("a:#main")  # the skip link first
        for expected in ("Edit", "Delete…", "Roll back to this", "Diff", "Sign out", "中文", "English"):
            assert any(expected in item for item in reached), expected
        page.keyboard.press("Shift+Tab")
        assert focus_is_visible(page)
        # Open the editor and save with the keyboard alone.
        page.get_by_role("link", name="Edit").focus()
        page.keyboard.press("Enter")
        page.wait_for_url("**/ui/memory/edit?*")
        page.get_by_label("Content (Markdown)").focus()
        page.keyboard.press("Control+End")
        page.keyboard.type(" (keyboard)")
        page.keyboard.press("Tab")  # tags
        page.keyboard.press("Tab")  # save
        page.keyboard.press("Enter")
        assert "Saved as version" in page.locator(".notice").inner_text()
    assert site.call("read_memory", uri=uri)["content"].endswith(" (keyboard)")


def test_an_empty_store(browser: Any, tmp_path: Path) -> None:
    raw = {"language": "zh", "profiles": {"default": {"plugins": ["memory"]}}}
    (tmp_path / "tokens.yaml").write_text(f"alice: {ALICE}\n", encoding="utf-8")
    shots = screenshot_dir(tmp_path / "screenshots")
    with (
        make_host(data_dir=tmp_path / "data", config=raw, profile="default") as host,
        served(host.dashboard(tmp_path / "tokens.yaml", local_member="x")) as origin,
    ):
        for viewport in (DESKTOP, PHONE):
            context = browser.new_context(viewport=viewport)
            page = context.new_page()
            page.goto(f"{origin}/ui/signin")
            page.screenshot(path=str(shots / f"empty-zh-signin-{viewport['width']}.png"))
            page.get_by_label("你的成员令牌").fill(ALICE)
            page.get_by_role("button", name="登录").click()
            page.wait_for_url(f"{origin}/ui/")
            assert page.locator(".feed").count() == 0
            assert "暂无动态" in page.content()
            page.screenshot(path=str(shots / f"empty-zh-overview-{viewport['width']}.png"))
            page.goto(f"{origin}/ui/memory")
            assert "还没有记忆" in page.content()
            page.screenshot(path=str(shots / f"empty-zh-list-{viewport['width']}.png"))
            context.close()
