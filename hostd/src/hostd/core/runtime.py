"""What every long-running ``hostd`` command shares: its exit codes, the event loop it runs on,
and the refusal to start on a team database whose schema is behind (``hostd serve``, ``hostd web``)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hostd.core.errors import HostError

T = TypeVar("T")
logger = logging.getLogger(__name__)

EXIT_OK, EXIT_TOOL_ERROR, EXIT_USAGE = 0, 1, 2
EXIT_BROKEN_PIPE = 1  # stdout's reader went away (``| head``): Python's convention for EPIPE


def run_async(function: Callable[..., Awaitable[T]], *args: Any) -> T:
    """Run `function` on uvloop where it is installed (the default off Windows), else asyncio.

    uvloop makes each request's hand-offs between the event loop and worker threads cheaper;
    `HOSTD_EVENT_LOOP=asyncio` falls back to the standard loop.
    """
    import anyio

    choice = os.environ.get("HOSTD_EVENT_LOOP", "uvloop").strip().lower()
    if choice not in ("uvloop", "asyncio"):
        raise HostError(f"HOSTD_EVENT_LOOP must be 'uvloop' or 'asyncio', not {choice!r}")
    use_uvloop = False
    if choice == "uvloop":
        try:
            import uvloop  # noqa: F401
        except ImportError:
            logger.debug("uvloop is not installed; serving on the standard asyncio loop")
        else:
            use_uvloop = True
    return anyio.run(function, *args, backend_options={"use_uvloop": use_uvloop})


def schema_line(plugin: str, status: Any) -> str:
    if status.too_new:
        state = f"version {status.current} is newer than this hostd knows ({status.known}): upgrade hostd"
    elif status.pending:
        state = f"version {status.current} of {status.known}: {status.pending} migration(s) pending"
    else:
        state = f"version {status.current}: current"
    return f"{plugin}: {state}"


def require_current_schemas(statuses: list[tuple[str, Any]]) -> None:
    behind = [schema_line(name, status) for name, status in statuses if status.pending or status.too_new]
    if behind:
        summary = "; ".join(behind)
        raise HostError(f"team database schema is not current: {summary} (run `hostd db migrate`)")
