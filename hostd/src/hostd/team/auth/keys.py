"""The issuer's metadata and signing keys, fetched once and kept; re-fetched when a token names a
key id not seen yet (the provider rotated its keys), at most once per ``refresh_seconds``.

Rate-limiting the re-fetch matters: a stream of tokens with made-up key ids must not turn the
server into a client hammering the identity provider. So does backing off while the provider
fails: after a failed fetch (metadata or keys) nothing is fetched for ``FIRST_BACKOFF_SECONDS``,
and the pause doubles with each failure in a row, up to ``MAX_BACKOFF_SECONDS``; tokens checked
meanwhile are refused with the last failure (or checked against the keys fetched before).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import jwt

logger = logging.getLogger("hostd.auth")

#: After a failed fetch, the first pause before the next; it doubles while the provider fails.
FIRST_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 60.0


class IssuerUnavailable(Exception):
    """The issuer's metadata or keys could not be fetched (or do not make sense)."""


def metadata_urls(issuer: str) -> list[str]:
    """Where the issuer's metadata may be: RFC 8414 (path inserted after the host), then OIDC discovery."""
    parts = urlsplit(issuer)
    path = parts.path.rstrip("/")
    origin = f"{parts.scheme}://{parts.netloc}"
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]


class IssuerKeys:
    """Metadata and JWKS of one issuer; ``key_for(kid)`` is what a token check asks."""

    def __init__(
        self,
        issuer: str,
        *,
        refresh_seconds: float,
        timeout: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.issuer = issuer
        self._refresh_seconds = refresh_seconds
        self._timeout = timeout
        self._clock = clock
        self._metadata: dict[str, Any] | None = None
        self._keys: dict[str, jwt.PyJWK] = {}
        self._fetched_at: float | None = None
        self._metadata_lock = anyio.Lock()
        self._keys_lock = anyio.Lock()
        #: While the provider fails: no fetch before this time, and the failure to repeat until then.
        self._retry_at: float | None = None
        self._backoff = 0.0
        self._failure: IssuerUnavailable | None = None

    async def _get_json(self, client: httpx2.AsyncClient, url: str) -> Any:
        response = await client.get(url, headers={"Accept": "application/json"})
        if response.status_code != 200:
            raise IssuerUnavailable(f"GET {url}: HTTP {response.status_code}")
        try:
            return response.json()
        except ValueError:
            raise IssuerUnavailable(f"GET {url}: not JSON") from None

    async def metadata(self) -> dict[str, Any]:
        """The issuer's authorization server metadata (its ``issuer`` must be ours)."""
        if self._metadata is not None:
            return self._metadata
        async with self._metadata_lock:
            if self._metadata is None:
                async with httpx2.AsyncClient(timeout=self._timeout) as client:
                    self._metadata = await self._discover(client)
        return self._metadata

    async def _discover(self, client: httpx2.AsyncClient) -> dict[str, Any]:
        problems: list[str] = []
        for url in metadata_urls(self.issuer):
            try:
                found = await self._get_json(client, url)
            except (IssuerUnavailable, httpx2.HTTPError) as exc:
                problems.append(str(exc) or type(exc).__name__)
                continue
            if not isinstance(found, dict) or found.get("issuer") != self.issuer:
                problems.append(f"{url}: its issuer is not {self.issuer}")
                continue
            return found
        raise IssuerUnavailable("; ".join(problems))

    async def key_for(self, kid: str | None) -> jwt.PyJWK | None:
        """The signing key with this id (``None``: not among the issuer's keys, even after a re-fetch)."""
        if self._fetched_at is None or (kid is not None and kid not in self._keys):
            await self._refresh_backing_off()
        if kid is None:  # a token without kid: acceptable only while the issuer has one key
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh_backing_off(self) -> None:
        """``_refresh``, unless the provider failed a moment ago: then its failure again (with no
        keys yet) or nothing (the keys fetched before stay)."""
        failure = self._failure
        if failure is not None and self._retry_at is not None and self._clock() < self._retry_at:
            if self._fetched_at is None:
                raise IssuerUnavailable(f"{failure} (not asked again for a while)")
            return
        try:
            await self._refresh()
        except (IssuerUnavailable, httpx2.HTTPError) as exc:
            self._backoff = min(MAX_BACKOFF_SECONDS, max(FIRST_BACKOFF_SECONDS, self._backoff * 2))
            self._retry_at = self._clock() + self._backoff
            self._failure = exc if isinstance(exc, IssuerUnavailable) else IssuerUnavailable(str(exc))
            logger.warning(
                "the keys of %s could not be fetched (%s); not asked again for %g s",
                self.issuer,
                exc,
                self._backoff,
            )
            if self._fetched_at is None:
                raise
            return  # the keys fetched before stay in use
        self._backoff, self._retry_at, self._failure = 0.0, None, None

    async def _refresh(self) -> None:
        async with self._keys_lock:
            now = self._clock()
            if self._fetched_at is not None and now - self._fetched_at < self._refresh_seconds:
                return  # fetched a moment ago (maybe by the caller that held the lock): not again
            metadata = await self.metadata()
            jwks_uri = metadata.get("jwks_uri")
            if not isinstance(jwks_uri, str):
                raise IssuerUnavailable(f"{self.issuer}: its metadata has no jwks_uri")
            try:
                async with httpx2.AsyncClient(timeout=self._timeout) as client:
                    data = await self._get_json(client, jwks_uri)
            except httpx2.HTTPError as exc:
                raise IssuerUnavailable(f"GET {jwks_uri}: {exc or type(exc).__name__}") from None
            self._fetched_at = now
            keys: dict[str, jwt.PyJWK] = {}
            for entry in data.get("keys", []) if isinstance(data, dict) else []:
                if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                    continue
                try:
                    key = jwt.PyJWK(entry)
                except jwt.PyJWTError:
                    continue  # a key type or algorithm this library does not know: skipped
                keys[str(entry.get("kid", ""))] = key
            logger.info("signing keys of %s fetched: %d", self.issuer, len(keys))
            self._keys = keys
