"""The host's own additions for plugin pages: the members page of a team dashboard (names and
profiles, never tokens; activity from the plugins' overviews) and ``ViewFile`` downloads.
The plugins' pages that use them: tests/test_dashboard_pages.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hostd.core.config import TransportConfig
from hostd.protocol.guard import HttpPolicy
from hostd.protocol.http import build_http_app
from hostd.protocol.server import build_server
from hostd.web.serve import local_app, team_dashboard
from hostd.web.signing import OneTimeToken
from starlette.testclient import TestClient
from web_support import BASE_URL, NotesPlugin, csrf_of, form_post, notes_host, signed_in_client

from hostd import Text, ViewFile, ViewRequest, hookimpl

ALICE = "alice-members-token-0123456789"
READER = "reader-members-token-0123456789"


class DownloadingNotes(NotesPlugin):
    """Notes with a download page: every note as one text file."""

    @hookimpl
    def hostd_register_views(self, register: Any, context: Any) -> None:
        super().hostd_register_views(register, context)
        list_notes = self.list_notes

        async def download(request: ViewRequest) -> ViewFile:
            found = await request.call(list_notes)
            text = "\n".join(f"{note.author}: {note.text}" for note in found.notes)
            return ViewFile(text, request.query.get("name", "notes.txt"), "text/plain; charset=utf-8")

        register.page("/download", download, title=Text(en="Download", zh="下载"), tool="list_notes")


def team(data_dir: Path, plugin: NotesPlugin, tmp_path: Path) -> TestClient:
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {ALICE}\nreader: {{token: {READER}, profile: reader}}\n", encoding="utf-8")
    transport = TransportConfig(type="http", tokens_file=str(tokens), dashboard=True)
    host = notes_host(data_dir, plugin)
    policy = HttpPolicy(transport, "en", known_profiles=host.loaded.config.profiles)
    app = build_http_app(build_server(host, transport), policy, None, team_dashboard(host, transport, policy))
    return TestClient(app, base_url=BASE_URL, follow_redirects=False)


def sign_in(client: TestClient, token: str) -> None:
    form = client.get("/ui/signin")
    answer = form_post(client, "/ui/signin", {"csrf": csrf_of(form.text), "token": token, "next": "/ui/"})
    assert answer.status_code == 303


def test_members_are_listed_with_their_activity_and_never_their_tokens(
    hostd_data_dir: Path, tmp_path: Path
) -> None:
    plugin = NotesPlugin(tmp_path / "templates")
    client = team(hostd_data_dir, plugin, tmp_path)
    assert client.get("/ui/members").status_code == 303  # sign in first
    sign_in(client, ALICE)
    page = client.get("/ui/notes").text
    assert '<a href="/ui/members">Members</a>' in page  # in the navigation of a team dashboard
    form_post(client, "/ui/notes/add", {"csrf": csrf_of(page), "text": "hello <b>team</b>"})
    members = client.get("/ui/members")
    assert members.status_code == 200
    text = members.text
    assert ALICE not in text
    assert READER not in text
    alice = text[text.index('id="member-alice"') : text.index('id="member-reader"')]
    assert "noted hello &lt;b&gt;team&lt;/b&gt;" in alice  # from the plugin's overview feed, escaped
    reader = text[text.index('id="member-reader"') :]
    assert ">reader</dd>" in reader
    assert "none seen" in reader
    assert '<span class="plugin">Notes</span>' in alice  # named by its page's title, not its id
    zh = client.get("/ui/members?lang=zh")
    assert zh.status_code == 303
    in_chinese = client.get("/ui/members").text
    assert "成员" in in_chinese
    assert '<span class="plugin">笔记</span>' in in_chinese


def test_there_is_no_members_page_for_the_local_user(hostd_data_dir: Path, tmp_path: Path) -> None:
    one_time = OneTimeToken()
    host = notes_host(hostd_data_dir, NotesPlugin(tmp_path / "templates"))
    app = local_app(host, one_time, HttpPolicy(TransportConfig(type="http")))
    client = signed_in_client(app, f"/ui/signin?token={one_time.token}")
    assert client.get("/ui/members").status_code == 404
    assert "/ui/members" not in client.get("/ui/").text


@pytest.mark.parametrize(
    ("name", "fallback"),
    [("notes.txt", "notes.txt"), ('a"b\r\nc.txt', "a_b__c.txt"), ("笔记.txt", "__.txt")],
)
def test_a_view_file_is_a_sandboxed_attachment(
    hostd_data_dir: Path, tmp_path: Path, name: str, fallback: str
) -> None:
    plugin = DownloadingNotes(tmp_path / "templates")
    client = team(hostd_data_dir, plugin, tmp_path)
    sign_in(client, ALICE)
    page = client.get("/ui/notes")
    assert page.status_code == 200
    form_post(client, "/ui/notes/add", {"csrf": csrf_of(page.text), "text": "<script>x</script>"})
    answer = client.get("/ui/notes/download", params={"name": name})
    assert answer.status_code == 200
    assert answer.text == "alice: <script>x</script>"
    disposition = answer.headers["content-disposition"]
    assert disposition.startswith(f"attachment; filename=\"{fallback}\"; filename*=UTF-8''")
    assert "\r" not in disposition
    assert "\n" not in disposition
    assert answer.headers["content-security-policy"] == "default-src 'none'; sandbox"
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"
    assert answer.headers["x-content-type-options"] == "nosniff"
