"""The dashboard behind the team deployment: nginx running ``deploy/nginx.conf`` in front of three
``hostd serve`` replicas with ``transport.dashboard: true`` and one PostgreSQL database. A member
signs in once through nginx; that one cookie opens pages through nginx (round robin: every
replica) and on each replica directly, and a form posted through one replica is read back
through another."""

from __future__ import annotations

import os
import re
import time
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import httpx2 as httpx
import pytest
import yaml
from hostd_testing.postgres import PostgresServer
from team_cluster import NGINX_INSTALL, Balancer, Replica, find_nginx, free_port, start_together

pytestmark = pytest.mark.slow
ALICE = "alice-dashboard-token-0123456789"
BOB = "bob-dashboard-token-0123456789ab"
STATE_SECRET = "team-dashboard-state-secret-0123456789abcdef"


@pytest.fixture(scope="module")
def deployment(
    postgres_server: PostgresServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Balancer, list[Replica]]]:
    binary = find_nginx()
    if binary is None:
        if os.environ.get("HOSTD_REQUIRE_NGINX") == "1":
            pytest.fail(f"nginx is required (HOSTD_REQUIRE_NGINX=1) but not installed: {NGINX_INSTALL}")
        pytest.skip(f"nginx is not installed: {NGINX_INSTALL}")
    folder = tmp_path_factory.mktemp("team-dashboard")
    tokens = folder / "tokens.yaml"
    tokens.write_text(yaml.safe_dump({"alice": ALICE, "bob": BOB}), encoding="utf-8")
    transport = {
        "type": "http",
        "stateless": True,
        "tokens_file": str(tokens),
        "state_secret_env": "HOSTD_STATE_SECRET",
        "dashboard": True,
    }
    config = folder / "hostd.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "data_dir": str(folder / "data"),
                "storage": {"url_env": "HOSTD_DATABASE_URL"},
                "language": "en",
                "profiles": {"team": {"plugins": ["memory"], "transport": transport}},
            }
        ),
        encoding="utf-8",
    )
    env = {
        "HOSTD_STATE_SECRET": STATE_SECRET,
        "HOSTD_CACHE_DIR": str(folder / "cache"),
        "HOSTD_DATABASE_URL": postgres_server.create_database("dashboard"),
    }
    replicas = [Replica(config, free_port(), env, folder / f"replica-{i}.log") for i in range(3)]
    balancer = Balancer(binary, folder / "nginx", free_port())
    try:
        start_together(replicas)
        balancer.start([replica.port for replica in replicas])
        yield balancer, replicas
    finally:
        balancer.stop()
        for replica in replicas:
            replica.stop()
        logs = "".join(Path(r.log).read_text(errors="replace") for r in replicas)
        assert ALICE not in logs
        assert BOB not in logs


def csrf_of(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


def form(fields: dict[str, str]) -> dict[str, object]:
    return {
        "content": urllib.parse.urlencode(fields),
        "headers": {"content-type": "application/x-www-form-urlencoded"},
    }


def test_one_cookie_opens_pages_on_every_replica(deployment: tuple[Balancer, list[Replica]]) -> None:
    balancer, replicas = deployment
    through_nginx = f"http://127.0.0.1:{balancer.port}"
    with httpx.Client(base_url=through_nginx, follow_redirects=False, timeout=30) as client:
        signin = client.get("/ui/signin")
        assert signin.status_code == 200
        answer = client.post("/ui/signin", **form({"csrf": csrf_of(signin.text), "token": ALICE}))  # type: ignore[arg-type]
        assert answer.status_code == 303
        assert answer.headers["location"] == "/ui/"
        cookie = client.cookies["hostd_ui"]
        for _ in range(6):  # round robin over the three replicas, twice
            page = client.get("/ui/memory")
            assert page.status_code == 200
            assert ">alice<" in page.text
        page = client.get("/ui/")
        created = client.post(
            "/ui/memory/edit",
            **form(
                {"csrf": csrf_of(page.text), "uri": "team://none", "version": "1", "content": "x", "tags": ""}
            ),  # type: ignore[arg-type]
        )
        assert created.status_code == 404  # the tool's NOT_FOUND, through nginx: CSRF held across replicas
    for replica in replicas:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{replica.port}",
            cookies={"hostd_ui": cookie},
            follow_redirects=False,
            timeout=30,
        ) as direct:
            page = direct.get("/ui/")
            assert page.status_code == 200, replica.port
            assert "Overview" in page.text
            assert ALICE not in page.text


def test_sign_out_ends_the_session_on_every_replica(deployment: tuple[Balancer, list[Replica]]) -> None:
    """Issue 32: sign-out deleted the cookie in the browser only; a copy kept working for 12 hours.
    Bob signs out on one replica: the team database records when, and a copy of his cookie is
    refused by every replica (directly and through nginx); signing in again works everywhere."""
    _, replicas = deployment

    def direct(replica: Replica, cookie: str | None = None) -> httpx.Client:
        return httpx.Client(
            base_url=f"http://127.0.0.1:{replica.port}",
            cookies={"hostd_ui": cookie} if cookie else None,
            follow_redirects=False,
            timeout=30,
        )

    def sign_in(client: httpx.Client) -> str:
        signin = client.get("/ui/signin")
        answer = client.post("/ui/signin", **form({"csrf": csrf_of(signin.text), "token": BOB}))  # type: ignore[arg-type]
        assert answer.status_code == 303
        return str(client.cookies["hostd_ui"])

    with direct(replicas[0]) as first:
        copied = sign_in(first)
        for replica in replicas:
            with direct(replica, copied) as other:
                assert other.get("/ui/memory").status_code == 200, replica.port
        page = first.get("/ui/")
        out = first.post("/ui/signout", **form({"csrf": csrf_of(page.text)}))  # type: ignore[arg-type]
        assert out.status_code == 303
        assert out.headers["location"] == "/ui/signin"
    deadline = time.monotonic() + 10  # a replica trusts a sign-out time it read for a second
    for replica in replicas:
        with direct(replica, copied) as other:
            while (answer := other.get("/ui/memory")).status_code == 200 and time.monotonic() < deadline:
                time.sleep(0.2)
            assert answer.status_code == 303, replica.port
            assert answer.headers["location"].startswith("/ui/signin"), replica.port
    with direct(replicas[2]) as again:
        fresh = sign_in(again)
    for replica in replicas:
        with direct(replica, fresh) as other:
            assert other.get("/ui/memory").status_code == 200, replica.port
