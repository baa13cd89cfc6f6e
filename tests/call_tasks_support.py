"""The Python SDK's side of the tasks extension (``io.modelcontextprotocol/tasks``, 2026-07-28), for
the tests of long calls as tasks.

The SDK (mcp 2.3) has no tasks client of its own, but the means to write one: a
``ClientExtension`` declares the extension on every request and claims the ``resultType:
"task"`` shape of ``tools/call``; ``tasks/get`` and ``tasks/cancel`` are requests sent through the
session (``name_param`` puts the task id in the ``Mcp-Name`` header, as the extension asks).
``TasksClient.claims`` polls the task to its end, so ``Client.call_tool`` returns the final result;
``session.call_tool(..., allow_claimed=True)`` hands the task itself to a test that watches it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar, Literal

import anyio
import mcp_types as types
from mcp import Client
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession
from pydantic import ConfigDict, Field

IDENTIFIER = "io.modelcontextprotocol/tasks"
TERMINAL = {"completed", "failed", "cancelled"}


class CreateTaskResult(types.Result):
    """What a ``tools/call`` answers when the server made a task of it."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = Field(default="task", alias="resultType")
    task_id: str
    status: str
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    status_message: str | None = None


class TaskIdParams(types.RequestParams):
    task_id: str = Field(alias="taskId")


class GetTaskRequest(types.Request[TaskIdParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class CancelTaskRequest(types.Request[TaskIdParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskIdParams
    name_param: ClassVar[str | None] = "taskId"


class TaskUpdateParams(TaskIdParams):
    input_responses: dict[str, Any] = Field(alias="inputResponses")


class UpdateTaskRequest(types.Request[TaskUpdateParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: TaskUpdateParams
    name_param: ClassVar[str | None] = "taskId"


class TaskState(types.Result):
    """A ``tasks/get`` answer (a ``DetailedTask``): the raw fields are kept (``extra``)."""

    model_config = ConfigDict(extra="allow")
    task_id: str
    status: str
    status_message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None


class AnyResult(types.Result):
    model_config = ConfigDict(extra="allow")


async def get_task(session: ClientSession, task_id: str) -> TaskState:
    request = GetTaskRequest(params=TaskIdParams(taskId=task_id))
    return await session.send_request(request, TaskState)


async def cancel_task(session: ClientSession, task_id: str) -> dict[str, Any]:
    request = CancelTaskRequest(params=TaskIdParams(taskId=task_id))
    answer = await session.send_request(request, AnyResult)
    return answer.model_dump(by_alias=True, exclude_none=True, exclude={"meta"})  # the serverInfo stamp


async def answer_task(session: ClientSession, task_id: str, responses: dict[str, Any]) -> dict[str, Any]:
    """``tasks/update``: the answers to the task's questions (``inputRequests``), by their keys."""
    request = UpdateTaskRequest(params=TaskUpdateParams(taskId=task_id, inputResponses=responses))
    answer = await session.send_request(request, AnyResult)
    return answer.model_dump(by_alias=True, exclude_none=True, exclude={"meta"})


async def wait_for_question(session: ClientSession, task_id: str, timeout: float = 60) -> dict[str, Any]:
    """The task's outstanding questions once it is ``input_required`` (its ``inputRequests``)."""
    with anyio.fail_after(timeout):
        while True:
            state = await get_task(session, task_id)
            assert state.status in ("working", "input_required"), state
            if state.status == "input_required":
                questions: dict[str, Any] = (state.model_extra or {})["inputRequests"]
                return questions
            await anyio.sleep(0.1)


async def wait_for_end(session: ClientSession, task_id: str, timeout: float = 120) -> TaskState:
    with anyio.fail_after(timeout):
        while True:
            state = await get_task(session, task_id)
            if state.status in TERMINAL:
                return state
            await anyio.sleep(0.1)


async def resolve(task: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
    state = await wait_for_end(ctx.session, task.task_id)
    if state.status != "completed" or state.result is None:
        raise RuntimeError(f"task {task.task_id} ended {state.status}: {state.error or state.status_message}")
    return types.CallToolResult.model_validate(state.result)


class TasksClient(ClientExtension):
    """Declares the extension and finishes a task answer by polling it."""

    identifier = IDENTIFIER

    def claims(self) -> Sequence[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=resolve)]


async def start_task(client: Client, tool: str, arguments: dict[str, Any]) -> CreateTaskResult:
    """Call ``tool`` and return the task the server made of it (fails when it answered plainly)."""
    answer = await client.session.call_tool(tool, arguments, allow_claimed=True)
    assert isinstance(answer, CreateTaskResult), answer
    return answer
