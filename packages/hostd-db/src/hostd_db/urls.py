"""Saying which database is meant without ever printing its password."""

from __future__ import annotations

from urllib.parse import urlsplit

__all__ = ["describe_url", "is_postgres_url"]


def is_postgres_url(url: str) -> bool:
    """True for ``postgresql://`` and ``postgres://`` URLs (libpq's two spellings)."""
    return url.split("://", 1)[0].lower() in ("postgresql", "postgres")


def describe_url(url: str) -> str:
    """``host:port/database`` of a libpq URL, for messages and logs (no user, no password).

    A value that does not parse as a URL is described only by its scheme, so a mistyped URL
    with a password in it is never echoed back.
    """
    try:
        parts = urlsplit(url)
        host = parts.hostname or "localhost"
        port = parts.port or 5432
    except ValueError:
        return "(an unreadable database URL)"
    if ":" in host:  # an IPv6 literal
        host = f"[{host}]"
    database = parts.path.lstrip("/") or "(default database)"
    return f"{host}:{port}/{database}"
