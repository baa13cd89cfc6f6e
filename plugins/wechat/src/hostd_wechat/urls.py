"""Which URLs the plugin may fetch: those matching one of the configured prefixes.

A URL passes when its scheme, host and port equal a prefix's, it carries no user info, and
its normalised path starts with the prefix's path at a segment boundary (``/s`` admits
``/s`` and ``/s/abc`` but not ``/sx`` or ``/s/../mp``). The same check applies to every
redirect target.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

from hostd import Text

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


EMPTY_URL = Text(en="empty URL", zh="URL 为空")
UNSAFE_CHARACTERS = Text(en="control characters or backslashes in the URL", zh="URL 中有控制字符或反斜杠")
MALFORMED_URL = Text(en="malformed URL", zh="URL 格式不正确")
SCHEME_NOT_ALLOWED = Text(en="scheme {scheme} is not allowed", zh="不允许协议 {scheme}")
USER_INFO = Text(en="URLs with user info are not allowed", zh="不允许带用户信息的 URL")
NO_SCHEME = Text(en="no scheme (such as https://)", zh="缺少协议（例如 https://）")
NO_HOST = Text(en="no host", zh="缺少主机名")
NOT_UNDER_PREFIX = Text(en="not under an allowed URL prefix", zh="不在允许的 URL 前缀之下")


def check_url(url: str, prefixes: list[UrlPrefix]) -> Text | None:
    """``None`` when ``url`` may be fetched, else the reason it may not (a short phrase)."""
    if not isinstance(url, str) or not url.strip():
        return EMPTY_URL
    if any(ord(char) < 0x20 or char == "\x7f" for char in url) or "\\" in url:
        return UNSAFE_CHARACTERS
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return MALFORMED_URL
    if not parts.scheme:
        return NO_SCHEME
    if parts.scheme not in _DEFAULT_PORTS:
        return SCHEME_NOT_ALLOWED.format(scheme=repr(parts.scheme))
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        return USER_INFO
    host = (parts.hostname or "").lower()
    if not host:
        return NO_HOST
    port = port or _DEFAULT_PORTS[parts.scheme]
    path = _normalise_path(parts.path or "/")
    for prefix in prefixes:
        if (parts.scheme, host, port) == (prefix.scheme, prefix.host, prefix.port) and prefix.admits_path(
            path
        ):
            return None
    return NOT_UNDER_PREFIX


def redirect_is_captcha(url: str, captcha_path: str) -> bool:
    try:
        return _normalise_path(urlsplit(url).path or "/") == captcha_path
    except ValueError:
        return False


def redacted_url(url: str) -> str:
    """``url`` for a span: no user or password, each query value replaced (a signature or token
    may be there), keys kept so the shape of the request shows."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    query = urlencode([(key, "REDACTED") for key, _ in parse_qsl(parts.query, keep_blank_values=True)])
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))
