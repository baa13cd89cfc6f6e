"""The dashboard's framework over real ASGI: sign-in (one-time link, member tokens), the cookie
and its attributes, CSRF, permissions by profile, replicas sharing a secret, language, headers,
and ``hostd web`` as a process. The pages in a real browser: the memory plugin's test_browser.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2 as httpx
import pytest
from hostd.core.config import TransportConfig
from hostd.protocol.guard import HttpPolicy
from hostd.protocol.http import build_http_app
from hostd.protocol.server import build_server
from hostd.web.serve import local_app, team_dashboard
from hostd.web.signing import OneTimeToken, Signer
from hostd_testing import HttpServer, write_config
from starlette.testclient import TestClient
from web_support import BASE_URL, NotesPlugin, csrf_of, form_post, notes_host, signed_in_client

ALICE = "alice-token-0123456789"
READER = "reader-token-0123456789"
SECRET_ENV = "HOSTD_WEB_TEST_SECRET"


@pytest.fixture
def notes(tmp_path: Path) -> NotesPlugin:
    return NotesPlugin(tmp_path / "templates")


def local(data_dir: Path, notes: NotesPlugin) -> tuple[Any, OneTimeToken]:
    one_time = OneTimeToken()
    app = local_app(notes_host(data_dir, notes), one_time, HttpPolicy(TransportConfig(type="http")))
    return app, one_time


def team_app(data_dir: Path, notes: NotesPlugin, tokens: Path, secret_env: str | None = None) -> Any:
    transport = TransportConfig(
        type="http", tokens_file=str(tokens), dashboard=True, state_secret_env=secret_env
    )
    host = notes_host(data_dir, notes)
    policy = HttpPolicy(transport, "en", known_profiles=host.loaded.config.profiles)
    return build_http_app(
        build_server(host, transport), policy, None, team_dashboard(host, transport, policy)
    )


@pytest.fixture
def tokens(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.yaml"
    path.write_text(f"alice: {ALICE}\nreader: {{token: {READER}, profile: reader}}\n", encoding="utf-8")
    return path


def team_sign_in(client: TestClient, token: str) -> httpx.Response:
    form = client.get("/ui/signin?next=/ui/notes")
    assert form.status_code == 200
    assert 'type="password"' in form.text
    return form_post(client, "/ui/signin", {"csrf": csrf_of(form.text), "token": token, "next": "/ui/notes"})


# --- the one-time link (hostd web) -----------------------------------------------------------


def test_the_link_signs_in_once_and_leaves_the_address(hostd_data_dir: Path, notes: NotesPlugin) -> None:
    app, one_time = local(hostd_data_dir, notes)
    client = TestClient(app, base_url=BASE_URL, follow_redirects=False)
    assert client.get("/ui/").headers["location"] == "/ui/signin?next=%2Fui%2F"
    answer = client.get(f"/ui/signin?token={one_time.token}")
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/"
    cookie = answer.headers["set-cookie"]
    assert "HttpOnly" in cookie
    assert "SameSite=strict" in cookie
    assert "Path=/ui" in cookie
    assert one_time.token not in cookie
    assert client.get("/ui/").status_code == 200
    # The same link again, from another browser: refused, and no cookie.
    other = TestClient(app, base_url=BASE_URL, follow_redirects=False)
    again = other.get(f"/ui/signin?token={one_time.token}")
    assert again.status_code == 403
    assert "set-cookie" not in again.headers
    assert "used already or is wrong" in again.text
    wrong = TestClient(app, base_url=BASE_URL, follow_redirects=False).get("/ui/signin?token=guess")
    assert wrong.status_code == 403


def test_a_forged_or_foreign_cookie_is_no_session(hostd_data_dir: Path, notes: NotesPlugin) -> None:
    app, one_time = local(hostd_data_dir, notes)
    client = signed_in_client(app, f"/ui/signin?token={one_time.token}")
    real = client.cookies["hostd_ui"]
    payload, mac = real.split(".")
    for forged in (f"{payload}.{mac[:-2]}AA", "x.y", "", Signer(None).session_cookie("root", "local")):
        stranger = TestClient(app, base_url=BASE_URL, follow_redirects=False, cookies={"hostd_ui": forged})
        assert stranger.get("/ui/notes").status_code == 303  # to the sign-in page


def test_every_post_needs_the_csrf_token(hostd_data_dir: Path, notes: NotesPlugin) -> None:
    app, one_time = local(hostd_data_dir, notes)
    client = signed_in_client(app, f"/ui/signin?token={one_time.token}")
    page = client.get("/ui/notes").text
    token = csrf_of(page)
    assert form_post(client, "/ui/notes/add", {"text": "a"}).status_code == 403
    assert form_post(client, "/ui/notes/add", {"text": "a", "csrf": token[:-1] + "x"}).status_code == 403
    json_post = client.post("/ui/notes/add", json={"text": "a", "csrf": token})
    assert json_post.status_code == 403
    assert form_post(client, "/ui/signout", {}).status_code == 403
    assert notes.notes == []
    assert form_post(client, "/ui/notes/add", {"text": "a", "csrf": token}).status_code == 303
    # A token is bound to its session: another session's token is refused.
    app2_client = signed_in_client(*_relink(hostd_data_dir, notes))
    assert form_post(app2_client, "/ui/notes/add", {"text": "b", "csrf": token}).status_code == 403
    assert [n.text for n in notes.notes] == ["a"]


def _relink(data_dir: Path, notes: NotesPlugin) -> tuple[Any, str]:
    app, one_time = local(data_dir, notes)
    return app, f"/ui/signin?token={one_time.token}"


def test_headers_forbid_inline_script_and_framing(hostd_data_dir: Path, notes: NotesPlugin) -> None:
    app, one_time = local(hostd_data_dir, notes)
    client = signed_in_client(app, f"/ui/signin?token={one_time.token}")
    for path in ("/ui/", "/ui/notes", "/ui/nowhere", "/ui/static/host/app.css"):
        answer = client.get(path)
        policy = answer.headers["content-security-policy"]
        assert policy.startswith("default-src 'self'; script-src 'self';")
        assert "'unsafe-inline'" not in policy
        assert "frame-ancestors 'none'" in policy
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert (
            answer.headers["referrer-policy"] == "same-origin"
        )  # no-referrer would make POSTs say Origin: null
        if answer.headers["content-type"].startswith("text/html"):
            assert not re.search(r"<script(?![^>]*\ssrc=)", answer.text), "inline script"
            assert " on" not in re.sub(r">[^<]*<", "><", answer.text).lower().replace(" only", "")
            assert "mermaid" not in answer.text  # loaded only on pages that draw a diagram
    assert client.get("/ui/nowhere").status_code == 404
    assert client.get("/ui/static/host/vendor/htmx/htmx.min.js").status_code == 200
    assert client.get("/ui/static/host/vendor/mermaid/LICENSE").status_code == 200


def test_the_language_is_switched_and_kept(hostd_data_dir: Path, notes: NotesPlugin) -> None:
    app, one_time = local(hostd_data_dir, notes)
    client = signed_in_client(app, f"/ui/signin?token={one_time.token}")
    assert "<h1>Notes</h1>" in client.get("/ui/notes").text  # the config says en
    switched = client.get("/ui/notes?lang=zh&x=1")
    assert switched.status_code == 303
    assert switched.headers["location"] == "/ui/notes?x=1"
    page = client.get("/ui/notes").text
    assert '<html lang="zh-CN">' in page
    assert "<h1>笔记</h1>" in page
    assert "退出" in page
    assert client.get("/ui/notes?lang=fr").status_code == 200  # not a language: ignored


# --- members (the HTTP transport's /ui) --------------------------------------------------------


def test_members_sign_in_with_their_token(hostd_data_dir: Path, notes: NotesPlugin, tokens: Path) -> None:
    client = TestClient(team_app(hostd_data_dir, notes, tokens), base_url=BASE_URL, follow_redirects=False)
    refused = team_sign_in(client, "not-a-member-token-000")
    assert refused.status_code == 401
    assert "belongs to no member" in refused.text
    assert "not-a-member-token-000" not in refused.text  # the page never shows a token
    answer = team_sign_in(client, ALICE)
    assert answer.status_code == 303
    assert answer.headers["location"] == "/ui/notes"
    assert "secure" not in answer.headers["set-cookie"].lower()  # plain HTTP: a Secure cookie would be lost
    behind_tls = TestClient(
        team_app(hostd_data_dir, notes, tokens), base_url=BASE_URL, follow_redirects=False
    )
    form = behind_tls.get("/ui/signin").text
    ended = form_post(
        behind_tls, "/ui/signin", {"csrf": csrf_of(form), "token": ALICE}, **{"x-forwarded-proto": "https"}
    )
    assert "; secure" in ended.headers["set-cookie"].lower()
    page = client.get("/ui/notes")
    assert page.status_code == 200
    assert ALICE not in page.text
    assert ">alice<" in page.text
    form_post(client, "/ui/notes/add", {"csrf": csrf_of(page.text), "text": "from alice"})
    assert [(n.text, n.author) for n in notes.notes] == [("from alice", "alice")]
    # The MCP endpoint still wants a token; the dashboard's cookie is no token for it.
    assert client.post("/mcp", json={}).status_code == 401
    # Host checked as the transport does, before anything else.
    assert client.get("/ui/notes", headers={"host": "evil.example"}).status_code == 421
    foreign = form_post(client, "/ui/notes/add", {"csrf": "x", "text": "y"}, origin="http://evil.example")
    assert foreign.status_code == 403
    # A stale or missing sign-in form token is refused too.
    assert form_post(client, "/ui/signin", {"token": ALICE}).status_code == 403
    assert form_post(client, "/ui/signin", {"token": ALICE, "csrf": "1.x"}).status_code == 403


def test_a_read_only_member_sees_no_write_and_its_forged_post_is_refused(
    hostd_data_dir: Path, notes: NotesPlugin, tokens: Path
) -> None:
    client = TestClient(team_app(hostd_data_dir, notes, tokens), base_url=BASE_URL, follow_redirects=False)
    team_sign_in(client, READER)
    page = client.get("/ui/notes")
    assert page.status_code == 200
    assert '<form method="post" action="/ui/notes/add"' not in page.text
    forged = form_post(client, "/ui/notes/add", {"csrf": csrf_of(page.text), "text": "sneaky"})
    assert forged.status_code == 403
    assert notes.notes == []


def test_one_cookie_for_every_replica_with_the_shared_secret(
    hostd_data_dir: Path, notes: NotesPlugin, tokens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SECRET_ENV, "s" * 40)
    first = TestClient(
        team_app(hostd_data_dir, notes, tokens, SECRET_ENV), base_url=BASE_URL, follow_redirects=False
    )
    team_sign_in(first, ALICE)
    cookie = first.cookies["hostd_ui"]
    second = TestClient(
        team_app(hostd_data_dir, notes, tokens, SECRET_ENV),
        base_url=BASE_URL,
        follow_redirects=False,
        cookies={"hostd_ui": cookie},
    )
    page = second.get("/ui/notes")
    assert page.status_code == 200  # another process, same secret: same session
    assert (
        form_post(
            second, "/ui/notes/add", {"csrf": csrf_of(first.get("/ui/notes").text), "text": "x"}
        ).status_code
        == 303
    )
    unshared = TestClient(
        team_app(hostd_data_dir, notes, tokens),
        base_url=BASE_URL,
        follow_redirects=False,
        cookies={"hostd_ui": cookie},
    )
    assert unshared.get("/ui/notes").status_code == 303  # a per-process key: sign in again
    # A rotated token ends the sessions made with it (the file is re-read when it changes).
    tokens.write_text(
        f"alice: {ALICE}-rotated\nreader: {{token: {READER}, profile: reader}}\n", encoding="utf-8"
    )
    os.utime(tokens, (1, 1))
    fresh = TestClient(
        team_app(hostd_data_dir, notes, tokens, SECRET_ENV),
        base_url=BASE_URL,
        follow_redirects=False,
        cookies={"hostd_ui": cookie},
    )
    assert fresh.get("/ui/notes").status_code == 303


def test_sign_out_ends_every_copy_of_the_cookie_on_every_replica(
    hostd_data_dir: Path, notes: NotesPlugin, tokens: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32: sign-out only deleted the cookie in the browser, and a copy of it kept working for
    12 hours. Signing out now records the member's time (here in the shared data folder) and every
    replica refuses a cookie issued before it; signing in again works."""
    monkeypatch.setenv(SECRET_ENV, "s" * 40)

    def replica(cookie: str | None = None) -> TestClient:
        app = team_app(hostd_data_dir, notes, tokens, SECRET_ENV)
        cookies = {"hostd_ui": cookie} if cookie else None
        return TestClient(app, base_url=BASE_URL, follow_redirects=False, cookies=cookies)

    first = replica()
    team_sign_in(first, ALICE)
    copied = first.cookies["hostd_ui"]
    team_sign_in(reader := replica(), READER)  # another member's session is not ended
    second = replica(copied)
    assert second.get("/ui/notes").status_code == 200
    page = first.get("/ui/notes")
    out = form_post(first, "/ui/signout", {"csrf": csrf_of(page.text)})
    assert out.status_code == 303
    assert out.headers["location"] == "/ui/signin"
    for client in (replica(copied), second):
        refused = client.get("/ui/notes")
        assert refused.status_code == 303
        assert refused.headers["location"].startswith("/ui/signin")
    assert reader.get("/ui/notes").status_code == 200
    again = replica()
    team_sign_in(again, ALICE)
    assert replica(again.cookies["hostd_ui"]).get("/ui/notes").status_code == 200
    assert replica(copied).get("/ui/notes").status_code == 303


# --- sign-in follows the transport's policy (issue 32) -------------------------------------------

OAUTH = {"issuer": "http://127.0.0.1:9", "member_claim": "preferred_username"}


def oauth_config(tmp_path: Path, **transport: Any) -> Path:
    return write_config(
        tmp_path,
        config={
            "language": "en",
            "profiles": {
                "default": {
                    "plugins": ["probe"],
                    "transport": {"type": "http", "oauth": OAUTH, "dashboard": True, **transport},
                }
            },
        },
    )


def test_oauth_with_the_dashboard_needs_a_tokens_file(tmp_path: Path, probe_install: dict[str, str]) -> None:
    """Issue 32: with ``transport.oauth``, no tokens file and ``dashboard: true``, ``/ui`` offered
    "Continue as <login>" and signed anyone in with no credential while ``/mcp`` answered 401.
    ``config check`` and ``serve`` now refuse that config, naming the keys."""
    config = oauth_config(tmp_path)
    reason = (
        "transport.dashboard: true with transport.oauth needs transport.tokens_file: dashboard members "
        "sign in with a token from that file (signing in through the identity provider is not offered "
        "yet); add transport.tokens_file or set transport.dashboard: false"
    )
    for command in (["config", "check"], ["serve", "--transport", "http", "--port", "0"]):
        done = subprocess.run(
            [sys.executable, "-m", "hostd", *command, "--config", str(config)],
            env={**os.environ, **probe_install},
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        assert (done.returncode, done.stdout) == (2, ""), (command, done.stderr)
        assert done.stderr == (
            f"hostd: {config}: invalid config\nprofiles.default.transport: Value error, {reason}\n"
        ), command


def test_a_served_oauth_dashboard_asks_for_a_member_token(
    tmp_path: Path, probe_install: dict[str, str]
) -> None:
    """The same server with a tokens file: a real ``hostd serve`` offers the token form only, a
    sign-in without a token is refused, and a member's token signs in."""
    tokens = tmp_path / "tokens.yaml"
    tokens.write_text(f"alice: {ALICE}\n", encoding="utf-8")
    config = oauth_config(tmp_path, tokens_file=str(tokens))
    with (
        HttpServer.start(config, env=probe_install) as server,
        httpx.Client(base_url=server.base, follow_redirects=False, timeout=30) as client,
    ):
        form = client.get("/ui/signin")
        assert form.status_code == 200
        assert 'type="password"' in form.text
        assert "Continue as" not in form.text
        assert "Continue" not in form.text
        fields = {"csrf": csrf_of(form.text), "next": "/ui/"}
        refused = client.post("/ui/signin", data=fields)
        assert refused.status_code == 401
        assert "hostd_ui" not in refused.headers.get("set-cookie", "")
        assert client.get("/ui/").status_code == 303
        assert client.post("/mcp", json={}).status_code == 401
        signed = client.post("/ui/signin", data={**fields, "token": ALICE})
        assert signed.status_code == 303
        assert "hostd_ui=" in signed.headers["set-cookie"]
        page = client.get("/ui/")  # the client keeps the cookie
        assert page.status_code == 200
        assert ">alice<" in page.text


def test_no_open_button_where_the_transport_knows_its_members(
    hostd_data_dir: Path, notes: NotesPlugin
) -> None:
    """The open "Continue as" button only on a loopback bind with no member source at all: where
    the transport has one the dashboard cannot use, there is no way in, never one for anyone."""
    from hostd.web.app import SignIn
    from hostd.web.serve import dashboard_app

    policy = HttpPolicy(TransportConfig(type="http"))
    host = notes_host(hostd_data_dir, notes)
    for member_source, kind in ((False, "open"), (True, "closed")):
        sign_in = SignIn(local_member="someone", members=policy.members, member_source=member_source)
        assert sign_in.kind == kind
        app = dashboard_app(host, signer=Signer(None), sign_in=sign_in, policy=policy)
        client = TestClient(app, base_url=BASE_URL, follow_redirects=False)
        form = client.get("/ui/signin")
        answer = form_post(
            client, "/ui/signin", {"csrf": csrf_of(form.text) if kind == "open" else "", "next": "/ui/"}
        )
        if kind == "open":
            assert "Continue as" in form.text
            assert answer.status_code == 303
            continue
        assert form.status_code == 200
        assert "Continue" not in form.text
        assert "no way to sign in" in form.text
        assert answer.status_code == 403
        assert "set-cookie" not in answer.headers
        assert client.get("/ui/notes").status_code == 303


# --- hostd web, the command ------------------------------------------------------------------


def test_hostd_web_prints_a_link_and_serves(tmp_path: Path) -> None:
    config = tmp_path / "hostd.yaml"
    config.write_text(
        f"data_dir: {tmp_path / 'data'}\nlanguage: zh\nprofiles: {{default: {{plugins: []}}}}\n",
        encoding="utf-8",
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "hostd", "web", "--config", str(config), "--no-browser"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        found = re.search(r"(http://127\.0\.0\.1:(\d+))/ui/signin\?token=(\S+)", line)
        assert found, line
        origin, link = found.group(1), found.group(0)
        with httpx.Client(base_url=origin, follow_redirects=False, timeout=30) as client:
            answer = client.get(link)
            assert answer.status_code == 303
            assert answer.headers["location"] == "/ui/"
            page = client.get("/ui/")
            assert page.status_code == 200
            assert "概览" in page.text
            assert client.get("/").headers["location"] == "/ui/"
            assert httpx.get(link, follow_redirects=False).status_code == 403  # once only
    finally:
        process.terminate()
        _, errors = process.communicate(timeout=30)
    assert found.group(3) not in errors  # the token is never logged
