"""hostd as an OAuth 2.1 resource server, against a real identity provider (``oidc-provider``).

The official SDK client's OAuth support runs the whole MCP authorization flow (protected
resource metadata, the provider's metadata, dynamic client registration, authorization code
with PKCE and a resource indicator; login and consent submitted headlessly) and then calls
tools. Every refused token differs from an accepted one in one thing only, and each is its own
test; the provider's key rotation is picked up without restarting hostd.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostd_testing import HttpServer, envelope_of, write_config
from oauth_support import (
    OidcProvider,
    headless_sign_in,
    hmac_signed_with,
    new_signing_key,
    oidc_provider,
    public_part,
    public_pem,
    sign,
    unsigned,
)
from team_support import MODERN, install_team_plugins, post, sse_messages, write_tokens

pytestmark = [pytest.mark.anyio, pytest.mark.npm]

MEMBERS = ["alice", "bob", "svc-bot", "carol"]
DAVE = "dave-static-token-0123456789"
#: The provider gives opaque access tokens for this resource: hostd must introspect them.
OPAQUE_RESOURCE = "http://127.0.0.1:9/opaque/mcp"


class Served:
    """The provider and a hostd signing members in with it."""

    def __init__(
        self,
        provider: OidcProvider,
        server: HttpServer,
        members_file: Path,
        config: Path,
        env: dict[str, str],
    ) -> None:
        self.provider = provider
        self.server = server
        self.members_file = members_file
        self.config = config
        self.env = env

    def audit(self, member: str) -> list[tuple[str, str, str]]:
        """The member's attempts in the audit trail: (surface, tool, outcome), oldest first."""
        import json
        import subprocess
        import sys

        time.sleep(1.5)  # the trail is written every half second
        read = subprocess.run(
            [
                sys.executable,
                "-m",
                "hostd",
                "audit",
                "--json",
                "--member",
                member,
                "--config",
                str(self.config),
            ],
            capture_output=True,
            text=True,
            env={**__import__("os").environ, **self.env},
            timeout=120,
        )
        assert read.returncode == 0, read.stderr
        entries = [json.loads(line) for line in read.stdout.splitlines()]
        return [(e["surface"], e["tool"], e["outcome"]) for e in entries]

    @property
    def resource(self) -> str:
        return self.server.url

    def forged(self, subject: str = "alice", **overrides: Any) -> str:
        """A token as the provider signs them, with its current key."""
        return sign(self.provider.claims(self.resource, subject, **overrides), self.provider.keys[0])


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("oauth")
    env = install_team_plugins(folder)
    members_file = folder / "members.yaml"
    members_file.write_text("\n".join(f"- {name}" for name in MEMBERS) + "\n", encoding="utf-8")
    with oidc_provider(folder / "provider", opaque=[OPAQUE_RESOURCE]) as provider:
        oauth = {
            "issuer": provider.issuer,
            "member_claim": "preferred_username",
            "members_file": str(members_file),
            "jwks_refresh_seconds": 1,
        }
        config = write_config(
            folder,
            config={
                "audit": {},
                "profiles": {
                    "default": {
                        "plugins": ["probe", "team"],
                        "transport": {
                            "type": "http",
                            "stateless": True,
                            "oauth": oauth,
                            "tokens_file": str(write_tokens(folder / "tokens.yaml", {"dave": DAVE})),
                        },
                    }
                },
            },
        )
        with HttpServer.start(config, env=env) as server:
            yield Served(provider, server, members_file, config, env)


def call(
    served: Served, token: str | None, name: str = "whoami", arguments: dict[str, Any] | None = None
) -> Any:
    """One 2026-07-28 tools/call as plain HTTP; the response (status, headers, JSON-RPC answer)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": arguments or {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": MODERN,
                "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "1"},
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
    headers = {"MCP-Protocol-Version": MODERN, "Mcp-Method": "tools/call", "Mcp-Name": name}
    if token is not None:
        headers["Authorization"] = f"Bearer {token}"
    return post(served.resource, body, headers)


def answered_member(response: Any) -> str:
    assert response.status_code == 200, response.text
    message = next(m for m in sse_messages(response) if m.get("id") == 1)
    return str(message["result"]["structuredContent"]["member"])


def assert_refused(response: Any, served: Served) -> None:
    assert response.status_code == 401, response.text
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert 'error="invalid_token"' in challenge
    metadata = f"{served.server.base}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata}"' in challenge
    assert "alice" not in response.text


# --- the whole flow with the official client ---------------------------------------------


async def test_the_sdk_client_signs_in_through_the_provider_and_calls_tools(served: Served) -> None:
    import httpx2
    from mcp import Client
    from mcp.client.auth import OAuthClientProvider, TokenStorage
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.auth import (
        AuthorizationCodeResult,
        OAuthClientInformationFull,
        OAuthClientMetadata,
        OAuthToken,
    )
    from pydantic import AnyUrl

    class Memory(TokenStorage):
        def __init__(self) -> None:
            self.tokens: OAuthToken | None = None
            self.client: OAuthClientInformationFull | None = None

        async def get_tokens(self) -> OAuthToken | None:
            return self.tokens

        async def set_tokens(self, tokens: OAuthToken) -> None:
            self.tokens = tokens

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return self.client

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
            self.client = client_info

    signed_in: list[dict[str, str]] = []

    async def redirect(authorization_url: str) -> None:
        signed_in.append(await headless_sign_in(authorization_url, "alice"))

    async def callback() -> AuthorizationCodeResult:
        return AuthorizationCodeResult.model_validate(signed_in[-1])

    storage = Memory()
    auth = OAuthClientProvider(
        served.resource,
        OAuthClientMetadata(
            client_name="hostd test client",
            redirect_uris=[AnyUrl("http://127.0.0.1:9/callback")],
            grant_types=["authorization_code", "refresh_token"],
            response_types=["code"],
            token_endpoint_auth_method="none",
        ),
        storage,
        redirect_handler=redirect,
        callback_handler=callback,
    )
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        Client(streamable_http_client(served.resource, http_client=http)) as client,
    ):
        who = envelope_of(await client.call_tool("whoami", {}))
        wrote = await client.call_tool("fail", {"kind": "tool_error"})
    assert who["member"] == "alice"
    assert len(signed_in) == 1  # one sign-in, then the token was reused
    assert storage.client is not None
    assert storage.client.client_id
    assert storage.tokens is not None
    assert storage.tokens.access_token.count(".") == 2
    # A tool that writes is reached (its own error comes back), so the write scope was granted.
    assert envelope_of(wrote)["error"]["code"] == "CONFLICT"


# --- what a client discovers ---------------------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp"]
)
def test_protected_resource_metadata(served: Served, path: str) -> None:
    import httpx2

    response = httpx2.get(served.server.base + path, timeout=10)
    assert response.status_code == 200
    assert response.json() == {
        "resource": served.resource,
        "authorization_servers": [served.provider.issuer],
        "scopes_supported": ["mcp:read", "mcp:write"],
        "bearer_methods_supported": ["header"],
        "resource_name": "hostd",
    }


def test_no_token_is_401_pointing_to_the_metadata(served: Served) -> None:
    response = call(served, None)
    assert response.status_code == 401
    metadata = f"{served.server.base}/.well-known/oauth-protected-resource/mcp"
    assert response.headers["www-authenticate"] == (
        f'Bearer resource_metadata="{metadata}", scope="mcp:read mcp:write"'
    )


def test_a_token_without_the_write_scope_is_403_for_a_tool_that_writes(served: Served) -> None:
    token = served.provider.service_token(served.resource, scope="mcp:read")
    assert answered_member(call(served, token)) == "svc-bot"  # reading is fine
    response = call(served, token, "fail", {"kind": "tool_error"})
    assert response.status_code == 403
    assert response.headers["www-authenticate"] == (
        'Bearer error="insufficient_scope", '
        f'resource_metadata="{served.server.base}/.well-known/oauth-protected-resource/mcp", '
        'scope="mcp:read mcp:write"'
    )


@pytest.mark.parametrize("spelling", ["tools\\/call", "tools\\u002fcall", "tools\\u002Fcall"])
def test_an_escaped_method_is_refused_as_the_plain_spelling_is(served: Served, spelling: str) -> None:
    """Finding (High): the write-scope test looked for the bytes ``tools/call`` in the body, and
    the SDK then decoded the escape and ran the call. The call is read as the SDK reads it."""
    import httpx2

    token = served.provider.service_token(served.resource, scope="mcp:read")
    plain = call(served, token, "fail", {"kind": "tool_error"})
    assert plain.status_code == 403
    raw = plain.request.content.decode()
    escaped = raw.replace('"tools/call"', f'"{spelling}"', 1)
    assert f'"{spelling}"' in escaped
    assert '"tools/call"' not in escaped
    headers = {k: v for k, v in plain.request.headers.items() if k.lower() not in ("content-length",)}
    response = httpx2.post(served.resource, content=escaped.encode(), headers=headers, timeout=30)
    assert response.status_code == 403, response.text
    assert response.headers["www-authenticate"] == plain.headers["www-authenticate"]


def test_a_read_scope_token_gets_what_the_policy_says_and_each_attempt_is_recorded(served: Served) -> None:
    """The OAuth row of the one-door matrix: a token with only the read scope calls a read tool,
    is refused a write tool (403 at the door, step-up) and an unknown one (as unknown), and the
    audit trail holds one record of each attempt, refusals included."""
    token = served.provider.service_token(served.resource, scope="mcp:read")
    before = served.audit("svc-bot")
    assert call(served, token, "echo", {"text": "hi"}).status_code == 200
    reading = call(served, token, "whoami")
    assert reading.status_code == 200, reading.text
    writing = call(served, token, "fail", {"kind": "tool_error"})
    assert writing.status_code == 403
    assert 'error="insufficient_scope"' in writing.headers["www-authenticate"]
    unknown = call(served, token, "no_such_tool")
    assert unknown.status_code in (200, 400), unknown.text
    message = next(m for m in sse_messages(unknown) if m.get("id") == 1)
    assert message["error"]["code"] == -32602
    after = served.audit("svc-bot")[len(before) :]
    assert after == [
        ("mcp", "echo", "ok"),
        ("mcp", "whoami", "ok"),
        ("mcp", "fail", "PERMISSION_DENIED"),
        ("mcp", "no_such_tool", "NOT_FOUND"),
    ]


def test_a_token_without_the_read_scope_is_403(served: Served) -> None:
    response = call(served, served.forged(scope="openid"))
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in response.headers["www-authenticate"]


# --- accepted, then refused for one difference each -----------------------------------------


def test_a_token_from_the_provider_is_accepted(served: Served) -> None:
    assert answered_member(call(served, served.provider.service_token(served.resource))) == "svc-bot"
    assert answered_member(call(served, served.forged("bob"))) == "bob"  # the baseline of the forgeries


def test_refused_for_another_audience(served: Served) -> None:
    token = served.provider.service_token("http://127.0.0.1:9/elsewhere/mcp")
    assert_refused(call(served, token), served)


def test_refused_when_expired(served: Served) -> None:
    now = int(time.time())
    assert_refused(call(served, served.forged(iat=now - 600, exp=now - 120)), served)


def test_refused_from_another_issuer(served: Served) -> None:
    assert_refused(call(served, served.forged(iss="http://127.0.0.1:9")), served)


def test_refused_with_alg_none(served: Served) -> None:
    claims = served.provider.claims(served.resource, "alice")
    assert_refused(call(served, unsigned(claims, kid=served.provider.keys[0]["kid"])), served)


def test_refused_hs256_signed_with_the_public_key(served: Served) -> None:
    key = served.provider.keys[0]
    token = hmac_signed_with(public_pem(key), served.provider.claims(served.resource, "alice"), key["kid"])
    assert_refused(call(served, token), served)


def test_refused_with_an_unknown_key_id(served: Served) -> None:
    impostor = new_signing_key("not-the-providers")
    assert_refused(call(served, sign(served.provider.claims(served.resource, "alice"), impostor)), served)


def test_refused_an_id_token_as_access_token(served: Served) -> None:
    token = sign(served.provider.claims(served.resource, "alice"), served.provider.keys[0], typ="JWT")
    assert_refused(call(served, token), served)


def test_refused_for_a_removed_member(served: Served) -> None:
    token = served.forged("carol")
    assert answered_member(call(served, token)) == "carol"
    served.members_file.write_text(
        "\n".join(f"- {name}" for name in MEMBERS if name != "carol") + "\n", encoding="utf-8"
    )
    deadline = time.monotonic() + 10  # the file is looked at once a second at most
    while (response := call(served, token)).status_code == 200 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert_refused(response, served)
    assert answered_member(call(served, served.forged("bob"))) == "bob"  # the others stay


def test_key_rotation_at_the_provider_is_picked_up_without_a_restart(served: Served) -> None:
    old = served.provider.keys[0]
    assert answered_member(call(served, served.provider.service_token(served.resource))) == "svc-bot"
    time.sleep(1.1)  # past jwks_refresh_seconds (1 s here), so the new key id may be fetched
    new = new_signing_key()
    served.provider.restart([new, old])  # the provider now signs with the new key, still publishes the old
    token = served.provider.service_token(served.resource)
    import jwt

    assert jwt.get_unverified_header(token)["kid"] == new["kid"]
    assert answered_member(call(served, token)) == "svc-bot"
    assert public_part(new)["kid"] != old["kid"]


def test_the_tokens_file_keeps_working_beside_oauth(served: Served) -> None:
    assert answered_member(call(served, DAVE)) == "dave"
    assert_refused(call(served, DAVE + "x"), served)  # neither a member's token nor a valid JWT


def test_opaque_tokens_are_introspected(served: Served, tmp_path: Path) -> None:
    from oauth_support import SERVICE_CLIENT

    oauth = {
        "issuer": served.provider.issuer,
        "audience": OPAQUE_RESOURCE,
        "member_claim": "preferred_username",
        "introspection": {
            "client_id": SERVICE_CLIENT["client_id"],
            "client_secret_env": "HOSTD_TEST_INTROSPECT",
        },
    }
    transport = {"type": "http", "stateless": True, "oauth": oauth}
    config = write_config(
        tmp_path, config={"profiles": {"default": {"plugins": ["probe", "team"], "transport": transport}}}
    )
    env = {**install_team_plugins(tmp_path), "HOSTD_TEST_INTROSPECT": SERVICE_CLIENT["client_secret"]}
    opaque = served.provider.service_token(OPAQUE_RESOURCE)
    assert opaque.count(".") != 2  # not a JWT
    with HttpServer.start(config, env=env) as server:
        other = Served(served.provider, server, served.members_file, config, env)
        assert answered_member(call(other, opaque)) == "svc-bot"
        assert answered_member(call(other, opaque)) == "svc-bot"  # the second from the short cache
        # The provider knows no such token (a character changed in the middle: the last one of a
        # base64url token may carry bits its decoder ignores, and "xy" may be what was there).
        middle = len(opaque) // 2
        unknown = opaque[:middle] + ("A" if opaque[middle] != "A" else "B") + opaque[middle + 1 :]
        assert call(other, unknown).status_code == 401
        # A JWT for the first server is not for this one.
        assert call(other, served.provider.service_token(served.resource)).status_code == 401
