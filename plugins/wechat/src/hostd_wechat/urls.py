"""Which URLs the plugin may fetch: those matching one of the configured prefixes.

A URL passes when its scheme, host and port equal a prefix's, it carries no user info, and
its normalised path starts with the prefix's path at a segment boundary (``/s`` admits
``/s`` and ``/s/abc`` but not ``/sx`` or ``/s/../mp``). The same check applies to every
redirect target.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from urllib.parse import unquote, urlsplit

_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class UrlPrefix:
    scheme: str
    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, prefix: str) -> UrlPrefix:
        parts = urlsplit(prefix.strip())
        if parts.scheme not in _DEFAULT_PORTS or not parts.hostname:
            raise ValueError(f"not an http(s) URL prefix: {prefix!r}")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError(f"a URL prefix has no user info, query or fragment: {prefix!r}")
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
        path = _normalise_path(parts.path or "/")
        return cls(parts.scheme, parts.hostname.lower(), port, path)

    def admits_path(self, path: str) -> bool:
        if self.path == "/":
            return True
        base = self.path.rstrip("/")
        return path == base or path.startswith(base + "/")


def _normalise_path(path: str) -> str:
    decoded = unquote(path)
    normalised = posixpath.normpath(decoded) if decoded else "/"
    if decoded.endswith("/") and normalised != "/":
        normalised += "/"
    return normalised if normalised.startswith("/") else "/" + normalised


def check_url(url: str, prefixes: list[UrlPrefix]) -> str | None:
    """``None`` when ``url`` may be fetched, else the reason it may not (a short English phrase)."""
    if not isinstance(url, str) or not url.strip():
        return "empty URL"
    if any(ord(char) < 0x20 or char == "\x7f" for char in url) or "\\" in url:
        return "control characters or backslashes in the URL"
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return "malformed URL"
    if parts.scheme not in _DEFAULT_PORTS:
        return f"scheme {parts.scheme or '(none)'!r} is not allowed"
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return "URLs with user info are not allowed"
    host = (parts.hostname or "").lower()
    if not host:
        return "no host"
    port = port or _DEFAULT_PORTS[parts.scheme]
    path = _normalise_path(parts.path or "/")
    for prefix in prefixes:
        if (parts.scheme, host, port) == (prefix.scheme, prefix.host, prefix.port) and prefix.admits_path(
            path
        ):
            return None
    return "not under an allowed URL prefix"


def redirect_is_captcha(url: str, captcha_path: str) -> bool:
    try:
        return _normalise_path(urlsplit(url).path or "/") == captcha_path
    except ValueError:
        return False
