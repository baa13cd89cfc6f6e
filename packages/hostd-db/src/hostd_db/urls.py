"""Saying which database is meant without ever printing its password."""

from __future__ import annotations

from urllib.parse import parse_qs, unquote, urlsplit

__all__ = ["describe_url", "is_postgres_url"]


def is_postgres_url(url: str) -> bool:
    """True for ``postgresql://`` and ``postgres://`` URLs (libpq's two spellings)."""
    return url.split("://", 1)[0].lower() in ("postgresql", "postgres")


def describe_url(url: str) -> str:
    """``host:port/database`` of a libpq URL, for messages and logs (no user, no password).

    libpq also takes the host, port and database as query parameters
    (``postgresql://u@/hostd?host=/run/pg&port=5433``, the usual way to name a Unix socket
    folder); they win over the URL's own parts, as they do for libpq, so the description names
    the socket folder (``/run/pg:5433/hostd``) or host that is really used. A value that does not
    parse as a URL is described only by its scheme, so a mistyped URL with a password in it is
    never echoed back.
    """
    try:
        parts = urlsplit(url)
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        host = query.get("host") or parts.hostname or "localhost"
        port = int(query.get("port") or parts.port or 5432)
    except ValueError:
        return "(an unreadable database URL)"
    if ":" in host and not host.startswith("/"):  # an IPv6 literal
        host = f"[{host}]"
    database = query.get("dbname") or unquote(parts.path.lstrip("/")) or "(default database)"
    return f"{host}:{port}/{database}"
