"""An access token in, the member it speaks for out, or why it is refused.

JWT access tokens (RFC 9068) are checked by PyJWT against the issuer's published keys:
signature, ``iss``, ``aud`` (this resource, RFC 8707), ``exp``/``nbf``/``iat`` with a small
leeway, and the ``at+jwt`` type. Only the configured asymmetric algorithms are accepted, so
``alg: none`` and an HMAC token "signed" with the public key are refused before any key is
used. Opaque tokens go to the issuer's introspection endpoint (RFC 7662), when configured,
and its answer is kept for a short time.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import jwt

from hostd.core.errors import HostError
from hostd.core.identity import MEMBER_NAME, Member
from hostd.core.oauth_settings import OAuthConfig
from hostd.team.auth.keys import IssuerKeys, IssuerUnavailable

logger = logging.getLogger("hostd.auth")

MEMBERS_CHECK_SECONDS = 1.0
AT_JWT_TYPES = frozenset({"at+jwt", "application/at+jwt"})


class TokenRefused(Exception):
    """Why a token is not accepted: logged (never with the token), answered 401 ``invalid_token``."""


@dataclass(frozen=True)
class Admitted:
    """A member signed in by the identity provider, with the scopes their token carries."""

    member: Member
    scopes: frozenset[str]
    #: The token's ``exp`` (seconds since the epoch), when it has one: open streams end then.
    expires_at: float | None = None


def token_scopes(claims: dict[str, Any]) -> frozenset[str]:
    """``scope`` (a space-separated string, RFC 9068 / 7662) or ``scp`` (a list, as some providers send)."""
    scope = claims.get("scope")
    if isinstance(scope, str):
        return frozenset(scope.split())
    scp = claims.get("scp")
    if isinstance(scp, list):
        return frozenset(item for item in scp if isinstance(item, str))
    if isinstance(scp, str):
        return frozenset(scp.split())
    return frozenset()


class AllowedMembers:
    """The ``members_file``: who may sign in (and their profile), re-read when the file changes."""

    def __init__(
        self, path: Path, known_profiles: Collection[str], clock: Callable[[], float] = time.monotonic
    ):
        self._path = path
        self._known_profiles = frozenset(known_profiles)
        self._clock = clock
        self._lock = threading.Lock()
        self._checked_at = clock()
        self._stamp = self._file_stamp()
        self._members = self._read()

    def _file_stamp(self) -> tuple[int, int] | None:
        try:
            stat = self._path.stat()
        except OSError:
            return None
        return stat.st_mtime_ns, stat.st_size

    def _read(self) -> dict[str, str | None]:
        import yaml

        where = f"transport.oauth.members_file {self._path}"
        try:
            loaded = yaml.safe_load(self._path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise HostError(f"{where}: cannot read it: {exc.strerror}") from None
        except yaml.YAMLError:
            raise HostError(f"{where}: not valid YAML") from None
        entries: dict[str, str | None]
        if loaded is None:
            entries = {}
        elif isinstance(loaded, list):
            entries = {str(name): None for name in loaded}
        elif isinstance(loaded, dict):
            entries = {
                str(name): (None if profile is None else str(profile)) for name, profile in loaded.items()
            }
        else:
            raise HostError(f"{where}: give a list of member names, or a mapping member-name: profile")
        for name, profile in entries.items():
            if not MEMBER_NAME.match(name):
                raise HostError(f"{where}: member name {name!r} must match {MEMBER_NAME.pattern}")
            if profile is not None and profile not in self._known_profiles:
                raise HostError(f"{where}: member {name!r}: no profile {profile!r} in the config")
        return entries

    def lookup(self, name: str) -> tuple[bool, str | None]:
        """Whether the member is listed, and their profile."""
        now = self._clock()
        if now - self._checked_at >= MEMBERS_CHECK_SECONDS:
            self._checked_at = now
            stamp = self._file_stamp()
            if stamp != self._stamp:
                with self._lock:
                    self._stamp = stamp
                    try:
                        self._members = self._read()
                        logger.info("members file reloaded: %d member(s)", len(self._members))
                    except HostError as exc:
                        logger.error("members file not reloaded, the members loaded before stay: %s", exc)
        members = self._members
        return name in members, members.get(name)


class TokenVerifier:
    """Checks access tokens from one issuer for one resource (``audience``)."""

    def __init__(self, config: OAuthConfig, audience: str, known_profiles: Collection[str] = ()) -> None:
        self.config = config
        self.audience = audience
        self.keys = IssuerKeys(
            config.issuer, refresh_seconds=config.jwks_refresh_seconds, timeout=config.http_timeout_seconds
        )
        self._known_profiles = frozenset(known_profiles)
        for scope, profile in config.profile_scopes.items():
            if profile not in self._known_profiles:
                raise HostError(f"transport.oauth.profile_scopes: {scope!r} names no profile {profile!r}")
        self.allowed = (
            AllowedMembers(Path(config.members_file).expanduser(), self._known_profiles)
            if config.members_file
            else None
        )
        self._introspected: dict[bytes, tuple[float, dict[str, Any]]] = {}

    async def verify(self, token: str) -> Admitted:
        """The member and scopes of a valid token; ``TokenRefused`` saying why otherwise."""
        if token.count(".") == 2:
            claims = await self._jwt_claims(token)
        elif self.config.introspection is not None:
            claims = await self._introspect(token)
        else:
            raise TokenRefused("not a JWT, and no introspection is configured")
        return self._admit(claims)

    async def _jwt_claims(self, token: str) -> dict[str, Any]:
        config = self.config
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"unreadable JWT: {exc}") from None
        alg = header.get("alg")
        if alg not in config.algorithms:
            raise TokenRefused(f"algorithm {alg!r} is not accepted (transport.oauth.algorithms)")
        if config.require_at_jwt_type and str(header.get("typ", "")).lower() not in AT_JWT_TYPES:
            raise TokenRefused(f"JWT type {header.get('typ')!r} is not at+jwt: not an access token")
        kid = header.get("kid")
        try:
            key = await self.keys.key_for(kid if isinstance(kid, str) else None)
        except (IssuerUnavailable, httpx2.HTTPError) as exc:
            raise TokenRefused(f"the issuer's keys cannot be fetched: {exc}") from None
        if key is None:
            raise TokenRefused(f"key id {kid!r} is not among the issuer's keys")
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self.audience,
                issuer=config.issuer,
                leeway=config.leeway_seconds,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            raise TokenRefused(f"{type(exc).__name__}: {exc}") from None
        return claims

    async def _introspect(self, token: str) -> dict[str, Any]:
        assert self.config.introspection is not None
        settings = self.config.introspection
        now = time.monotonic()
        digest = hashlib.sha256(token.encode()).digest()
        cached = self._introspected.get(digest)
        if cached is not None and cached[0] > now:
            return cached[1]
        secret = os.environ.get(settings.client_secret_env, "")
        endpoint = settings.endpoint
        try:
            if endpoint is None:
                found = (await self.keys.metadata()).get("introspection_endpoint")
                if not isinstance(found, str):
                    raise TokenRefused("the issuer's metadata names no introspection_endpoint")
                endpoint = found
            async with httpx2.AsyncClient(timeout=self.config.http_timeout_seconds) as client:
                response = await client.post(
                    endpoint,
                    data={"token": token, "token_type_hint": "access_token"},
                    auth=(settings.client_id, secret),
                    headers={"Accept": "application/json"},
                )
        except (IssuerUnavailable, httpx2.HTTPError) as exc:
            raise TokenRefused(f"introspection failed: {exc or type(exc).__name__}") from None
        if response.status_code != 200:
            raise TokenRefused(f"introspection answered HTTP {response.status_code}")
        try:
            answer = response.json()
        except ValueError:
            raise TokenRefused("introspection answered something that is not JSON") from None
        if not isinstance(answer, dict) or answer.get("active") is not True:
            raise TokenRefused("introspection says the token is not active")
        if answer.get("iss", self.config.issuer) != self.config.issuer:
            raise TokenRefused("introspection: the token is from another issuer")
        audience = answer.get("aud")
        audiences = audience if isinstance(audience, list) else [audience] if audience is not None else []
        if self.audience not in audiences:
            raise TokenRefused("introspection: the token is not for this resource")
        expires = answer.get("exp")
        keep_until = now + settings.cache_seconds
        if isinstance(expires, (int, float)):
            if expires + self.config.leeway_seconds < time.time():
                raise TokenRefused("introspection: the token has expired")
            keep_until = min(keep_until, now + (expires - time.time()))
        if len(self._introspected) > 10_000:  # bounded: drop the answers that have run out
            self._introspected = {k: v for k, v in self._introspected.items() if v[0] > now}
        self._introspected[digest] = (keep_until, answer)
        return answer

    def _admit(self, claims: dict[str, Any]) -> Admitted:
        config = self.config
        name = claims.get(config.member_claim)
        if not isinstance(name, str) or not MEMBER_NAME.match(name):
            raise TokenRefused(
                f"claim {config.member_claim!r} (transport.oauth.member_claim) is missing or not a member "
                f"name matching {MEMBER_NAME.pattern}"
            )
        scopes = token_scopes(claims)
        profile: str | None = None
        if self.allowed is not None:
            listed, profile = self.allowed.lookup(name)
            if not listed:
                raise TokenRefused(f"member {name!r} is not in transport.oauth.members_file")
        if profile is None and config.profile_claim:
            claimed = claims.get(config.profile_claim)
            if claimed is not None:
                if not isinstance(claimed, str) or claimed not in self._known_profiles:
                    raise TokenRefused(f"claim {config.profile_claim!r} names no profile of this config")
                profile = claimed
        if profile is None:
            for scope, limited_to in config.profile_scopes.items():
                if scope in scopes:
                    profile = limited_to
                    break
        expires = claims.get("exp")
        expires_at = (
            float(expires) if isinstance(expires, (int, float)) and not isinstance(expires, bool) else None
        )
        return Admitted(Member(name, profile), scopes, expires_at)
