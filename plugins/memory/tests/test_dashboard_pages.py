"""The memory pages of the dashboard over real ASGI (no browser), on SQLite and PostgreSQL: what
they show is what the tools return, what they write is a version by the signed-in member, and a
read-only member can neither see nor post a change. The same in Chromium: test_dashboard_browser.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hostd_testing import PluginHost, make_host
from starlette.testclient import TestClient

ALICE = "alice-token-0123456789abc"
READER = "reader-token-0123456789abc"
READONLY = ["read_memory", "list_memories", "search_memory", "get_memory_stats", "get_memory_versions"]


class Pages:
    def __init__(self, host: PluginHost, app: Any) -> None:
        self.host = host
        self.app = app

    def call(self, tool: str, member: str | None = None, **arguments: Any) -> dict[str, Any]:
        async def run() -> tuple[dict[str, Any], bool]:
            return await self.host.call(tool, arguments, member=member)

        envelope, is_error = anyio.run(run)
        assert not is_error, envelope
        return envelope

    def client(self, token: str) -> TestClient:
        client = TestClient(self.app, base_url="http://127.0.0.1:8765", follow_redirects=False)
        form = client.get("/ui/signin").text
        signed = post(client, "/ui/signin", {"csrf": csrf_of(form), "token": token})
        assert signed.status_code == 303
        return client


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found
    return found.group(1)


def post(client: TestClient, path: str, fields: dict[str, str]) -> Any:
    return client.post(
        path,
        content=urllib.parse.urlencode(fields),
        headers={"content-type": "application/x-www-form-urlencoded"},
    )


def view(uri: str, path: str = "/view") -> str:
    return f"/ui/memory{path}?{urllib.parse.urlencode({'uri': uri})}"


@pytest.fixture
def pages(tmp_path: Path, backend: dict[str, object]) -> Iterator[Pages]:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {ALICE}\nreader: {{token: {READER}, profile: readonly}}\n", encoding="utf-8")
    raw = {
        "language": "en",
        "profiles": {
            "default": {"plugins": ["memory"]},
            "readonly": {"plugins": ["memory"], "tools": {"memory": {"include": READONLY}}},
        },
        **backend,
    }
    with make_host(data_dir=tmp_path / "data", config=raw, profile="default", migrate=True) as host:
        yield Pages(host, host.dashboard(tokens))


def test_the_pages_show_what_the_tools_return(pages: Pages) -> None:
    pages.call(
        "create_memory", "bob", uri="project://deploy", content="# 回滚步骤\n\n先冻结发布。", tags=["部署"]
    )
    pages.call("create_memory", "bob", uri="project://other", content="Other <b>text</b>")
    pages.call("link_memories", "bob", from_uri="project://other", to_uri="project://deploy", relation="uses")
    pages.call("update_memory", "alice", uri="project://deploy", content="# 回滚步骤\n\n先冻结发布，再回滚。")
    client = pages.client(ALICE)
    listing = client.get("/ui/memory").text
    assert "project://deploy" in listing
    assert "project://other" in listing
    found = client.get("/ui/memory?" + urllib.parse.urlencode({"q": "回滚"})).text
    assert "project://deploy" in found
    assert "project://other" not in found
    by_author = client.get("/ui/memory?author=bob").text
    assert "project://other" in by_author
    assert "project://deploy" not in by_author
    page = client.get(view("project://deploy")).text
    assert "<h3>回滚步骤</h3>" in page
    assert "先冻结发布，再回滚。" in page
    assert '<svg class="graph wide"' in page
    assert '<svg class="graph narrow"' in page
    assert ">uses<" in page
    assert "Other &lt;b&gt;text&lt;/b&gt;" in client.get(view("project://other")).text
    diff = client.get("/ui/memory/diff?uri=project://deploy&v1=1&v2=2").text
    assert '<span class="add">+先冻结发布，再回滚。</span>' in diff
    overview = client.get("/ui/").text
    assert "wrote version 2 of project://deploy" in overview
    assert ">alice<" in overview
    missing = client.get(view("project://none"))
    assert missing.status_code == 404
    assert "NOT_FOUND" in missing.text


def test_edit_roll_back_and_delete_write_as_the_member(pages: Pages) -> None:
    pages.call("create_memory", "bob", uri="notes://a", content="first", tags=["x"])
    client = pages.client(ALICE)
    form = client.get(view("notes://a", "/edit")).text
    saved = post(
        client,
        "/ui/memory/edit",
        {
            "csrf": csrf_of(form),
            "uri": "notes://a",
            "version": "1",
            "content": "second\r\nline",
            "tags": "y, 中文",
        },
    )
    assert saved.status_code == 303
    read = pages.call("read_memory", uri="notes://a")
    assert read["content"] == "second\nline"
    assert read["memory"]["author"] == "alice"
    assert read["memory"]["version"] == 2
    assert read["memory"]["tags"] == sorted(["y", "中文"])
    stale = post(
        client,
        "/ui/memory/edit",
        {"csrf": csrf_of(form), "uri": "notes://a", "version": "1", "content": "late", "tags": ""},
    )
    assert stale.status_code == 409
    assert "late</textarea>" in stale.text
    rolled = post(client, "/ui/memory/rollback", {"csrf": csrf_of(form), "uri": "notes://a", "version": "1"})
    assert rolled.status_code == 303
    after = pages.call("read_memory", uri="notes://a")["memory"]
    assert (after["version"], after["author"]) == (3, "alice")
    deleted = post(client, "/ui/memory/delete", {"csrf": csrf_of(form), "uri": "notes://a"})
    assert deleted.status_code == 303
    assert client.get(view("notes://a")).status_code == 404
    assert pages.call("get_memory_versions", uri="notes://a")["versions"][0]["author"] == "alice"


def test_a_read_only_member_gets_no_write_control_and_no_write(pages: Pages) -> None:
    pages.call("create_memory", "bob", uri="notes://b", content="kept")
    client = pages.client(READER)
    page = client.get(view("notes://b"))
    assert page.status_code == 200
    assert "/ui/memory/edit" not in page.text
    assert "/ui/memory/delete" not in page.text
    assert "/ui/memory/rollback" not in page.text
    assert "/ui/memory/diff" not in page.text
    token = csrf_of(page.text)
    for action, fields in (
        ("edit", {"uri": "notes://b", "version": "1", "content": "forged", "tags": ""}),
        ("rollback", {"uri": "notes://b", "version": "1"}),
        ("delete", {"uri": "notes://b"}),
    ):
        assert post(client, f"/ui/memory/{action}", {"csrf": token, **fields}).status_code == 403
    assert client.get(view("notes://b", "/edit")).status_code == 403
    assert pages.call("read_memory", uri="notes://b")["memory"]["version"] == 1
