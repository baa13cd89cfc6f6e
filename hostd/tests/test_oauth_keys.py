"""The issuer's keys: fetched through its metadata, cached, re-fetched on an unknown key id at
most once per ``refresh_seconds`` (a stream of made-up key ids must not hammer the provider).
A plain local HTTP server plays the issuer; no npm needed."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from hostd.team.auth.keys import IssuerKeys
from oauth_support import new_signing_key, public_part

pytestmark = pytest.mark.anyio


class Issuer:
    def __init__(self) -> None:
        self.keys: list[dict[str, Any]] = [public_part(new_signing_key("first"))]
        self.jwks_fetches = 0
        issuer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                body: dict[str, Any]
                if self.path == "/.well-known/oauth-authorization-server":
                    body = {"issuer": issuer.url, "jwks_uri": f"{issuer.url}/jwks"}
                elif self.path == "/jwks":
                    issuer.jwks_fetches += 1
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
