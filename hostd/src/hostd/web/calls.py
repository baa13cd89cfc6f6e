"""Running a plugin's tool function for a dashboard page, the way ``Host.call`` runs a tool.

Same input model (the tool's validation and argument errors), same per-call ``ToolContext``
(the signed-in member as ``ctx.member``), a sync tool in a worker thread, the same mapping of
SQLite's busy and disk-full errors; only the answer differs: the tool's typed output, or its
``CodedError`` raised, instead of an envelope.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

from hostd_errors import CodedError, Text

from hostd.api import ToolOutput
from hostd.context import CALLING_MEMBER, CallContext
from hostd.errors import ToolError
from hostd.tools import ArgumentError, validate_arguments

if TYPE_CHECKING:
    from hostd.host import Host
    from hostd.i18n import Language
    from hostd.tools import ToolSpec

logger = logging.getLogger("hostd.web")


async def run_tool_function(
    host: Host, spec: ToolSpec, arguments: dict[str, Any], member: str, language: Language | None = None
) -> Any:
    """``language``: the page's, so what the tool answers in words of its own (template names, a
    diagram's labels, an export) reads in the language of the page that shows it."""
    import anyio

    try:
        validated = validate_arguments(spec, arguments, language or host.language)
    except ArgumentError as exc:
        raise ToolError("INVALID_ARGUMENT", exc.message, hint=exc.hint, details=exc.details) from None
    calling = CALLING_MEMBER.set(member)
    try:
        context = CallContext(host.contexts[spec.plugin], cwd=host.cwd, client_roots=None, language=language)
    finally:
        CALLING_MEMBER.reset(calling)
    kwargs = spec.call_arguments(validated, context)
    try:
        if spec.is_async:
            result = await cast(Awaitable[ToolOutput], spec.function(**kwargs))
        else:
            sync_call = cast(Callable[[], ToolOutput], functools.partial(spec.function, **kwargs))
            result = await anyio.to_thread.run_sync(sync_call)
    except CodedError:
        raise
    except Exception as exc:
        mapped = host._map_known_exception(exc)
        if mapped is not None:
            code, message, hint, details = mapped
            raise ToolError(code, message, hint=hint, details=details) from None
        logger.exception("tool %s (plugin %s) failed for a dashboard page", spec.name, spec.plugin)
        raise ToolError(
            "INTERNAL",
            Text(en=f"Tool '{spec.name}' failed unexpectedly.", zh=f"工具 '{spec.name}' 发生意外错误。"),
            hint=Text(
                en="This is a bug in the server; the details are in its log (stderr).",
                zh="这是服务器的缺陷，详情见其日志（stderr）。",
            ),
        ) from None
    await host.publish_changes(spec, context, result)  # subscribers hear of a page's edit as of a tool's
    return result
