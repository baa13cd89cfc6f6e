"""The issuer's keys: fetched through its metadata, cached, re-fetched on an unknown key id at
most once per ``refresh_seconds`` (a stream of made-up key ids must not hammer the provider).
A plain local HTTP server plays the issuer; no npm needed."""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hostd.team.auth.keys import IssuerKeys
from oauth_support import new_signing_key, public_part

pytestmark = pytest.mark.anyio


class Issuer:
    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = [public_part(new_signing_key("first"))]
        self.jwks_fetches = 0
        self.failing = False  # the key endpoint answers 503 while set
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body: dict[str, Any]
                if self.path == "/.well-known/oauth-authorization-server":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
                    if issuer.failing:
                        self.send_response(503)
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    body = {"keys": issuer.keys}
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                data = json.dumps(body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture
def issuer() -> Iterator[Issuer]:
    found = Issuer()
    yield found
    found.server.shutdown()
    found.server.server_close()


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_keys_are_cached_and_an_unknown_kid_refetches_at_most_once_per_interval(issuer: Issuer) -> None:
    clock = Clock()
    keys = IssuerKeys(issuer.url, refresh_seconds=30, timeout=5, clock=clock)
    assert await keys.key_for("first") is not None
    assert await keys.key_for("first") is not None
    assert issuer.jwks_fetches == 1  # cached
    clock.now += 31
    for _ in range(5):  # a burst of made-up key ids
        assert await keys.key_for("made-up") is None
    assert issuer.jwks_fetches == 2  # one re-fetch for the lot
    issuer.keys.append(public_part(new_signing_key("rotated")))
    assert await keys.key_for("rotated") is None  # within the interval: not fetched again yet
    assert issuer.jwks_fetches == 2
    clock.now += 31
    assert await keys.key_for("rotated") is not None  # the provider's new key, without a restart
    assert await keys.key_for("first") is not None
    assert issuer.jwks_fetches == 3


async def test_metadata_naming_another_issuer_is_refused(issuer: Issuer) -> None:
    from hostd.team.auth.keys import IssuerUnavailable

    keys = IssuerKeys(issuer.url + "/other", refresh_seconds=30, timeout=5)
    with pytest.raises(IssuerUnavailable):
        await keys.key_for("first")
    assert issuer.jwks_fetches == 0


async def test_a_failing_key_endpoint_is_not_asked_again_for_every_token(issuer: Issuer) -> None:
    """While the provider's key endpoint fails, tokens are refused without asking it each time;
    the pause between attempts grows while it keeps failing, and ends once it answers."""
    from hostd.team.auth.keys import FIRST_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS, IssuerUnavailable

    clock = Clock()
    keys = IssuerKeys(issuer.url, refresh_seconds=30, timeout=5, clock=clock)
    issuer.failing = True
    for _ in range(20):  # a burst of tokens, the provider down
        with pytest.raises(IssuerUnavailable):
            await keys.key_for("first")
    assert issuer.jwks_fetches == 1
    pauses = []
    for _ in range(8):  # it keeps failing: each pause twice the last, up to the maximum
        before = issuer.jwks_fetches
        waited = 0.0
        while issuer.jwks_fetches == before:
            clock.now += 0.5
            waited += 0.5
            with pytest.raises(IssuerUnavailable):
                await keys.key_for("made-up")
        pauses.append(waited)
    expected = [FIRST_BACKOFF_SECONDS]
    while len(expected) < len(pauses):
        expected.append(min(MAX_BACKOFF_SECONDS, expected[-1] * 2))
    assert pauses == expected
    assert pauses[-1] == MAX_BACKOFF_SECONDS
    issuer.failing = False
    clock.now += MAX_BACKOFF_SECONDS
    assert await keys.key_for("first") is not None  # back: fetched at once, and kept
    assert await keys.key_for("first") is not None
    fetched = issuer.jwks_fetches
    issuer.failing = True
    clock.now += 31
    assert await keys.key_for("made-up") is None  # fails again: the keys fetched before stay
    assert await keys.key_for("made-up") is None
    assert await keys.key_for("first") is not None
    assert issuer.jwks_fetches == fetched + 1


def test_a_served_replica_backs_off_a_failing_key_endpoint(issuer: Issuer, tmp_path: Path) -> None:
    """A real ``hostd serve``: tokens naming key ids it has never seen, with the provider's key
    endpoint failing, are refused 401 without a fetch each."""
    import httpx2
    from hostd_testing import HttpServer, write_config
    from oauth_support import sign

    issuer.failing = True
    transport = {"oauth": {"issuer": issuer.url}, "failed_signins_per_minute": 1000}
    config = write_config(tmp_path, config={"profiles": {"default": {"transport": transport}}})
    key = new_signing_key("signer")
    with HttpServer.start(config) as server:
        started = time.monotonic()
        for number in range(15):
            claims = {"sub": "alice", "aud": server.url, "iss": issuer.url}
            token = sign(claims, key, kid=f"kid-{number}")
            answer = httpx2.post(
                server.url,
                content=b"{}",
                headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
                timeout=30,
            )
            assert answer.status_code == 401
        elapsed = time.monotonic() - started
    # One fetch, then pauses of 1, 2, 4 ... s: a few fetches however long the 15 requests took
    # (one on a quiet machine; a loaded one, slower, sees a pause or two run out).
    assert issuer.jwks_fetches <= 1 + math.ceil(math.log2(elapsed + 1)), (issuer.jwks_fetches, elapsed)
    assert issuer.jwks_fetches <= 5  # without the back-off: 15, one per token


def test_a_member_removed_from_the_members_file_loses_their_open_stream(
    issuer: Issuer, tmp_path: Path
) -> None:
    """Revocation reaches OAuth members' streams too: a legacy SSE stream opened with a valid
    token ends within seconds of its member's removal from ``oauth.members_file``."""
    import httpx2
    from hostd_testing import HttpServer, write_config
    from oauth_support import sign

    key = new_signing_key("served")
    issuer.keys.append(public_part(key))
    members = tmp_path / "members.yaml"
    members.write_text("- alice\n- bob\n", encoding="utf-8")
    oauth = {"issuer": issuer.url, "members_file": str(members)}
    config = write_config(tmp_path, config={"profiles": {"default": {"transport": {"oauth": oauth}}}})
    with HttpServer.start(config) as server:
        claims = {
            "aud": server.url,
            "iss": issuer.url,
            "exp": int(time.time()) + 600,
            "scope": "mcp:read mcp:write",
        }
        headers = {"Accept": "text/event-stream"}
        ended: dict[str, float] = {}

        def hold(member: str) -> None:
            token = sign({**claims, "sub": member}, key)
            try:
                with httpx2.stream(
                    "GET",
                    f"{server.base}/sse",
                    headers={**headers, "Authorization": f"Bearer {token}"},
                    timeout=httpx2.Timeout(30, read=60),
                ) as response:
                    assert response.status_code == 200
                    opened.add(member)
                    for _ in response.iter_bytes():
                        pass
            except httpx2.HTTPError:
                pass
            ended[member] = time.monotonic()

        opened: set[str] = set()
        threads = [threading.Thread(target=hold, args=(member,), daemon=True) for member in ("alice", "bob")]
        for thread in threads:
            thread.start()
        deadline = time.monotonic() + 60
        while opened != {"alice", "bob"}:
            assert time.monotonic() < deadline, ended
            assert not ended, ended
            time.sleep(0.05)
        members.write_text("- bob\n", encoding="utf-8")
        removed_at = time.monotonic()
        threads[0].join(timeout=10)
        assert "alice" in ended
        assert ended["alice"] - removed_at < 8
        assert "bob" not in ended  # bob is still listed: his stream stays


def test_a_stream_ends_when_the_token_that_opened_it_expires(issuer: Issuer, tmp_path: Path) -> None:
    """An access token's ``exp`` bounds the streams it opens, as it bounds its requests."""
    import httpx2
    from hostd_testing import HttpServer, write_config
    from oauth_support import sign

    key = new_signing_key("served")
    issuer.keys.append(public_part(key))
    oauth = {"issuer": issuer.url, "leeway_seconds": 0}
    config = write_config(tmp_path, config={"profiles": {"default": {"transport": {"oauth": oauth}}}})
    with HttpServer.start(config) as server:
        expires = time.time() + 4
        claims = {
            "sub": "alice",
            "aud": server.url,
            "iss": issuer.url,
            "exp": int(expires),
            "scope": "mcp:read",
        }
        token = sign(claims, key)
        with httpx2.stream(
            "GET",
            f"{server.base}/sse",
            headers={"Accept": "text/event-stream", "Authorization": f"Bearer {token}"},
            timeout=httpx2.Timeout(30, read=60),
        ) as response:
            assert response.status_code == 200
            still_open = False
            try:
                for _ in response.iter_bytes():  # the SSE pings come every 15 s
                    if time.time() > expires + 20:
                        still_open = True
                        break
            except httpx2.HTTPError:
                pass
        ended = time.time()
    assert not still_open, "the stream outlived its token by 20 s"
    assert int(expires) <= ended < int(expires) + 8
