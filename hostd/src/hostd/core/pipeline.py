"""The one call pipeline: every tool call, from every surface, takes the same steps.

who is calling -> may they (``AccessPolicy``) -> quota -> validate -> run -> answer -> publish
changes -> record (audit, metrics, traces). MCP ``tools/call`` on every transport and era, the
dashboard's pages and actions and ``hostd call`` all come through here; only the shape of the
answer differs (an envelope, or the tool's typed output / its ``CodedError``). A refused call is
recorded and logged like any other attempt.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar, cast

from hostd_errors import CodedError, Text, render

from hostd.api import Confirmation, NotConfirmed, ToolOutput
from hostd.core.access import AccessPolicy, Refusal
from hostd.core.context import CallContext, ClientChannel, ClientInputNeeded
from hostd.core.errors import ToolError
from hostd.core.i18n import Language
from hostd.core.identity import Member, Surface, acting_as, local_member
from hostd.core.observe import CANCELLED, CallRecord
from hostd.core.resources import (
    ResourceLink,
    find_kind,
)
from hostd.core.tools import (
    ArgumentError,
    ToolSpec,
    bounded_text,
    error_envelope,
    success_envelope,
    validate_arguments,
)

if TYPE_CHECKING:
    from hostd.core.host import Host

T = TypeVar("T")
logger = logging.getLogger("hostd")

Envelope = dict[str, Any]


class RequestRate(Protocol):
    """Requests per member per minute (``hostd.team.quotas.RequestRate``)."""

    @property
    def shared(self) -> bool: ...

    def retry_after(self, member: str) -> int: ...


class CallQuotas(Protocol):
    """Calls per member and per member and tool (``hostd.team.quotas.Quotas``)."""

    @property
    def shared(self) -> bool: ...

    def retry_after(self, member: str, tool: str) -> float: ...


async def request_wait(rate: RequestRate, member: str) -> int:
    """Seconds until ``member`` may make another request (0: now): the one bucket the HTTP guard
    and the dashboard take from; the team database's is asked off the event loop."""
    if rate.shared:
        import anyio

        return await anyio.to_thread.run_sync(rate.retry_after, member)
    return rate.retry_after(member)


@dataclass
class ToolCall:
    """One attempt to call a tool: what, for whom, from where."""

    tool: str
    arguments: Mapping[str, Any] | None
    member: Member | None  # ``None``: the local user (stdio, ``hostd call``)
    surface: Surface
    channel: ClientChannel | None = None
    client_roots: Sequence[str] | None = None
    #: The reader's language when it is not the server's (a dashboard page's): the tool's answer
    #: and its argument errors are in it; what the tool stores stays in the server's.
    language: Language | None = None
    #: Filled with the files and records a successful call named (``ToolOutput.with_links``).
    links: list[ResourceLink] = field(default_factory=list)
    #: The person's answer when the tool asked them to confirm (``ToolContext.confirm``), else None.
    confirmation: Confirmation | None = None


class ToolAnswer(NamedTuple):
    """An envelope answer; ``refusal`` says why the policy refused the call, if it did."""

    envelope: Envelope
    is_error: bool
    refusal: Refusal | None = None


@dataclass
class _Attempt:
    """What the record of one attempt needs, filled in as the call goes."""

    call: ToolCall
    plugin: str
    member: str
    outcome: str = CANCELLED
    started: float = field(default_factory=time.perf_counter)
    wall: float = field(default_factory=time.time)


class _WorkerJob:
    """One sync tool call for a worker thread, leaving nothing of the call behind once it has run.

    anyio's worker thread keeps its last job (the function with the call's arguments) and the
    exception it raised (whose traceback holds the tool's frames and every copy of an argument in
    their locals) until its next job: a run of 30 MB calls over HTTP left one or two copies per
    call resident. The call is dropped as soon as it has run, and a failure is handed back in
    ``failure`` rather than raised in the thread, so the host can clear its frames once answered.
    """

    def __init__(self, call: Callable[[], Any]) -> None:
        self._call: Callable[[], Any] | None = call
        self.failure: Exception | None = None

    def __call__(self) -> Any:
        call, self._call = self._call, None
        assert call is not None, "a worker job runs once"
        try:
            return call()
        except Exception as exc:
            self.failure = exc
            return None
        finally:
            del call


def _forget_frames(exc: BaseException) -> None:
    """Drop the frames an answered exception (and those chained to it) still holds."""
    seen: set[int] = set()
    pending: list[BaseException | None] = [exc]
    while pending:
        item = pending.pop()
        if item is None or id(item) in seen:
            continue
        seen.add(id(item))
        item.__traceback__ = None
        pending += [item.__cause__, item.__context__]


def _asks_the_client(exc: BaseException) -> bool:
    return isinstance(exc, ClientInputNeeded) or (
        isinstance(exc, BaseExceptionGroup) and exc.subgroup(ClientInputNeeded) is not None
    )


#: How an answer to a call whose confirmation the person did not give begins (``NotConfirmed``).
_NOT_DONE = {
    "declined": Text(en="Nothing was done: the user declined. ", zh="未执行：用户拒绝了。"),
    "cancelled": Text(
        en="Nothing was done: the user dismissed the question without answering. ",
        zh="未执行：用户关闭了询问，未作答复。",
    ),
}


class CallPipeline:
    """The steps of a tool call, for one host."""

    def __init__(self, host: Host, policy: AccessPolicy) -> None:
        self.host = host
        self.policy = policy
        #: HTTP requests per member (``limits.per_member.requests_per_minute``), set by ``hostd serve``:
        #: the dashboard's actions take from the same bucket as the member's MCP requests.
        self.request_rate: RequestRate | None = None

    # --- the surfaces' entries ----------------------------------------------------------------

    async def call_tool(self, call: ToolCall) -> ToolAnswer:
        """Run one call and answer its envelope (MCP, ``hostd call``)."""
        async with self._attempt(call) as attempt:
            refusal = self.policy.check(call.member, call.tool)
            if refusal is not None:
                attempt.outcome = refusal.code
                self._log_refusal(call, refusal)
                refused = self._refusal_error(refusal, call.member)
                return ToolAnswer(self._error_envelope(refused, attempt.started), True, refusal)
            spec = self.host.tools[call.tool]
            output, error = await self._run(spec, call, attempt.started)
            if error is None:
                assert output is not None
                try:
                    envelope = self._success(spec, output, attempt.started, call.confirmation)
                except Exception:
                    logger.exception("tool %s returned output that cannot be serialised", spec.name)
                    error = self._internal(spec.name)
                else:
                    call.links.extend(output.links)
                    attempt.outcome = "ok"
                    return ToolAnswer(envelope, False)
            attempt.outcome = error.code
            return ToolAnswer(self._error_envelope(error, attempt.started), True)

    async def call_for_view(self, call: ToolCall) -> ToolOutput:
        """Run one call for a dashboard page or action: the tool's output, or its error raised."""
        async with self._attempt(call) as attempt:
            refusal = self.policy.check(call.member, call.tool)
            if refusal is not None:
                attempt.outcome = refusal.code
                self._log_refusal(call, refusal)
                if refusal.reason == "outside_profile":  # a page or action the member opened knows the tool
                    raise self._not_in_profile(refusal)
                raise self._refusal_error(refusal, call.member)
            output, error = await self._run(self.host.tools[call.tool], call, attempt.started)
            if error is not None:
                attempt.outcome = error.code
                raise error
            attempt.outcome = "ok"
            assert output is not None
            return output

    async def call_for_offering(
        self, member: Member | None, tool: str, arguments: Mapping[str, Any], work: Callable[[], Awaitable[T]]
    ) -> T:
        """A resource read, a prompt or a completion, as the member's call of the tool its kind or
        source follows (``tool``, served name): the same quota and one record in the audit trail
        (``arguments``: what was asked, e.g. the URI). Which kinds and sources the member is served
        at all is the policy's (``Offerings``); a refusal is raised."""
        call = ToolCall(tool=tool, arguments=arguments, member=member, surface="mcp")
        async with self._attempt(call) as attempt:
            if self.host.quotas is not None:
                refused = await self._over_quota(tool)
                if refused is not None:
                    attempt.outcome = refused.code
                    raise refused
            try:
                result = await work()
            except CodedError as exc:
                attempt.outcome = exc.code
                raise
            except Exception:
                attempt.outcome = "INTERNAL"
                raise
            attempt.outcome = "ok"
            return result

    async def request_wait(self, member: Member) -> int:
        """Seconds until ``member`` may make another request (0: now), from their request rate."""
        return 0 if self.request_rate is None else await request_wait(self.request_rate, member.name)

    def record_refused_request(
        self, surface: Surface, member: Member | None, outcome: str, tool: str = "-"
    ) -> None:
        """A request refused before a call ran: at the door (a 401, 403 or 429, under the tool name
        ``-``) or a dashboard page or action the member may not use (under its tool's name);
        recorded and logged like a refused call."""
        name = member.name if member is not None else "-"
        logger.info("refused a request of %s on %s for %s: %s", name, surface, tool, outcome)
        self.host.observers.notify(
            CallRecord(
                tool=bounded_text(tool, 64),
                plugin="",
                member=name,
                outcome=outcome,
                started_at=time.time(),
                duration=0.0,
                arguments=None,
                surface=surface,
            )
        )

    # --- the steps ----------------------------------------------------------------------------

    @contextlib.asynccontextmanager
    async def _attempt(self, call: ToolCall) -> AsyncIterator[_Attempt]:
        """Who is calling, set for the call; the attempt recorded once when it ends (a call that
        asked the client a question is recorded when it runs again with the answer)."""
        spec = self.host.tools.get(call.tool)
        plugin = spec.plugin if spec is not None and self.policy.lists(call.member, call.tool) else ""
        name = call.member.name if call.member is not None else local_member()
        attempt = _Attempt(call, plugin, name)
        observers = self.host.observers
        tracer = observers.tracer if plugin else None
        if plugin:
            observers.in_flight[call.tool] += 1
        with acting_as(call.member):
            span_context = (
                tracer.span(call.tool, plugin, name) if tracer is not None else contextlib.nullcontext()
            )
            with span_context as span:
                try:
                    yield attempt
                except BaseException as exc:
                    if _asks_the_client(exc):
                        attempt.outcome = ""
                    raise
                finally:
                    if plugin:
                        observers.in_flight[call.tool] -= 1
                    if span is not None:
                        span.finish(attempt.outcome or "INPUT_REQUIRED")
                    if attempt.outcome and observers:
                        observers.notify(
                            self._record(attempt, call.tool if plugin else bounded_text(call.tool, 64))
                        )

    @staticmethod
    def _record(attempt: _Attempt, tool: str) -> CallRecord:
        return CallRecord(
            tool=tool,
            plugin=attempt.plugin,
            member=attempt.member,
            outcome=attempt.outcome,
            started_at=attempt.wall,
            duration=time.perf_counter() - attempt.started,
            arguments=attempt.call.arguments,
            surface=attempt.call.surface,
        )

    async def _run(
        self, spec: ToolSpec, call: ToolCall, started: float
    ) -> tuple[ToolOutput | None, CodedError | None]:
        """Quota, validation, the tool itself, and the changes it made published."""
        import anyio

        if self.host.quotas is not None:
            refused = await self._over_quota(spec.name)
            if refused is not None:
                return None, refused
        try:
            validated = validate_arguments(
                spec, dict(call.arguments or {}), call.language or self.host.language
            )
        except ArgumentError as exc:
            return None, ToolError("INVALID_ARGUMENT", exc.message, hint=exc.hint, details=exc.details)
        host = self.host
        context = CallContext(
            host.contexts[spec.plugin],
            channel=call.channel,
            client_roots=call.client_roots,
            cwd=host.cwd,
            language=call.language,
        )
        kwargs = spec.call_arguments(validated, context)
        try:
            if spec.is_async:
                result = await cast(Awaitable[ToolOutput], spec.function(**kwargs))
            else:
                job = _WorkerJob(functools.partial(spec.function, **kwargs))
                del kwargs
                result = await anyio.to_thread.run_sync(job, abandon_on_cancel=True)
                if job.failure is not None:
                    raise job.failure
        except anyio.get_cancelled_exc_class():
            context.mark_cancelled()
            raise
        except NotConfirmed as exc:
            # The person said no: nothing was done, so only the message answers (no tool fields,
            # which describe what a call did) and no change is published.
            _forget_frames(exc)
            call.confirmation = exc.answer
            return ToolOutput().with_message(_NOT_DONE[exc.answer] + exc.kept), None
        except CodedError as exc:
            _forget_frames(exc)
            return None, exc
        except Exception as exc:
            error = self._known_failure(exc)
            if error is None:
                logger.exception("tool %s (plugin %s) raised an unexpected error", spec.name, spec.plugin)
                error = self._internal(spec.name)
            _forget_frames(exc)
            return None, error
        call.confirmation = context.confirmation
        if not isinstance(result, spec.output_model):
            logger.error(
                "tool %s returned %r instead of %s", spec.name, type(result), spec.output_model.__name__
            )
            return None, self._internal(spec.name)
        await self.publish_changes(spec, context, result)
        return result, None

    async def _over_quota(self, tool: str) -> CodedError | None:
        """``RATE_LIMITED`` when the caller's bucket (or their bucket for this tool) is empty."""
        import anyio

        from hostd.core.identity import calling_member

        quotas = self.host.quotas
        assert quotas is not None
        member = calling_member()
        try:
            if quotas.shared:  # the team database: a round trip, off the event loop
                wait = await anyio.to_thread.run_sync(quotas.retry_after, member, tool)
            else:
                wait = quotas.retry_after(member, tool)
        except CodedError as exc:
            return exc
        if not wait:
            return None
        seconds = round(wait, 3)
        return ToolError(
            "RATE_LIMITED",
            Text(
                en=f"Too many calls: {member}'s quota for {tool} is used up for now (limits).",
                zh=f"调用过多：{member} 调用 {tool} 的配额暂时用完（limits）。",
            ),
            hint=Text(
                en=f"Try again in {seconds:g} s, or ask the operator to raise limits.",
                zh=f"请在 {seconds:g} 秒后重试，或请管理员调高 limits。",
            ),
            details={"retry_after": seconds, "tool": tool, "member": member},
        )

    async def publish_changes(self, spec: ToolSpec, context: CallContext[Any], result: Any) -> None:
        """Tell subscribers what a call that succeeded changed: what it reported
        (``ToolContext.resource_changed``) and, for a ``write`` tool, the records it linked to.
        Only URIs of a served kind of resource are published (not files)."""
        changes = self.host.changes
        if changes is None:
            return
        uris = context.changed_resources
        if spec.access == "write":
            uris += [link.uri for link in getattr(result, "links", ())]
        served = [uri for uri in uris if find_kind(self.host.resource_kinds, uri) is not None]
        if served:
            try:
                await changes.resources_updated(served)
            except Exception:  # the call succeeded: a lost notification must not turn it into an error
                logger.exception("publishing the resources %s changed failed", spec.name)

    # --- answers --------------------------------------------------------------------------------

    def _success(
        self, spec: ToolSpec, output: ToolOutput, started: float, confirmation: Confirmation | None = None
    ) -> Envelope:
        language = self.host.language
        message = render(output.envelope_message, language) or Text(
            en=f"{spec.name} succeeded.", zh=f"{spec.name} 执行成功。"
        ).render(language)
        envelope = success_envelope(output, message, started, language)
        if confirmation is not None:  # what the person answered when the tool asked them
            envelope["metadata"]["confirmation"] = confirmation
        return envelope

    def _error_envelope(self, error: CodedError, started: float) -> Envelope:
        message, hint, details = error.rendered(self.host.language)
        return error_envelope(error.code, message, hint=hint, details=details, started=started)

    def _refusal_error(self, refusal: Refusal, member: Member | None) -> ToolError:
        """The refusal in the caller's words: an unknown tool (or one outside their profile, which
        is answered alike so a profile's tools cannot be probed), or the scopes their token lacks."""
        tool = bounded_text(refusal.tool, 64)
        if refusal.reason == "missing_scope":
            scopes = " ".join(refusal.scopes)
            return ToolError(
                "PERMISSION_DENIED",
                Text(
                    en=f"Your access token does not allow {tool}: it lacks the scope(s) {scopes}.",
                    zh=f"你的访问令牌不允许调用 {tool}：缺少权限范围 {scopes}。",
                ),
                hint=Text(
                    en="Sign in again granting those scopes, or use a read tool.",
                    zh="请重新登录并授予这些权限范围，或改用只读工具。",
                ),
                details={"tool": tool, "scopes": list(refusal.scopes)},
            )
        available = ", ".join(sorted(self._visible_tools(self.policy.tools_for(member))))
        return ToolError(
            "NOT_FOUND",
            Text(en=f"Unknown tool '{tool}'.", zh=f"未知工具 '{tool}'。"),
            hint=Text(en=f"Available tools: {available}", zh=f"可用工具：{available}"),
            details={"tool": tool},
        )

    @staticmethod
    def _not_in_profile(refusal: Refusal) -> ToolError:
        tool = bounded_text(refusal.tool, 64)
        return ToolError(
            "PERMISSION_DENIED",
            Text(en=f"Your profile does not serve the tool {tool}.", zh=f"你的配置档不提供工具 {tool}。"),
            hint=Text(
                en="Ask whoever runs the server for a profile that serves it.",
                zh="请向服务器管理员申请提供该工具的配置档。",
            ),
            details={"tool": tool},
        )

    def _visible_tools(self, allowed: frozenset[str] | None) -> list[str]:
        return [name for name in self.host.tools if allowed is None or name in allowed]

    def _log_refusal(self, call: ToolCall, refusal: Refusal) -> None:
        name = call.member.name if call.member is not None else local_member()
        logger.info(
            "refused %s for %s on %s: %s", bounded_text(call.tool, 64), name, call.surface, refusal.reason
        )

    def _known_failure(self, exc: Exception) -> CodedError | None:
        """SQLite's disk-full errors, and a data folder the server cannot write (permissions, a
        full disk, a read-only file system), which a plugin's store may let through: every plugin
        answers these the same way, whatever store it keeps. (A file locked past the busy
        timeout is hostd_db's to answer: ``Database`` says FILE_LOCKED.)"""
        if isinstance(exc, OSError) and exc.errno in STORAGE_ERRNOS:
            return storage_unavailable(exc)
        sqlite3 = sys.modules.get("sqlite3")  # only a plugin that opened SQLite can raise its errors
        if sqlite3 is None or not isinstance(exc, sqlite3.OperationalError):
            return None
        text = str(exc).lower()
        if "readonly database" in text or "unable to open database file" in text:
            return storage_unavailable(exc)
        if "disk is full" in text:
            return ToolError(
                "DISK_FULL",
                Text(en="The disk is full.", zh="磁盘已满。"),
                hint=Text(en="Free some space and retry.", zh="请释放一些空间后重试。"),
                details={"reason": "disk_full"},
            )
        return None

    @staticmethod
    def _internal(name: str) -> ToolError:
        return ToolError(
            "INTERNAL",
            Text(en=f"Tool '{name}' failed unexpectedly.", zh=f"工具 '{name}' 发生意外错误。"),
            hint=Text(
                en="This is a bug in the server; the details are in its log (stderr). Retrying may not help.",
                zh="这是服务器的缺陷，详情见其日志（stderr）。重试可能无效。",
            ),
            details={},
        )


#: The errors of a data folder the environment will not let the server write: not a defect.
STORAGE_ERRNOS = frozenset(
    {errno.EACCES, errno.EPERM, errno.EROFS, errno.ENOSPC, errno.EDQUOT, errno.ENOTDIR}
)


def storage_unavailable(exc: Exception) -> ToolError:
    """``STORAGE_UNAVAILABLE``: the path the server could not write, the reason, and what to do."""
    number = exc.errno if isinstance(exc, OSError) else None
    path = getattr(exc, "filename", None)
    name = errno.errorcode.get(number, "") if number is not None else ""
    where_en = f" {path}" if path else " its data folder"
    where_zh = f" {path}" if path else "其数据文件夹"
    if number in (errno.ENOSPC, errno.EDQUOT):
        reason = Text(en="the disk is full", zh="磁盘已满")
        todo = Text(en="Free some space on that disk, then retry.", zh="请释放该磁盘的空间后重试。")
    elif number == errno.EROFS:
        reason = Text(en="the file system is read-only", zh="文件系统是只读的")
        todo = Text(
            en="Mount it writable or point data_dir ($HOSTD_DATA_DIR) at a writable folder, then retry.",
            zh="请以可写方式挂载，或将 data_dir（$HOSTD_DATA_DIR）指向可写的文件夹后重试。",
        )
    elif number == errno.ENOTDIR:
        reason = Text(en="a part of the path is a file, not a folder", zh="路径中有一部分是文件而非文件夹")
        todo = Text(
            en="Point data_dir ($HOSTD_DATA_DIR) at a folder, then retry.",
            zh="请将 data_dir（$HOSTD_DATA_DIR）指向一个文件夹后重试。",
        )
    else:
        reason = Text(en="permission denied", zh="权限不足")
        todo = Text(
            en="Give the server's user write access to it, or point data_dir ($HOSTD_DATA_DIR) "
            "at a writable folder, then retry.",
            zh="请授予服务器运行用户写权限，或将 data_dir（$HOSTD_DATA_DIR）指向可写的文件夹后重试。",
        )
    details: dict[str, Any] = {"reason": name or "storage"}
    if path:
        details["path"] = str(path)
    return ToolError(
        "STORAGE_UNAVAILABLE",
        Text(
            en=f"The server cannot write to{where_en}: {reason.en}.",
            zh=f"服务器无法写入{where_zh}：{reason.zh}。",
        ),
        hint=todo,
        details=details,
    )
