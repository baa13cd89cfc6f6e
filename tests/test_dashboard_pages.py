"""The tasks, thinking and members pages over real ASGI, on SQLite/files and on PostgreSQL: each
page renders from the tools, each action writes through its tool as the signed-in member and
shows the tool's refusal on the page, a read-only member sees no write action and its forged
POST is refused, stored script stays text. The same pages in Chromium: test_dashboard_browser.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from dashboard_support import (
    BASE_URL,
    XSS_MERMAID,
    XSS_NOTE,
    XSS_THOUGHT,
    XSS_TITLE,
    call_as,
    csrf_of,
    dashboard_app,
    dashboard_host,
    form_post,
    member_client,
    seed,
    write_tokens,
)
from hostd.core.host import Host
from starlette.testclient import TestClient

DATABASE_ENV = "HOSTD_DASHBOARD_TEST_DATABASE_URL"


@pytest.fixture(params=["sqlite", "postgres"])
def storage(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    if request.param == "sqlite":
        return {}
    pytest.importorskip("psycopg", reason="the PostgreSQL driver (hostd-db[postgres]) is not installed")
    monkeypatch.setenv(DATABASE_ENV, request.getfixturevalue("postgres_url"))
    return {"storage": {"url_env": DATABASE_ENV}}


@pytest.fixture
def seeded(tmp_path: Path, storage: dict[str, Any]) -> Iterator[tuple[Host, Any]]:
    host = dashboard_host(tmp_path / "data", storage)
    try:
        anyio.run(seed, host)
        yield host, dashboard_app(host, write_tokens(tmp_path))
    finally:
        host.shutdown()


def details(host: Host, task_id: str) -> dict[str, Any]:
    return anyio.run(lambda: call_as(host, "alice", "get_task", task_id=task_id))


def post_forms(page: str) -> list[str]:
    """The targets of the page's POST forms, the sign-out form aside."""
    return [
        action
        for action in re.findall(r'<form[^>]*method="post"[^>]*action="([^"]+)"', page)
        if not action.endswith("/signout")
    ]


def test_every_page_renders_from_the_tools(seeded: tuple[Host, Any]) -> None:
    _, app = seeded
    client = member_client(app, "alice")
    board = client.get("/ui/tasks").text
    for task_id in ("t-api", "t-db", "t-ui", "t-deploy", "t-done"):
        assert f'data-task="{task_id}"' in board
    # t-deploy waits on the failed t-db: marked on its card and on its page.
    card = board[board.index('data-task="t-deploy"') :]
    assert "waits on failed" in card[: card.index("</li>")]
    page = client.get("/ui/tasks/view?id=t-deploy").text
    assert '<li class="failed-blocker"><a href="/ui/tasks/view?id=t-db">t-db</a>' in page
    assert "It waits on failed work" in page
    api = client.get("/ui/tasks/view?id=t-api").text
    assert "<strong>orders</strong>" in api
    assert "中文验收：接口文档齐全" in api
    assert 'href="/ui/tasks/view?id=t-ui"' in api  # what waits on it
    assert '<a href="/ui/deep-thinking/view?id=plan">plan</a>' in api  # its thinking session
    ui_page = client.get("/ui/tasks/view?id=t-ui").text
    assert "Form" in ui_page
    assert "List" in ui_page
    history = re.findall(r'<td class="who"[^>]*>([^<]+)</td>', client.get("/ui/tasks/view?id=t-db").text)
    assert history == ["bob", "bob", "alice"]  # failed, claimed (in progress), created: newest first
    filtered = client.get("/ui/tasks?label=frontend").text
    assert 'data-task="t-ui"' in filtered
    assert 'data-task="t-api"' not in filtered
    mine = client.get("/ui/tasks?member=bob").text
    assert 'data-task="t-db"' in mine
    assert 'data-task="t-api"' not in mine
    searched = client.get("/ui/tasks?q=staging").text
    assert 'data-task="t-deploy"' in searched
    assert 'data-task="t-db"' not in searched

    sessions = client.get("/ui/deep-thinking").text
    assert 'href="/ui/deep-thinking/view?id=plan"' in sessions
    assert 'href="/ui/deep-thinking/view?id=other"' not in client.get("/ui/deep-thinking?member=alice").text
    found = client.get("/ui/deep-thinking?q=比较").text
    assert 'href="/ui/deep-thinking/view?id=plan#thought-1"' in found
    session = client.get("/ui/deep-thinking/view?id=plan")
    assert session.status_code == 200
    assert 'id="branch-sqlite-first"' in session.text
    assert 'class="branch-origin" href="#thought-2"' in session.text
    assert 'class="thought card revision" id="thought-4"' in session.text
    assert '<a href="/ui/tasks/view?id=t-api">t-api</a>' in session.text  # the task linked to it
    assert '<pre class="mermaid"' in session.text
    assert "vendor/mermaid/mermaid.min.js" in session.text
    assert "'unsafe-inline'" in session.headers["content-security-policy"]  # Mermaid's SVG styles
    assert "mermaid" not in client.get("/ui/tasks").text  # loaded on the diagram page only

    overview = client.get("/ui/").text
    assert "claimed task t-api" in overview
    assert "completed task t-done" in overview
    assert "created task t-deploy" in overview
    assert "added thought 3 to" in overview
    assert "linked task t-api &#39;Build the API 接口&#39; to session plan" in overview
    members = client.get("/ui/members").text
    for name in ("alice", "bob", "reader"):
        assert f'id="member-{name}"' in members
    assert "dashboard-token" not in members  # names and profiles, never tokens
    bob = members[members.index('id="member-bob"') : members.index('id="member-reader"')]
    assert "completed task t-done" in bob
    assert 'href="/ui/tasks?creator=bob"' in bob
    assert "reader" in members
    assert ">reader</dd>" in members


def test_the_dependency_graph_page_draws_through_get_task_graph(seeded: tuple[Host, Any]) -> None:
    _, app = seeded
    client = member_client(app, "alice")
    assert 'href="/ui/tasks/graph"' in client.get("/ui/tasks").text
    assert 'href="/ui/tasks/graph?id=t-deploy"' in client.get("/ui/tasks/view?id=t-deploy").text
    page = client.get("/ui/tasks/graph")
    assert page.status_code == 200
    assert '<pre class="mermaid"' in page.text
    assert "vendor/mermaid/mermaid.min.js" in page.text
    diagram = page.text[page.text.index('<pre class="mermaid"') : page.text.index("</pre>")]
    assert "flowchart LR" in diagram
    assert "t-deploy: Deploy to staging" in diagram
    assert "<script>" not in diagram
    assert "#lt;script#gt;" in diagram
    path = page.text[page.text.index('class="critical-path"') :]
    assert re.findall(r'<span class="task-id">([^<]+)</span>', path) == ["t-api", "t-ui"]
    around = client.get("/ui/tasks/graph?id=t-deploy").text
    assert "t-db: Database schema" in around
    assert "t-api:" not in around
    # a member whose profile does not serve get_task_graph is not offered the page
    assert 'href="/ui/tasks/graph"' not in member_client(app, "reader").get("/ui/tasks").text


def test_moving_a_task_is_a_history_entry_by_the_member(seeded: tuple[Host, Any]) -> None:
    host, app = seeded
    client = member_client(app, "bob")
    page = client.get("/ui/tasks/view?id=t-long").text
    moved = form_post(
        client, "/ui/tasks/status", {"csrf": csrf_of(page), "task_id": "t-long", "status": "in_progress"}
    )
    assert moved.status_code == 303
    assert moved.headers["location"] == "/ui/tasks/view?id=t-long"
    got = details(host, "t-long")
    assert got["task"]["status"] == "in_progress"
    assert got["task"]["claimed_by"] == "bob"
    assert got["history"][-1]["by"] == "bob"
    # Release the claim: back to pending through update_task_status, nobody holds it.
    page = client.get("/ui/tasks/view?id=t-long").text
    assert 'action="/ui/tasks/release"' in page
    form_post(client, "/ui/tasks/release", {"csrf": csrf_of(page), "task_id": "t-long"})
    got = details(host, "t-long")
    assert got["task"]["status"] == "pending"
    assert got["task"]["claimed_by"] is None
    # A move the rules refuse: the tool's error, on the task's page.
    refused = form_post(
        client, "/ui/tasks/status", {"csrf": csrf_of(page), "task_id": "t-long", "status": "completed"}
    )
    assert refused.status_code == 409
    assert "CONFLICT" in refused.text
    assert 'id="new-status"' in refused.text
    form_post(client, "/ui/tasks/priority", {"csrf": csrf_of(page), "task_id": "t-long", "priority": "P0"})
    assert details(host, "t-long")["task"]["priority"] == "P0"


def test_release_claim_releases_only_the_members_own_claim(seeded: tuple[Host, Any]) -> None:
    """Issue 32: the page's "Release claim" released another member's claim, which the
    ``release_claim`` tool refuses. The page now calls that tool as the signed-in member: bob sees
    no button on alice's claim, and his forged POST gets the tool's CONFLICT, the claim untouched."""
    host, app = seeded
    bob = member_client(app, "bob")
    page = bob.get("/ui/tasks/view?id=t-api")
    assert page.status_code == 200
    assert details(host, "t-api")["task"]["claimed_by"] == "alice"
    assert "/ui/tasks/release" not in post_forms(page.text)
    refused = form_post(bob, "/ui/tasks/release", {"csrf": csrf_of(page.text), "task_id": "t-api"})
    assert refused.status_code == 409
    assert "CONFLICT" in refused.text
    assert 'role="alert"' in refused.text
    got = details(host, "t-api")
    assert (got["task"]["status"], got["task"]["claimed_by"]) == ("in_progress", "alice")
    assert [entry["by"] for entry in got["history"]].count("bob") == 0
    alice = member_client(app, "alice")
    page = alice.get("/ui/tasks/view?id=t-api")
    assert "/ui/tasks/release" in post_forms(page.text)
    released = form_post(alice, "/ui/tasks/release", {"csrf": csrf_of(page.text), "task_id": "t-api"})
    assert released.status_code == 303
    got = details(host, "t-api")
    assert (got["task"]["status"], got["task"]["claimed_by"]) == ("pending", None)
    assert got["history"][-1]["by"] == "alice"


def test_edit_split_and_delete_keep_the_tools_rules(seeded: tuple[Host, Any]) -> None:
    host, app = seeded
    client = member_client(app, "alice")
    csrf = csrf_of(client.get("/ui/tasks/edit?id=t-api").text)
    fields = {
        "csrf": csrf,
        "task_id": "t-api",
        "title": "Build the API 接口",
        "description": "REST endpoints for **orders**.",
        "acceptance": "- curl returns 200\n- 中文验收：接口文档齐全",
        "labels": "backend",
        "parent_id": "",
        "append_note": "",
    }
    # t-ui waits on t-api: t-api waiting on t-ui closes a cycle, refused with the tool's words.
    cycle = form_post(client, "/ui/tasks/edit", {**fields, "depends_on": "t-ui"})
    assert cycle.status_code in (400, 409)
    assert "cycle" in cycle.text.lower()
    assert 'value="t-ui"' in cycle.text  # what was typed is kept
    assert details(host, "t-api")["task"]["depends_on"] == []
    saved = form_post(
        client,
        "/ui/tasks/edit",
        {**fields, "depends_on": "", "labels": "backend, api", "append_note": "一条备注"},
    )
    assert saved.status_code == 303
    task = details(host, "t-api")
    assert task["task"]["labels"] == ["api", "backend"]
    assert task["task"]["notes"][-1]["text"] == "一条备注"
    assert task["history"][-1]["by"] == "alice"
    assert task["history"][-1]["event"] == "edited"
    # Delete refused while others depend on it: the tool's error on the delete page.
    refused = form_post(client, "/ui/tasks/delete", {"csrf": csrf, "task_id": "t-db"})
    assert refused.status_code == 409
    assert "t-deploy" in refused.text
    assert 'role="alert"' in refused.text
    assert details(host, "t-db")["deleted_at"] is None
    dropped = form_post(
        client, "/ui/tasks/delete", {"csrf": csrf, "task_id": "t-db", "drop_dependencies": "on"}
    )
    assert dropped.status_code == 303
    assert details(host, "t-db")["deleted_at"] is not None
    gone = client.get("/ui/tasks/view?id=t-db").text  # its last record and history stay readable
    assert "This task was deleted on" in gone
    assert post_forms(gone) == []
    assert "Database schema" in gone
    assert "t-db" not in details(host, "t-deploy")["task"]["depends_on"]
    split = form_post(
        client,
        "/ui/tasks/split",
        {"csrf": csrf, "task_id": "t-long", "subtasks": "一\n\ntwo\n", "priority": "P1"},
    )
    assert split.status_code == 303
    assert [s["title"] for s in details(host, "t-long")["subtasks"]] == ["一", "two"]
    empty = form_post(
        client, "/ui/tasks/split", {"csrf": csrf, "task_id": "t-long", "subtasks": " \n", "priority": "P1"}
    )
    assert empty.status_code == 400
    assert "INVALID_ARGUMENT" in empty.text


def test_a_read_only_member_sees_no_write_action_and_a_forged_post_is_refused(
    seeded: tuple[Host, Any],
) -> None:
    host, app = seeded
    client = member_client(app, "reader")
    pages = [
        "/ui/tasks",
        "/ui/tasks/view?id=t-deploy",
        "/ui/deep-thinking",
        "/ui/deep-thinking/view?id=plan",
        "/ui/",
        "/ui/members",
    ]
    for path in pages:
        answer = client.get(path)
        assert answer.status_code == 200, path
        assert post_forms(answer.text) == [], path
        assert "/edit?" not in answer.text
        assert "/delete?" not in answer.text
        assert "/export?" not in answer.text
    csrf = csrf_of(client.get("/ui/tasks").text)  # the sign-out form's: a real token of this session
    for path, fields in [
        ("/ui/tasks/status", {"task_id": "t-long", "status": "in_progress"}),
        ("/ui/tasks/release", {"task_id": "t-api"}),
        ("/ui/tasks/delete", {"task_id": "t-done"}),
        ("/ui/deep-thinking/delete", {"session_id": "plan"}),
    ]:
        assert form_post(client, path, {"csrf": csrf, **fields}).status_code == 403, path
    for path in ("/ui/tasks/edit?id=t-api", "/ui/deep-thinking/export?id=plan&format=json"):
        assert client.get(path).status_code == 403
    assert details(host, "t-long")["task"]["status"] == "pending"
    assert details(host, "t-done")["deleted_at"] is None


def test_stored_script_stays_text(seeded: tuple[Host, Any]) -> None:
    _, app = seeded
    client = member_client(app, "alice")
    for path in (
        "/ui/tasks",
        "/ui/tasks/view?id=t-xss",
        "/ui/deep-thinking/view?id=plan",
        "/ui/deep-thinking/view?id=other",
        "/ui/",
        "/ui/members",
        "/ui/tasks/edit?id=t-xss",
    ):
        page = client.get(path).text
        assert "<script>window" not in page, path
        assert "<img src=x" not in page, path
        assert 'href="javascript:' not in page, path
    task = client.get("/ui/tasks/view?id=t-xss").text
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt; 标题" in task
    assert "&lt;img src=x onerror=" in task
    assert "[click](javascript:window.__pwned=1)" in task
    for raw in (XSS_TITLE, XSS_NOTE, XSS_THOUGHT, XSS_MERMAID):
        assert raw not in client.get("/ui/").text


def test_downloads_restore_and_empty_store(seeded: tuple[Host, Any], tmp_path: Path) -> None:
    _, app = seeded
    client = member_client(app, "alice")
    for format, kind, extension in (
        ("markdown", "text/markdown", "md"),
        ("html", "text/html", "html"),
        ("json", "application/json", "json"),
    ):
        answer = client.get(f"/ui/deep-thinking/export?id=plan&format={format}")
        assert answer.status_code == 200
        assert answer.headers["content-type"].startswith(kind)
        assert answer.headers["content-disposition"].startswith(f'attachment; filename="plan.{extension}"')
        assert "sandbox" in answer.headers["content-security-policy"]
        assert "PostgreSQL for the team." in answer.text
    assert client.get("/ui/deep-thinking/export?id=plan&format=exe").status_code == 400
    page = client.get("/ui/deep-thinking/delete?id=plan").text
    deleted = form_post(client, "/ui/deep-thinking/delete", {"csrf": csrf_of(page), "session_id": "plan"})
    assert deleted.status_code == 303
    assert deleted.headers["location"].startswith("/ui/deep-thinking/restore?id=plan")
    gone = client.get("/ui/deep-thinking/view?id=plan")
    assert gone.status_code == 404
    assert 'action="/ui/deep-thinking/restore"' in gone.text
    restored = form_post(
        client, "/ui/deep-thinking/restore", {"csrf": csrf_of(gone.text), "session_id": "plan", "backup": ""}
    )
    assert restored.status_code == 303
    assert restored.headers["location"] == "/ui/deep-thinking/view?id=plan"
    assert "PostgreSQL for the team." in client.get("/ui/deep-thinking/view?id=plan").text
    again = form_post(
        client, "/ui/deep-thinking/restore", {"csrf": csrf_of(gone.text), "session_id": "nothing-here"}
    )
    assert again.status_code == 404
    assert 'role="alert"' in again.text


def test_an_empty_store_says_so(tmp_path: Path) -> None:
    host = dashboard_host(tmp_path / "data", language="zh")
    try:
        client = member_client(dashboard_app(host, write_tokens(tmp_path)), "alice")
        assert "还没有任务" in client.get("/ui/tasks").text
        assert "还没有思考会话" in client.get("/ui/deep-thinking").text
        assert client.get("/ui/tasks/view?id=t-1").status_code == 404
        assert "暂无" in client.get("/ui/members").text
        # The overview names each plugin by its page's title in the page's language.
        shown = re.findall(r'<h3 class="counts-plugin"[^>]*>([^<]+)</h3>', client.get("/ui/").text)
        assert shown, shown
        assert set(shown) <= {"记忆", "任务", "思考"}, shown
        english = TestClient(
            client.app, base_url=str(client.base_url), follow_redirects=False, cookies=client.cookies
        )
        assert english.get("/ui/tasks?lang=en").status_code == 303
    finally:
        host.shutdown()


def test_the_feed_shows_a_long_sessions_newest_thoughts(seeded: tuple[Host, Any]) -> None:
    host, app = seeded

    async def think() -> None:
        for number in range(1, 106):
            await call_as(
                host,
                "bob",
                "sequential_thinking",
                session_id="long",
                thought=f"step {number}",
                thoughtNumber=number,
                totalThoughts=105,
                nextThoughtNeeded=number < 105,
            )

    anyio.run(think)
    overview = member_client(app, "alice").get("/ui/").text
    assert (
        "added thought 105 to &#39;long&#39;" in overview
    )  # the newest, past get_session's first page (100)
    assert "added thought 1 to &#39;long&#39;" not in overview


def test_the_task_feed_is_the_newest_changes_whatever_their_priority(seeded: tuple[Host, Any]) -> None:
    host, app = seeded

    async def work() -> None:
        for number in range(35):
            await call_as(
                host, "alice", "create_task", task_id=f"u-{number}", title=f"urgent {number}", priority="P0"
            )
            await call_as(
                host, "alice", "update_task_status", task_id=f"u-{number}", new_status="in_progress"
            )
            await call_as(host, "alice", "update_task_status", task_id=f"u-{number}", new_status="completed")
        await call_as(host, "bob", "update_task_status", task_id="t-long", new_status="in_progress")
        await call_as(host, "bob", "update_task_status", task_id="t-long", new_status="completed")

    anyio.run(work)
    overview = member_client(app, "alice").get("/ui/").text
    feed = overview[overview.index('<ol class="feed">') :]
    first = feed[: feed.index("</li>")]
    assert "completed task t-long" in first
    assert ">bob<" in first


# --- read-only profiles: every link opens (issue 32) -------------------------------------------

#: Profiles that read: ``lister`` serves each plugin's list and its read tool for one item (but not
#: get_memory_versions), ``glancer`` the lists alone.
NARROW_PROFILES = {
    "lister": {
        "memory": ["list_memories", "search_memory", "read_memory", "get_memory_stats"],
        "tasks": ["list_tasks", "get_task", "get_task_stats"],
        "deep-thinking": ["list_sessions", "get_session"],
    },
    "glancer": {"memory": ["list_memories"], "tasks": ["list_tasks"], "deep-thinking": ["list_sessions"]},
}
NARROW_TOKENS = {"lister": "lister-dashboard-token-0123456789", "glancer": "glancer-dashboard-token-01234567"}


@pytest.fixture
def narrow(tmp_path: Path) -> Iterator[Any]:
    from dashboard_support import PLUGINS
    from hostd.core.config import config_from_mapping

    profiles: dict[str, Any] = {"default": {"plugins": PLUGINS}}
    for name, tools in NARROW_PROFILES.items():
        profiles[name] = {"plugins": PLUGINS, "tools": {p: {"include": t} for p, t in tools.items()}}
    raw = {"language": "en", "profiles": profiles}
    host = Host(config_from_mapping(raw, "default", data_dir=tmp_path / "data"))
    host.startup()
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(
        "".join(f"{name}: {{token: {token}, profile: {name}}}\n" for name, token in NARROW_TOKENS.items()),
        encoding="utf-8",
    )
    try:
        anyio.run(seed, host)
        anyio.run(lambda: call_as(host, "alice", "update_memory", uri="project://dashboard", content="v2"))
        yield dashboard_app(host, tokens)
    finally:
        host.shutdown()


def crawl(client: TestClient, limit: int = 400) -> dict[str, str]:
    """Every dashboard page reachable by a link from the overview: ``{url: page}``; each must
    answer 200 (a link that leads to a 403, or anything else, fails here)."""
    import html

    seen: dict[str, str] = {}
    queue = ["/ui/"]
    while queue and len(seen) < limit:
        url = queue.pop(0)
        if url in seen:
            continue
        answer = client.get(url)
        assert answer.status_code == 200, (url, answer.status_code, answer.text[-600:])
        seen[url] = answer.text
        for href in re.findall(r'href="(/ui/[^"#]*)', answer.text):
            target = html.unescape(href)
            if target.startswith("/ui/static/") or "lang=" in target:
                continue
            if target not in seen:
                queue.append(target)
    return seen


def test_a_read_only_member_opens_every_item_their_lists_link_to(narrow: Any) -> None:
    """Issue 32: a member on a read-only profile saw the memory and task lists, but every item
    they linked to answered 403 (the item page needed get_memory_versions / get_task). Each item
    page now opens with the plugin's read tool for it, shows versions only with
    get_memory_versions, and no page links to a page or action the member may not use."""
    client = TestClient(narrow, base_url=BASE_URL, follow_redirects=False)
    form = client.get("/ui/signin")
    fields = {"csrf": csrf_of(form.text), "token": NARROW_TOKENS["lister"], "next": "/ui/"}
    assert form_post(client, "/ui/signin", fields).status_code == 303
    pages = crawl(client)
    for item in (
        "/ui/memory/view?uri=project%3A%2F%2Fdashboard",
        "/ui/tasks/view?id=t-api",
        "/ui/deep-thinking/view?id=plan",
    ):
        assert item in pages, sorted(pages)
    memory = pages["/ui/memory/view?uri=project%3A%2F%2Fdashboard"]
    assert "v2" in memory
    assert 'id="versions-title"' not in memory
    assert "/ui/memory/diff" not in memory
    for url, page in pages.items():
        assert post_forms(page) == [], url
    # Where the profile serves the lists alone, nothing links to an item.
    glancer = TestClient(narrow, base_url=BASE_URL, follow_redirects=False)
    form = glancer.get("/ui/signin")
    fields = {"csrf": csrf_of(form.text), "token": NARROW_TOKENS["glancer"], "next": "/ui/"}
    assert form_post(glancer, "/ui/signin", fields).status_code == 303
    pages = crawl(glancer)
    assert {"/ui/memory", "/ui/tasks", "/ui/deep-thinking"} <= set(pages)
    assert not [url for url in pages if "/view" in url]
    assert glancer.get("/ui/tasks/view?id=t-api").status_code == 403


def test_a_status_with_no_tasks_says_none_has_it_not_that_there_are_none(seeded: tuple[Host, Any]) -> None:
    _, app = seeded
    client = member_client(app, "alice")
    blocked = client.get("/ui/tasks?status=blocked").text
    assert "No tasks yet" not in blocked
    assert '<p class="empty">No task is blocked now.</p>' in blocked
    filtered = client.get("/ui/tasks?status=pending&label=nothing-has-it").text
    assert '<p class="empty">No task matches these filters.</p>' in filtered
    assert client.get("/ui/tasks?lang=zh").status_code == 303
    assert '<p class="empty">目前没有已阻塞的任务。</p>' in client.get("/ui/tasks?status=blocked").text


def test_the_overview_names_each_plugin_once_and_counts_every_status(seeded: tuple[Host, Any]) -> None:
    _, app = seeded
    page = member_client(app, "alice").get("/ui/").text
    counts = page[page.index('id="counts-title"') : page.index('id="feed-title"')]
    groups = re.findall(r'<h3 class="counts-plugin"[^>]*>([^<]+)</h3>', counts)
    assert groups == ["Memories", "Thinking", "Tasks"]  # each plugin once, in load order
    tiles = re.findall(
        r'<li><a href="([^"]+)"><span class="value">([^<]+)</span><span class="label">([^<]+)</span>', counts
    )
    labels = [label for _, _, label in tiles]
    assert not set(labels) & set(groups)  # no tile repeats its plugin's name
    by_href = {href: (value, label) for href, value, label in tiles}
    assert by_href["/ui/tasks?status=blocked"] == ("0", "Blocked")
    assert by_href["/ui/tasks?status=failed"] == ("1", "Failed")
    assert '<span class="plugin">' not in counts


def test_favicon_is_the_hosts_icon_without_a_token(seeded: tuple[Host, Any]) -> None:
    from hostd.core.icon import icon_svg

    _, app = seeded
    visitor = TestClient(app, base_url="http://127.0.0.1:8765", follow_redirects=False)
    icon = visitor.get("/favicon.ico")  # a browser asks for it before anyone signs in
    assert icon.status_code == 200
    assert icon.headers["content-type"].startswith("image/svg+xml")
    assert icon.text == icon_svg()
    assert icon.text.startswith("<svg")
    page = member_client(app, "alice").get("/ui/tasks").text
    linked = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page)
    assert linked is not None
    assert visitor.get(linked.group(1)).text.strip() == icon_svg()
    # Still behind the guard's Host check, as every other path.
    assert visitor.get("/favicon.ico", headers={"host": "evil.example"}).status_code == 421


def test_the_restore_page_lists_the_deleted_sessions(seeded: tuple[Host, Any]) -> None:
    host, app = seeded
    client = member_client(app, "alice")
    page = client.get("/ui/deep-thinking/restore").text
    rows = re.findall(r'<tr data-session="([^"]+)">', page)
    assert rows == ["old-plan"]  # the seed's deleted session; no live one
    row = page[page.index('<tr data-session="old-plan">') :]
    row = row[: row.index("</tr>")]
    assert "旧的会话" in row
    assert ">bob<" in row
    assert 'name="session_id" value="old-plan"' in row
    # Deleting another lists it first (newest delete first); restoring takes it off the list.
    form_post(client, "/ui/deep-thinking/delete", {"csrf": csrf_of(page), "session_id": "plan"})
    page = client.get("/ui/deep-thinking/restore").text
    assert re.findall(r'<tr data-session="([^"]+)">', page) == ["plan", "old-plan"]
    restored = form_post(
        client, "/ui/deep-thinking/restore", {"csrf": csrf_of(page), "session_id": "old-plan", "backup": ""}
    )
    assert restored.status_code == 303
    assert restored.headers["location"] == "/ui/deep-thinking/view?id=old-plan"
    assert re.findall(r'<tr data-session="([^"]+)">', client.get("/ui/deep-thinking/restore").text) == [
        "plan"
    ]
    # A session created again under a deleted one's id is live, not deleted.
    anyio.run(lambda: call_as(host, "bob", "create_session", name="again", session_id="plan"))
    page = client.get("/ui/deep-thinking/restore").text
    assert re.findall(r'<tr data-session="([^"]+)">', page) == []
    assert "No deleted session to restore." in page
    listed = anyio.run(lambda: call_as(host, "bob", "list_sessions", deleted=True))
    assert listed["sessions"] == []
    assert listed["total"] == 0
