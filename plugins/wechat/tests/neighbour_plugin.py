"""Another plugin beside wechat, with one trivial sync tool: it must answer while fetches hang."""

from __future__ import annotations

from typing import Any

from hostd import ToolOutput, hookimpl


class Pong(ToolOutput):
    pong: bool


def ping() -> Pong:
    """Answer at once (a sync tool: it runs in one of the host's worker threads)."""
    return Pong(pong=True)


@hookimpl
def hostd_register_tools(register: Any) -> None:
    register(ping, access="read")
