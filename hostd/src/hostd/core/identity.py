"""Who is calling: one typed ``Member``, carried by one context variable.

Every surface (MCP on each transport, the dashboard, the CLI) turns its credential into a
``Member`` once, and the call pipeline sets ``CURRENT_MEMBER`` around the work it does for
them. Tools read ``ToolContext.member``; nothing else in the host keeps a second copy.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import getpass
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from hostd.core.ids import ID_PATTERN

#: Where a call came in: MCP (any transport, either protocol era), the dashboard, the CLI.
Surface = Literal["mcp", "ui", "cli"]

MEMBER_NAME = re.compile(ID_PATTERN)


@dataclass(frozen=True)
class Member:
    """Who is calling.

    ``profile`` limits their tools to another profile of the same config (``None``: the served
    profile's). ``scopes`` are an OAuth access token's scopes (``None``: a credential that
    carries none, such as a static token or the local user, limited by profile only).
    """

    name: str
    profile: str | None = None
    scopes: frozenset[str] | None = None


CURRENT_MEMBER: contextvars.ContextVar[Member | None] = contextvars.ContextVar("hostd_member", default=None)
"""The member of the request or call in progress (``None``: the local user)."""


def local_member() -> str:
    """The member over stdio and in-process calls: the local login name, else ``local``.

    Every call over stdio asks; without a login variable ``getpass`` reads the password
    database each time (a tenth of a ``sequential_thinking`` call), so the answer is kept for
    as long as what it depends on (the login variables getpass reads, the user id) stays the same.
    """
    env = os.environ  # getuser's order: the first of these set is the login name
    variable = env.get("LOGNAME") or env.get("USER") or env.get("LNAME") or env.get("USERNAME")
    return _login_member(getpass.getuser, variable, getattr(os, "getuid", lambda: None)())


@functools.lru_cache(maxsize=8)
def _login_member(getuser: Callable[[], str], variable: str | None, uid: int | None) -> str:
    """``local_member`` for one ``getuser`` and its inputs (the arguments are the cache's key)."""
    try:
        name = getuser()
    except Exception:  # no login name (a container without a passwd entry, say)
        return "local"
    return name if MEMBER_NAME.match(name) else "local"


def current_member() -> Member:
    """The member of the call in progress: the credential's owner, else the local user."""
    member = CURRENT_MEMBER.get()
    return member if member is not None else Member(local_member())


def calling_member() -> str:
    """The name of the member of the call in progress."""
    member = CURRENT_MEMBER.get()
    return member.name if member is not None else local_member()


@contextlib.contextmanager
def acting_as(member: Member | None) -> Iterator[None]:
    """Run the block for ``member`` (``None``: the local user)."""
    token = CURRENT_MEMBER.set(member)
    try:
        yield
    finally:
        CURRENT_MEMBER.reset(token)
