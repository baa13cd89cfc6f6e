"""A real identity provider for the OAuth tests, and what the tests do with it.

``oidc-provider`` (npm, an OpenID Certified implementation) is installed once into the shared
test cache and started by ``OidcProvider`` on a free loopback port with signing keys made here,
so tests can also forge tokens with the provider's own key (expired, another issuer) and with
keys it never had. ``headless_sign_in`` drives the provider's login and consent forms with
plain HTTP requests, as a person's browser would.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import re
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urljoin, urlsplit

import pytest
from hostd_testing import npm_installed
from hostd_testing.processes import stop_process

HERE = Path(__file__).resolve().parent
NPM_CACHE = Path.home() / ".cache" / "hostd-tests" / "npm-oidc"
PACKAGE = "oidc-provider@9"
SCRIPT = HERE / "oidc" / "provider.mjs"
SERVICE_CLIENT = {"client_id": "svc-bot", "client_secret": "svc-bot-secret-0123456789abcdef"}


def require_or_skip(what: str) -> None:
    if os.environ.get("HOSTD_REQUIRE_BROWSER") == "1":
        pytest.fail(f"{what} (HOSTD_REQUIRE_BROWSER=1)")
    pytest.skip(what)


def oidc_provider_module() -> Path:
    """``oidc-provider``'s entry module, installed into the test cache on first use."""
    module = NPM_CACHE / "node_modules" / "oidc-provider" / "lib" / "index.js"
    if shutil.which("node") is None:
        require_or_skip("node is not installed")
    npm_installed(NPM_CACHE, PACKAGE)
    return module


def new_signing_key(kid: str | None = None) -> dict[str, Any]:
    """A fresh RSA private key as a JWK (with ``kid``, ``alg``, ``use``)."""
    from cryptography.hazmat.primitives.asymmetric import rsa
    from jwt.algorithms import RSAAlgorithm

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(RSAAlgorithm.to_jwk(key))
    jwk.update(kid=kid or uuid.uuid4().hex[:12], alg="RS256", use="sig")
    return dict(jwk)


def public_part(jwk: dict[str, Any]) -> dict[str, Any]:
    return {name: jwk[name] for name in ("kty", "n", "e", "kid", "alg", "use")}


def sign(claims: dict[str, Any], jwk: dict[str, Any], *, typ: str = "at+jwt", kid: str | None = None) -> str:
    """A JWT signed (RS256) with ``jwk``'s private key, as the provider or an impostor would."""
    import jwt

    key = jwt.PyJWK(jwk).key
    return jwt.encode(claims, key, algorithm="RS256", headers={"typ": typ, "kid": kid or jwk["kid"]})


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(claims: dict[str, Any], **header: Any) -> str:
    """A JWT with ``alg: none`` and no signature (the classic forgery)."""
    head = {"alg": "none", "typ": "at+jwt", **header}
    return f"{_b64(json.dumps(head).encode())}.{_b64(json.dumps(claims).encode())}."


def hmac_signed_with(secret: bytes, claims: dict[str, Any], kid: str) -> str:
    """An HS256 JWT whose HMAC key is ``secret`` (the algorithm-confusion forgery: the public key)."""
    head = _b64(json.dumps({"alg": "HS256", "typ": "at+jwt", "kid": kid}).encode())
    body = _b64(json.dumps(claims).encode())
    signature = hmac.new(secret, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{_b64(signature)}"


def public_pem(jwk: dict[str, Any]) -> bytes:
    import jwt
    from cryptography.hazmat.primitives import serialization

    key = jwt.PyJWK(public_part(jwk)).key
    return bytes(
        key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
    )


class OidcProvider:
    """An ``oidc-provider`` process; ``restart(keys)`` serves new signing keys at the same issuer."""

    def __init__(self, folder: Path, port: int, keys: list[dict[str, Any]], opaque: list[str]) -> None:
        self.folder = folder
        self.port = port
        self.keys = keys
        self.opaque = opaque
        self.process: subprocess.Popen[str] | None = None

    @property
    def issuer(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        module = oidc_provider_module()
        settings = self.folder / "provider.json"
        client = {
            **SERVICE_CLIENT,
            "grant_types": ["client_credentials"],
            "redirect_uris": [],
            "response_types": [],
            "token_endpoint_auth_method": "client_secret_basic",
        }
        settings.write_text(
            json.dumps(
                {"port": self.port, "jwks": {"keys": self.keys}, "clients": [client], "opaque": self.opaque}
            ),
            encoding="utf-8",
        )
        log = (self.folder / "provider.log").open("a", encoding="utf-8")
        self.process = subprocess.Popen(
            ["node", str(SCRIPT), str(settings)],
            env={**os.environ, "OIDC_PROVIDER_MODULE": str(module), "NODE_ENV": "test"},
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
        log.close()
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line.startswith("ready"):
            self.stop()
            raise RuntimeError(
                f"oidc-provider did not start: {(self.folder / 'provider.log').read_text()[-2000:]}"
            )

    def stop(self) -> None:
        if self.process is None:
            return
        stop_process(self.process)
        self.process = None

    def restart(self, keys: list[dict[str, Any]]) -> None:
        self.stop()
        self.keys = keys
        self.start()

    def service_token(self, resource: str, scope: str = "mcp:read mcp:write") -> str:
        """An access token for the pre-registered service client (client credentials grant)."""
        import httpx2

        response = httpx2.post(
            f"{self.issuer}/token",
            data={"grant_type": "client_credentials", "resource": resource, "scope": scope},
            auth=(SERVICE_CLIENT["client_id"], SERVICE_CLIENT["client_secret"]),
            timeout=10,
        )
        assert response.status_code == 200, response.text
        return str(response.json()["access_token"])

    def claims(self, resource: str, subject: str, **overrides: Any) -> dict[str, Any]:
        """Claims as the provider puts them in its access tokens, for tokens forged with its key."""
        now = int(time.time())
        claims = {
            "iss": self.issuer,
            "aud": resource,
            "sub": subject,
            "preferred_username": subject,
            "client_id": "forged",
            "scope": "mcp:read mcp:write",
            "iat": now,
            "exp": now + 300,
            "jti": uuid.uuid4().hex,
        }
        claims.update(overrides)
        return claims


@contextmanager
def oidc_provider(folder: Path, opaque: list[str] | None = None) -> Iterator[OidcProvider]:
    from hostd_testing.clients import free_port

    folder.mkdir(parents=True, exist_ok=True)
    provider = OidcProvider(folder, free_port(), [new_signing_key()], opaque or [])
    provider.start()
    try:
        yield provider
    finally:
        provider.stop()


async def headless_sign_in(authorization_url: str, login: str) -> dict[str, str]:
    """Sign ``login`` in at the provider and consent, as a browser would; what the provider
    redirects back with (``code``, ``state``, ``iss``)."""
    import httpx2

    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as browser:
        url = authorization_url
        for _ in range(12):
            response = await browser.get(url)
            if response.status_code in (302, 303):
                url = urljoin(url, response.headers["location"])
                if "code=" in urlsplit(url).query or "error=" in urlsplit(url).query:
                    query = parse_qs(urlsplit(url).query)
                    if "error" in query:
                        raise AssertionError(f"the provider refused: {query}")
                    return {name: values[0] for name, values in query.items()}
                continue
            assert response.status_code == 200, response.text[:500]
            prompt = re.search(r'name="prompt" value="(\w+)"', response.text)
            assert prompt is not None, response.text[:500]
            form = {"prompt": prompt.group(1)}
            if form["prompt"] == "login":
                form.update(login=login, password="any")
            submitted = await browser.post(url, data=form)
            assert submitted.status_code in (302, 303), submitted.text[:500]
            url = urljoin(url, submitted.headers["location"])
        raise AssertionError("no authorization code after 12 steps")
