"""Long tool calls as tasks: the MCP tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28).

A client that declares the extension in a ``tools/call``'s per-request capabilities gets, for the
calls that can take long, a task at once (``resultType: "task"``) instead of waiting for the
answer. It polls the task with ``tasks/get`` (the last progress message is the task's
``statusMessage``; the final ``CallToolResult`` is its ``result``) and may ask ``tasks/cancel``:
the call is then cancelled as a client's cancellation cancels a plain call, so the plugin stops at
its next safe point (``ToolContext.cancelled``) and writes nothing half.

The task is only another way of delivering the answer: the call itself goes through the host's
call pipeline exactly as a plain call (the same access policy, quota, validation, audit), and its
result is the one the plain call gives. A call the member may not make, an unknown tool, a client
that does not declare the extension, or a tool that is quick answer plainly, as before.

Where the state lives is ``hostd.team.call_tasks``: in memory for one process (stdio, stateful
HTTP), in a database the stateless replicas share, so any replica answers ``tasks/get`` and the
replica running the call sees a cancellation asked of another (it looks every
``POLL_INTERVAL_MS``). A task is its member's: another member's task id is not found.

A call that asks the client mid-way (a summary sampling the client's model, a destructive call
asking the person to confirm) puts its question on the task: the task is ``input_required``,
``tasks/get`` shows the question in ``inputRequests``, and the client answers it with
``tasks/update`` (``inputResponses``, the answers keyed as the questions); the call goes on where
it waited, on whichever replica runs it (it looks for the answer every ``POLL_INTERVAL_MS``).

Not served: the 2025-11-25 era's tasks (there the extension is not advertised).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from hostd_errors import Text
from mcp.server.extension import Extension, MethodBinding, compose_tool_call_handler
from mcp.server.subscriptions import ListenHandler, SubscriptionBus
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import (
    SUBSCRIPTION_ID_META_KEY,
    ServerEvent,
    event_matches,
    event_to_notification,
)
from pydantic import BaseModel, Field, ValidationError

from hostd.core.pipeline import ToolCall
from hostd.protocol.adapters import request_member
from hostd.protocol.input_rounds import (
    CONFIRMATION_OF,
    InputRound,
    answer_models,
    can_confirm,
    confirm_key,
    confirm_params,
    only_input_needed,
    roots_from_round,
    sampling_key,
    sampling_params,
    sampling_result,
    speaks_input_required,
)
from hostd.team.call_tasks import (
    POLL_INTERVAL_MS,
    TASK_TTL_MS,
    DatabaseTaskStore,
    MemoryTaskStore,
    TaskRecord,
    TaskStore,
)

if TYPE_CHECKING:
    from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
    from mcp.server.lowlevel import Server

    from hostd.api import Confirmation, SamplingResult
    from hostd.core.config import TransportConfig
    from hostd.core.host import Host
    from hostd.protocol.handlers import McpHandlers
    from hostd.protocol.subscriptions import SubscriptionService

logger = logging.getLogger("hostd.tasks")

T = TypeVar("T")

IDENTIFIER = "io.modelcontextprotocol/tasks"
#: The protocol revision whose tasks extension this is.
TASKS_VERSION = "2026-07-28"

#: The calls that can take long, as ``(plugin, tool)`` (a profile's prefix does not change them).
LONG_CALLS: frozenset[tuple[str, str]] = frozenset(
    {
        ("wechat", "read_wechat_articles"),
        ("wechat", "summarize_articles"),
        ("memory", "import_memories"),
        ("memory", "export_memories"),
        ("deep-thinking", "summarize_session"),
    }
)


class TaskIdParams(types.RequestParams):
    """``tasks/get`` and ``tasks/cancel``: the task's id."""

    task_id: str = Field(alias="taskId", max_length=200)


class TaskUpdateParams(TaskIdParams):
    """``tasks/update``: the client's answers to the task's questions, keyed as they were asked."""

    input_responses: dict[str, Any] = Field(alias="inputResponses", max_length=100)


def _stamp(record: TaskRecord, at: str) -> str:
    moment = record.created_at if at == "created" else record.updated_at
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def task_wire(record: TaskRecord, *, result_type: str) -> dict[str, Any]:
    """The task as the extension shows it: a ``CreateTaskResult`` (``result_type="task"``) or a
    ``DetailedTask`` (``"complete"``: ``tasks/get``) with its result or error once it ended."""
    wire: dict[str, Any] = {
        "resultType": result_type,
        "taskId": record.task_id,
        "status": record.status,
        "createdAt": _stamp(record, "created"),
        "lastUpdatedAt": _stamp(record, "updated"),
        "ttlMs": TASK_TTL_MS,
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if record.status_message:
        wire["statusMessage"] = record.status_message
    if record.status == "input_required":
        wire["inputRequests"] = record.outstanding
    if record.status == "completed" and record.result is not None:
        wire["result"] = record.result
    if record.status == "failed":
        wire["error"] = record.error or {"code": types.INTERNAL_ERROR, "message": "failed"}
    return wire


def declares_tasks(request: ServerRequestContext[Any, Any]) -> bool:
    """Whether this request's client declared the extension (2026-07-28 per-request capabilities)."""
    if request.session.protocol_version != TASKS_VERSION:
        return False
    capabilities = request.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return bool(extensions) and IDENTIFIER in (extensions or {})


class TaskChannel:
    """The client as a task's call sees it: progress becomes the task's status message; a
    question (sampling, a confirmation) becomes one of the task's ``inputRequests``, and the call
    waits for the client's ``tasks/update``."""

    def __init__(
        self,
        report: Callable[[str], Any],
        ask: Callable[[str, types.InputRequest], Any],
        capabilities: types.ClientCapabilities | None,
    ) -> None:
        self._report = report
        self._ask = ask
        self._capabilities = capabilities

    @property
    def can_sample(self) -> bool:
        return self._capabilities is not None and self._capabilities.sampling is not None

    @property
    def can_elicit(self) -> bool:
        return can_confirm(self._capabilities)

    async def report_progress(self, progress: float, total: float | None, message: str | None) -> None:
        # A plugin's message says how far it is already ("1/3 ok: ..."); else the figures do.
        await self._report(message or (f"{progress:g}/{total:g}" if total is not None else f"{progress:g}"))

    async def sample(self, prompt: str, system: str | None, max_tokens: int) -> SamplingResult:
        params = sampling_params(prompt, system, max_tokens)
        answer = await self._ask(sampling_key(params), types.CreateMessageRequest(params=params))
        try:
            return sampling_result(types.CreateMessageResultWithTools.model_validate(answer))
        except ValidationError:
            return SamplingResult(
                available=False,
                reason=Text(en="the client's answer was not a message", zh="客户端的回答不是一条消息"),
            )

    async def confirm(self, question: str) -> Confirmation:
        answer = await self._ask(confirm_key(question), types.ElicitRequest(params=confirm_params(question)))
        try:
            return CONFIRMATION_OF[types.ElicitResult.model_validate(answer).action]
        except ValidationError:
            return "cancelled"  # no one said yes


class TasksExtension(Extension):
    """The tasks extension over a host's call pipeline (see the module's docstring)."""

    identifier = IDENTIFIER

    def __init__(self, host: Host, handlers: McpHandlers, store: TaskStore, *, shared: bool) -> None:
        self.host = host
        self.handlers = handlers
        self.store = store
        #: The store is a database other processes write to: cancellations are looked for there.
        self.shared = shared
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._running: set[asyncio.Task[None]] = set()

    # --- the store, off the event loop when it is a database ------------------------------------

    async def _store(self, work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        if not self.shared:
            return work(*args, **kwargs)
        return await anyio.to_thread.run_sync(functools.partial(work, *args, **kwargs))

    def _not_found(self, task_id: str) -> MCPError:
        text = Text(
            en=f"Failed to retrieve task: no task {task_id[:200]!r} of yours "
            "(unknown, expired or not yours).",
            zh=f"获取任务失败：没有属于你的任务 {task_id[:200]!r}（不存在、已过期或不属于你）。",
        )
        return MCPError(types.INVALID_PARAMS, text.render(self.host.language), {"taskId": task_id[:200]})

    def _require_declared(self, request: ServerRequestContext[Any, Any]) -> None:
        if declares_tasks(request):
            return
        text = Text(
            en=f"Missing required client capability: declare the {IDENTIFIER} extension on the request.",
            zh=f"缺少必需的客户端能力：请在请求中声明 {IDENTIFIER} 扩展。",
        )
        raise MCPError(
            types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            text.render(self.host.language),
            {"requiredCapabilities": {"extensions": {IDENTIFIER: {}}}},
        )

    # --- the extension's methods ----------------------------------------------------------------

    def methods(self) -> list[MethodBinding]:
        versions = frozenset({TASKS_VERSION})
        return [
            MethodBinding("tasks/get", TaskIdParams, self.on_get, protocol_versions=versions),
            MethodBinding("tasks/cancel", TaskIdParams, self.on_cancel, protocol_versions=versions),
            MethodBinding("tasks/update", TaskUpdateParams, self.on_update, protocol_versions=versions),
        ]

    async def on_get(self, request: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        self._require_declared(request)
        record = await self._store(self.store.get, params.task_id, _member_name(request))
        if record is None:
            raise self._not_found(params.task_id)
        return task_wire(record, result_type="complete")

    async def on_cancel(self, request: ServerRequestContext[Any, Any], params: TaskIdParams) -> HandlerResult:
        self._require_declared(request)
        record = await self._store(self.store.request_cancel, params.task_id, _member_name(request))
        if record is None:
            raise self._not_found(params.task_id)
        scope = self._scopes.get(params.task_id)
        if scope is not None:  # running here: stop it now (another replica's sees the flag)
            scope.cancel()
        return {"resultType": "complete"}

    async def on_update(
        self, request: ServerRequestContext[Any, Any], params: TaskUpdateParams
    ) -> HandlerResult:
        self._require_declared(request)
        for key, response in params.input_responses.items():
            try:
                answers = answer_models(key)
                if not any(_fits(model, response) for model in answers):
                    raise ValueError(key)
            except ValueError:
                text = Text(
                    en=f"inputResponses[{key[:100]!r}] does not answer a question of this task.",
                    zh=f"inputResponses[{key[:100]!r}] 不是对该任务所提问题的回答。",
                )
                raise MCPError(types.INVALID_PARAMS, text.render(self.host.language)) from None
        record = await self._store(
            self.store.respond, params.task_id, _member_name(request), params.input_responses
        )
        if record is None:
            raise self._not_found(params.task_id)
        return {"resultType": "complete"}

    async def _wait_for_answer(self, task_id: str, key: str, request: types.InputRequest) -> dict[str, Any]:
        """Ask the client ``request`` through the task, then wait (cancellable) for its answer."""
        wire = request.model_dump(by_alias=True, mode="json", exclude_none=True)
        await self._store(self.store.ask, task_id, key, wire)
        while True:
            answer = await self._store(self.store.response, task_id, key)
            if answer is not None:
                return answer
            await anyio.sleep(POLL_INTERVAL_MS / 1000)

    # --- tools/call -----------------------------------------------------------------------------

    def _runs_as_task(self, request: ServerRequestContext[Any, Any], name: str) -> bool:
        spec = self.host.tools.get(name)
        if spec is None or (spec.plugin, spec.registered_name) not in LONG_CALLS:
            return False
        if not declares_tasks(request):
            return False
        # A refusal is answered plainly, as today.
        return self.handlers.policy.may(request_member(request), name)

    async def intercept_tool_call(
        self, params: types.CallToolRequestParams, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        if not self._runs_as_task(ctx, params.name):
            return await call_next(ctx)
        member = request_member(ctx)
        call = ToolCall(params.name, dict(params.arguments or {}), member, "mcp")
        if self.host.tools[params.name].uses_roots:
            # The client's roots are asked before the task exists (the extension asks that
            # input rounds be settled before a task is handed out).
            input_round = InputRound.of(params, self.host)
            try:
                if speaks_input_required(ctx):
                    call.client_roots = roots_from_round(ctx, input_round)
            except BaseException as exc:
                if input_round.questions and only_input_needed(exc):
                    return input_round.input_required()
                raise
        try:
            record = await self._store(self.store.create, _member_name(ctx), params.name)
        except Exception:  # no task can be kept (the database is down): the plain call still can
            logger.warning("keeping a task for %s failed; answering plainly", params.name, exc_info=True)
            return await call_next(ctx)
        task_id = record.task_id

        async def report(message: str) -> None:
            await self._store(self.store.progress, task_id, message)

        async def ask(key: str, request: types.InputRequest) -> dict[str, Any]:
            return await self._wait_for_answer(task_id, key, request)

        call.channel = TaskChannel(report, ask, ctx.session.client_capabilities)
        scope = anyio.CancelScope()
        self._scopes[task_id] = scope
        # Its own asyncio task: the request is answered now, the call goes on after it. The
        # context (the member of the request) is copied into it.
        job = asyncio.get_running_loop().create_task(self._run(task_id, call, scope))
        self._running.add(job)
        job.add_done_callback(self._running.discard)
        return task_wire(record, result_type="task")

    async def _watch(self, task_id: str, scope: anyio.CancelScope) -> None:
        """Cancel the call when its member asked another replica to."""
        while True:
            await anyio.sleep(POLL_INTERVAL_MS / 1000)
            try:
                if await self._store(self.store.cancel_requested, task_id):
                    scope.cancel()
                    return
            except Exception:  # the database did not answer: look again next time
                logger.warning("looking for a cancellation of task %s failed", task_id, exc_info=True)

    async def _run(self, task_id: str, call: ToolCall, scope: anyio.CancelScope) -> None:
        result: dict[str, Any] | None = None
        error: dict[str, Any] | None = None
        try:
            with scope:
                async with anyio.create_task_group() as group:
                    if self.shared:
                        group.start_soon(self._watch, task_id, scope)
                    try:
                        answer = await self.host.pipeline.call_tool(call)
                        outcome = self.handlers.result_of(call, answer)
                        result = outcome.model_dump(by_alias=True, mode="json", exclude_none=True)
                    except MCPError as exc:
                        error = exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)
                    finally:
                        group.cancel_scope.cancel()
        except Exception:
            logger.exception("task %s (%s) failed", task_id, call.tool)
            text = Text(en="The call failed; see the server's log.", zh="调用失败，详见服务器日志。")
            error = {"code": types.INTERNAL_ERROR, "message": text.render(self.host.language)}
        finally:
            self._scopes.pop(task_id, None)
        try:
            with anyio.CancelScope(shield=True):
                if result is not None:
                    await self._store(self.store.finish, task_id, "completed", result=result)
                elif error is not None:
                    await self._store(
                        self.store.finish, task_id, "failed", message=error.get("message"), error=error
                    )
                else:
                    text = Text(en="Cancelled at the client's request.", zh="已按客户端的请求取消。")
                    await self._store(
                        self.store.finish, task_id, "cancelled", message=text.render(self.host.language)
                    )
        except Exception:
            logger.exception("recording the end of task %s failed", task_id)

    async def advertise_where_served(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        """Middleware: the extension is served on 2026-07-28 only, so the ``initialize`` handshake
        (earlier revisions) does not advertise it."""
        result = await call_next(ctx)
        if ctx.method == "initialize":
            capabilities = (
                result.get("capabilities")
                if isinstance(result, dict)
                else getattr(result, "capabilities", None)
            )
            extensions = (
                capabilities.get("extensions")
                if isinstance(capabilities, dict)
                else getattr(capabilities, "extensions", None)
            )
            if isinstance(extensions, dict):
                extensions.pop(IDENTIFIER, None)
        return result

    def close(self) -> None:
        """At shut-down: calls still running are cancelled (their tasks end ``cancelled`` when the
        loop still runs; else they stay ``working`` until they expire)."""
        for job in list(self._running):
            if not job.done():
                with contextlib.suppress(RuntimeError):  # the loop is already closed
                    job.cancel()
        self.store.close()


#: Task ids one ``subscriptions/listen`` may follow.
MAX_LISTENED_TASKS = 100


class TaskNotification(BaseModel):
    """``notifications/tasks``: the task as ``tasks/get`` would show it at that moment."""

    method: str = "notifications/tasks"
    params: dict[str, Any]


class TaskListenHandler(ListenHandler):
    """``subscriptions/listen`` that also follows tasks (``notifications.taskIds``).

    Without ``taskIds`` it is the SDK's handler. With them, the client must declare the
    extension (else -32021); the ids acknowledged are those of the member's own tasks (another
    member's is left out, as unknown); each change of one (status, message) is sent as
    ``notifications/tasks`` on the stream, found by looking at the store every
    ``POLL_INTERVAL_MS`` (so a change made on another replica is seen too), beside the resource
    updates the stream asked for.
    """

    def __init__(self, bus: SubscriptionBus, tasks: TasksExtension, *, max_buffered_events: int) -> None:
        super().__init__(bus, max_buffered_events=max_buffered_events)
        self.bus = bus
        self.tasks = tasks
        self.buffered = max_buffered_events

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscriptionsListenRequestParams
    ) -> types.SubscriptionsListenResult:
        requested = (params.notifications.model_extra or {}).get("taskIds")
        if requested is None:
            return await super().__call__(ctx, params)
        tasks = self.tasks
        tasks._require_declared(ctx)
        if (
            not isinstance(requested, list)
            or not all(isinstance(task_id, str) for task_id in requested)
            or len(requested) > MAX_LISTENED_TASKS
        ):
            text = Text(
                en=f"notifications.taskIds must be a list of at most {MAX_LISTENED_TASKS} task ids.",
                zh=f"notifications.taskIds 必须是至多 {MAX_LISTENED_TASKS} 个任务 id 的列表。",
            )
            raise MCPError(types.INVALID_PARAMS, text.render(tasks.host.language))
        member = _member_name(ctx)
        known = [
            task_id
            for task_id in dict.fromkeys(requested)
            if await tasks._store(tasks.store.get, task_id, member) is not None
        ]
        subscription_id = ctx.request_id
        if subscription_id is None:
            raise MCPError(types.INVALID_REQUEST, "subscriptions/listen requires a request id")
        asked = params.notifications
        honored = types.SubscriptionFilter.model_validate(
            {
                "toolsListChanged": True if asked.tools_list_changed else None,
                "promptsListChanged": True if asked.prompts_list_changed else None,
                "resourcesListChanged": True if asked.resources_list_changed else None,
                "resourceSubscriptions": list(asked.resource_subscriptions or ()) or None,
                "taskIds": known,
            }
        )
        uris = frozenset(honored.resource_subscriptions or ())
        meta: dict[str, Any] = {SUBSCRIPTION_ID_META_KEY: subscription_id}
        send, receive = anyio.create_memory_object_stream[ServerEvent | TaskRecord](self.buffered)

        def deliver(event: ServerEvent) -> None:
            if event_matches(honored, uris, event):
                try:
                    send.send_nowait(event)
                except (anyio.ClosedResourceError, anyio.WouldBlock):
                    send.close()

        unsubscribe = self.bus.subscribe(deliver)
        self._streams.add(send)  # closed by close(), as the SDK's are
        try:
            await ctx.session.send_notification(
                types.SubscriptionsAcknowledgedNotification(
                    params=types.SubscriptionsAcknowledgedNotificationParams(
                        notifications=honored, _meta=meta
                    )
                ),
                related_request_id=subscription_id,
            )
            async with anyio.create_task_group() as group:
                group.start_soon(self._follow, known, member, send)
                async for item in receive:
                    if isinstance(item, TaskRecord):
                        notification: Any = TaskNotification(
                            params={**_detailed(item), "_meta": meta},
                        )
                    else:
                        notification = event_to_notification(item, meta)
                    await ctx.session.send_notification(notification, related_request_id=subscription_id)
                group.cancel_scope.cancel()
        finally:
            unsubscribe()
            self._streams.discard(send)
            send.close()
            receive.close()
        return types.SubscriptionsListenResult(_meta=meta)

    async def _follow(
        self, task_ids: list[str], member: str, send: MemoryObjectSendStream[ServerEvent | TaskRecord]
    ) -> None:
        """Put each change of the followed tasks on the stream, until each has ended."""
        tasks = self.tasks
        seen: dict[str, tuple[str, str | None]] = {}
        following = list(task_ids)
        while following:
            for task_id in list(following):
                try:
                    record = await tasks._store(tasks.store.get, task_id, member)
                except Exception:
                    logger.warning("following task %s failed", task_id, exc_info=True)
                    continue
                if record is None:
                    following.remove(task_id)  # expired
                    continue
                state = (record.status, record.status_message)
                if seen.get(task_id) != state:
                    seen[task_id] = state
                    try:
                        send.send_nowait(record)
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.WouldBlock):
                        return
                if record.terminal:
                    following.remove(task_id)
            await anyio.sleep(POLL_INTERVAL_MS / 1000)


def _fits(model: type[BaseModel], value: Any) -> bool:
    try:
        model.model_validate(value)
    except ValidationError:
        return False
    return True


def _detailed(record: TaskRecord) -> dict[str, Any]:
    wire = task_wire(record, result_type="complete")
    del wire["resultType"]
    return wire


def _member_name(request: ServerRequestContext[Any, Any]) -> str:
    member = request_member(request)
    return member.name if member is not None else ""


def install_tasks(
    server: Server[Any],
    host: Host,
    handlers: McpHandlers,
    transport: TransportConfig | None,
    subscriptions: SubscriptionService | None = None,
) -> TasksExtension:
    """Serve the extension on ``server``: its methods, its ``tools/call`` interceptor, its ad.

    Stateless HTTP keeps the tasks where every replica finds them (the team database with
    ``storage``, else a SQLite file in the shared data folder); otherwise in memory.
    """
    shared = transport is not None and transport.type == "http" and transport.stateless
    store: TaskStore
    if shared:
        store = DatabaseTaskStore.open(host.loaded.data_dir, host.team_settings())
    else:
        store = MemoryTaskStore()
    extension = TasksExtension(host, handlers, store, shared=shared)
    for method in extension.methods():
        server.add_request_handler(method.method, method.params_type, _version_gated(method))
    server.add_request_handler(
        "tools/call",
        types.CallToolRequestParams,
        compose_tool_call_handler([extension], handlers.on_call_tool),
    )
    server.extensions[IDENTIFIER] = extension.settings()
    server.middleware.append(extension.advertise_where_served)
    if subscriptions is not None:  # notifications/tasks ride the listen streams resources have
        subscriptions.listen_handler = TaskListenHandler(
            subscriptions.changes,
            extension,
            max_buffered_events=subscriptions.listen_handler._max_buffered_events,
        )
    host.closers.append(extension.close)
    return extension


def _version_gated(method: MethodBinding) -> Any:
    """A method served on its protocol revisions only; on another it does not exist."""
    versions = method.protocol_versions

    async def gated(ctx: ServerRequestContext[Any, Any], params: Any) -> HandlerResult:
        if versions is not None and ctx.session.protocol_version not in versions:
            raise MCPError(types.METHOD_NOT_FOUND, "Method not found", method.method)
        return await method.handler(ctx, params)

    return gated
